import { createHash } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';

// Keys: tenant + intent id + intent version + the input normalised (keys sorted, who asked removed),
// so the same question from two end users of a tenant is one entry, and any save of the intent
// starts a fresh cache.
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

export async function readIntentCache(em: EntityManager, tenantId: string, key: string): Promise<{ output: unknown; model: string } | null> {
  const [row] = await em.execute<{ output: unknown; model: string }[]>(
    'select output, model from intent_cache where cache_key = ? and tenant_id = ? and expires_at > now()',
    [key, tenantId],
  );
  return row ?? null;
}

export async function writeIntentCache(em: EntityManager, tenantId: string, key: string, output: unknown, model: string, ttlSeconds: number): Promise<void> {
  await em.execute(
    `insert into intent_cache (cache_key, tenant_id, output, model, expires_at, created_at) values (?, ?, ?::jsonb, ?, now() + make_interval(secs => ?), now())
     on conflict (cache_key) do update set output = excluded.output, model = excluded.model, expires_at = excluded.expires_at, created_at = now()`,
    [key, tenantId, JSON.stringify(output), model, ttlSeconds],
  );
}
