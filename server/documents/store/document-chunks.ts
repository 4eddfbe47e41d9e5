// The document_chunks table; this module alone writes it (retrieval reads it, see
// server/knowledge/store/retrieval.ts).
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

const INSERT_ROWS = 100;

export interface ChunkValues {
  text: string;
  locator: string | null;
  /** Float32 little-endian bytes (embed-chunks.ts encodeEmbedding), null when not embedded. */
  embedding: Buffer | null;
  /** pgvector's text form of the same vector (knowledge/pgvector.ts toVectorLiteral), written when `vector.write`. */
  vectorLiteral: string | null;
}

/**
 * Writes the document's chunks at ordinals 0..n-1, overwriting (never duplicating) rows an earlier,
 * interrupted run left, and deletes rows past the last ordinal. `vector.column`: the database has the
 * embedding_vector column (pgvector); `vector.write`: the chunks' vectors go in it (else it is nulled).
 */
export async function writeDocumentChunks(
  tx: EntityManager,
  tenantId: string,
  documentId: string,
  chunks: ChunkValues[],
  vector: { column: boolean; write: boolean },
): Promise<void> {
  // With pgvector, the embedding is also written in its vector column (see knowledge/pgvector.ts).
  const withVector = vector.write;
  const pgvector = vector.column;
  for (let start = 0; start < chunks.length; start += INSERT_ROWS) {
    const slice = chunks.slice(start, start + INSERT_ROWS);
    const values: string[] = [];
    const params: unknown[] = [];
    slice.forEach((chunk, i) => {
      const ordinal = start + i;
      values.push(`(gen_random_uuid(), ?, ?, ?, ?, ?, ?, to_tsvector('english', unaccent(?)), ?, ${withVector ? '?::vector, ' : ''}now())`);
      params.push(tenantId, documentId, ordinal, chunk.text, chunk.text.length, chunk.locator, chunk.text, chunk.embedding);
      if (withVector) params.push(chunk.vectorLiteral);
    });
    // An earlier, interrupted run may have left rows: they are overwritten, never duplicated.
    // Raw: a multi-row upsert computing the tsvector in SQL and writing the pgvector column, which
    // no entity maps.
    await tx.execute(
      `insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, locator, search_vector, embedding, ${withVector ? 'embedding_vector, ' : ''}created_at)
       values ${values.join(', ')}
       on conflict (document_id, ordinal) do update set text = excluded.text, characters = excluded.characters, locator = excluded.locator,
         search_vector = excluded.search_vector, embedding = excluded.embedding${pgvector ? `, embedding_vector = ${withVector ? 'excluded.embedding_vector' : 'null'}` : ''}`,
      params,
    );
  }
  await kyselyOf(tx).deleteFrom('document_chunks').where('document_id', '=', documentId).where('ordinal', '>=', chunks.length).execute();
}

/** Deletes every chunk of the document. */
export async function deleteDocumentChunks(tx: EntityManager, documentId: string): Promise<void> {
  await kyselyOf(tx).deleteFrom('document_chunks').where('document_id', '=', documentId).execute();
}

/** Up to `limit` embedded chunks whose pgvector column is still empty. */
export async function selectChunksWithoutVector(sql: SqlPool, limit: number): Promise<{ id: string; embedding: Buffer }[]> {
  // Raw: embedding_vector is the pgvector column, which no entity maps.
  return sql.query<{ id: string; embedding: Buffer }>(
    `select id, embedding from document_chunks where embedding is not null and embedding_vector is null limit ${limit}`,
  );
}

/** Sets the pgvector column of the chunks (`vectors[i]` for `ids[i]`) where it is still empty. */
export async function updateChunkVectors(sql: SqlPool, ids: string[], vectors: string[]): Promise<void> {
  // Raw: a ::vector cast into the pgvector column, which no entity maps.
  await sql.query(
    `update document_chunks c set embedding_vector = v.vector::vector
         from unnest($1::uuid[], $2::text[]) as v(id, vector)
        where c.id = v.id and c.embedding_vector is null`,
    [ids, vectors],
  );
}
