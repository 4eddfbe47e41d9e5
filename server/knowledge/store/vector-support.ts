// The pgvector extension and the document_chunks.embedding_vector column (schema, not rows: the
// documents feature writes the chunks, see server/documents/store/document-chunks.ts). Raw:
// extension catalogs and DDL are beyond Kysely's typed tables; run through the SqlPool at start-up.
import type { SqlPool } from '../../../db/sql-pool.js';

/** Whether the `vector` extension is available to this database, and whether it is created. */
export async function selectVectorExtensionState(sql: SqlPool): Promise<{ available: boolean; installed: boolean }> {
  const [state] = await sql.query<{ available: boolean; installed: boolean }>(
    `select exists (select 1 from pg_available_extensions where name = 'vector') as available,
            exists (select 1 from pg_extension where extname = 'vector') as installed`,
  );
  return state;
}

/** Whether the `vector` extension is created (undefined: no answer row). */
export async function selectVectorExtensionInstalled(sql: SqlPool): Promise<boolean | undefined> {
  const [now] = await sql.query<{ installed: boolean }>(`select exists (select 1 from pg_extension where extname = 'vector') as installed`);
  return now?.installed;
}

/** Creates the `vector` extension unless it exists (needs a role allowed to). */
export async function createVectorExtension(sql: SqlPool): Promise<void> {
  await sql.query('create extension if not exists vector');
}

/** Adds document_chunks.embedding_vector unless it exists. */
export async function addEmbeddingVectorColumn(sql: SqlPool): Promise<void> {
  await sql.query('alter table document_chunks add column if not exists embedding_vector vector');
}
