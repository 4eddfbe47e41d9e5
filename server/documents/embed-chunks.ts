// Embeds chunk texts through the openai SDK (embeddings.create), in batches, metering each call.
import type { LlmGateway } from '../llm/llm.types.js';
import type { LlmGatewayService } from '../llm/llm-gateway.js';
import { computeCostUsd, findModelPrice } from '../llm/prices.js';
import type { EntityManager } from '../../db/orm.js';
import { AppError } from '../errors.js';
import { recordUsage as recordUsageDefault, type UsageEventInput } from '../usage/usage.service.js';

/** Inputs per embeddings call. */
export const EMBEDDING_BATCH_SIZE = 64;

type EmbeddingAccess = Pick<LlmGatewayService, 'resolveTarget' | 'clients' | 'prices'>;

/** The gateway's routing and SDK clients (the production gateway has them; a bare test double may not). */
export function embeddingAccess(llm: LlmGateway): EmbeddingAccess {
  const candidate = llm as Partial<EmbeddingAccess>;
  if (typeof candidate.resolveTarget !== 'function' || !candidate.clients || !candidate.prices) {
    throw new AppError('LLM_NOT_CONFIGURED', 'The model gateway in use cannot create embeddings');
  }
  return candidate as EmbeddingAccess;
}

export interface EmbedOptions {
  tenantId: string;
  /** `model` or `provider/model`, routed like chat models. */
  model: string;
  /** Inputs per call (default EMBEDDING_BATCH_SIZE). */
  batchSize?: number;
  /**
   * Called after each batch with the number of texts embedded so far; returning false stops the
   * work (the job was cancelled) and embedTexts returns null.
   */
  onBatch?: (done: number, total: number) => Promise<boolean>;
  /** Writes one usage event (default recordUsage). */
  recordUsage?: (em: EntityManager, input: UsageEventInput) => Promise<void>;
}

/** One vector per text, in order; null when `onBatch` asked to stop. */
export async function embedTexts(em: EntityManager, llm: LlmGateway, texts: string[], options: EmbedOptions): Promise<{ vectors: Float32Array[]; model: string } | null> {
  const access = embeddingAccess(llm);
  const record = options.recordUsage ?? recordUsageDefault;
  const target = await access.resolveTarget(em, options.tenantId, options.model);
  const client = access.clients.get(target.baseURL, target.apiKey);
  const batchSize = Math.max(1, options.batchSize ?? EMBEDDING_BATCH_SIZE);
  const vectors: Float32Array[] = [];
  let dimension: number | null = null;

  for (let start = 0; start < texts.length; start += batchSize) {
    const batch = texts.slice(start, start + batchSize);
    const started = performance.now();
    let response;
    try {
      response = await client.embeddings.create({ model: target.model, input: batch });
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      throw new AppError('LLM_PROVIDER_ERROR', `The model provider "${target.provider}" ${typeof status === 'number' ? `answered HTTP ${status}` : 'could not be reached'} while embedding`, {
        provider: target.provider,
        ...(typeof status === 'number' ? { status } : {}),
      });
    }
    const latencyMs = Math.round(performance.now() - started);
    const ordered = [...response.data].sort((x, y) => x.index - y.index);
    if (ordered.length !== batch.length) {
      throw new AppError('LLM_PROVIDER_ERROR', `The model provider "${target.provider}" returned ${ordered.length} embeddings for ${batch.length} inputs`, { provider: target.provider });
    }
    for (const item of ordered) {
      const vector = Float32Array.from(item.embedding);
      dimension ??= vector.length;
      if (vector.length !== dimension || vector.length === 0) {
        throw new AppError('LLM_PROVIDER_ERROR', `The model provider "${target.provider}" returned embeddings of different sizes`, { provider: target.provider });
      }
      vectors.push(vector);
    }
    const promptTokens = response.usage?.prompt_tokens ?? 0;
    const costUsd = computeCostUsd(findModelPrice(access.prices, target.modelRef, target.model, response.model), promptTokens, 0);
    await record(em, { tenantId: options.tenantId, kind: 'embedding', model: target.modelRef, promptTokens, costUsd, latencyMs, countsAsRequest: false });
    if (options.onBatch && !(await options.onBatch(vectors.length, texts.length))) return null;
  }
  return { vectors, model: target.modelRef };
}

/** A vector as stored in document_chunks.embedding: Float32, little-endian (read back by knowledge/query-embedding.ts decodeEmbedding). */
export function encodeEmbedding(vector: Float32Array): Buffer {
  const out = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => out.writeFloatLE(value, i * 4));
  return out;
}
