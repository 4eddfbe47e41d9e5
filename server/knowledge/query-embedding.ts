// Query embeddings through the openai SDK (deps.llm routing + client cache), with a small LRU so a
// repeated question costs no second provider call. A failure never fails the search: the caller
// falls back to lexical ranking.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import type { LlmGatewayService } from '../llm/llm-gateway.js';
import { computeCostUsd, findModelPrice } from '../llm/prices.js';
import { recordUsage } from '../usage/usage.service.js';

const CACHE_MAX = 500;
const CACHE_TTL_MS = 10 * 60_000;
const cache = new Map<string, { vector: Float32Array; at: number }>();

function remember(key: string, vector: Float32Array) {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(key, { vector, at: Date.now() });
}

/** The gateway's routing, when the configured gateway exposes it (tests may inject a bare one). */
function routing(deps: AppDeps): Pick<LlmGatewayService, 'resolveTarget' | 'clients' | 'prices'> | null {
  const llm = deps.llm as Partial<LlmGatewayService>;
  return llm.resolveTarget && llm.clients ? (llm as LlmGatewayService) : null;
}

/**
 * The query's embedding with `model` (the model the documents were embedded with), or null when no
 * provider serves it or the call fails. The key and base URL are those the tenant's routing picks.
 */
export async function embedQuery(em: EntityManager, deps: AppDeps, tenantId: string, model: string, text: string): Promise<Float32Array | null> {
  const llm = routing(deps);
  if (!llm) return null;
  let target;
  try {
    target = await llm.resolveTarget(em, tenantId, model);
  } catch {
    return null; // no provider for this model: lexical ranking only
  }
  const key = `${tenantId}\n${target.baseURL}\n${target.tenantKey ? 'tenant' : 'platform'}\n${target.model}\n${text}`;
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < CACHE_TTL_MS) {
    cache.delete(key);
    cache.set(key, hit);
    return hit.vector;
  }
  const started = performance.now();
  try {
    const client = llm.clients.get(target.baseURL, target.apiKey);
    const res = await client.embeddings.create({ model: target.model, input: text, encoding_format: 'float' }, { timeout: 10_000, maxRetries: 1 });
    const values = res.data[0]?.embedding;
    if (!Array.isArray(values) || values.length === 0) return null;
    const vector = Float32Array.from(values);
    remember(key, vector);
    const tokens = res.usage?.prompt_tokens ?? 0;
    const price = findModelPrice(llm.prices, target.modelRef);
    await recordUsage(em, {
      tenantId,
      kind: 'knowledge_query_embedding',
      model: target.modelRef,
      promptTokens: tokens,
      costUsd: price ? computeCostUsd(price, tokens, 0) : 0,
      latencyMs: Math.round(performance.now() - started),
      countsAsRequest: false,
    }).catch((err: unknown) => deps.log.warn({ err }, 'could not record the query embedding usage'));
    return vector;
  } catch (err) {
    deps.log.warn({ err: (err as Error).message, model: target.modelRef }, 'query embedding failed: lexical ranking only');
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
