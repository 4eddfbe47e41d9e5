// The pgvector extension and the document_chunks.embedding_vector column (schema, not rows: the
// documents feature writes the chunks, see server/documents/store/document-chunks.ts). Raw SQL:
// extension catalogs and DDL are beyond Kysely's typed tables; run through the SqlPool at start-up
// and, for the per-dimension HNSW indexes, when retrieval first needs one (on a session of their own).
import type { SqlPool } from '../../../db/sql-pool.js';

/** Whether the `vector` extension is available to this database, and whether it is created. */
export async function selectVectorExtensionState(sql: SqlPool): Promise<{ available: boolean; installed: boolean }> {
  // Raw(catalog): pg_available_extensions and pg_extension.
  const [state] = await sql.query<{ available: boolean; installed: boolean }>(
    `select exists (select 1 from pg_available_extensions where name = 'vector') as available,
            exists (select 1 from pg_extension where extname = 'vector') as installed`,
  );
  return state;
}

/** Whether the `vector` extension is created (undefined: no answer row). */
export async function selectVectorExtensionInstalled(sql: SqlPool): Promise<boolean | undefined> {
  // Raw(catalog): pg_extension.
  const [now] = await sql.query<{ installed: boolean }>(`select exists (select 1 from pg_extension where extname = 'vector') as installed`);
  return now?.installed;
}

/** Creates the `vector` extension unless it exists (needs a role allowed to). */
export async function createVectorExtension(sql: SqlPool): Promise<void> {
  // Raw(catalog): DDL.
  await sql.query('create extension if not exists vector');
}

/** Adds document_chunks.embedding_vector unless it exists. */
export async function addEmbeddingVectorColumn(sql: SqlPool): Promise<void> {
  // Raw(pgvector): DDL of the vector column, which no entity maps.
  await sql.query('alter table document_chunks add column if not exists embedding_vector vector');
}

/** The name of the approximate (HNSW) index of the `dimensions`-value vectors. */
const vectorIndexName = (dimensions: number) => `document_chunks_embedding_hnsw_${dimensions}`;

/**
 * The HNSW index (cosine distance) of the chunks whose vector has `dimensions` values: an index
 * needs a fixed dimension and the column has none, so there is one partial index per dimension in
 * use, on the vector cast to that dimension. Built concurrently: writes to document_chunks go on.
 */
export function vectorIndexDdl(dimensions: number): string {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 16_000) throw new Error(`invalid vector dimension ${dimensions}`);
  // Raw(pgvector): DDL of an HNSW index with pgvector's operator class.
  return `create index concurrently if not exists ${vectorIndexName(dimensions)} on document_chunks
    using hnsw ((embedding_vector::vector(${dimensions})) vector_cosine_ops) where vector_dims(embedding_vector) = ${dimensions}`;
}

/**
 * Whether the HNSW index of `dimensions` exists and is usable (valid: false while it is being built
 * or after a failed build; null: no such index), whether a build of it is under way now (by any
 * process), the vectors it holds (as of the last vacuum, analyze or build), and pgvector's version.
 */
export async function selectVectorIndexState(
  query: SqlPool['query'],
  dimensions: number,
): Promise<{ valid: boolean | null; building: boolean; tuples: number | null; version: string | null }> {
  // Raw(catalog): system catalogs and the progress view (a concurrent build shows its index's oid there).
  const [row] = await query<{ valid: boolean | null; building: boolean; tuples: number | null; version: string | null }>(
    `select x.indisvalid as valid, greatest(i.reltuples, 0)::float8 as tuples,
            exists (select 1 from pg_stat_progress_create_index p where p.index_relid = i.oid) as building,
            (select extversion from pg_extension where extname = 'vector') as version
       from (select 1) one
       left join pg_class i on i.relname = $1 and i.relnamespace = current_schema()::regnamespace
       left join pg_index x on x.indexrelid = i.oid`,
    [vectorIndexName(dimensions)],
  );
  return row ?? { valid: null, building: false, tuples: null, version: null };
}

/** Any fixed number: with the dimension, the key of the advisory lock that lets one process at a time build an HNSW index. */
export const INDEX_BUILD_LOCK_KEY = 731_140_212;

/**
 * Builds the HNSW index of `dimensions` when it is missing, or left invalid by a failed build (it is
 * dropped first), on a connection of its own (minutes for a million chunks; writes go on meanwhile).
 * One process at a time (an advisory lock; the others return `busy`), and never over a build under
 * way. Returns what it did.
 */
export async function buildVectorIndex(sql: SqlPool, dimensions: number): Promise<'built' | 'rebuilt' | 'busy' | 'present'> {
  return sql.session(async (query) => {
    // Raw(advisory-lock): a session lock, released when the connection ends.
    const [lock] = await query<{ locked: boolean }>('select pg_try_advisory_lock($1::int, $2::int) as locked', [INDEX_BUILD_LOCK_KEY, dimensions]);
    if (!lock?.locked) return 'busy';
    // Read again under the lock: another process may have built it meanwhile.
    const state = await selectVectorIndexState(query, dimensions);
    if (state.building) return 'busy';
    if (state.valid === true) return 'present';
    // Raw(catalog): DDL.
    if (state.valid === false) await query(`drop index concurrently if exists ${vectorIndexName(dimensions)}`);
    await query(vectorIndexDdl(dimensions));
    return state.valid === false ? 'rebuilt' : 'built';
  });
}
