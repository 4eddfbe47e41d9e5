// Embeds chunk texts through the model gateway (deps.llm.embed), in batches; the gateway meters each call.
import type { LlmGateway } from '../llm/llm.types.js';
import type { EntityManager } from '../../db/orm.js';

/** Inputs per embeddings call. */
export const EMBEDDING_BATCH_SIZE = 64;

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
}

/** One vector per text, in order; null when `onBatch` asked to stop. */
export async function embedTexts(em: EntityManager, llm: LlmGateway, texts: string[], options: EmbedOptions): Promise<{ vectors: Float32Array[]; model: string } | null> {
  // Resolved once: every batch goes to the same provider with the same key.
  const target = await llm.resolveTarget(em, options.tenantId, options.model);
  const usage = { tenantId: options.tenantId, kind: 'embedding' };
  const batchSize = Math.max(1, options.batchSize ?? EMBEDDING_BATCH_SIZE);
  const vectors: Float32Array[] = [];

  for (let start = 0; start < texts.length; start += batchSize) {
    const batch = texts.slice(start, start + batchSize);
    // All vectors of the texts must have one size: later batches are held to the first one's.
    const embedded = await llm.embed(em, { usage, model: options.model, target, input: batch, dimension: vectors[0]?.length });
    vectors.push(...embedded.vectors);
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
