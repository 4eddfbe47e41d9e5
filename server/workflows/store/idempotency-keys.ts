// The idempotency_keys table (run endpoints, webhook deliveries, events); this module alone writes it.
//
// Raw SQL on the SqlPool: the claim is a prepared statement of the run and webhook intake, and is
// also embedded as the guard of a queued run's statement (run-admission.ts); the other statements
// read and write the same rows on the same pool (Kysely is bound to an EntityManager's connection).
import { anyId } from '../../../db/id-list.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

export const IDEMPOTENCY_TTL_HOURS = 24;

interface KeyClaim {
  tenantId: string;
  scope: string;
  key: string;
  requestHash: string;
  runId: string | null;
}

// The key is taken when absent or expired (an expired row is taken over in place).
const CLAIM_SQL = `
  insert into idempotency_keys (tenant_id, scope, key, request_hash, run_id, result, created_at) values ($1, $2, $3, $4, $5, null, now())
  on conflict (tenant_id, scope, key) do update set request_hash = excluded.request_hash, run_id = excluded.run_id, result = null, created_at = now()
   where idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
  returning 1`;

/**
 * Claims the keys of several requests at once, inside a larger statement: `source` names a
 * relation with columns tenant_id, claim_scope, claim_key, request_hash and id (the run a key is
 * claimed for; rows whose claim_key is null claim nothing; no two rows may name the same key). As
 * CLAIM_SQL, per row; returns the run_id of each key taken.
 */
export const claimKeysSql = (source: string) => `
  insert into idempotency_keys (tenant_id, scope, key, request_hash, run_id, result, created_at)
  select tenant_id, claim_scope, claim_key, request_hash, id, null, now() from ${source} where claim_key is not null
  on conflict (tenant_id, scope, key) do update set request_hash = excluded.request_hash, run_id = excluded.run_id, result = null, created_at = now()
   where idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
  returning run_id`;

/** The statement (and its params, $1-$5) that claims a key; usable inside a larger statement. */
export const claimKeyStatement = (claim: KeyClaim) => ({ text: CLAIM_SQL, params: [claim.tenantId, claim.scope, claim.key, claim.requestHash, claim.runId] });

/** Whether the key was free (absent or expired) and is now the claim's. */
export async function claimKey(sql: SqlPool, claim: KeyClaim): Promise<boolean> {
  const rows = await sql.query(CLAIM_SQL, claimKeyStatement(claim).params, 'liya_idempotency_claim');
  return rows.length > 0;
}

export async function findKey(sql: SqlPool, tenantId: string, scope: string, key: string) {
  const [row] = await sql.query<{ request_hash: string; run_id: string | null; result: unknown; age: number }>(
    `select request_hash, run_id::text, result, extract(epoch from now() - created_at)::float8 as age from idempotency_keys where tenant_id = $1 and scope = $2 and key = $3`,
    [tenantId, scope, key],
  );
  return row ?? null;
}

/** The run a key names. */
export async function findKeyRun(sql: SqlPool, tenantId: string, scope: string, key: string): Promise<{ run_id: string | null } | undefined> {
  return (await sql.query<{ run_id: string | null }>('select run_id::text from idempotency_keys where tenant_id = $1 and scope = $2 and key = $3', [tenantId, scope, key]))[0];
}

/** Deletes the claim's key (of its request body). */
export async function deleteKey(sql: SqlPool, claim: KeyClaim): Promise<void> {
  await sql.query('delete from idempotency_keys where tenant_id = $1 and scope = $2 and key = $3 and request_hash = $4', [claim.tenantId, claim.scope, claim.key, claim.requestHash]);
}

/** Deletes a key of `requestHash` that has no result saved (an abandoned claim). */
export async function deleteKeyWithoutResult(sql: SqlPool, claim: KeyClaim, requestHash: string): Promise<void> {
  await sql.query('delete from idempotency_keys where tenant_id = $1 and scope = $2 and key = $3 and request_hash = $4 and result is null', [claim.tenantId, claim.scope, claim.key, requestHash]);
}

export async function saveKeyResult(sql: SqlPool, claim: KeyClaim, result: unknown): Promise<void> {
  await sql.query('update idempotency_keys set result = $5::jsonb where tenant_id = $1 and scope = $2 and key = $3 and request_hash = $4', [claim.tenantId, claim.scope, claim.key, claim.requestHash, JSON.stringify(result)]);
}

/** Points the claim's key at `runId`. */
export async function setKeyRun(sql: SqlPool, claim: KeyClaim, runId: string): Promise<void> {
  await sql.query('update idempotency_keys set run_id = $5 where tenant_id = $1 and scope = $2 and key = $3 and request_hash = $4', [claim.tenantId, claim.scope, claim.key, claim.requestHash, runId]);
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
