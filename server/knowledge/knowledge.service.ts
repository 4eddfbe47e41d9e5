// Retrieval over a domain's collections: hybrid ranking of the live chunk tables.
//
// 1. The domain's collections are resolved (an enabled built-in domain or an active custom domain
//    of the tenant), narrowed to `collection_ids` when given, and given a weight each (its
//    retrieval_config.boost_priority; collections reached only through scope collection_plus_domain
//    weigh DOMAIN_SPILL_WEIGHT less).
// 2. Candidates come from two full-text legs run in parallel over the GIN index: the query's
//    lexemes (to_tsvector('english', unaccent(query)), any of them, ranked by ts_rank_cd) and
//    spelling corrections of the lexemes no chunk contains, taken from the tenant's vocabulary with
//    trigram similarity (vocabulary.ts). Lexemes found in more than a fifth of the tenant's chunks
//    are dropped. Chunks holding every lexeme are taken first, then any; top CANDIDATES_PER_LEG of
//    each. (Trigram word_similarity computed over chunk text in SQL was measured at ~0.6 ms a row,
//    seconds at 10k chunks: it is done on words instead.)
// 3. When the documents in scope were embedded, the query is embedded with the same model (openai
//    SDK through deps.llm) and a third leg ranks by cosine similarity: with pgvector, over every
//    embedded chunk in scope inside PostgreSQL (pgvector.ts) while that scan stays small
//    (PGVECTOR_SCAN_MAX_VALUES); otherwise here, in Node, over the Float32 vectors: every chunk in
//    scope when there are at most VECTOR_SCAN_MAX of them (so a chunk with no word in common can
//    still be found), else the lexical candidates only.
// 4. Reciprocal rank fusion (k = 60) of the legs, times the chunk's collection weight; best first.
//
// Every statement filters on tenant_id (chunks, documents and document_collections alike) and reads
// the live tables: a deleted document's chunks are gone from the next query.
import type { EntityManager } from '../../db/orm.js';
import { isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { assertDomainUsable, domainAccessError, judgeDomainAccess } from '../domains/domain-access.js';
import { AppError, invalidInput } from '../errors.js';
import { DEFAULT_TOP_K, MAX_QUERY_CHARS, MAX_TOP_K, type KnowledgeResult } from './knowledge.schemas.js';
import { toVectorLiteral } from './pgvector.js';
import { cosine, decodeEmbedding, embedQuery } from './query-embedding.js';
import { corrections, tenantVocabulary, type Vocabulary } from './vocabulary.js';
import {
  selectChunkEmbeddings, selectChunkEmbeddingsByIds, selectChunkRows, selectDomainCollections, selectFullTextMatches, selectNearestChunkIds,
  selectQueryLexemes, selectScopeEmbeddingModel, type ChunkRow, type RetrievalScope,
} from './store/retrieval.js';

export const RRF_K = 60;
export const CANDIDATES_PER_LEG = 100;
/** Collections reached through scope `collection_plus_domain` (not requested) weigh this much. */
export const DOMAIN_SPILL_WEIGHT = 0.5;
/** Up to this many embedded chunks in scope, the vector leg scans them all (in Node). */
export const VECTOR_SCAN_MAX = 1_000;
/**
 * With pgvector, PostgreSQL scans every embedded chunk in scope while chunks x dimensions stays
 * under this: 15k chunks of 64 dimensions, 650 of 1536 (measured at 14-21 ms a query on 2 cores).
 * The scan is exact (the column has no fixed dimension, so no approximate index): at 100k chunks it
 * took 132 ms with 64 dimensions and 2.1 s with 1536, so beyond the bound the portable path is used.
 */
export const PGVECTOR_SCAN_MAX_VALUES = 1_000_000;
const MAX_TERMS = 32;
/** Lexemes in more than this share of the tenant's chunks are dropped from a query ... */
export const COMMON_FRACTION = 0.2;
/** ... unless the tenant has few chunks: a lexeme in at most this many is always kept. */
const COMMON_MIN_CHUNKS = 50;
/** At most this many matches of a leg are ranked (twice this with the all-lexemes pass). */
export const MATCH_CAP = 300;

export interface KnowledgeQuery {
  domainKey: string;
  query: string;
  topK?: number;
  collectionIds?: string[];
  category?: string;
  /**
   * Intent grounding: collection ids that are no longer attached to the domain are skipped instead
   * of answering 404 (an intent's stored retrieval_config may outlive a collection).
   */
  ignoreUnknownCollections?: boolean;
  /** Leave out the vector leg (the quality check compares both). */
  lexicalOnly?: boolean;
}

export interface RetrievalConfigValue {
  scope?: 'collection_only' | 'collection_plus_domain';
  boost_priority?: number;
  fallback_when_empty?: 'domain_fallback' | 'no_results';
}

interface DomainCollection {
  id: string;
  config: RetrievalConfigValue | null;
}

function scopeWeights(collections: DomainCollection[], requested: string[] | null): { weights: Map<string, number>; fallback: boolean } {
  const boost = (c: DomainCollection) => {
    const value = c.config?.boost_priority;
    return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 1;
  };
  const weights = new Map<string, number>();
  if (!requested) {
    for (const c of collections) weights.set(c.id, boost(c));
    return { weights, fallback: false };
  }
  const chosen = collections.filter((c) => requested.includes(c.id));
  for (const c of chosen) weights.set(c.id, boost(c));
  if (chosen.some((c) => c.config?.scope === 'collection_plus_domain')) {
    for (const c of collections) if (!weights.has(c.id)) weights.set(c.id, boost(c) * DOMAIN_SPILL_WEIGHT);
  }
  return { weights, fallback: chosen.some((c) => c.config?.fallback_when_empty === 'domain_fallback') };
}

/** A tsquery matching any of `lexemes` (already normalised: no stemming is applied again). */
export function anyOf(lexemes: string[]): string {
  return lexemes.map((l) => `'${l.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`).join(' | ');
}

/** A tsquery matching all of `lexemes`. */
export const allOf = (lexemes: string[]) => anyOf(lexemes).replace(/ \| /g, ' & ');

/**
 * Chunks matching any of the lexemes, ranked by ts_rank_cd. Only a bounded set of matches is
 * ranked, so a query's cost does not grow with the number of chunks a word appears in (words that
 * common are dropped beforehand, see planTerms): with `allFirst`, up to MATCH_CAP chunks holding
 * every lexeme (a selective GIN lookup, and the best candidates) plus up to MATCH_CAP holding any.
 */
async function fullTextLeg(deps: AppDeps, scope: RetrievalScope, lexemes: string[], allFirst: boolean): Promise<ChunkRow[]> {
  if (!lexemes.length) return [];
  const both = allFirst && lexemes.length > 1;
  return selectFullTextMatches(deps.sql, scope, anyOf(lexemes), both ? allOf(lexemes) : null, { matchCap: MATCH_CAP, candidates: CANDIDATES_PER_LEG });
}

/** The query's lexemes as ingestion computes them: to_tsvector('english', unaccent(query)). */
async function queryLexemes(deps: AppDeps, query: string): Promise<string[]> {
  return selectQueryLexemes(deps.sql, query);
}

export interface TermPlan {
  /** Searched as written (minus the ones too common to mean anything). */
  exact: string[];
  /** Known lexemes close to query lexemes the index does not know (misspellings). */
  fuzzy: string[];
}

/**
 * Drops lexemes found in more than COMMON_FRACTION of the tenant's chunks (keeping the two rarest
 * when all are that common), and proposes spelling corrections for lexemes no chunk contains.
 */
export function planTerms(lexemes: string[], vocabulary: Vocabulary | null): TermPlan {
  if (!vocabulary || vocabulary.chunks === 0) return { exact: lexemes.slice(0, MAX_TERMS), fuzzy: [] };
  const limit = Math.max(COMMON_MIN_CHUNKS, vocabulary.chunks * COMMON_FRACTION);
  const df = (l: string) => vocabulary.df.get(l);
  let exact = lexemes.filter((l) => (df(l) ?? 0) <= limit);
  if (!exact.length) exact = [...lexemes].sort((a, b) => (df(a) ?? 0) - (df(b) ?? 0)).slice(0, 2);
  const fuzzy = new Set<string>();
  for (const l of lexemes) {
    if (df(l) !== undefined || !/^[a-z]{4,}$/.test(l)) continue;
    for (const c of corrections(vocabulary, l)) if ((df(c) ?? 0) <= limit) fuzzy.add(c);
  }
  return { exact: exact.slice(0, MAX_TERMS), fuzzy: [...fuzzy].slice(0, MAX_TERMS) };
}

/** The embedding model of most of the ready documents in scope (null: none was embedded), with their chunk count. */
async function scopeEmbeddingModel(deps: AppDeps, scope: RetrievalScope): Promise<{ model: string; chunks: number } | null> {
  const row = await selectScopeEmbeddingModel(deps.sql, scope);
  return row ? { model: row.embedding_model, chunks: Number(row.chunks) } : null;
}

interface VectorLeg {
  /** Chunk ids by cosine similarity, best first. */
  ranked: string[];
  /** Whether every embedded chunk in scope was compared (false: the lexical candidates only). */
  scanned: boolean;
}

async function vectorLeg(em: EntityManager, deps: AppDeps, scope: RetrievalScope, embedded: { model: string; chunks: number }, query: string, candidateIds: Promise<string[]>): Promise<VectorLeg | null> {
  const { model } = embedded;
  const vector = await embedQuery(em, deps, scope.tenantId, model, query);
  if (!vector) return null;
  if (deps.pgvector && embedded.chunks * vector.length <= PGVECTOR_SCAN_MAX_VALUES) {
    // Every embedded chunk in scope, ranked inside PostgreSQL (cosine distance).
    const ranked = await selectNearestChunkIds(deps.sql, scope, model, toVectorLiteral(vector), vector.length, CANDIDATES_PER_LEG);
    return { ranked, scanned: true };
  }
  let rows = await selectChunkEmbeddings(deps.sql, scope, model, VECTOR_SCAN_MAX + 1);
  let scanned = true;
  if (rows.length > VECTOR_SCAN_MAX) {
    scanned = false;
    const ids = await candidateIds;
    rows = ids.length ? await selectChunkEmbeddingsByIds(deps.sql, scope, model, ids) : [];
  }
  const scored: { id: string; similarity: number }[] = [];
  for (const row of rows) {
    const similarity = cosine(vector, decodeEmbedding(row.embedding) ?? new Float32Array(0));
    if (Number.isFinite(similarity)) scored.push({ id: row.id, similarity });
  }
  scored.sort((a, b) => b.similarity - a.similarity || (a.id < b.id ? -1 : 1));
  return { ranked: scored.slice(0, CANDIDATES_PER_LEG).map((s) => s.id), scanned };
}

async function chunkRows(deps: AppDeps, scope: RetrievalScope, ids: string[]): Promise<ChunkRow[]> {
  if (!ids.length) return [];
  return selectChunkRows(deps.sql, scope, ids);
}

async function searchScope(em: EntityManager, deps: AppDeps, scope: RetrievalScope, weights: Map<string, number>, query: string, topK: number, lexicalOnly: boolean): Promise<KnowledgeResult[]> {
  if (!scope.collectionIds.length) return [];
  const [lexemes, vocabulary, embedded] = await Promise.all([
    queryLexemes(deps, query),
    tenantVocabulary(deps, scope.tenantId).catch(() => null),
    lexicalOnly ? null : scopeEmbeddingModel(deps, scope),
  ]);
  const terms = planTerms(lexemes, vocabulary);
  const fts = fullTextLeg(deps, scope, terms.exact, true);
  // Corrections are alternatives to each other (two spellings of one word): any of them will do.
  const trigram = fullTextLeg(deps, scope, terms.fuzzy, false);
  const candidateIds = Promise.all([fts, trigram]).then(([a, b]) => [...new Set([...a, ...b].map((r) => r.id))]);
  const [ftsRows, trigramRows, vector] = await Promise.all([fts, trigram, embedded ? vectorLeg(em, deps, scope, embedded, query, candidateIds) : null]);

  const rows = new Map<string, ChunkRow>();
  for (const row of [...ftsRows, ...trigramRows]) rows.set(row.id, row);
  const fused = new Map<string, number>();
  const addLeg = (ids: string[]) => ids.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
  addLeg(ftsRows.map((r) => r.id));
  addLeg(trigramRows.map((r) => r.id));
  if (vector) addLeg(vector.ranked);

  const weightOf = (row: ChunkRow) => Math.max(0, ...(row.collection_ids ?? []).map((id) => weights.get(id) ?? 0));
  // Chunks found by the vector scan alone: load their rows (only as many as could make the answer).
  const missing = [...fused.keys()].filter((id) => !rows.has(id));
  if (missing.length) for (const row of await chunkRows(deps, scope, missing)) rows.set(row.id, row);

  const results: KnowledgeResult[] = [];
  for (const [id, rrf] of fused) {
    const row = rows.get(id);
    if (!row) continue;
    const score = rrf * weightOf(row);
    results.push({
      chunk_id: row.id,
      document_id: row.document_id,
      document_name: row.document_name,
      collection_ids: row.collection_ids ?? [],
      text: row.text,
      score: Number(score.toFixed(8)),
      locator: row.locator,
    });
  }
  results.sort((a, b) => b.score - a.score || a.document_name.localeCompare(b.document_name) || (a.chunk_id < b.chunk_id ? -1 : 1));
  return results.slice(0, topK);
}

/**
 * The domain's collections, when the tenant may use the domain (domain-access.ts's verdict, judged
 * from the same statement's columns: no extra round trip): 404 for an unknown domain, 403
 * DOMAIN_NOT_ENABLED for a built-in one not enabled or an inactive custom one.
 */
export async function domainCollections(deps: AppDeps, tenantId: string, domainKey: string): Promise<DomainCollection[]> {
  const row = await selectDomainCollections(deps.sql, tenantId, domainKey);
  // No tenant row at all: answered as an unknown domain.
  if (!row) throw domainAccessError(domainKey, 'unknown');
  const customDomain = row.custom_active === null ? null : { isActive: row.custom_active };
  assertDomainUsable(domainKey, judgeDomainAccess(domainKey, row.enabled_domains, customDomain));
  return row.collections as DomainCollection[];
}

/**
 * Searches the knowledge of a domain. Collections: all of the domain's, or `collectionIds` (each must
 * be attached to the domain: otherwise 404 naming it). Retrieval configs of the requested
 * collections: `boost_priority` multiplies their chunks' scores (default 1); scope
 * `collection_plus_domain` adds the domain's other collections at half weight (default
 * `collection_only`); `fallback_when_empty: domain_fallback` searches the whole domain when the
 * requested collections give nothing (default `no_results`). Without `collectionIds` the whole
 * domain is searched and only the boosts apply.
 */
export async function searchKnowledge(em: EntityManager, deps: AppDeps, tenantId: string, request: KnowledgeQuery): Promise<{ results: KnowledgeResult[] }> {
  const query = request.query.trim();
  if (!query) throw invalidInput('The request is invalid', [{ path: 'query', message: 'The query is empty', code: 'too_small' }]);
  if (query.length > MAX_QUERY_CHARS) {
    throw invalidInput('The request is invalid', [{ path: 'query', message: `The query is longer than ${MAX_QUERY_CHARS} characters`, code: 'too_big' }]);
  }
  const topK = Math.min(Math.max(1, request.topK ?? DEFAULT_TOP_K), MAX_TOP_K);
  const collections = await domainCollections(deps, tenantId, request.domainKey);
  const category = request.category ?? null;

  let requested: string[] | null = null;
  if (request.collectionIds) {
    const attached = new Set(collections.map((c) => c.id));
    const ids = [...new Set(request.collectionIds.map((id) => id.toLowerCase()))];
    const unknown = ids.filter((id) => !isUuid(id) || !attached.has(id));
    if (unknown.length && !request.ignoreUnknownCollections) {
      throw new AppError('NOT_FOUND', `Collection "${unknown[0]}" not found in domain "${request.domainKey}"`, { collection_id: unknown[0], collection_ids: unknown });
    }
    requested = ids.filter((id) => attached.has(id));
    if (!requested.length) return { results: [] };
  }

  const { weights, fallback } = scopeWeights(collections, requested);
  const lexicalOnly = request.lexicalOnly === true;
  const results = await searchScope(em, deps, { tenantId, collectionIds: [...weights.keys()], category }, weights, query, topK, lexicalOnly);
  if (results.length || !fallback) return { results };
  const domain = scopeWeights(collections, null).weights;
  return { results: await searchScope(em, deps, { tenantId, collectionIds: [...domain.keys()], category }, domain, query, topK, lexicalOnly) };
}
