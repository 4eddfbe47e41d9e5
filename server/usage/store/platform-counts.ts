// Platform-wide counts of tenants and users for the admin statistics; reads only, writes nothing
// (the tenants and users tables are written by their own features' stores).
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** All tenants and the active ones, as decimal strings. */
export async function countTenantsByActivity(em: EntityManager): Promise<{ total: string; active: string }> {
  return kyselyOf(em)
    .selectFrom('tenants')
    .select([sql<string>`count(*)::text`.as('total'), sql<string>`count(*) filter (where is_active)::text`.as('active')])
    .executeTakeFirstOrThrow();
}

/** All users, as a decimal string. */
export async function countAllUsers(em: EntityManager): Promise<{ total: string }> {
  return kyselyOf(em).selectFrom('users').select(sql<string>`count(*)::text`.as('total')).executeTakeFirstOrThrow();
}
