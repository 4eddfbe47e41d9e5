// Retrieval's reads of document_chunks, documents and document_collections (the documents feature
// writes them, see server/documents/store/) and of a domain's collections. Every statement is raw:
// they run on the hot path through the SqlPool (several as named prepared statements, whose texts
// must stay byte-identical), and they use full-text search, pgvector and json building.
import type { SqlPool } from '../../../db/sql-pool.js';

/** The searched chunks: the tenant's ready documents in these collections (and category, null: any). */
export interface RetrievalScope {
  tenantId: string;
  collectionIds: string[];
  category: string | null;
}

export interface ChunkRow {
  id: string;
  document_id: string;
  ordinal: number;
  text: string;
  locator: string | null;
  document_name: string;
  collection_ids: string[] | null;
}

/** A collection of the domain with its retrieval_config as stored. */
export interface DomainCollectionRow {
  id: string;
  config: Record<string, unknown> | null;
}

// Shared by every leg: the tenant's ready documents in the searched collections (and category).
// $1 tenant, $2 collection ids, $3 category (null: any).
const SCOPE_SQL = `
  ch.tenant_id = $1 and d.tenant_id = $1 and d.status = 'ready' and ($3::text is null or d.category = $3)
  and exists (select 1 from document_collections dc where dc.document_id = d.id and dc.tenant_id = $1 and dc.collection_id = any($2::uuid[]))`;

const CHUNK_COLUMNS = `ch.id::text as id, ch.document_id::text as document_id, ch.ordinal, ch.text, ch.locator, d.name as document_name,
  (select array_agg(dc2.collection_id::text order by dc2.collection_id) from document_collections dc2 where dc2.document_id = d.id and dc2.tenant_id = $1) as collection_ids`;

/**
 * Chunks matching the tsquery `any`, ranked by ts_rank_cd: up to `limits.matchCap` matches are
 * ranked (plus up to as many matching `all` first, when given) and the best `limits.candidates` kept.
 */
export async function selectFullTextMatches(
  sql: SqlPool,
  scope: RetrievalScope,
  any: string,
  all: string | null,
  limits: { matchCap: number; candidates: number },
): Promise<ChunkRow[]> {
  // Raw: full-text search (@@, ts_rank_cd) in a CTE, a named prepared statement on the hot path.
  const both = all !== null;
  const matching = (tsquery: string) =>
    `(select ch.id, ch.search_vector from document_chunks ch join documents d on d.id = ch.document_id
       where ch.search_vector @@ ${tsquery}::tsquery and ${SCOPE_SQL} limit ${limits.matchCap})`;
  return sql.query<ChunkRow>(
    `with matched as (
       ${both ? `${matching('$5')} union ${matching('$4')}` : matching('$4')}
     ), ranked as (
       select id, ts_rank_cd(search_vector, $4::tsquery) as rank from matched order by rank desc, id limit ${limits.candidates}
     )
     select ${CHUNK_COLUMNS}, r.rank
       from ranked r join document_chunks ch on ch.id = r.id join documents d on d.id = ch.document_id
      order by r.rank desc, ch.id`,
    [scope.tenantId, scope.collectionIds, scope.category, any, ...(both ? [all] : [])],
    both ? 'liya_knowledge_leg_all_any' : 'liya_knowledge_leg_any',
  );
}

/** The query's lexemes as ingestion computes them: to_tsvector('english', unaccent(query)). */
export async function selectQueryLexemes(sql: SqlPool, query: string): Promise<string[]> {
  // Raw: text-search functions, run through the SqlPool on the hot path.
  const [row] = await sql.query<{ lexemes: string[] }>(`select tsvector_to_array(to_tsvector('english', unaccent($1))) as lexemes`, [query]);
  return row?.lexemes ?? [];
}

/** The embedding model of most of the ready documents in scope (undefined: none was embedded), with their chunk count. */
export async function selectScopeEmbeddingModel(sql: SqlPool, scope: RetrievalScope): Promise<{ embedding_model: string; chunks: string } | undefined> {
  // Raw: run through the SqlPool on the hot path with the scope's uuid[] and nullable-category casts.
  const [row] = await sql.query<{ embedding_model: string; chunks: string }>(
    `select d.embedding_model, sum(d.chunk_count)::text as chunks from documents d
      where d.tenant_id = $1 and d.status = 'ready' and d.embedding_model is not null and ($3::text is null or d.category = $3)
        and exists (select 1 from document_collections dc where dc.document_id = d.id and dc.tenant_id = $1 and dc.collection_id = any($2::uuid[]))
      group by d.embedding_model order by count(*) desc, d.embedding_model limit 1`,
    [scope.tenantId, scope.collectionIds, scope.category],
  );
  return row;
}

/** The ids of the `limit` chunks in scope embedded by `model` nearest `vectorLiteral` (cosine distance, pgvector). */
export async function selectNearestChunkIds(sql: SqlPool, scope: RetrievalScope, model: string, vectorLiteral: string, dimensions: number, limit: number): Promise<string[]> {
  // Every embedded chunk in scope, ranked inside PostgreSQL (cosine distance). Raw: pgvector's `<=>`
  // and vector_dims, a named prepared statement on the hot path.
  const rows = await sql.query<{ id: string }>(
    `select ch.id::text as id from document_chunks ch join documents d on d.id = ch.document_id
        where ${SCOPE_SQL} and d.embedding_model = $4 and ch.embedding_vector is not null and vector_dims(ch.embedding_vector) = $6
        order by ch.embedding_vector <=> $5::vector, ch.id limit ${limit}`,
    [scope.tenantId, scope.collectionIds, scope.category, model, vectorLiteral, dimensions],
    'liya_knowledge_leg_pgvector',
  );
  return rows.map((r) => r.id);
}

const modelScope = `${SCOPE_SQL} and d.embedding_model = $4 and ch.embedding is not null`;

/** Up to `limit` chunks in scope embedded by `model`, with their Float32 embeddings. */
export async function selectChunkEmbeddings(sql: SqlPool, scope: RetrievalScope, model: string, limit: number): Promise<{ id: string; embedding: Buffer }[]> {
  // Raw: shares SCOPE_SQL with the other legs, run through the SqlPool on the hot path.
  return sql.query<{ id: string; embedding: Buffer }>(
    `select ch.id::text as id, ch.embedding from document_chunks ch join documents d on d.id = ch.document_id where ${modelScope} limit ${limit}`,
    [scope.tenantId, scope.collectionIds, scope.category, model],
  );
}

/** Those of the chunks `ids` in scope embedded by `model`, with their Float32 embeddings. */
export async function selectChunkEmbeddingsByIds(sql: SqlPool, scope: RetrievalScope, model: string, ids: string[]): Promise<{ id: string; embedding: Buffer }[]> {
  // Raw: shares SCOPE_SQL with the other legs, run through the SqlPool on the hot path.
  return sql.query<{ id: string; embedding: Buffer }>(
    `select ch.id::text as id, ch.embedding from document_chunks ch join documents d on d.id = ch.document_id where ${modelScope} and ch.id = any($5::uuid[])`,
    [scope.tenantId, scope.collectionIds, scope.category, model, ids],
  );
}

/** Those of the chunks `ids` that are in scope. */
export async function selectChunkRows(sql: SqlPool, scope: RetrievalScope, ids: string[]): Promise<ChunkRow[]> {
  // Raw: shares SCOPE_SQL and CHUNK_COLUMNS with the full-text leg, run through the SqlPool on the hot path.
  return sql.query<ChunkRow>(
    `select ${CHUNK_COLUMNS} from document_chunks ch join documents d on d.id = ch.document_id where ${SCOPE_SQL} and ch.id = any($4::uuid[])`,
    [scope.tenantId, scope.collectionIds, scope.category, ids],
  );
}

/**
 * The tenant's enabled built-in domains, whether `domainKey` is an active custom domain of it
 * (null: no such custom domain), and the collections attached to `domainKey` with their retrieval
 * configs, oldest first. Undefined when there is no such tenant. (Reads tenants, custom_domains,
 * collections and collection_domains, which their features write.)
 */
export async function selectDomainCollections(
  sql: SqlPool,
  tenantId: string,
  domainKey: string,
): Promise<{ enabled_domains: string[] | null; custom_active: boolean | null; collections: DomainCollectionRow[] } | undefined> {
  // Raw: json_agg(json_build_object(...)) in correlated subqueries, run through the SqlPool on the hot path.
  const [row] = await sql.query<{ enabled_domains: string[] | null; custom_active: boolean | null; collections: DomainCollectionRow[] }>(
    `select t.enabled_domains,
            (select cd.is_active from custom_domains cd where cd.tenant_id = t.id and cd.domain_key = $2) as custom_active,
            (select coalesce(json_agg(json_build_object('id', c.id, 'config', c.retrieval_config) order by c.created_at, c.id), '[]'::json)
               from collections c join collection_domains x on x.collection_id = c.id
              where c.tenant_id = t.id and x.tenant_id = t.id and x.domain_key = $2) as collections
       from tenants t where t.id = $1`,
    [tenantId, domainKey],
  );
  return row;
}
