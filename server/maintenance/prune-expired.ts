import type { EntityManager } from '../../db/orm.js';
import { AGENT_DEFAULTS } from '../agents/agent-runtime-config.js';
import { IDEMPOTENCY_TTL_HOURS } from '../workflows/idempotency.js';

/**
 * Deletes rows that have outlived their use and expires idle sessions; returns how many of each
 * kind changed. `sessionTtlSeconds` defaults to 24 h.
 */
export async function pruneExpiredRows(em: EntityManager, now = new Date(), sessionTtlSeconds = 24 * 3600) {
  const day = 24 * 3600 * 1000;
  const run = async (sql: string, params: unknown[]) => (await em.execute<{ affectedRows: number }>(sql, params, 'run')).affectedRows ?? 0;
  return {
    emailTokens: await run('delete from email_tokens where expires_at < ? or used_at < ?', [now, new Date(now.getTime() - day)]),
    loginAttempts: await run('delete from login_attempts where created_at < ?', [new Date(now.getTime() - day)]),
    outboxMessages: await run('delete from outbox_messages where sent_at < ?', [new Date(now.getTime() - 30 * day)]),
    // The daily mail quota reads only today's count (UTC); a day's margin covers clocks that differ.
    mailDayCounts: await run('delete from mail_day_counts where day < ?::date', [new Date(now.getTime() - 2 * day).toISOString().slice(0, 10)]),
    workerHeartbeats: await run('delete from worker_heartbeats where last_seen_at < ?', [new Date(now.getTime() - day)]),
    intentCache: await run('delete from intent_cache where expires_at < ?', [now]),
    expiredSessions: await run(`update sessions set status = 'expired' where status = 'active' and last_activity_at < ?`, [new Date(now.getTime() - sessionTtlSeconds * 1000)]),
    // Each agent keeps conversations for its memory_config.retention_days (default 30); runs and
    // transcripts go with the session.
    agentSessions: await run(
      `delete from agent_sessions s using agents a
        where a.id = s.agent_id and s.last_activity_at < ?::timestamptz - make_interval(days => coalesce((a.memory_config->>'retention_days')::int, ?))`,
      [now, AGENT_DEFAULTS.retentionDays],
    ),
    workflowState: await run('delete from workflow_state where expires_at < ?', [now]),
    // Idempotency keys (and webhook-ids) answer repeats for 24 h; older ones are dead weight.
    idempotencyKeys: await run('delete from idempotency_keys where created_at < ?', [new Date(now.getTime() - IDEMPOTENCY_TTL_HOURS * 3600 * 1000)]),
    // A schedule tick's row guards its one run; a week is far past any late tick job.
    scheduleTicks: await run('delete from workflow_schedule_ticks where created_at < ?', [new Date(now.getTime() - 7 * day)]),
    // A run still "running" an hour after it started lost its process (a synchronous run never
    // takes that long): it is closed as failed rather than left open for ever.
    abandonedAgentRuns: await run(
      `update agent_runs set status = 'failed', completed_at = ?, error = '{"code":"RUN_ABANDONED","message":"The process running it stopped before it ended"}'::jsonb
        where status = 'running' and started_at < ?`,
      [now, new Date(now.getTime() - 3600 * 1000)],
    ),
  };
}
