// The workflow_state table (values a workflow keeps between runs: set_state / get_state); this module alone writes it.
//
// Per workflow and scope: `live` for deployed runs, `test` for builder test runs, so testing never
// touches live values. Expired values are invisible everywhere and deleted by the hourly maintenance
// job. Raw SQL on the SqlPool, which the step engine runs on (loading a run's values is a prepared
// statement of the hot path); Kysely is bound to an EntityManager's connection instead.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

export type StateScope = 'live' | 'test';

export interface StateKey {
  tenantId: string;
  workflowId: string;
  scope: StateScope;
}

/** Values loaded for a run (templates and expressions read `state.<key>`); at most this many. */
const STATE_LOAD_MAX = 1000;

export async function loadState(sql: SqlPool, k: StateKey): Promise<Record<string, unknown>> {
  const rows = await sql.query<{ key: string; value: unknown }>(
    `select key, value from workflow_state where tenant_id = $1 and workflow_id = $2 and scope = $3 and (expires_at is null or expires_at > now())
      order by updated_at desc limit ${STATE_LOAD_MAX}`,
    [k.tenantId, k.workflowId, k.scope],
    'liya_workflow_state_load',
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

export async function setState(sql: SqlPool, k: StateKey, key: string, value: unknown, ttlSeconds: number | null): Promise<void> {
  await sql.query(
    `insert into workflow_state (id, tenant_id, workflow_id, scope, key, value, expires_at, updated_at)
     values (gen_random_uuid(), $1, $2, $3, $4, $5::jsonb, case when $6::int is null then null else now() + make_interval(secs => $6::int) end, now())
     on conflict (workflow_id, scope, key) do update set value = excluded.value, expires_at = excluded.expires_at, updated_at = now()`,
    [k.tenantId, k.workflowId, k.scope, key, JSON.stringify(value ?? null), ttlSeconds],
  );
}

export async function readStateValue(sql: SqlPool, k: StateKey, key: string): Promise<{ found: boolean; value: unknown }> {
  const [row] = await sql.query<{ value: unknown }>(
    `select value from workflow_state where tenant_id = $1 and workflow_id = $2 and scope = $3 and key = $4 and (expires_at is null or expires_at > now())`,
    [k.tenantId, k.workflowId, k.scope, key],
  );
  return row ? { found: true, value: row.value } : { found: false, value: null };
}

/** The live (unexpired) values of a workflow's scope, by key. */
export async function listStateEntries(sql: SqlPool, k: StateKey) {
  return sql.query<{ key: string; value: unknown; expires_at: Date | null; updated_at: Date }>(
    `select key, value, expires_at, updated_at from workflow_state
      where tenant_id = $1 and workflow_id = $2 and scope = $3 and (expires_at is null or expires_at > now()) order by key`,
    [k.tenantId, k.workflowId, k.scope],
  );
}

/** Whether a live (unexpired) value was there to delete. */
export async function deleteStateEntry(sql: SqlPool, k: StateKey, key: string): Promise<boolean> {
  const rows = await sql.query<{ expired: boolean }>(
    `delete from workflow_state where tenant_id = $1 and workflow_id = $2 and scope = $3 and key = $4
     returning (expires_at is not null and expires_at <= now()) as expired`,
    [k.tenantId, k.workflowId, k.scope, key],
  );
  return rows.length > 0 && !rows[0].expired;
}

export async function deleteExpiredWorkflowState(em: EntityManager, now: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('workflow_state').where('expires_at', '<', now).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}

/** Deletes the tenant's saved values whose key or value names the end user (`patterns`: common/mentions.ts); how many. */
export async function deleteStateMentioning(em: EntityManager, tenantId: string, patterns: { json: string; text: string }): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('workflow_state')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb('key', 'like', patterns.text), eb(sql<string>`value::text`, 'like', patterns.json)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
