// Deletes the history rows a tenant's retention has passed (server/retention/retention-policy.ts),
// for the retention job (server/maintenance/enforce-retention.ts). Every history table's retention
// delete is here rather than in its feature's store, so that all of them follow one lock discipline:
// - a batch is one short transaction of a bounded number of rows, under a lock_timeout: a batch
//   that waits for a lock longer gives up (the kind is reported deferred and the next run goes on),
//   so no live request ever queues behind a retention delete for long, and the row locks a batch
//   takes are held only for that batch;
// - a run or session goes after its children, themselves deleted in bounded batches (a workflow
//   run may hold a quarter of a million steps), so the cascades and the run_steps trigger that
//   deleting it sets off find (almost) nothing left;
// - every candidate is found through an index that begins with tenant_id (or, for runs, the
//   workflow or agent), so a batch reads the rows it deletes, not the tenant's whole history;
// - usage_events are deleted partition by partition, only in the months a cutoff reaches (the
//   months every tenant is done with are dropped whole, server/maintenance/partitions.ts).
// Raw SQL (catalog): the batches are built per history table and partition from this module's
// fragments (ctid batches, partition names), which no typed query describes; values travel as
// parameters.
import type { SqlPool } from '../../../db/sql-pool.js';
import { isLockTimeout, listMonthPartitions, setLocalLockTimeout } from './partitions.js';

/** How batches run: sizes, the lock wait, the pause between batches and the run's deadline. */
export interface BatchControl {
  /** Rows per batch of rows without children (and of children). */
  rows: number;
  lockTimeoutMs: number;
  /** Waits between two batches. */
  pause(): Promise<void>;
  /** Whether the run's time is up. */
  outOfTime(): boolean;
  /** Adds rows deleted from `table` to the run's report. */
  count(table: string, rows: number): void;
}

/** `done`: nothing expired is left; `deferred`: a lock was not granted in time; `out_of_time`: the deadline came first. */
export type BatchOutcome = 'done' | 'deferred' | 'out_of_time';

/** The tenants one set of deletes is for, and the instants before which their rows are due. */
export interface ExpiryWindow {
  tenantIds: string[];
  /** Rows older than this go. */
  cutoff: Date;
  /** Rows of the hiring domain older than this go (never later than cutoff). */
  hiringCutoff: Date;
  now: Date;
}

type Predicate = (alias: string) => string;

/** One counted delete in its own transaction; null when a lock was not granted in time. */
async function deleteOnce(sql: SqlPool, ctl: BatchControl, text: string, params: unknown[]): Promise<number | null> {
  try {
    return await sql.transaction(async (query) => {
      await setLocalLockTimeout(query, ctl.lockTimeoutMs);
      // Raw(catalog): the count of a retention batch's delete, whichever table it is.
      const [row] = await query<{ n: number }>(`with d as (${text} returning 1) select count(*)::int as n from d`, params);
      return row.n;
    });
  } catch (err) {
    if (isLockTimeout(err)) return null;
    throw err;
  }
}

/**
 * Deletes the rows of `table` matching `where` (alias-relative) in batches of ctl.rows until none is
 * left, counted as `countAs`. A batch finds its rows through `where`'s index, then deletes them by
 * their physical address (a TID scan: no second index search); `where` is checked again, so a row
 * changed meanwhile is left alone. `table` is a plain table or one partition (a ctid is unique
 * within one table only).
 */
async function deleteRowsInBatches(sql: SqlPool, ctl: BatchControl, table: string, where: Predicate, params: unknown[], countAs = table): Promise<BatchOutcome> {
  // Raw(catalog): a batch by ctid of a history table or partition.
  const text = `delete from ${table} t where t.ctid = any (array(select x.ctid from ${table} x where ${where('x')} limit ${ctl.rows})) and ${where('t')}`;
  for (;;) {
    const n = await deleteOnce(sql, ctl, text, params);
    if (n === null) return 'deferred';
    ctl.count(countAs, n);
    if (n < ctl.rows) return 'done';
    await ctl.pause();
    if (ctl.outOfTime()) return 'out_of_time';
  }
}

/** Deletes every row of `table` matching `where` in one statement: for children of a bounded set of parents. */
async function deleteAllRows(sql: SqlPool, ctl: BatchControl, table: string, where: Predicate, params: unknown[]): Promise<BatchOutcome> {
  // Raw(catalog): a history table's rows of parents already chosen.
  const n = await deleteOnce(sql, ctl, `delete from ${table} t where ${where('t')}`, params);
  if (n === null) return 'deferred';
  ctl.count(table, n);
  return 'done';
}

interface ParentTable {
  table: string;
  /** The most parents one batch takes (their children are deleted first, in batches of their own). */
  batch: number;
  /** Selects `id` of up to $limit expired parents; `limit` is written in. */
  select: (limit: number) => string;
  /** The expired predicate, on `t`, checked again when the parents are deleted ($ids is the last parameter). */
  expired: (ids: string) => string;
  /**
   * Tables to empty of the selected parents' rows first, in this order; `$1` is the parents' ids.
   * `whole`: in one statement (a partitioned table, where a batch by physical address would have to
   * visit every partition; its parents' batch is small enough to bound it).
   */
  children: { table: string; where: Predicate; whole?: boolean }[];
  params: (w: ExpiryWindow) => unknown[];
}

async function deleteParentsInBatches(sql: SqlPool, ctl: BatchControl, spec: ParentTable, window: ExpiryWindow): Promise<BatchOutcome> {
  const limit = Math.min(spec.batch, ctl.rows);
  const params = spec.params(window);
  // Raw(catalog): the batch of a history table's parents.
  const deleteParents = `delete from ${spec.table} t where ${spec.expired(`$${params.length + 1}::uuid[]`)}`;
  for (;;) {
    const ids = (await sql.query<{ id: string }>(spec.select(limit), params)).map((r) => r.id);
    if (ids.length === 0) return 'done';
    for (const child of spec.children) {
      const outcome = child.whole ? await deleteAllRows(sql, ctl, child.table, child.where, [ids]) : await deleteRowsInBatches(sql, ctl, child.table, child.where, [ids]);
      if (outcome !== 'done') return outcome;
    }
    const n = await deleteOnce(sql, ctl, deleteParents, [...params, ids]);
    if (n === null) return 'deferred';
    ctl.count(spec.table, n);
    // None of those went: they are no longer due (a session active again); the rest are not either.
    if (n === 0 || ids.length < limit) return 'done';
    await ctl.pause();
    if (ctl.outOfTime()) return 'out_of_time';
  }
}

const tenants = (t: string) => `${t}.tenant_id = any ($1::uuid[])`;
const windowParams = (w: ExpiryWindow) => [w.tenantIds, w.cutoff, w.hiringCutoff];

/**
 * Metered events, by creation time; hiring-domain events by the hiring cutoff. Partition by
 * partition: only the months that began before the cutoff (and the DEFAULT partition) can hold due
 * rows, and each is searched through its own (tenant_id, created_at) index.
 */
export async function deleteExpiredUsageEvents(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  const where = (t: string) => `${tenants(t)} and ${t}.created_at < $2 and (${t}.domain is distinct from 'hiring' or ${t}.created_at < $3)`;
  const months = (await listMonthPartitions(sql, 'usage_events')).filter((p) => p.from < w.cutoff);
  for (const partition of [...months.map((p) => p.name), 'usage_events_default']) {
    const outcome = await deleteRowsInBatches(sql, ctl, `"${partition}"`, where, windowParams(w), 'usage_events');
    if (outcome !== 'done') return outcome;
  }
  return 'done';
}

/** Audit entries, by creation time. */
export function deleteExpiredAuditEntries(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  return deleteRowsInBatches(sql, ctl, 'audit_log', (t) => `${tenants(t)} and ${t}.created_at < $2`, [w.tenantIds, w.cutoff]);
}

/** Ingestion jobs that ended, by creation time (the tenant's index orders them so). */
export function deleteExpiredIngestionJobs(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  const where = (t: string) => `${tenants(t)} and ${t}.created_at < $2 and ${t}.status in ('completed', 'failed', 'cancelled')`;
  return deleteRowsInBatches(sql, ctl, 'ingestion_jobs', where, [w.tenantIds, w.cutoff]);
}

/** Events by their time; their deliveries and attempts go by cascade. */
export function deleteExpiredEvents(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  return deleteRowsInBatches(sql, ctl, 'events', (t) => `${tenants(t)} and ${t}.created_at < $2`, [w.tenantIds, w.cutoff]);
}

const sessionExpired = (t: string) => `${tenants(t)} and ${t}.last_activity_at < $2 and (${t}.domain <> 'hiring' or ${t}.last_activity_at < $3)`;

/** Intent sessions idle past the cutoff (hiring ones past the hiring cutoff), their messages first. */
export function deleteExpiredSessions(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  return deleteParentsInBatches(sql, ctl, {
    table: 'sessions',
    // An intent session holds two messages a turn, a few dozen at most in practice.
    batch: 200,
    // Raw(catalog): a retention batch's candidates.
    select: (limit) => `select t.id from sessions t where ${sessionExpired('t')} limit ${limit}`,
    expired: (ids) => `t.id = any (${ids}) and ${sessionExpired('t')}`,
    children: [{ table: 'session_messages', where: (t) => `${t}.session_id = any ($1::uuid[])`, whole: true }],
    params: windowParams,
  }, w);
}

// The run's clock is its end; started_at bounds it too (a run ends after it starts), so the
// workflow's (tenant_id, workflow_id, started_at) index finds the candidates.
const FINISHED_WORKFLOW_RUN = (t: string) =>
  `${t}.started_at < $2 and coalesce(${t}.completed_at, ${t}.updated_at) < $2 and ${t}.status in ('completed', 'rejected', 'cancelled', 'failed')`;

/** Workflow runs that ended before the cutoff, their steps first (approvals go by cascade). */
export function deleteExpiredWorkflowRuns(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  return deleteParentsInBatches(sql, ctl, {
    table: 'workflow_runs',
    batch: 200,
    // Workflow by workflow, each through its own index range.
    // Raw(catalog): a retention batch's candidates.
    select: (limit) => `select due.id from workflows wf cross join lateral (
        select r.id from workflow_runs r where r.tenant_id = wf.tenant_id and r.workflow_id = wf.id and ${FINISHED_WORKFLOW_RUN('r')} limit ${limit}) due
      where ${tenants('wf')} limit ${limit}`,
    expired: (ids) => `t.id = any (${ids}) and ${tenants('t')} and ${FINISHED_WORKFLOW_RUN('t')}`,
    children: [{ table: 'run_steps', where: (t) => `${t}.run_kind = 'workflow' and ${t}.run_id = any ($1::uuid[])` }],
    params: (win) => [win.tenantIds, win.cutoff],
  }, w);
}

// A suite's pinned baseline stays, however old: comparisons read it.
const evalRunExpired = (t: string) =>
  `${tenants(t)} and ${t}.started_at < $2 and coalesce(${t}.completed_at, ${t}.updated_at) < $2 and ${t}.status in ('completed', 'failed', 'cancelled')
   and (${t}.domain_key is distinct from 'hiring' or coalesce(${t}.completed_at, ${t}.updated_at) < $3)
   and ${t}.id not in (select s.baseline_run_id from eval_suites s where ${tenants('s')} and s.baseline_run_id is not null)`;

/** Evaluation runs that ended before the cutoff, their steps and results (with reviews) first. */
export function deleteExpiredEvalRuns(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow): Promise<BatchOutcome> {
  return deleteParentsInBatches(sql, ctl, {
    table: 'eval_runs',
    // A run may hold thousands of cases.
    batch: 20,
    // Raw(catalog): a retention batch's candidates.
    select: (limit) => `select t.id from eval_runs t where ${evalRunExpired('t')} limit ${limit}`,
    expired: (ids) => `t.id = any (${ids}) and ${evalRunExpired('t')}`,
    children: [
      { table: 'run_steps', where: (t) => `${t}.run_kind = 'eval' and ${t}.run_id = any ($1::uuid[])` },
      { table: 'eval_results', where: (t) => `${t}.run_id = any ($1::uuid[])` },
    ],
    params: windowParams,
  }, w);
}

/**
 * Agent conversations idle past the tenant's cutoff or their agent's own memory_config.retention_days
 * (`agentDefaultDays` when it sets none), whichever comes first: steps, messages and runs first.
 */
export function deleteExpiredAgentSessions(sql: SqlPool, ctl: BatchControl, w: ExpiryWindow, agentDefaultDays: number): Promise<BatchOutcome> {
  const due = (s: string, a: string) =>
    `${s}.last_activity_at < greatest($2::timestamptz, $3::timestamptz - make_interval(days => coalesce((${a}.memory_config->>'retention_days')::int, ${Math.trunc(agentDefaultDays)})))`;
  return deleteParentsInBatches(sql, ctl, {
    table: 'agent_sessions',
    batch: 200,
    // Agent by agent, each through its (tenant_id, agent_id, last_activity_at) index range.
    // Raw(catalog): a retention batch's candidates.
    select: (limit) => `select idle.id from agents a cross join lateral (
        select s.id from agent_sessions s where s.tenant_id = a.tenant_id and s.agent_id = a.id and ${due('s', 'a')} limit ${limit}) idle
      where ${tenants('a')} limit ${limit}`,
    expired: (ids) => `t.id = any (${ids}) and ${tenants('t')} and exists (select 1 from agents a where a.id = t.agent_id and ${due('t', 'a')})`,
    children: [
      { table: 'run_steps', where: (t) => `${t}.run_kind = 'agent' and ${t}.run_id = any (array(select r.id from agent_runs r where r.session_id = any ($1::uuid[])))` },
      { table: 'agent_messages', where: (t) => `${t}.session_id = any ($1::uuid[])` },
      { table: 'agent_runs', where: (t) => `${t}.session_id = any ($1::uuid[])` },
    ],
    params: (win) => [win.tenantIds, win.cutoff, win.now],
  }, w);
}

// Any fixed number: the key of the session-level advisory lock one retention run holds.
const RETENTION_LOCK_KEY = 7_311_402_120;

/**
 * Runs `work` while holding the retention lock on a connection of its own (outside the pool), so
 * two runs (processes, or an hourly run that outlived the hour) never delete side by side. Returns
 * null without running it when another run holds the lock.
 */
export async function withRetentionLock<T>(sql: SqlPool, work: () => Promise<T>): Promise<T | null> {
  return sql.session(async (query) => {
    // Raw(advisory-lock): a session lock, released when the connection ends.
    const [row] = await query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [RETENTION_LOCK_KEY]);
    if (!row.locked) return null;
    // Ending the session releases the lock, whatever happens to the work.
    return work();
  });
}
