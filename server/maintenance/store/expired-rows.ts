// Pruning of rows that outlived their use in tables whose features' stores have no pruning
// function yet (email_tokens, login_attempts, intent_cache, sessions, agent_sessions, agent_runs,
// workflow_state, idempotency_keys, workflow_schedule_ticks); each function deletes or closes
// rows and answers how many changed.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

const count = (n: bigint | undefined) => Number(n ?? 0n);

/** E-mail tokens expired before `now`, or used before `usedBefore`. */
export async function deleteExpiredEmailTokens(em: EntityManager, now: Date, usedBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('email_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', now), eb('used_at', '<', usedBefore)]))
    .executeTakeFirst();
  return count(result.numDeletedRows);
}

export async function deleteLoginAttemptsBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('login_attempts').where('created_at', '<', before).executeTakeFirst();
  return count(result.numDeletedRows);
}

export async function deleteExpiredIntentCache(em: EntityManager, now: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('intent_cache').where('expires_at', '<', now).executeTakeFirst();
  return count(result.numDeletedRows);
}

/** Active sessions idle since before `idleBefore` become expired. */
export async function expireIdleSessions(em: EntityManager, idleBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('sessions')
    .set({ status: 'expired' })
    .where('status', '=', 'active')
    .where('last_activity_at', '<', idleBefore)
    .executeTakeFirst();
  return count(result.numUpdatedRows);
}

/** Agent conversations idle longer than their agent's retention (`defaultDays` when it sets none). */
export async function deleteRetiredAgentSessions(em: EntityManager, now: Date, defaultDays: number): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('agent_sessions as s')
    .using('agents as a')
    .whereRef('a.id', '=', 's.agent_id')
    .where('s.last_activity_at', '<', sql<Date>`${now}::timestamptz - make_interval(days => coalesce((a.memory_config->>'retention_days')::int, ${defaultDays}))`)
    .executeTakeFirst();
  return count(result.numDeletedRows);
}

export async function deleteExpiredWorkflowState(em: EntityManager, now: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('workflow_state').where('expires_at', '<', now).executeTakeFirst();
  return count(result.numDeletedRows);
}

export async function deleteIdempotencyKeysBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('idempotency_keys').where('created_at', '<', before).executeTakeFirst();
  return count(result.numDeletedRows);
}

export async function deleteScheduleTicksBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('workflow_schedule_ticks').where('created_at', '<', before).executeTakeFirst();
  return count(result.numDeletedRows);
}

/** Agent runs still running that started before `startedBefore` are closed as failed at `now`. */
export async function failAbandonedAgentRuns(em: EntityManager, now: Date, startedBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('agent_runs')
    .set({
      status: 'failed',
      completed_at: now,
      error: sql`'{"code":"RUN_ABANDONED","message":"The process running it stopped before it ended"}'::jsonb`,
    })
    .where('status', '=', 'running')
    .where('started_at', '<', startedBefore)
    .executeTakeFirst();
  return count(result.numUpdatedRows);
}
