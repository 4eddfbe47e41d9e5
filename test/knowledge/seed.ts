// Inserts documents and chunks straight into the knowledge tables, as a finished ingestion would
// leave them: search_vector = to_tsvector('english', unaccent(text)), embedding = Float32 LE bytes.
import { createHash } from 'node:crypto';
import { fakeEmbedding } from '../support/fake-llm.js';

type Sql = <T extends Record<string, any> = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<T[]>;

export interface SeedChunk {
  text: string;
  locator?: string | null;
}

export interface SeedDocument {
  tenantId: string;
  name: string;
  collectionIds: string[];
  chunks: (string | SeedChunk)[];
  category?: string;
  status?: 'processing' | 'ready' | 'failed';
  /** Set: every chunk gets fakeEmbedding(text, dimension) and the document this embedding_model. */
  embeddingModel?: string | null;
  dimension?: number;
  /** Where the database has pgvector, leave embedding_vector empty (as rows written before it was enabled). */
  withoutVectorColumn?: boolean;
}

export const embeddingBytes = (text: string, dimension = 64) => Buffer.from(new Float32Array(fakeEmbedding(text, dimension)).buffer);

async function hasVectorColumn(sql: Sql): Promise<boolean> {
  const rows = await sql(`select 1 from information_schema.columns where table_name = 'document_chunks' and column_name = 'embedding_vector'`);
  return rows.length > 0;
}

/** Returns the document id and its chunk ids (in order). */
export async function insertDocument(sql: Sql, doc: SeedDocument): Promise<{ documentId: string; chunkIds: string[] }> {
  const chunks = doc.chunks.map((c) => (typeof c === 'string' ? { text: c, locator: null } : { text: c.text, locator: c.locator ?? null }));
  const all = chunks.map((c) => c.text).join('\n\n');
  const [row] = await sql<{ id: string }>(
    `insert into documents (tenant_id, name, category, mime_type, size_bytes, content_hash, status, characters, chunk_count, embedding_model, uploaded_by, uploaded_at, updated_at)
     values ($1, $2, $3, 'text/plain', $4, $5, $6, $7, $8, $9, 'seed@example.com', now(), now()) returning id`,
    [doc.tenantId, doc.name, doc.category ?? 'document', Buffer.byteLength(all), createHash('sha256').update(all).digest('hex'), doc.status ?? 'ready', all.length, 0, doc.embeddingModel ?? null],
  );
  for (const collectionId of doc.collectionIds) {
    await sql('insert into document_collections (document_id, collection_id, tenant_id, created_at) values ($1, $2, $3, now())', [row.id, collectionId, doc.tenantId]);
  }
  const chunkIds: string[] = [];
  for (const [ordinal, chunk] of chunks.entries()) {
    const [inserted] = await sql<{ id: string }>(
      `insert into document_chunks (tenant_id, document_id, ordinal, text, characters, locator, search_vector, embedding, created_at)
       values ($1, $2, $3, $4::text, $5, $6, to_tsvector('english', unaccent($4::text)), $7, now()) returning id`,
      [doc.tenantId, row.id, ordinal, chunk.text, chunk.text.length, chunk.locator, doc.embeddingModel ? embeddingBytes(chunk.text, doc.dimension) : null],
    );
    chunkIds.push(inserted.id);
  }
  // With pgvector, a finished ingestion also fills the vector column (see server/knowledge/pgvector.ts).
  if (doc.embeddingModel && !doc.withoutVectorColumn && (await hasVectorColumn(sql))) {
    const vectors = chunks.map((c) => `[${fakeEmbedding(c.text, doc.dimension).map((x) => Math.fround(x)).join(',')}]`);
    await sql('update document_chunks c set embedding_vector = v.vector::vector from unnest($1::uuid[], $2::text[]) as v(id, vector) where c.id = v.id', [chunkIds, vectors]);
  }
  // Its chunks counted last, as an ingestion finishing does: whatever read the document while its
  // chunks were being written (the vocabulary check) sees it change again.
  await sql('update documents set chunk_count = $2, updated_at = clock_timestamp() where id = $1', [row.id, chunks.length]);
  return { documentId: row.id, chunkIds };
}
