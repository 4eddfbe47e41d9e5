// Optional pgvector support. Chunk embeddings are always stored as Float32 bytes
// (document_chunks.embedding), which works on any PostgreSQL, the embedded one included (it has no
// pgvector). When the database has the `vector` extension — created by an operator, or by Liya at
// start-up when its role may — every embedding is also kept in document_chunks.embedding_vector and
// the vector leg of retrieval ranks all chunks in scope inside PostgreSQL (`<=>`, cosine distance)
// instead of loading vectors into Node. The column has no fixed dimension (documents may be embedded
// with different models), so the ranking is an exact scan, not an approximate index.
import type { Logger } from 'pino';
import type { SqlPool } from '../../db/sql-pool.js';
import { selectChunksWithoutVector, updateChunkVectors } from '../documents/store/document-chunks.js';
import { decodeEmbedding } from './query-embedding.js';
import { addEmbeddingVectorColumn, createVectorExtension, selectVectorExtensionInstalled, selectVectorExtensionState } from './store/vector-support.js';

const BACKFILL_BATCH = 500;

/** pgvector's text form of a vector: `[0.1,0.2,...]`. */
export const toVectorLiteral = (vector: Float32Array): string => `[${Array.from(vector).join(',')}]`;

/**
 * Whether pgvector is in use: enables the extension when it is available but not created (this
 * needs a role allowed to create it, usually a superuser), and adds the vector column. Any failure
 * leaves the portable path on, with one log line saying why.
 */
export async function enableVectorSupport(sql: SqlPool, log: Logger): Promise<boolean> {
  const state = await selectVectorExtensionState(sql);
  if (!state.available) return false;
  try {
    if (!state.installed) {
      // Processes starting together race here; the loser's duplicate-key error means it is there.
      await createVectorExtension(sql).catch(async (err: unknown) => {
        if (!(await selectVectorExtensionInstalled(sql))) throw err;
      });
    }
    await addEmbeddingVectorColumn(sql);
  } catch (err) {
    log.info({ reason: (err as Error).message }, 'pgvector is available but could not be enabled; embeddings are compared in Node');
    return false;
  }
  return true;
}

/**
 * Copies embeddings written before pgvector was enabled into the vector column, a batch at a time,
 * until none is left or `signal` aborts. Returns how many chunks were copied.
 */
export async function backfillVectors(sql: SqlPool, signal?: AbortSignal): Promise<number> {
  let copied = 0;
  while (!signal?.aborted) {
    const rows = await selectChunksWithoutVector(sql, BACKFILL_BATCH);
    if (!rows.length) break;
    const ids: string[] = [];
    const vectors: (string | null)[] = [];
    for (const row of rows) {
      const vector = decodeEmbedding(row.embedding);
      ids.push(row.id);
      // An unreadable blob gets a one-value placeholder, so it is not picked up again; the vector
      // leg's dimension filter keeps it out of every ranking.
      vectors.push(vector && vector.length ? toVectorLiteral(vector) : null);
    }
    await updateChunkVectors(sql, ids, vectors.map((v) => v ?? '[0]'));
    copied += rows.length;
  }
  return copied;
}
