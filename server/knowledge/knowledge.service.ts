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
//    are dropped. Chunks holding every lexeme are taken first, then (unless those are plenty) chunks
//    holding any of the rarest lexemes, a bounded number of each (planPasses); top
//    CANDIDATES_PER_LEG of each leg. (Trigram word_similarity computed over chunk text in SQL was measured at ~0.6 ms a row,
//    seconds at 10k chunks: it is done on words instead.)
// 3. When the documents in scope were embedded, the query is embedded with the same model (openai
//    SDK through deps.llm) and a third leg ranks by cosine similarity: with pgvector, inside
//    PostgreSQL (pgvector.ts, nearestChunkIds: an exact scan of a small scope, the HNSW index of the
//    dimension for a large one once built, else an exact scan within a bound); otherwise here, in Node, over
//    the Float32 vectors: every chunk in scope when there are at most VECTOR_SCAN_MAX of them (so a
//    chunk with no word in common can still be found), else the lexical candidates only.
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
import { nearestChunkIds } from './pgvector.js';
import { cosine, decodeEmbedding, embedQuery } from './query-embedding.js';
import { corrections, tenantVocabulary, type Vocabulary } from './vocabulary.js';
import {
  selectChunkEmbeddings, selectChunkEmbeddingsByIds, selectChunkRows, selectDomainCollections, selectFullTextMatches,
  selectQueryLexemes, selectScopeEmbeddingModel, type ChunkRow, type MatchPass, type RetrievalScope,
} from './store/retrieval.js';

export const RRF_K = 60;
export const CANDIDATES_PER_LEG = 100;
/** Collections reached through scope `collection_plus_domain` (not requested) weigh this much. */
export const DOMAIN_SPILL_WEIGHT = 0.5;
/** Up to this many embedded chunks in scope, the vector leg scans them all (in Node). */
export const VECTOR_SCAN_MAX = 1_000;
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
 * A pass expected to match at least this share of the tenant's chunks (from the vocabulary's
 * counts) is dense: its matches are found by reading the scope's chunks in turn (about MATCH_CAP /
 * share of them) rather than through the GIN index, whose bitmap of such a word is as long as its
 * posting list (store/retrieval.ts). At 1M chunks, GIN took ~0.12 us a posting plus ~5 ms for the
 * capped heap reads, the scan ~5 us a chunk: the scan wins from about a fifth of the chunks.
 */
export const DENSE_SHARE = 0.2;
/**
 * The any-lexeme pass searches the rarest lexemes whose chunk counts sum to at most this (at least
 * the rarest one): a GIN lookup costs its posting lists, and the rarest lexemes are the telling ones.
 * Below 20k chunks per tenant this never leaves a lexeme out.
 */
export const ANY_PASS_POSTINGS = 20_000;

/**
 * The passes over the matches of `lexemes`: with `allFirst` (and several lexemes), the chunks
 * holding every lexeme first (the best candidates; a GIN lookup driven by the rarest posting list),
 * then, unless those are expected (from the vocabulary's counts) to number at least 2 x MATCH_CAP,
 * chunks holding any of the rarest lexemes within ANY_PASS_POSTINGS (a pass that runs only when
 * the first found fewer than CANDIDATES_PER_LEG, see selectFullTextMatches). Without a vocabulary:
 * both passes over every lexeme, GIN lookups.
 */
export function planPasses(lexemes: string[], vocabulary: Vocabulary | null, allFirst: boolean): MatchPass[] {
  const chunks = vocabulary?.chunks ?? 0;
  const df = (l: string) => vocabulary?.df.get(l) ?? 0;
  const passes: MatchPass[] = [];
  if (allFirst && lexemes.length > 1) {
    // Taken as independent words: the product of their shares.
    const share = chunks ? lexemes.reduce((p, l) => p * Math.min(1, df(l) / chunks), 1) : 0;
    passes.push({ tsquery: allOf(lexemes), dense: share >= DENSE_SHARE });
    // Expected to fill its cap twice over: the chunks holding every lexeme are the candidates.
    if (share * chunks >= 2 * MATCH_CAP) return passes;
  }
  let any = lexemes;
  let postings = 0;
  if (chunks) {
    any = [];
    for (const l of [...lexemes].sort((a, b) => df(a) - df(b) || (a < b ? -1 : 1))) {
      if (any.length && postings + df(l) > ANY_PASS_POSTINGS) break;
      any.push(l);
      postings += df(l);
    }
  }
  passes.push({ tsquery: anyOf(any), dense: chunks > 0 && postings / chunks >= DENSE_SHARE });
  return passes;
}

/**
 * Chunks matching the lexemes (see planPasses), ranked by ts_rank_cd against all of them. Only a
 * bounded set of matches is ranked, up to MATCH_CAP a pass, so a query's cost does not grow with the
 * number of chunks a word appears in (words in more than COMMON_FRACTION of the chunks are dropped
 * beforehand, see planTerms).
 */
async function fullTextLeg(deps: AppDeps, scope: RetrievalScope, lexemes: string[], allFirst: boolean, vocabulary: Vocabulary | null): Promise<ChunkRow[]> {
  if (!lexemes.length) return [];
  return selectFullTextMatches(deps.sql, scope, anyOf(lexemes), planPasses(lexemes, vocabulary, allFirst), { matchCap: MATCH_CAP, candidates: CANDIDATES_PER_LEG });
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

type ScopeModel = { model: string; chunks: number; documents: number } | null;

/**
 * The embedding model of a scope of at least SCOPE_MODEL_CACHED_DOCUMENTS embedded documents is
 * kept: read again in the background when older than SCOPE_MODEL_REFRESH_MS, and awaited when older
 * than SCOPE_MODEL_MAX_AGE_MS. Reading it aggregates every document in scope (44 ms for 10k
 * documents on a loaded 2-core machine), too much for every query; what it decides for such a
 * scope (which model embeds the query, exact or HNSW ranking) may lag a change of its documents by
 * that much, while which chunks are found is always read live. Smaller scopes are read every time.
 */
const SCOPE_MODEL_CACHED_DOCUMENTS = 500;
const SCOPE_MODEL_REFRESH_MS = 5_000;
const SCOPE_MODEL_MAX_AGE_MS = 60_000;
const SCOPE_MODEL_ENTRIES = 1_000;
const scopeModels = new Map<string, { value: ScopeModel; at: number; reading: Promise<ScopeModel> | null }>();

async function readScopeModel(deps: AppDeps, scope: RetrievalScope): Promise<ScopeModel> {
  const row = await selectScopeEmbeddingModel(deps.sql, scope);
  return row ? { model: row.embedding_model, chunks: Number(row.chunks), documents: row.documents } : null;
}

/** The embedding model of most of the ready documents in scope (null: none was embedded), with their chunk count. */
async function scopeEmbeddingModel(deps: AppDeps, scope: RetrievalScope): Promise<ScopeModel> {
  const key = `${scope.tenantId}|${[...scope.collectionIds].sort().join(',')}|${scope.category ?? ''}`;
  const entry = scopeModels.get(key);
  const age = entry ? Date.now() - entry.at : Infinity;
  const refresh = () => {
    const current = scopeModels.get(key) ?? { value: null, at: 0, reading: null };
    if (!scopeModels.has(key)) {
      if (scopeModels.size >= SCOPE_MODEL_ENTRIES) scopeModels.delete(scopeModels.keys().next().value!);
      scopeModels.set(key, current);
    }
    current.reading ??= readScopeModel(deps, scope)
      .then((value) => {
        current.value = value;
        // A small scope is not kept: read again at the next query.
        current.at = value && value.documents >= SCOPE_MODEL_CACHED_DOCUMENTS ? Date.now() : 0;
        return value;
      })
      .finally(() => {
        current.reading = null;
      });
    return current.reading;
  };
  if (!entry || age >= SCOPE_MODEL_MAX_AGE_MS) return refresh();
  if (age >= SCOPE_MODEL_REFRESH_MS) refresh().catch((err: unknown) => deps.log.warn({ err }, 'reading the scope\'s embedding model failed'));
  return entry.value;
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
  if (deps.pgvector) {
    // Ranked inside PostgreSQL (cosine distance): exactly for a small scope, through the HNSW index
    // of the dimension for a large one (null: that index is not built yet).
    const nearest = await nearestChunkIds(deps, scope, model, vector, embedded.chunks, CANDIDATES_PER_LEG);
    if (nearest) return { ranked: nearest.ids, scanned: true };
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

/** What a query needs whatever its scope, started before the domain's collections are read. */
interface QueryAnalysis {
  lexemes: Promise<string[]>;
  vocabulary: Promise<Vocabulary | null>;
}

async function searchScope(em: EntityManager, deps: AppDeps, scope: RetrievalScope, weights: Map<string, number>, query: string, analysis: QueryAnalysis, topK: number, lexicalOnly: boolean): Promise<KnowledgeResult[]> {
  if (!scope.collectionIds.length) return [];
  // The scope's embedding model is read beside the lexical legs, which do not need it.
  const embedded = lexicalOnly ? Promise.resolve(null) : scopeEmbeddingModel(deps, scope);
  // Awaited below, unless the lexical analysis throws first: then its failure is no one's to report.
  embedded.catch(() => undefined);
  const [lexemes, vocabulary] = await Promise.all([analysis.lexemes, analysis.vocabulary]);
  const terms = planTerms(lexemes, vocabulary);
  const fts = fullTextLeg(deps, scope, terms.exact, true, vocabulary);
  // Corrections are alternatives to each other (two spellings of one word): any of them will do.
  const trigram = fullTextLeg(deps, scope, terms.fuzzy, false, vocabulary);
  const candidateIds = Promise.all([fts, trigram]).then(([a, b]) => [...new Set([...a, ...b].map((r) => r.id))]);
  // Read only by a vector leg ranking in Node; when a leg fails, the await below reports it.
  candidateIds.catch(() => undefined);
  const vectorRanking = embedded.then((model) => (model ? vectorLeg(em, deps, scope, model, query, candidateIds) : null));
  const [ftsRows, trigramRows, vector] = await Promise.all([fts, trigram, vectorRanking]);

  const rows = new Map<string, ChunkRow>();
  for (const row of [...ftsRows, ...trigramRows]) rows.set(row.id, row);
  const fused = new Map<string, number>();
  const addLeg = (ids: string[]) => ids.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
  addLeg(ftsRows.map((r) => r.id));
  addLeg(trigramRows.map((r) => r.id));
  if (vector) addLeg(vector.ranked);

  const weightOf = (row: ChunkRow) => Math.max(0, ...(row.collection_ids ?? []).map((id) => weights.get(id) ?? 0));
  // Chunks found by the vector leg alone have no row yet: load only those that could make the
  // answer. Unloaded, a chunk's score is at most its fused value times the largest weight in scope;
  // rows are loaded while one such bound reaches the topK-th best score (a row out of scope is not
  // found, and drops out).
  const maxWeight = Math.max(0, ...weights.values());
  const attempted = new Set<string>();
  for (;;) {
    const keys: { id: string; key: number; known: boolean }[] = [];
    for (const [id, rrf] of fused) {
      const row = rows.get(id);
      if (row) keys.push({ id, key: rrf * weightOf(row), known: true });
      else if (!attempted.has(id)) keys.push({ id, key: rrf * maxWeight, known: false });
    }
    keys.sort((a, b) => b.key - a.key);
    const bar = keys[Math.min(topK, keys.length) - 1]?.key ?? 0;
    const load = keys.filter((k) => !k.known && k.key >= bar).map((k) => k.id);
    if (!load.length) break;
    for (const id of load) attempted.add(id);
    for (const row of await chunkRows(deps, scope, load)) rows.set(row.id, row);
  }

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
  // The query's lexemes and the tenant's vocabulary do not depend on the domain: read meanwhile.
  const analysis: QueryAnalysis = { lexemes: queryLexemes(deps, query), vocabulary: tenantVocabulary(deps, tenantId).catch(() => null) };
  // Awaited below, unless the domain check throws first: then their failure is no one's to report.
  analysis.lexemes.catch(() => undefined);
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
  const results = await searchScope(em, deps, { tenantId, collectionIds: [...weights.keys()], category }, weights, query, analysis, topK, lexicalOnly);
  if (results.length || !fallback) return { results };
  const domain = scopeWeights(collections, null).weights;
  return { results: await searchScope(em, deps, { tenantId, collectionIds: [...domain.keys()], category }, domain, query, analysis, topK, lexicalOnly) };
}
