// The login_attempts table (every login, for the per-e-mail rate limit); this module alone writes it.
import { sql } from 'kysely';
import { LoginAttempt } from '../../../db/entities/user.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/**
 * Failed logins of the e-mail since `windowStart` and since its last successful login: how many,
 * and when the oldest of them was.
 */
export async function countRecentLoginFailures(em: EntityManager, email: string, windowStart: Date): Promise<{ failures: number; oldest: Date | null }> {
  const row = await kyselyOf(em)
    .selectFrom('login_attempts')
    .select([sql<string>`count(*)::text`.as('failures'), sql<Date | null>`min(created_at)`.as('oldest')])
    .where('email', '=', email)
    .where('succeeded', '=', false)
    .where(
      'created_at',
      '>',
      sql<Date>`greatest(${windowStart}::timestamptz, coalesce((select max(created_at) from login_attempts where email = ${email} and succeeded), '-infinity'))`,
    )
    .executeTakeFirst();
  return { failures: Number(row?.failures ?? 0), oldest: row?.oldest ?? null };
}

/** Records a login attempt now. */
export async function insertLoginAttempt(em: EntityManager, values: { email: string; succeeded: boolean; ip: string }): Promise<void> {
  em.create(LoginAttempt, values);
  await em.flush();
}

export async function deleteLoginAttemptsBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('login_attempts').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
