import { setTimeout as sleep } from 'node:timers/promises';
import type { SqlPool } from '../../db/sql-pool.js';
import type { AppDeps } from '../deps.js';
import { AGENT_DEFAULTS } from '../agents/agent-runtime-config.js';
import { HISTORY_KINDS, HISTORY_POLICY, longestRetentionDays, type HistoryKind } from '../retention/retention-policy.js';
import { listTenantRetention } from '../retention/retention.service.js';
import { maintainPartitions, type PartitionReport } from './partitions.js';
import {
  deleteExpiredAgentSessions, deleteExpiredAuditEntries, deleteExpiredEvalRuns, deleteExpiredIngestionJobs, deleteExpiredEvents, deleteExpiredSessions, deleteExpiredUsageEvents,
  deleteExpiredWorkflowRuns, withRetentionLock, type BatchControl, type BatchOutcome, type ExpiryWindow,
} from './store/history-retention.js';

export interface RetentionRunOptions {
  /** The instant retention is measured from (default: now). */
  now?: Date;
  /** Rows per batch (default 5,000); runs and sessions go a few hundred (evaluation runs 20) at a time at most. */
  batchRows?: number;
  /** Pause between two batches, leaving the database to live traffic and replicas (default 20 ms). */
  pauseMs?: number;
  /** Time a run may take (default 45 minutes, within the hour between runs); the next run goes on. */
  budgetMs?: number;
  /** Longest wait for a lock before a batch or a partition change is left for the next run (default 50 ms). */
  lockTimeoutMs?: number;
}

export interface RetentionReport {
  /** Another run holds the retention lock: this one did nothing. */
  skipped: boolean;
  partitions: PartitionReport;
  /** Rows deleted, by table (children deleted before their run or session are counted in their own table). */
  deleted: Record<string, number>;
  /** Kinds whose deletes waited too long for a lock; the next run goes on with them. */
  deferred: HistoryKind[];
  /** False when the run's time ran out first; the next run goes on. */
  complete: boolean;
}

type Deleter = (sql: SqlPool, ctl: BatchControl, window: ExpiryWindow) => Promise<BatchOutcome>;

const DELETERS: Record<HistoryKind, Deleter> = {
  usage_events: deleteExpiredUsageEvents,
  sessions: deleteExpiredSessions,
  agent_sessions: (sql, ctl, window) => deleteExpiredAgentSessions(sql, ctl, window, AGENT_DEFAULTS.retentionDays),
  workflow_runs: deleteExpiredWorkflowRuns,
  eval_runs: deleteExpiredEvalRuns,
  audit_log: deleteExpiredAuditEntries,
  ingestion_jobs: deleteExpiredIngestionJobs,
  events: deleteExpiredEvents,
};

const DAY_MS = 24 * 3600 * 1000;
/** Tenants one set of statements covers (their ids travel as one array parameter). */
const TENANTS_PER_WINDOW = 1000;

/**
 * Deletes what every tenant's retention has passed (the hourly retention job): first whole months of
 * the partitioned histories that no tenant may keep any more (and next months' partitions are made),
 * then, kind by kind, the rows past each tenant's days, in bounded batches. Idempotent: a run cut
 * short (time, a lock, a crash) leaves nothing half done that the next run does not finish.
 */
export async function enforceRetention(deps: Pick<AppDeps, 'orm' | 'sql' | 'config'>, options: RetentionRunOptions = {}): Promise<RetentionReport> {
  const now = options.now ?? new Date();
  const deadline = Date.now() + (options.budgetMs ?? 45 * 60_000);
  const pauseMs = options.pauseMs ?? 20;
  const lockTimeoutMs = options.lockTimeoutMs ?? 50;
  const { RETENTION_DAYS: overrides, HIRING_RETENTION_FLOOR_DAYS: floor } = deps.config;
  const report: RetentionReport = { skipped: false, partitions: { created: [], dropped: [], deferred: [] }, deleted: {}, deferred: [], complete: true };
  const ctl: BatchControl = {
    rows: Math.max(1, options.batchRows ?? 5000),
    lockTimeoutMs,
    pause: () => (pauseMs > 0 ? sleep(pauseMs) : new Promise<void>((resolve) => setImmediate(resolve))),
    outOfTime: () => Date.now() > deadline,
    count: (table, rows) => {
      report.deleted[table] = (report.deleted[table] ?? 0) + rows;
    },
  };

  const ran = await withRetentionLock(deps.sql, async () => {
    report.partitions = await maintainPartitions(
      deps.sql,
      now,
      { usage_events: longestRetentionDays('usage_events', overrides, floor), session_messages: longestRetentionDays('sessions', overrides, floor) },
      { lockTimeoutMs },
    );
    const tenants = await listTenantRetention(deps.orm.em.fork(), deps.config);
    for (const kind of HISTORY_KINDS) {
      // Tenants keeping the same days share their statements.
      const byDays = new Map<number, string[]>();
      for (const t of tenants) {
        const group = byDays.get(t.days[kind]);
        if (group) group.push(t.tenantId);
        else byDays.set(t.days[kind], [t.tenantId]);
      }
      const outcome = await deleteKind(kind, byDays);
      if (outcome === 'deferred') report.deferred.push(kind);
      if (outcome === 'out_of_time') {
        report.complete = false;
        break;
      }
    }
  });
  if (ran === null) report.skipped = true;
  return report;

  async function deleteKind(kind: HistoryKind, byDays: Map<number, string[]>): Promise<BatchOutcome> {
    for (const [days, ids] of byDays) {
      const hiringDays = HISTORY_POLICY[kind].hiringFloor ? Math.max(days, floor) : days;
      for (let i = 0; i < ids.length; i += TENANTS_PER_WINDOW) {
        const window: ExpiryWindow = {
          tenantIds: ids.slice(i, i + TENANTS_PER_WINDOW),
          cutoff: new Date(now.getTime() - days * DAY_MS),
          hiringCutoff: new Date(now.getTime() - hiringDays * DAY_MS),
          now,
        };
        const outcome = await DELETERS[kind](deps.sql, ctl, window);
        if (outcome !== 'done') return outcome;
        if (ctl.outOfTime()) return 'out_of_time';
      }
    }
    return 'done';
  }
}
