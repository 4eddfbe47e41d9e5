// The agent_user_memory table (per end user preferences and facts); this module alone writes it.
// The run path's statements run on the SqlPool, as they did before the move: the run path (and its
// tools) has no unit of work of its own, and agent runs are benchmarked by round trips. An erasure
// deletes through Kysely, in the erasure's own transaction.
import { sql as kysql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import { build, runBuilt } from '../../../db/statements.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

export type MemoryKind = 'preference' | 'memory';

/** Entries kept per end user and kind; the oldest go first beyond it. */
export const MEMORY_MAX_ENTRIES = 200;

export interface MemoryScope {
  tenantId: string;
  agentId: string;
  userId: string;
}

/** The user's entries of that kind (or the one with `key`), newest first, at most MEMORY_MAX_ENTRIES. */
export async function listUserMemory(sql: SqlPool, scope: MemoryScope, kind: MemoryKind, key: string | null): Promise<{ key: string; value: unknown }[]> {
  return (await runBuilt(
    sql,
    build
      .selectFrom('agent_user_memory')
      .select(['key', 'value'])
      .where('tenant_id', '=', scope.tenantId)
      .where('agent_id', '=', scope.agentId)
      .where('user_id', '=', scope.userId)
      .where('kind', '=', kind)
      .$if(key !== null, (qb) => qb.where('key', '=', key!))
      .orderBy('updated_at', 'desc')
      .limit(kysql.lit(MEMORY_MAX_ENTRIES)),
  )) as { key: string; value: unknown }[];
}

/** Upserts entries (at most MEMORY_MAX_ENTRIES, given as one object), then trims the user's entries of that kind to the newest MEMORY_MAX_ENTRIES. */
export async function upsertUserMemory(sql: SqlPool, scope: MemoryScope, kind: MemoryKind, entries: Record<string, unknown>): Promise<void> {
  // Raw(other): on the SqlPool, as before; one statement (jsonb_each input, upsert and trim) is one round trip.
  await sql.query(
    `with input as (select e.key, e.value from jsonb_each($5::jsonb) as e(key, value)),
     upserted as (
       insert into agent_user_memory (id, tenant_id, agent_id, user_id, kind, key, value, created_at, updated_at)
       select gen_random_uuid(), $1, $2, $3, $4, left(key, 200), value, now(), now() from input
       on conflict (tenant_id, agent_id, user_id, kind, key) do update set value = excluded.value, updated_at = now()
       returning id
     )
     delete from agent_user_memory where id in (
       select id from agent_user_memory where tenant_id = $1 and agent_id = $2 and user_id = $3 and kind = $4
        order by updated_at desc offset ${MEMORY_MAX_ENTRIES})`,
    [scope.tenantId, scope.agentId, scope.userId, kind, JSON.stringify(entries)],
  );
}

/** Deletes every entry the tenant's agents keep about the end user; how many. */
export async function deleteUserMemory(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const db = kyselyOf(em);
  // Agent by agent, so each lookup is a prefix of the (tenant_id, agent_id, user_id, kind, key) unique index.
  const result = await db
    .deleteFrom('agent_user_memory')
    .where('tenant_id', '=', tenantId)
    .where('agent_id', 'in', db.selectFrom('agents').select('id').where('tenant_id', '=', tenantId))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
