// How long each kind of history is kept, by billing plan. Every table that grows with traffic is
// either one of these kinds (enforced by the scheduled retention job, server/maintenance/
// enforce-retention.ts) or listed in OTHER_GROWING_TABLES with the rule that bounds it elsewhere.
//
// A plan's days are the longest a tenant on it keeps that history; a tenant may keep less (down to
// the kind's minimum) with PATCH /dashboard/retention. The operator may change any plan's days with
// RETENTION_DAYS (JSON, read in config.ts). Rows of the hiring domain are never deleted before
// HIRING_RETENTION_FLOOR_DAYS, whatever the plan or the tenant says (EU AI Act art. 19 and 26(6):
// logs of a high-risk system are kept at least six months). Monthly usage totals (usage_counters and
// the daily rollup) are never deleted by retention: reports and quotas outlive the detail.
import { PLAN_NAMES, type PlanName } from '../tenants/plan-limits.js';

export const HISTORY_KINDS = ['usage_events', 'sessions', 'agent_sessions', 'workflow_runs', 'eval_runs', 'audit_log', 'ingestion_jobs', 'events'] as const;
export type HistoryKind = (typeof HISTORY_KINDS)[number];

export interface HistoryKindPolicy {
  /** What goes, and when: for the README, the OpenAPI document and GET /dashboard/retention. */
  readonly description: string;
  /** Days kept by plan: the longest a tenant on that plan may keep. */
  readonly days: Readonly<Record<PlanName, number>>;
  /** The shortest a tenant (or the operator) may set. */
  readonly minDays: number;
  /** Whether rows of the hiring domain stay for HIRING_RETENTION_FLOOR_DAYS at least. */
  readonly hiringFloor: boolean;
}

export const HISTORY_POLICY: Readonly<Record<HistoryKind, HistoryKindPolicy>> = {
  usage_events: {
    description: 'Metered operations one by one (usage_events), by creation time. Monthly and daily totals stay.',
    days: { free: 90, trial: 90, starter: 180, pro: 400, enterprise: 400 },
    minDays: 1,
    hiringFloor: true,
  },
  sessions: {
    description: 'Intent sessions and their messages (sessions, session_messages), once the session has been idle that long.',
    days: { free: 30, trial: 30, starter: 90, pro: 180, enterprise: 365 },
    minDays: 1,
    hiringFloor: true,
  },
  agent_sessions: {
    description: "Agent conversations with their messages, runs and run steps, once idle that long; an agent's memory_config.retention_days (default 30) may keep them shorter.",
    days: { free: 30, trial: 30, starter: 90, pro: 180, enterprise: 365 },
    minDays: 1,
    hiringFloor: false,
  },
  workflow_runs: {
    description: 'Finished workflow runs with their approvals and run steps, by completion time. Runs still running or waiting stay.',
    days: { free: 30, trial: 30, starter: 90, pro: 180, enterprise: 365 },
    minDays: 1,
    hiringFloor: false,
  },
  eval_runs: {
    description: "Finished evaluation runs with their results, reviews and run steps, by completion time. A suite's pinned baseline stays.",
    days: { free: 90, trial: 90, starter: 180, pro: 365, enterprise: 730 },
    minDays: 1,
    hiringFloor: true,
  },
  audit_log: {
    description: 'Audit log entries, by creation time: kept a year at least.',
    days: { free: 365, trial: 365, starter: 365, pro: 730, enterprise: 730 },
    minDays: 365,
    hiringFloor: false,
  },
  ingestion_jobs: {
    description: 'Finished document ingestion jobs, by creation time (the documents they made stay).',
    days: { free: 30, trial: 30, starter: 90, pro: 180, enterprise: 365 },
    minDays: 1,
    hiringFloor: false,
  },
  events: {
    description: 'Events recorded for subscriptions, with their deliveries and the delivery log (every attempt), by the event\'s time; a delivery still pending goes with its event.',
    days: { free: 7, trial: 7, starter: 30, pro: 90, enterprise: 90 },
    minDays: 1,
    hiringFloor: false,
  },
};

/** Tables that grow but are not a history kind above, and what bounds each. */
const OTHER_GROWING_TABLES: readonly { table: string; rule: string }[] = [
  { table: 'run_steps', rule: 'go with their run (a delete trigger on workflow_runs, agent_runs and eval_runs)' },
  { table: 'workflow_approvals, eval_results, eval_reviews, agent_messages', rule: 'go with their run, result or session' },
  { table: 'usage_counters, usage_daily', rule: 'never deleted by retention (one row per tenant and month or day and group): totals outlive the detail' },
  { table: 'deployments', rule: 'at most the newest 100 of each tenant, none older than 90 days (the hourly pruning)' },
  { table: 'intent_cache', rule: 'deleted when expired (its TTL)' },
  { table: 'idempotency_keys', rule: '24 hours' },
  { table: 'workflow_schedule_ticks', rule: '7 days' },
  { table: 'workflow_state', rule: 'deleted when expired (its TTL)' },
  { table: 'outbox_messages', rule: '30 days after sending' },
  { table: 'email_tokens, login_attempts, worker_heartbeats', rule: '1 day after expiry or last use' },
  { table: 'mail_day_counts', rule: '2 days' },
  { table: 'agent_user_memory', rule: 'grows with end users, not traffic: kept until the agent or the user is deleted' },
];

/** Operator overrides: `{"pro": {"workflow_runs": 365}}` (RETENTION_DAYS). */
export type RetentionOverrides = Partial<Record<PlanName, Partial<Record<HistoryKind, number>>>>;
/** Days per kind. */
export type RetentionDays = Record<HistoryKind, number>;

const isPlan = (plan: string): plan is PlanName => (PLAN_NAMES as readonly string[]).includes(plan);

/** The days of `plan` (an unknown plan gets the free plan's) with the operator's overrides: each kind's maximum. */
export function retentionForPlan(plan: string, overrides: RetentionOverrides | undefined): RetentionDays {
  const name: PlanName = isPlan(plan) ? plan : 'free';
  const own = overrides?.[name] ?? {};
  return Object.fromEntries(HISTORY_KINDS.map((kind) => [kind, own[kind] ?? HISTORY_POLICY[kind].days[name]])) as RetentionDays;
}

/**
 * What a tenant keeps: its own setting where it has one, never more than its plan allows (a
 * setting made on a larger plan shrinks with a downgrade) nor less than the kind's minimum.
 */
export function effectiveRetention(planDays: RetentionDays, own: Partial<Record<string, number>>): RetentionDays {
  return Object.fromEntries(
    HISTORY_KINDS.map((kind) => {
      const set = own[kind];
      return [kind, set === undefined ? planDays[kind] : Math.max(HISTORY_POLICY[kind].minDays, Math.min(set, planDays[kind]))];
    }),
  ) as RetentionDays;
}

/**
 * The longest any tenant may keep `kind`, whatever its plan: no row younger than that can be due,
 * so a month older than it can go whole.
 */
export function longestRetentionDays(kind: HistoryKind, overrides: RetentionOverrides | undefined, hiringFloorDays: number): number {
  const longest = Math.max(...PLAN_NAMES.map((plan) => retentionForPlan(plan, overrides)[kind]));
  return HISTORY_POLICY[kind].hiringFloor ? Math.max(longest, hiringFloorDays) : longest;
}

/** The retention table (Markdown): one row per kind, its days per plan and the tenant's minimum. */
export function describeRetention(): string {
  const rows = HISTORY_KINDS.map((kind) => {
    const p = HISTORY_POLICY[kind];
    return `| \`${kind}\` | ${p.description} | ${PLAN_NAMES.map((plan) => p.days[plan]).join(' | ')} | ${p.minDays} | ${p.hiringFloor ? 'yes' : 'no'} |`;
  });
  return [
    `| Kind | What goes | ${PLAN_NAMES.join(' | ')} | Min | Hiring floor |`,
    `|---|---|${PLAN_NAMES.map(() => '---:').join('|')}|---:|---|`,
    ...rows,
  ].join('\n');
}

/** Tables bounded elsewhere (Markdown list). */
export function describeOtherGrowingTables(): string {
  return OTHER_GROWING_TABLES.map((t) => `- \`${t.table.split(', ').join('`, `')}\`: ${t.rule}.`).join('\n');
}
