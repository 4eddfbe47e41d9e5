// Idempotency keys for the run endpoints, webhook deliveries (by webhook-id) and events. A key is
// claimed by inserting it with the run id its request will create; a repeat finds the row and
// answers that run (the same body) or refuses (another body). Keys live 24 hours.
import { createHash } from 'node:crypto';
import type { SqlPool } from '../../db/sql-pool.js';
import { AppError } from '../errors.js';
import { claimKey, deleteKey, deleteKeyWithoutResult, findKey, saveKeyResult } from './store/idempotency-keys.js';
import type { QueuedRunGuard } from './store/run-intake.js';
import { runExists } from './store/run-reads.js';

export { IDEMPOTENCY_TTL_HOURS } from './store/idempotency-keys.js';
/** A claimed key whose run never appeared this long after is abandoned (its request died). */
const ABANDONED_AFTER_SECONDS = 60;

/** 1-255 printable ASCII characters. */
export function readIdempotencyKey(headers: Record<string, string | string[] | undefined>): string | null {
  const raw = headers['idempotency-key'];
  if (raw === undefined) return null;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (typeof value !== 'string' || !/^[\x20-\x7e]{1,255}$/.test(value) || !value.trim()) {
    throw new AppError('INVALID_INPUT', 'Idempotency-Key must be 1-255 printable ASCII characters', { issues: [{ path: 'Idempotency-Key', message: 'not 1-255 printable ASCII characters', code: 'invalid_format' }] });
  }
  return value;
}

export const hashRequest = (body: unknown) => createHash('sha256').update(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body ?? null)).digest('hex');

export interface IdempotencyClaim {
  tenantId: string;
  scope: string;
  key: string;
  requestHash: string;
  runId: string | null;
}

export interface ExistingKey {
  requestHash: string;
  runId: string | null;
  result: unknown;
  ageSeconds: number;
}

/** A queued run guarded by the key's claim: the claim is written in the run's statement. */
export const idempotencyGuard = (claim: IdempotencyClaim): QueuedRunGuard => ({ claim });

async function findIdempotencyKey(sql: SqlPool, tenantId: string, scope: string, key: string): Promise<ExistingKey | null> {
  const row = await findKey(sql, tenantId, scope, key);
  return row ? { requestHash: row.request_hash, runId: row.run_id, result: row.result, ageSeconds: row.age } : null;
}

/** Gives a key back when its request failed before creating anything. */
export async function releaseIdempotencyKey(sql: SqlPool, claim: IdempotencyClaim): Promise<void> {
  await deleteKey(sql, claim);
}

export async function saveIdempotentResult(sql: SqlPool, claim: IdempotencyClaim, result: unknown): Promise<void> {
  await saveKeyResult(sql, claim, result);
}

export const keyReused = (key: string) =>
  new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body', { idempotency_key: key });

export const keyInProgress = (key: string, retryAfter = 1) =>
  new AppError('IDEMPOTENCY_IN_PROGRESS', 'The first request with this Idempotency-Key is still running; retry later', { idempotency_key: key, retry_after_seconds: retryAfter }, { 'Retry-After': String(retryAfter) });

/**
 * Claims the key or, when it is taken, finds what the first request made: its run id once the run
 * exists (waiting up to `waitMs` for the first request to create it). Throws 422 for another body;
 * an abandoned claim (no run a minute later) is dropped and claimed again.
 */
export async function claimOrFind(sql: SqlPool, claim: IdempotencyClaim, waitMs: number): Promise<{ claimed: true } | { claimed: false; existing: ExistingKey }> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await claimKey(sql, claim)) return { claimed: true };
    const existing = await findIdempotencyKey(sql, claim.tenantId, claim.scope, claim.key);
    if (!existing) continue; // released meanwhile: claim again
    if (existing.requestHash !== claim.requestHash) throw keyReused(claim.key);
    if (existing.result !== null) return { claimed: false, existing };
    // Done when its run exists (a run key) or its result is saved (a key without a run, like an event's).
    if (existing.runId !== null && (await runExists(sql, existing.runId))) return { claimed: false, existing };
    if (existing.ageSeconds > ABANDONED_AFTER_SECONDS) {
      await deleteKeyWithoutResult(sql, claim, existing.requestHash);
      continue;
    }
    if (Date.now() > deadline) throw keyInProgress(claim.key);
    await new Promise((r) => setTimeout(r, 25));
  }
}


