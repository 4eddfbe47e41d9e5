// Reads behind a tenant's search vocabulary: ts_stat over its chunks' search vectors, and a
// signature of its documents (document_chunks and documents are written by the documents feature,
// see server/documents/store/), on the SqlPool. ts_stat and tsvector columns are beyond Kysely's
// typed tables; the rest is built with it.
import { sql as kysql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';

const SIGNATURE = statement<{ tenantId: string }>()('liya_vocabulary_signature', (p) =>
  build
    .selectFrom('documents')
    .select(kysql<string>`concat_ws('/', count(*), sum(chunk_count), max(updated_at))`.as('signature'))
    .where('tenant_id', '=', p.tenantId),
);

/**
 * Changes whenever the tenant's searchable chunks do: a document becoming ready (or failing) moves
 * its updated_at, a deleted one changes the count, and the chunk total covers the rest.
 */
export async function selectDocumentsSignature(sql: SqlPool, tenantId: string): Promise<string> {
  const [row] = await SIGNATURE.run(sql, { tenantId });
  return row?.signature ?? '';
}

/** Every lexeme of the tenant's chunks with the number of chunks containing it. */
export async function selectLexemeStats(sql: SqlPool, tenantId: string): Promise<{ word: string; ndoc: number }[]> {
  // Raw(full-text): ts_stat takes its query as text; the tenant id is a UUID from authentication, quoted anyway.
  const inner = `select search_vector from document_chunks where tenant_id = '${tenantId.replace(/'/g, "''")}'`;
  // Raw(full-text): ts_stat, the lexeme statistics of the chunks' search vectors.
  return sql.query<{ word: string; ndoc: number }>(`select word, ndoc from ts_stat($1)`, [inner]);
}

/** How many chunks the tenant has. */
export async function countTenantChunks(sql: SqlPool, tenantId: string): Promise<number> {
  const [count] = await runBuilt(sql, build.selectFrom('document_chunks').select(kysql<string>`count(*)`.as('n')).where('tenant_id', '=', tenantId));
  return Number(count?.n ?? 0);
}
