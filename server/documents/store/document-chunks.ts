// The document_chunks table; this module writes it, except for an ingestion's chunks, written with
// its completion in one statement (ingestion-completion.ts); retrieval reads it (see
// server/knowledge/store/retrieval.ts).
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

/** Deletes every chunk of the document. */
export async function deleteDocumentChunks(tx: EntityManager, documentId: string): Promise<void> {
  await kyselyOf(tx).deleteFrom('document_chunks').where('document_id', '=', documentId).execute();
}

/** Up to `limit` embedded chunks whose pgvector column is still empty. */
export async function selectChunksWithoutVector(sql: SqlPool, limit: number): Promise<{ id: string; embedding: Buffer }[]> {
  // Raw(pgvector): embedding_vector is the pgvector column, which no entity maps.
  return sql.query<{ id: string; embedding: Buffer }>(
    `select id, embedding from document_chunks where embedding is not null and embedding_vector is null limit ${limit}`,
  );
}

/** Sets the pgvector column of the chunks (`vectors[i]` for `ids[i]`) where it is still empty. */
export async function updateChunkVectors(sql: SqlPool, ids: string[], vectors: string[]): Promise<void> {
  // Raw(pgvector): a ::vector cast into the pgvector column, which no entity maps.
  await sql.query(
    `update document_chunks c set embedding_vector = v.vector::vector
         from unnest($1::uuid[], $2::text[]) as v(id, vector)
        where c.id = v.id and c.embedding_vector is null`,
    [ids, vectors],
  );
}
