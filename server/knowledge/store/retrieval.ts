// Retrieval's reads of document_chunks, documents and document_collections (the documents feature
// writes them, see server/documents/store/) and of a domain's collections, on the hot path through
// the SqlPool (several as named prepared statements). The full-text and pgvector legs are raw SQL
// (DOCUMENT_IN_SCOPE is their scope rule); the others are built with Kysely (documentInScope).
import { sql as kysql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement, type Params } from '../../../db/statements.js';

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

// The one scope rule, for a document `d`: the tenant's ready documents in the searched collections
// (and category). $1 tenant, $2 collection ids, $3 category (null: any).
const DOCUMENT_IN_SCOPE = `d.tenant_id = $1 and d.status = 'ready' and ($3::text is null or d.category = $3)
  and exists (select 1 from document_collections dc where dc.document_id = d.id and dc.tenant_id = $1 and dc.collection_id = any($2::uuid[]))`;

// Shared by every leg: a chunk `ch` of a document `d` (joined) in scope.
const SCOPE_SQL = `ch.tenant_id = $1 and ${DOCUMENT_IN_SCOPE}`;

// The same scope, checked for each chunk `ch` a GIN or HNSW index yields, in a lateral subquery the
// planner cannot turn into a join; it exposes the document's embedding_model as s.embedding_model,
// to be compared outside it, so the document is always found by its primary key. As joins, the
// planner hashed every document_collections row of the scope first (8 ms at 10k documents, to keep
// 300 matches), and, with statistics gone stale (documents just embedded, still counted as having no
// embedding_model), read the scope's documents first and sorted every chunk (230 ms at 250k chunks
// instead of 5).
const SCOPE_LATERAL = `cross join lateral (select d.embedding_model from documents d where d.id = ch.document_id and ${DOCUMENT_IN_SCOPE} limit 1) s`;

const CHUNK_COLUMNS = `ch.id::text as id, ch.document_id::text as document_id, ch.ordinal, ch.text, ch.locator, d.name as document_name,
  (select array_agg(dc2.collection_id::text order by dc2.collection_id) from document_collections dc2 where dc2.document_id = d.id and dc2.tenant_id = $1) as collection_ids`;

/** One pass over the matches of a tsquery; `dense`: it matches a large share of the chunks. */
export interface MatchPass {
  tsquery: string;
  dense: boolean;
}

/**
 * Up to `cap` chunks in scope matching the tsquery in `param` (`gate`: a condition on earlier
 * passes, under which this one runs at all). A sparse tsquery is looked up in the GIN index (its
 * cost is the posting lists it reads). A dense one is not: its posting lists are long (a GIN bitmap
 * of 84k matches took ~280 ms at 1M chunks) while its matches are everywhere, so the scope's
 * documents are read in turn, their chunks tested with ts_match_vq (the function behind @@, which
 * no index serves), until `cap` match: about cap / density chunks, and only chunks in scope.
 */
function matchingSql(param: string, dense: boolean, cap: number, gate: string): string {
  if (!dense) {
    // Raw(full-text): a GIN match (@@) on the chunks' search vectors.
    return `select ch.id, ch.search_vector from document_chunks ch
         ${SCOPE_LATERAL}
        where ch.search_vector @@ ${param}::tsquery and ch.tenant_id = $1${gate} limit ${cap}`;
  }
  // offset 0 keeps the lateral subquery a per-document index scan (document_id, ordinal). At most
  // DENSE_EXAMINED_PER_MATCH x cap chunks in scope are read (the density was judged tenant-wide; in
  // a scope where the word is rare, the pass returns what it found instead of reading the scope).
  // Raw(full-text): ts_match_vq over a bounded scan of the scope.
  return `select e.id, e.search_vector from (
       select c.id, c.search_vector from documents d
         cross join lateral (select ch.id, ch.search_vector from document_chunks ch where ch.document_id = d.id and ch.tenant_id = $1 offset 0) c
        where ${DOCUMENT_IN_SCOPE}${gate}
        limit ${cap * DENSE_EXAMINED_PER_MATCH}) e
       where ts_match_vq(e.search_vector, ${param}::tsquery)
       limit ${cap}`;
}

/** A dense pass reads at most this many chunks per match it may keep (4x what a density of 0.2 needs). */
const DENSE_EXAMINED_PER_MATCH = 20;

/**
 * Chunks matching the passes' tsqueries (each pass yields up to `limits.matchCap` matches), ranked
 * by ts_rank_cd against `rank`; the best `limits.candidates` are kept. The passes after the first
 * run only when the first found fewer than `limits.candidates`: the first pass (planPasses) asks
 * for every lexeme, and when it finds that many, the leg's candidates are chunks holding all of
 * them, the best a chunk can do. The condition is a one-time filter on the first pass's count, in
 * the same statement: a pass that does not run reads nothing (at 1M chunks, the GIN bitmap of a
 * word in 4% of them costs 7 ms to build and 5 ms to sort).
 */
export async function selectFullTextMatches(
  sql: SqlPool,
  scope: RetrievalScope,
  rank: string,
  passes: MatchPass[],
  limits: { matchCap: number; candidates: number },
): Promise<ChunkRow[]> {
  // Full-text search (@@, ts_match_vq, ts_rank_cd) in CTEs, a named prepared statement per
  // shape (which passes, dense or sparse) on the hot path.
  const ctes = passes.map((pass, i) => {
    const gate = i === 0 ? '' : ` and (select count(*) from p0) < ${limits.candidates}`;
    return `p${i} as materialized (${matchingSql(`$${5 + i}`, pass.dense, limits.matchCap, gate)})`;
  });
  // A chunk found by several passes is ranked once (compared by id, not by its whole search vector).
  // Raw(full-text): the ids of the earlier passes' CTEs.
  const earlier = (i: number) => Array.from({ length: i }, (_, j) => `select id from p${j}`).join(' union all ');
  // Raw(full-text): the passes' CTEs, each without the earlier passes' chunks.
  const matched = passes.map((_, i) => `select id, search_vector from p${i}${i === 0 ? '' : ` where id not in (${earlier(i)})`}`).join(' union all ');
  // Raw(full-text): ranked by ts_rank_cd.
  return sql.query<ChunkRow>(
    `with ${ctes.join(', ')}, matched as (
       ${matched}
     ), ranked as (
       select id, ts_rank_cd(search_vector, $4::tsquery) as rank from matched order by rank desc, id limit ${limits.candidates}
     )
     select ${CHUNK_COLUMNS}, r.rank
       from ranked r join document_chunks ch on ch.id = r.id join documents d on d.id = ch.document_id
      order by r.rank desc, ch.id`,
    [scope.tenantId, scope.collectionIds, scope.category, rank, ...passes.map((p) => p.tsquery)],
    `liya_knowledge_leg_${passes.map((p) => (p.dense ? 'dense' : 'sparse')).join('_')}`,
  );
}

/** The query's lexemes as ingestion computes them: to_tsvector('english', unaccent(query)). */
export async function selectQueryLexemes(sql: SqlPool, query: string): Promise<string[]> {
  // Raw(full-text): text-search functions, a named prepared statement on the hot path.
  const [row] = await sql.query<{ lexemes: string[] }>(`select tsvector_to_array(to_tsvector('english', unaccent($1))) as lexemes`, [query], 'liya_knowledge_query_lexemes');
  return row?.lexemes ?? [];
}


type ScopeParams = { tenantId: string; collectionIds: string[]; category: string | null };

const scopeParams = (scope: RetrievalScope): ScopeParams => ({ tenantId: scope.tenantId, collectionIds: scope.collectionIds, category: scope.category });

/** DOCUMENT_IN_SCOPE for Kysely: the same rule for a document `d` of the statement it is put in. */
function documentInScope(p: Params<ScopeParams> | ScopeParams) {
  const inCollections = build
    .selectFrom('document_collections as dc')
    .select(kysql.lit(1).as('one'))
    .where('dc.document_id', '=', kysql.ref<string>('d.id'))
    .where('dc.tenant_id', '=', p.tenantId)
    .where(kysql<boolean>`${kysql.ref('dc.collection_id')} = any(${p.collectionIds}::uuid[])`);
  return kysql<boolean>`${kysql.ref('d.tenant_id')} = ${p.tenantId} and ${kysql.ref('d.status')} = 'ready' and (${p.category}::text is null or ${kysql.ref('d.category')} = ${p.category})
  and exists (${inCollections})`;
}

const SCOPE_MODEL = statement<ScopeParams>()('liya_knowledge_scope_model', (p) =>
  build
    .selectFrom('documents as d')
    .select(['d.embedding_model', kysql<string>`sum(${kysql.ref('d.chunk_count')})::text`.as('chunks'), kysql<number>`count(*)::int`.as('documents')])
    .where(documentInScope(p))
    .where('d.embedding_model', 'is not', null)
    .groupBy('d.embedding_model')
    .orderBy(kysql`count(*)`, 'desc')
    .orderBy('d.embedding_model')
    .limit(1),
).as<{ embedding_model: string; chunks: string; documents: number }>();

/** The embedding model of most of the ready documents in scope (undefined: none was embedded), with their chunk and document counts. */
export async function selectScopeEmbeddingModel(sql: SqlPool, scope: RetrievalScope): Promise<{ embedding_model: string; chunks: string; documents: number } | undefined> {
  const [row] = await SCOPE_MODEL.run(sql, scopeParams(scope));
  return row;
}

/** The ids of the `limit` chunks in scope embedded by `model` nearest `vectorLiteral` (cosine distance, pgvector). */
export async function selectNearestChunkIds(sql: SqlPool, scope: RetrievalScope, model: string, vectorLiteral: string, dimensions: number, limit: number): Promise<string[]> {
  // Every embedded chunk in scope, ranked inside PostgreSQL (cosine distance).
  // Raw(pgvector): pgvector's `<=>` and vector_dims, a named prepared statement on the hot path.
  const rows = await sql.query<{ id: string }>(
    `select ch.id::text as id from document_chunks ch join documents d on d.id = ch.document_id
        where ${SCOPE_SQL} and d.embedding_model = $4 and ch.embedding_vector is not null and vector_dims(ch.embedding_vector) = $6
        order by ch.embedding_vector <=> $5::vector, ch.id limit ${limit}`,
    [scope.tenantId, scope.collectionIds, scope.category, model, vectorLiteral, dimensions],
    'liya_knowledge_leg_pgvector',
  );
  return rows.map((r) => r.id);
}

/**
 * The ids of about the `limit` chunks in scope embedded by `model` nearest `vectorLiteral`, through
 * the HNSW index of `dimensions` (vector-support.ts; pgvector >= 0.8): approximate, with
 * ef_search = limit, and an iterative scan that goes on past chunks out of scope up to
 * hnsw.max_scan_tuples (20,000 by default). Nearest first, ties by id.
 */
export async function selectNearestChunkIdsIndexed(sql: SqlPool, scope: RetrievalScope, model: string, vectorLiteral: string, dimensions: number, limit: number): Promise<string[]> {
  // pgvector's `<=>` on the vector cast to the index's dimension (a literal, so the partial index's
  // predicate is proven and one named prepared statement serves each dimension), and its scan
  // settings, kept by the connection's session (one round trip a query, no transaction).
  const d = Math.trunc(dimensions);
  // relaxed_order may hand back a few rows out of order: the outer sort restores it.
  // Raw(pgvector): the HNSW index's operator, cast and scan settings.
  const rows = await sql.queryWithSettings<{ id: string }>(
    { 'hnsw.ef_search': Math.max(40, Math.trunc(limit)), 'hnsw.iterative_scan': 'relaxed_order' },
    `with nearest as materialized (
       select ch.id, ch.embedding_vector::vector(${d}) <=> $5::vector(${d}) as distance from document_chunks ch
         ${SCOPE_LATERAL}
        where ch.tenant_id = $1 and s.embedding_model = $4 and vector_dims(ch.embedding_vector) = ${d}
        order by ch.embedding_vector::vector(${d}) <=> $5::vector(${d}) limit ${Math.trunc(limit)})
     select id::text as id from nearest order by distance, id`,
    [scope.tenantId, scope.collectionIds, scope.category, model, vectorLiteral],
    `liya_knowledge_leg_hnsw_${d}`,
  );
  return rows.map((r) => r.id);
}

/** SCOPE_SQL for Kysely: chunks `ch` of documents `d` (joined) in scope. */
function chunksInScope(p: Params<ScopeParams> | ScopeParams) {
  return build
    .selectFrom('document_chunks as ch')
    .innerJoin('documents as d', 'd.id', 'ch.document_id')
    .where('ch.tenant_id', '=', p.tenantId)
    .where(documentInScope(p));
}

/** The chunks in scope embedded by `model` (the text legs' model scope). */
function modelChunks(scope: RetrievalScope, model: string) {
  return chunksInScope(scopeParams(scope))
    .select([kysql<string>`${kysql.ref('ch.id')}::text`.as('id'), 'ch.embedding'])
    .where('d.embedding_model', '=', model)
    .where('ch.embedding', 'is not', null);
}

/** Up to `limit` chunks in scope embedded by `model`, with their Float32 embeddings. */
export async function selectChunkEmbeddings(sql: SqlPool, scope: RetrievalScope, model: string, limit: number): Promise<{ id: string; embedding: Buffer }[]> {
  return (await runBuilt(sql, modelChunks(scope, model).limit(Math.trunc(limit)))) as { id: string; embedding: Buffer }[];
}

/** Those of the chunks `ids` in scope embedded by `model`, with their Float32 embeddings. */
export async function selectChunkEmbeddingsByIds(sql: SqlPool, scope: RetrievalScope, model: string, ids: string[]): Promise<{ id: string; embedding: Buffer }[]> {
  const query = modelChunks(scope, model).where(kysql<boolean>`${kysql.ref('ch.id')} = any(${ids}::uuid[])`);
  return (await runBuilt(sql, query)) as { id: string; embedding: Buffer }[];
}

const CHUNK_ROWS = statement<ScopeParams & { ids: string[] }>()('liya_knowledge_chunk_rows', (p) =>
  chunksInScope(p)
    .select((eb) => [
      kysql<string>`${kysql.ref('ch.id')}::text`.as('id'),
      kysql<string>`${kysql.ref('ch.document_id')}::text`.as('document_id'),
      'ch.ordinal',
      'ch.text',
      'ch.locator',
      'd.name as document_name',
      eb
        .selectFrom('document_collections as dc2')
        .select(kysql<string[]>`array_agg(${kysql.ref('dc2.collection_id')}::text order by ${kysql.ref('dc2.collection_id')})`.as('ids'))
        .whereRef('dc2.document_id', '=', 'd.id')
        .where('dc2.tenant_id', '=', p.tenantId)
        .as('collection_ids'),
    ])
    .where(kysql<boolean>`${kysql.ref('ch.id')} = any(${p.ids}::uuid[])`),
).as<ChunkRow>();

/** Those of the chunks `ids` that are in scope. */
export async function selectChunkRows(sql: SqlPool, scope: RetrievalScope, ids: string[]): Promise<ChunkRow[]> {
  return CHUNK_ROWS.run(sql, { ...scopeParams(scope), ids });
}

// The collections as json_agg(json_build_object(...)) in a correlated subquery: one round trip.
const DOMAIN_COLLECTIONS = statement<{ tenantId: string; domainKey: string }>()('liya_knowledge_domain_collections', (p) =>
  build
    .selectFrom('tenants as t')
    .select((eb) => [
      't.enabled_domains',
      eb.selectFrom('custom_domains as cd').select('cd.is_active').whereRef('cd.tenant_id', '=', 't.id').where('cd.domain_key', '=', p.domainKey).as('custom_active'),
      eb
        .selectFrom('collections as c')
        .innerJoin('collection_domains as x', 'x.collection_id', 'c.id')
        .select(
          kysql<DomainCollectionRow[]>`coalesce(json_agg(json_build_object('id', ${kysql.ref('c.id')}, 'config', ${kysql.ref('c.retrieval_config')}) order by ${kysql.ref('c.created_at')}, ${kysql.ref('c.id')}), '[]'::json)`.as('collections'),
        )
        .whereRef('c.tenant_id', '=', 't.id')
        .whereRef('x.tenant_id', '=', 't.id')
        .where('x.domain_key', '=', p.domainKey)
        .as('collections'),
    ])
    .where('t.id', '=', p.tenantId),
).as<{ enabled_domains: string[] | null; custom_active: boolean | null; collections: DomainCollectionRow[] }>();

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
  const [row] = await DOMAIN_COLLECTIONS.run(sql, { tenantId, domainKey });
  return row;
}
