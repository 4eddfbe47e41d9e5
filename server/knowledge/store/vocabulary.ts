// Reads behind a tenant's search vocabulary: ts_stat over its chunks' search vectors, and a
// signature of its documents (document_chunks and documents are written by the documents feature,
// see server/documents/store/). Raw: ts_stat and tsvector columns are beyond Kysely's typed tables,
// and these run through the SqlPool (the signature as a named prepared statement whose text must stay
// byte-identical).
import type { SqlPool } from '../../../db/sql-pool.js';

/**
 * Changes whenever the tenant's searchable chunks do: a document becoming ready (or failing) moves
 * its updated_at, a deleted one changes the count, and the chunk total covers the rest.
 */
export async function selectDocumentsSignature(sql: SqlPool, tenantId: string): Promise<string> {
  const [row] = await sql.query<{ signature: string }>(
    `select concat_ws('/', count(*), sum(chunk_count), max(updated_at)) as signature from documents where tenant_id = $1`,
    [tenantId],
    'liya_vocabulary_signature',
  );
  return row?.signature ?? '';
}

/** Every lexeme of the tenant's chunks with the number of chunks containing it. */
export async function selectLexemeStats(sql: SqlPool, tenantId: string): Promise<{ word: string; ndoc: number }[]> {
  // ts_stat takes its query as text; the tenant id is a UUID from authentication, quoted anyway.
  const inner = `select search_vector from document_chunks where tenant_id = '${tenantId.replace(/'/g, "''")}'`;
  return sql.query<{ word: string; ndoc: number }>(`select word, ndoc from ts_stat($1)`, [inner]);
}

/** How many chunks the tenant has. */
export async function countTenantChunks(sql: SqlPool, tenantId: string): Promise<number> {
  const [count] = await sql.query<{ n: string }>('select count(*) as n from document_chunks where tenant_id = $1', [tenantId]);
  return Number(count?.n ?? 0);
}
