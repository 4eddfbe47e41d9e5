import type { EntityManager } from '../../db/orm.js';

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
    workerHeartbeats: await run('delete from worker_heartbeats where last_seen_at < ?', [new Date(now.getTime() - day)]),
    intentCache: await run('delete from intent_cache where expires_at < ?', [now]),
    expiredSessions: await run(`update sessions set status = 'expired' where status = 'active' and last_activity_at < ?`, [new Date(now.getTime() - sessionTtlSeconds * 1000)]),
  };
}
