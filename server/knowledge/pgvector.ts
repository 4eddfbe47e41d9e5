// Optional pgvector support. Chunk embeddings are always stored as Float32 bytes
// (document_chunks.embedding), which works on any PostgreSQL, the embedded one included (it has no
// pgvector). When the database has the `vector` extension — created by an operator, or by Liya at
// start-up when its role may — every embedding is also kept in document_chunks.embedding_vector and
// the vector leg of retrieval ranks all chunks in scope inside PostgreSQL (`<=>`, cosine distance)
// instead of loading vectors into Node. The column has no fixed dimension (documents may be embedded
// with different models): a small scope is ranked exactly (a scan), a large one through an
// approximate HNSW index of its dimension, one partial index per dimension in use, which retrieval
// creates (concurrently, in the background) the first time a scope needs it.
import type { Logger } from 'pino';
import type { SqlPool } from '../../db/sql-pool.js';
import { selectChunksWithoutVector, updateChunkVectors } from '../documents/chunk-records.js';
import { decodeEmbedding } from './query-embedding.js';
import { selectNearestChunkIds, selectNearestChunkIdsIndexed, type RetrievalScope } from './store/retrieval.js';
import {
  addEmbeddingVectorColumn, buildVectorIndex, createVectorExtension, selectVectorExtensionInstalled, selectVectorExtensionState, selectVectorIndexState,
} from './store/vector-support.js';

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

/**
 * Up to this many vector values (chunks in scope x dimensions), a scope is ranked by an exact scan
 * even when an HNSW index is ready: 3k chunks of 64 dimensions, 130 of 1536, a few ms.
 */
export const PGVECTOR_EXACT_VALUES = 200_000;
/**
 * Without a usable HNSW index, an exact scan is still used up to this many vector values: 15k chunks
 * of 64 dimensions, 650 of 1536 (14-31 ms a query on 2 cores); beyond, the portable path (an exact
 * scan of 100k chunks took 132 ms at 64 dimensions and 2.1 s at 1536).
 */
export const PGVECTOR_SCAN_MAX_VALUES = 1_000_000;
/**
 * The HNSW index serves a scope holding at least this share of the vectors it indexes: the index
 * scan goes on past chunks out of scope (iterative scan) up to hnsw.max_scan_tuples (20,000 by
 * default), so a scope of 1% yields its 100 candidates after about 10,000 index tuples.
 */
export const HNSW_MIN_SCOPE_SHARE = 0.01;
/** How often the catalog is asked again about an HNSW index (its validity and size). */
const INDEX_RECHECK_MS = 30_000;
/**
 * A process starts a build of one index at most this often, doubling after each failed build up
 * to 32 times as long (a build that keeps failing, e.g. out of memory, is not retried in a loop).
 */
const INDEX_REBUILD_MS = 10 * 60_000;

interface IndexState {
  valid: boolean;
  /** Vectors the index holds (pg_class.reltuples: as of the last vacuum, analyze or build). */
  tuples: number;
  checkedAt: number;
  checking: Promise<void> | null;
  /** When this process last started a build of the index (0: never); one build at a time. */
  buildStartedAt: number;
  building: boolean;
  /** Builds of this process that failed in a row. */
  failures: number;
}
const indexStates = new Map<number, IndexState>();

// pgvector >= 0.8 scans an HNSW index on past rows a filter rejects (iterative index scans): without
// them a scoped query would get whatever in-scope rows the first ef_search neighbours hold.
const iterativeScans = (version: string | null) => {
  const [major = 0, minor = 0] = (version ?? '0.0').split('.').map(Number);
  return major > 0 || minor >= 8;
};

/**
 * Builds the HNSW index of `dimensions` when it is missing, or left invalid by a failed build
 * (CREATE INDEX CONCURRENTLY leaves an invalid index behind, which IF NOT EXISTS would then take for
 * the index forever), unless a build is under way. Resolves once the build has ended (`built`,
 * `rebuilt`), or at once (`busy`: another process builds it; `present`); rejects when it failed.
 */
export async function maintainVectorIndex(sql: SqlPool, log: Pick<Logger, 'info' | 'warn'>, dimensions: number): Promise<'built' | 'rebuilt' | 'busy' | 'present'> {
  const outcome = await buildVectorIndex(sql, dimensions);
  if (outcome === 'built' || outcome === 'rebuilt') log.info({ dimensions, outcome }, 'HNSW index built');
  return outcome;
}

async function checkVectorIndex(sql: SqlPool, log: Pick<Logger, 'info' | 'warn'>, dimensions: number, state: IndexState): Promise<void> {
  const { valid, building, tuples, version } = await selectVectorIndexState(sql.query, dimensions);
  state.valid = valid === true && iterativeScans(version);
  state.tuples = tuples ?? 0;
  state.checkedAt = Date.now();
  const due = !state.building && Date.now() - state.buildStartedAt >= INDEX_REBUILD_MS * 2 ** Math.min(state.failures, 5);
  if (valid !== true && !building && iterativeScans(version) && due) {
    state.building = true;
    state.buildStartedAt = Date.now();
    if (valid === false) log.warn({ dimensions }, 'the HNSW index was left invalid by a failed build; building it again');
    else log.info({ dimensions }, 'building the HNSW index of this dimension for knowledge retrieval');
    maintainVectorIndex(sql, log, dimensions)
      .then(() => {
        state.failures = 0;
        // Asked again at the next query, not INDEX_RECHECK_MS later.
        state.checkedAt = 0;
      })
      .catch((err: unknown) => {
        state.failures++;
        log.warn({ err, dimensions, failures: state.failures }, 'building the HNSW index failed; large scopes are ranked by the portable path');
      })
      .finally(() => {
        state.building = false;
      });
  }
}

/**
 * The HNSW index of `dimensions`: whether it is usable and how many vectors it holds. The catalog
 * is read at most every INDEX_RECHECK_MS (awaited only until the index is first found usable); a
 * missing or invalid index is built in the background (by one process at a time, each trying at
 * most every INDEX_REBUILD_MS, backing off after failures), and callers use the exact scan or the portable path meanwhile.
 */
async function vectorIndex(sql: SqlPool, log: Pick<Logger, 'info' | 'warn'>, dimensions: number): Promise<{ valid: boolean; tuples: number }> {
  let state = indexStates.get(dimensions);
  if (!state) indexStates.set(dimensions, (state = { valid: false, tuples: 0, checkedAt: 0, checking: null, buildStartedAt: 0, building: false, failures: 0 }));
  const current = state;
  if (Date.now() - current.checkedAt >= INDEX_RECHECK_MS) {
    current.checking ??= checkVectorIndex(sql, log, dimensions, current)
      .catch((err: unknown) => {
        current.checkedAt = Date.now();
        log.warn({ err, dimensions }, 'reading the HNSW index state failed');
      })
      .finally(() => {
        current.checking = null;
      });
    if (!current.valid) await current.checking;
  }
  return { valid: current.valid, tuples: current.tuples };
}

/**
 * The ids of the `limit` chunks in scope embedded by `model` nearest `vector`, ranked inside
 * PostgreSQL, or null when the portable path should rank them:
 * - up to PGVECTOR_EXACT_VALUES (chunks x dimensions): an exact scan;
 * - beyond, the HNSW index of the dimension (approximate), once built, for a scope holding at least
 *   HNSW_MIN_SCOPE_SHARE of its vectors;
 * - otherwise an exact scan up to PGVECTOR_SCAN_MAX_VALUES, and null beyond.
 */
export async function nearestChunkIds(
  deps: { sql: SqlPool; log: Pick<Logger, 'info' | 'warn'> },
  scope: RetrievalScope,
  model: string,
  vector: Float32Array,
  chunksInScope: number,
  limit: number,
): Promise<{ ids: string[]; exact: boolean } | null> {
  const literal = toVectorLiteral(vector);
  const values = chunksInScope * vector.length;
  if (values > PGVECTOR_EXACT_VALUES) {
    const index = await vectorIndex(deps.sql, deps.log, vector.length);
    if (index.valid && chunksInScope >= index.tuples * HNSW_MIN_SCOPE_SHARE) {
      return { ids: await selectNearestChunkIdsIndexed(deps.sql, scope, model, literal, vector.length, limit), exact: false };
    }
    if (values > PGVECTOR_SCAN_MAX_VALUES) return null;
  }
  return { ids: await selectNearestChunkIds(deps.sql, scope, model, literal, vector.length, limit), exact: true };
}
