// Which production runs online evaluation scores. A run asks `pickOnlineRules` for the rules of its
// target that pick it (each rule's rate, then its metadata filter) and, when any does, writes its
// samples inside its own final statement (store/online-samples.ts); it never waits for scoring.
// The tenant's rules are read once per SAMPLING_RULES_TTL_MS per process (a write in this process
// drops its copy at once), so a run pays a Map lookup, not a query. The scoring job is kicked at
// most once per KICK_MS per tenant, with a trailing kick for the samples of the quiet period; a
// sweep on the worker's crontab picks up what a crash lost.
import type { SqlPool } from '../../db/sql-pool.js';
import { onlineEvalIntakeJob } from '../jobs/contracts.js';
import { enqueueWith } from '../jobs/job-queue.js';
import { listEnabledSamplingRules, type SamplingRuleRow } from './store/online-samples.js';

/** How long a process keeps a tenant's rules before reading them again. */
export const SAMPLING_RULES_TTL_MS = 5_000;
const KICK_MS = 250;
/** Tenants whose rules a process keeps at most (the rest are read again when needed). */
const MAX_CACHED_TENANTS = 10_000;

export type SamplingTarget =
  | { kind: 'intent'; domain: string; intent: string }
  | { kind: 'agent'; agentKey: string }
  | { kind: 'workflow_step'; workflowKey: string; stepId: string };

const cache = new Map<string, { at: number; rules: SamplingRuleRow[] }>();

/** Forgets the tenant's rules in this process (a rule was created, changed or deleted). */
export function forgetSamplingRules(tenantId: string): void {
  cache.delete(tenantId);
}

async function rulesOf(sqlPool: SqlPool, tenantId: string): Promise<SamplingRuleRow[]> {
  const now = Date.now();
  const hit = cache.get(tenantId);
  if (hit && now - hit.at < SAMPLING_RULES_TTL_MS) return hit.rules;
  const rules = await listEnabledSamplingRules(sqlPool, tenantId);
  if (cache.size >= MAX_CACHED_TENANTS) cache.clear();
  cache.set(tenantId, { at: now, rules });
  return rules;
}

const matchesTarget = (rule: SamplingRuleRow, target: SamplingTarget) =>
  rule.target_kind === target.kind &&
  (target.kind === 'intent'
    ? rule.domain_key === target.domain && rule.intent_key === target.intent
    : target.kind === 'agent'
      ? rule.agent_key === target.agentKey
      : rule.workflow_key === target.workflowKey && rule.step_id === target.stepId);

/** A filter entry matches when the run's metadata has the value, or one of the values a list gives. */
function matchesFilter(filter: Record<string, unknown> | null, metadata: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  for (const [key, wanted] of Object.entries(filter)) {
    const value = metadata?.[key];
    const options = Array.isArray(wanted) ? wanted : [wanted];
    if (!options.some((option) => option === value)) return false;
  }
  return true;
}

/**
 * The ids of the rules of `target` that pick this run: each draws its own chance at its rate,
 * then looks at the run's metadata. Empty (the common case) without a query once the tenant's rules
 * are known.
 */
export async function pickOnlineRules(
  sqlPool: SqlPool, tenantId: string, target: SamplingTarget, metadata: Record<string, unknown> | undefined, random: () => number = Math.random,
): Promise<string[]> {
  const rules = await rulesOf(sqlPool, tenantId);
  if (rules.length === 0) return [];
  const picked: string[] = [];
  for (const rule of rules) {
    if (matchesTarget(rule, target) && random() < rule.sample_rate && matchesFilter(rule.filter, metadata)) picked.push(rule.id);
  }
  return picked;
}

const kicks = new Map<string, { last: number; trailing: NodeJS.Timeout | null }>();

/**
 * Queues the tenant's scoring job after a run wrote samples: at once when none was queued in the
 * last KICK_MS, else once at the end of that period. Off the run's path (the caller does not wait).
 */
export function kickOnlineScoring(sqlPool: SqlPool, tenantId: string, onError: (err: unknown) => void): void {
  const now = Date.now();
  const kick = kicks.get(tenantId) ?? { last: 0, trailing: null };
  kicks.set(tenantId, kick);
  const send = () => {
    kick.last = Date.now();
    enqueueWith(sqlPool, onlineEvalIntakeJob, { tenant_id: tenantId }).catch(onError);
  };
  if (now - kick.last >= KICK_MS) return send();
  if (kick.trailing) return;
  kick.trailing = setTimeout(() => {
    kick.trailing = null;
    send();
  }, KICK_MS - (now - kick.last));
  kick.trailing.unref();
  if (kicks.size > MAX_CACHED_TENANTS) {
    for (const [id, k] of kicks) if (!k.trailing && id !== tenantId) kicks.delete(id);
  }
}
