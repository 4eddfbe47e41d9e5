// Query embeddings through the model gateway (deps.llm.embed: routing, provider call, metering), with
// a small LRU so a repeated question costs no second provider call. A failure never fails the
// search: the caller falls back to lexical ranking.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import type { EmbeddingCache } from '../llm/llm.types.js';
import { onTenantDeleted } from '../tenants/tenant-caches.js';

const CACHE_MAX = 500;
const CACHE_TTL_MS = 10 * 60_000;
const cache = new Map<string, { vectors: Float32Array[]; at: number }>();
// Keys begin with the tenant's id (the gateway's embeddingCacheKey) and hold its users' questions.
onTenantDeleted((tenantId) => {
  for (const key of cache.keys()) if (key.startsWith(`${tenantId}\n`)) cache.delete(key);
});

/** The LRU the gateway consults by route and text (a hit is moved to the back). */
const queryCache: EmbeddingCache = {
  get(key) {
    const hit = cache.get(key);
    if (!hit || Date.now() - hit.at >= CACHE_TTL_MS) return undefined;
    cache.delete(key);
    cache.set(key, hit);
    return hit.vectors;
  },
  set(key, vectors) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(key, { vectors, at: Date.now() });
  },
};

/**
 * The query's embedding with `model` (the model the documents were embedded with), or null when no
 * provider serves it or the call fails. The key and base URL are those the tenant's routing picks.
 */
export async function embedQuery(em: EntityManager, deps: AppDeps, tenantId: string, model: string, text: string): Promise<Float32Array | null> {
  try {
    const { vectors } = await deps.llm.embed(em, {
      usage: { tenantId, kind: 'knowledge_query_embedding' }, model, input: text, encodingFormat: 'float',
      timeoutMs: 10_000, maxRetries: 1, cache: queryCache, usageBestEffort: true,
    });
    return vectors[0] ?? null;
  } catch (err) {
    // No provider for this model is no failure: lexical ranking only, without a word.
    if (!(err instanceof AppError && err.code === 'LLM_NOT_CONFIGURED')) {
      deps.log.warn({ err: (err as Error).message, model }, 'query embedding failed: lexical ranking only');
    }
    return null;
  }
}

/** Float32 little-endian bytes -> vector (null for anything that is not a whole number of floats). */
export function decodeEmbedding(bytes: Buffer | null | undefined): Float32Array | null {
  if (!bytes || bytes.length === 0 || bytes.length % 4 !== 0) return null;
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Number.NaN;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
