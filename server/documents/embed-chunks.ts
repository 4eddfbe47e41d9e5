// Embeds chunk texts through the model gateway (deps.llm.embed), in batches; the gateway meters each call.
// A batch the provider refuses for a while (a rate limit, an outage) waits and is tried again within
// the patience given (llm/ride-out.ts), rather than failing the document at its first refusal.
import type { LlmGateway } from '../llm/llm.types.js';
import { rideOut, RideOutAborted, type ProviderWait } from '../llm/ride-out.js';
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
  /** How long a batch may wait out a provider failure that time may cure (PROVIDER_PATIENCE_MS; default 0: none). */
  patienceMs?: number;
  /** Told before each such wait; returning false stops the work (the job was cancelled) and embedTexts returns null. */
  onWait?: (wait: ProviderWait) => Promise<boolean>;
}

/** One vector per text, in order; null when `onBatch` or `onWait` asked to stop. */
export async function embedTexts(em: EntityManager, llm: LlmGateway, texts: string[], options: EmbedOptions): Promise<{ vectors: Float32Array[]; model: string } | null> {
  // Resolved once: every batch goes to the same provider with the same key.
  const target = await llm.resolveTarget(em, options.tenantId, options.model);
  const usage = { tenantId: options.tenantId, kind: 'embedding' };
  const batchSize = Math.max(1, options.batchSize ?? EMBEDDING_BATCH_SIZE);
  const vectors: Float32Array[] = [];
  const stop = new AbortController();
  const patience = {
    patienceMs: options.patienceMs ?? 0,
    signal: stop.signal,
    onWait: async (wait: ProviderWait) => {
      if (options.onWait && !(await options.onWait(wait))) stop.abort();
    },
  };

  for (let start = 0; start < texts.length; start += batchSize) {
    const batch = texts.slice(start, start + batchSize);
    // All vectors of the texts must have one size: later batches are held to the first one's.
    const embedded = await rideOut(() => llm.embed(em, { usage, model: options.model, target, input: batch, dimension: vectors[0]?.length }), patience).catch((err: unknown) => {
      if (err instanceof RideOutAborted) return null;
      throw err;
    });
    if (!embedded) return null;
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
