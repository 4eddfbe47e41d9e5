// The workflow_state table (values a workflow keeps between runs: set_state / get_state); this module alone writes it.
//
// Per workflow and scope: `live` for deployed runs, `test` for builder test runs, so testing never
// touches live values. Expired values are invisible everywhere and deleted by the hourly maintenance
// job. On the SqlPool, which the step engine runs on, built with db/statements.ts (loading a run's
// values is a named prepared statement of the hot path); the maintenance and erasure deletes run
// through Kysely in their own unit of work.
import { sql, type ExpressionBuilder } from 'kysely';
import { kyselyOf, type Database } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';

export type StateScope = 'live' | 'test';

export interface StateKey {
  tenantId: string;
  workflowId: string;
  scope: StateScope;
}

/** Values loaded for a run (templates and expressions read `state.<key>`); at most this many. */
const STATE_LOAD_MAX = 1000;

/** A value not expired. */
const live = (eb: ExpressionBuilder<Database, 'workflow_state'>) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]);

/** The values of a workflow's scope. */
const scopeOf = (k: StateKey) => build.selectFrom('workflow_state').where('tenant_id', '=', k.tenantId).where('workflow_id', '=', k.workflowId).where('scope', '=', k.scope);

const LOAD = statement<StateKey>()('liya_workflow_state_load', (p) =>
  scopeOf(p).select(['key', 'value']).where(live).orderBy('updated_at', 'desc').limit(sql.lit(STATE_LOAD_MAX)),
);

export async function loadState(sql: SqlPool, k: StateKey): Promise<Record<string, unknown>> {
  const rows = await LOAD.run(sql, { tenantId: k.tenantId, workflowId: k.workflowId, scope: k.scope });
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

const setting = (k: StateKey, key: string, value: unknown, ttlSeconds: number | null) =>
  build
    .insertInto('workflow_state')
    .values({
      id: sql<string>`gen_random_uuid()`, tenant_id: k.tenantId, workflow_id: k.workflowId, scope: k.scope, key, value: sql<unknown>`${JSON.stringify(value ?? null)}::jsonb`,
      expires_at: sql<Date | null>`case when ${ttlSeconds}::int is null then null else now() + make_interval(secs => ${ttlSeconds}::int) end`,
      updated_at: sql<Date>`now()`,
    })
    .onConflict((oc) =>
      oc.columns(['workflow_id', 'scope', 'key']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), expires_at: eb.ref('excluded.expires_at'), updated_at: sql<Date>`now()` })),
    );

export async function setState(sql: SqlPool, k: StateKey, key: string, value: unknown, ttlSeconds: number | null): Promise<void> {
  await runBuilt(sql, setting(k, key, value, ttlSeconds));
}

export async function readStateValue(sql: SqlPool, k: StateKey, key: string): Promise<{ found: boolean; value: unknown }> {
  const [row] = await runBuilt(sql, scopeOf(k).select('value').where('key', '=', key).where(live));
  return row ? { found: true, value: row.value } : { found: false, value: null };
}

/** The live (unexpired) values of a workflow's scope, by key. */
export async function listStateEntries(sql: SqlPool, k: StateKey) {
  return runBuilt(sql, scopeOf(k).select(['key', 'value', 'expires_at', 'updated_at']).where(live).orderBy('key'));
}

const deletion = (k: StateKey, key: string) =>
  build
    .deleteFrom('workflow_state')
    .where('tenant_id', '=', k.tenantId)
    .where('workflow_id', '=', k.workflowId)
    .where('scope', '=', k.scope)
    .where('key', '=', key)
    .returning((eb) => eb.and([eb('expires_at', 'is not', null), eb('expires_at', '<=', sql<Date>`now()`)]).as('expired'));

/** Whether a live (unexpired) value was there to delete. */
export async function deleteStateEntry(sql: SqlPool, k: StateKey, key: string): Promise<boolean> {
  const rows = await runBuilt(sql, deletion(k, key));
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
