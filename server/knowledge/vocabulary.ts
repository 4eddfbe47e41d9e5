// A tenant's search vocabulary: the lexemes of its chunks' search vectors with their chunk counts
// (ts_stat), held in memory with a trigram index. Used to correct misspelt query words (a word the
// index does not know is matched to the most similar known lexemes) and to drop words so common
// they say nothing. Checked in the background when older than VOCABULARY_TTL_MS, and rebuilt only
// if the tenant's documents changed (ts_stat reads every chunk: about half a second at 100k); until
// then a new word is simply not known here, which only means it gets no spelling correction: the
// full-text leg always searches every query word as written.
import type { AppDeps } from '../deps.js';
import { onTenantDeleted } from '../tenants/tenant-caches.js';
import { countTenantChunks, selectDocumentsSignature, selectLexemeStats } from './store/vocabulary.js';

type VocabularyDeps = Pick<AppDeps, 'sql' | 'log'>;

export const VOCABULARY_TTL_MS = 60_000;
const MAX_TENANTS = 200;

export interface Vocabulary {
  /** lexeme -> number of chunks containing it */
  df: Map<string, number>;
  chunks: number;
  words: string[];
  trigrams: Map<string, number[]>;
  /** When it was built or last found current. */
  builtAt: number;
  /** The tenant's documents when it was built (see documentsSignature). */
  signature: string;
}

const cache = new Map<string, { vocabulary: Vocabulary | null; building: Promise<Vocabulary> | null }>();
// Built from the tenant's documents: gone with the tenant.
onTenantDeleted((tenantId) => cache.delete(tenantId));

export function trigramsOf(word: string): string[] {
  const padded = `  ${word} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3));
  return [...out];
}

/**
 * Changes whenever the tenant's searchable chunks do: a document becoming ready (or failing) moves
 * its updated_at, a deleted one changes the count, and the chunk total covers the rest.
 */
async function documentsSignature(deps: VocabularyDeps, tenantId: string): Promise<string> {
  return selectDocumentsSignature(deps.sql, tenantId);
}

async function build(deps: VocabularyDeps, tenantId: string): Promise<Vocabulary> {
  // Read first: a change made while ts_stat runs makes the next check rebuild again.
  const signature = await documentsSignature(deps, tenantId);
  const [rows, chunks] = await Promise.all([selectLexemeStats(deps.sql, tenantId), countTenantChunks(deps.sql, tenantId)]);
  const df = new Map<string, number>();
  const words: string[] = [];
  const trigrams = new Map<string, number[]>();
  for (const row of rows) {
    df.set(row.word, Number(row.ndoc));
    const index = words.push(row.word) - 1;
    if (!/^[a-z]{3,}$/.test(row.word)) continue; // only words are corrected
    for (const t of trigramsOf(row.word)) {
      let list = trigrams.get(t);
      if (!list) trigrams.set(t, (list = []));
      list.push(index);
    }
  }
  return { df, chunks, words, trigrams, builtAt: Date.now(), signature };
}

/** The tenant's vocabulary: built on first use (awaited), then kept current in the background. */
export async function tenantVocabulary(deps: VocabularyDeps, tenantId: string, ttlMs = VOCABULARY_TTL_MS): Promise<Vocabulary> {
  let entry = cache.get(tenantId);
  if (!entry) {
    if (cache.size >= MAX_TENANTS) cache.delete(cache.keys().next().value!);
    entry = { vocabulary: null, building: null };
    cache.set(tenantId, entry);
  }
  const current = entry;
  const refresh = (known?: Vocabulary) => {
    current.building ??= (known ? checkOrBuild(deps, tenantId, known) : build(deps, tenantId))
      .then((v) => {
        current.vocabulary = v;
        return v;
      })
      .finally(() => {
        current.building = null;
      });
    return current.building;
  };
  if (!current.vocabulary) return refresh();
  if (Date.now() - current.vocabulary.builtAt >= ttlMs) {
    refresh(current.vocabulary).catch((err: unknown) => deps.log.warn({ err }, 'knowledge vocabulary refresh failed'));
  }
  return current.vocabulary;
}

/**
 * Builds the tenant's vocabulary now and keeps it, instead of the cached one being refreshed in
 * the background: for a process that loaded documents outside the API and must plan with their
 * counts at once (the retrieval benchmark, after seeding each size).
 */
export async function rebuildTenantVocabulary(deps: VocabularyDeps, tenantId: string): Promise<Vocabulary> {
  const vocabulary = await build(deps, tenantId);
  cache.delete(tenantId);
  cache.set(tenantId, { vocabulary, building: null });
  return vocabulary;
}

/** `known` again (checked now) when the tenant's documents did not change since it was built, else a new one. */
async function checkOrBuild(deps: VocabularyDeps, tenantId: string, known: Vocabulary): Promise<Vocabulary> {
  if ((await documentsSignature(deps, tenantId)) !== known.signature) return build(deps, tenantId);
  return { ...known, builtAt: Date.now() };
}

/** Known lexemes most similar to `lexeme` (trigram similarity >= minSimilarity), best first. */
export function corrections(vocabulary: Vocabulary, lexeme: string, max = 2, minSimilarity = 0.4): string[] {
  const own = trigramsOf(lexeme);
  const shared = new Map<number, number>();
  for (const t of own) for (const index of vocabulary.trigrams.get(t) ?? []) shared.set(index, (shared.get(index) ?? 0) + 1);
  const scored: { word: string; similarity: number; df: number }[] = [];
  for (const [index, common] of shared) {
    const word = vocabulary.words[index];
    const similarity = common / (own.length + trigramsOf(word).length - common);
    if (similarity >= minSimilarity && word !== lexeme) scored.push({ word, similarity, df: vocabulary.df.get(word) ?? 0 });
  }
  scored.sort((a, b) => b.similarity - a.similarity || b.df - a.df);
  return scored.slice(0, max).map((s) => s.word);
}
