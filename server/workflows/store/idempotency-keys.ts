// The idempotency_keys table (run endpoints, webhook deliveries, events); this module alone writes
// it. The claim is also the guard of a queued run's statement (run-intake.ts embeds
// claimKeyInsert and claimKeysFrom, built here), so a run and its key are written together.
//
// On the SqlPool, built with db/statements.ts: the claim is a named prepared statement of the run
// and webhook intake; the other statements read and write the same rows on the same pool.
import { sql, type Expression, type OnConflictBuilder } from 'kysely';
import { anyId } from '../../../db/id-list.js';
import { kyselyOf, type Database } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';

export const IDEMPOTENCY_TTL_HOURS = 24;

export interface KeyClaim {
  tenantId: string;
  scope: string;
  key: string;
  requestHash: string;
  runId: string | null;
}

/** The key is taken when absent or expired (an expired row is taken over in place). */
const takeExpired = (oc: OnConflictBuilder<Database, 'idempotency_keys'>) =>
  oc
    .columns(['tenant_id', 'scope', 'key'])
    .doUpdateSet((eb) => ({ request_hash: eb.ref('excluded.request_hash'), run_id: eb.ref('excluded.run_id'), result: sql.lit(null), created_at: sql<Date>`now()` }))
    .where('idempotency_keys.created_at', '<', sql<Date>`now() - make_interval(hours => ${sql.lit(IDEMPOTENCY_TTL_HOURS)})`);

/** The insert that claims a key, returning a row when it was free; usable as a CTE of a larger statement. */
export const claimKeyInsert = (claim: KeyClaim) =>
  build
    .insertInto('idempotency_keys')
    .values({ tenant_id: claim.tenantId, scope: claim.scope, key: claim.key, request_hash: claim.requestHash, run_id: claim.runId, result: sql.lit(null), created_at: sql<Date>`now()` })
    .onConflict(takeExpired)
    .returning(sql.lit(1).as('one'));

/**
 * Claims the keys of several requests at once, inside a larger statement: `rows` selects, in this
 * order, tenant_id, scope, key, request_hash, run_id (the run a key is claimed for), result (null)
 * and created_at (now()), one row per key (no two rows may name the same key). As
 * claimKeyInsert, per row; returns the run_id of each key taken.
 */
export const claimKeysFrom = (rows: Expression<unknown>) =>
  build
    .insertInto('idempotency_keys')
    .columns(['tenant_id', 'scope', 'key', 'request_hash', 'run_id', 'result', 'created_at'])
    .expression(rows)
    .onConflict(takeExpired)
    .returning('run_id');

const CLAIM = statement<KeyClaim>()('liya_idempotency_claim', (p) => claimKeyInsert(p));

/** Whether the key was free (absent or expired) and is now the claim's. */
export async function claimKey(sql: SqlPool, claim: KeyClaim): Promise<boolean> {
  const rows = await CLAIM.run(sql, claim);
  return rows.length > 0;
}

const keyOf = (tenantId: string, scope: string, key: string) =>
  build.selectFrom('idempotency_keys').where('tenant_id', '=', tenantId).where('scope', '=', scope).where('key', '=', key);

/** A key's age in seconds. */
const KEY_AGE = sql<number>`extract(epoch from now() - ${sql.ref('created_at')})::float8`.as('age');

export async function findKey(sql: SqlPool, tenantId: string, scope: string, key: string) {
  const [row] = await runBuilt(sql, keyOf(tenantId, scope, key).select(['request_hash', 'run_id', 'result', KEY_AGE]));
  return row ?? null;
}

/** The run a key names. */
export async function findKeyRun(sql: SqlPool, tenantId: string, scope: string, key: string): Promise<{ run_id: string | null } | undefined> {
  return (await runBuilt(sql, keyOf(tenantId, scope, key).select('run_id')))[0];
}

/** Deletes the claim's key (of its request body). */
export async function deleteKey(sql: SqlPool, claim: KeyClaim): Promise<void> {
  await deleteKeyOf(sql, claim, claim.requestHash, false);
}

/** Deletes a key of `requestHash` that has no result saved (an abandoned claim). */
export async function deleteKeyWithoutResult(sql: SqlPool, claim: KeyClaim, requestHash: string): Promise<void> {
  await deleteKeyOf(sql, claim, requestHash, true);
}

async function deleteKeyOf(sql: SqlPool, claim: KeyClaim, requestHash: string, withoutResult: boolean): Promise<void> {
  await runBuilt(
    sql,
    build
      .deleteFrom('idempotency_keys')
      .where('tenant_id', '=', claim.tenantId)
      .where('scope', '=', claim.scope)
      .where('key', '=', claim.key)
      .where('request_hash', '=', requestHash)
      .$if(withoutResult, (qb) => qb.where('result', 'is', null)),
  );
}

/** The claim's key, of its request body. */
const claimedKeyOf = (claim: KeyClaim) =>
  build
    .updateTable('idempotency_keys')
    .where('tenant_id', '=', claim.tenantId)
    .where('scope', '=', claim.scope)
    .where('key', '=', claim.key)
    .where('request_hash', '=', claim.requestHash);

/** The result as jsonb (pg would send an array as a PostgreSQL array). */
const jsonb = (value: unknown) => sql<unknown>`${JSON.stringify(value)}::jsonb`;

export async function saveKeyResult(sql: SqlPool, claim: KeyClaim, result: unknown): Promise<void> {
  await runBuilt(sql, claimedKeyOf(claim).set({ result: jsonb(result) }));
}

/** Points the claim's key at `runId`. */
export async function setKeyRun(sql: SqlPool, claim: KeyClaim, runId: string): Promise<void> {
  await runBuilt(sql, claimedKeyOf(claim).set({ run_id: runId }));
}

export async function deleteIdempotencyKeysBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('idempotency_keys').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}

/** Deletes the tenant's keys of the runs `runIds` (a key keeps its run's answer); how many. */
export async function deleteKeysOfRuns(em: EntityManager, tenantId: string, runIds: string[]): Promise<number> {
  if (!runIds.length) return 0;
  const result = await kyselyOf(em).deleteFrom('idempotency_keys').where('tenant_id', '=', tenantId).where(anyId('run_id', runIds)).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
