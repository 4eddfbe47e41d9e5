import { createHash } from 'node:crypto';
import type { SqlPool } from '../../db/sql-pool.js';

// Keys: tenant + intent id + intent version + the input normalised (keys sorted, who asked removed),
// so the same question from two end users of a tenant is one entry, and any save of the intent
// starts a fresh cache. Entries are written with the run (run-record.ts).
const IGNORED_INPUT_KEYS = new Set(['user_id']);

function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as Record<string, unknown>)
        .sort()
        .map((k) => [k, normalise((value as Record<string, unknown>)[k])]),
    );
  }
  return typeof value === 'string' ? value.trim() : value;
}

export function intentCacheKey(tenantId: string, intentId: string, version: number, input: Record<string, unknown>): string {
  const kept = Object.fromEntries(Object.entries(input).filter(([k]) => !IGNORED_INPUT_KEYS.has(k)));
  return createHash('sha256').update(JSON.stringify([tenantId, intentId, version, normalise(kept)])).digest('hex');
}

export async function readIntentCache(sql: SqlPool, tenantId: string, key: string): Promise<{ output: unknown; model: string } | null> {
  const [row] = await sql.query<{ output: unknown; model: string }>(
    'select output, model from intent_cache where cache_key = $1 and tenant_id = $2 and expires_at > now()',
    [key, tenantId],
  );
  return row ?? null;
}
