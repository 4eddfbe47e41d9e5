import { createHash } from 'node:crypto';

// Keys: tenant + intent id + intent version + the input normalised (keys sorted, who asked removed),
// so the same question from two end users of a tenant is one entry, and any save of the intent
// starts a fresh cache. Entries are read with the run's other data (run-context.ts) and written
// with the run (run-record.ts).
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
