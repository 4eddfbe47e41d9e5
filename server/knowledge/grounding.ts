// Intent grounding: retrieves chunks for an intent whose retrieval_config is enabled and renders
// them for `{{context}}`.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import type { RetrievalConfig } from '../intents/intent-definition.js';
import { DEFAULT_TOP_K, MAX_QUERY_CHARS, MAX_TOP_K } from './knowledge.schemas.js';
import { searchKnowledge } from './knowledge.service.js';

export interface Grounding {
  context: string;
  chunkIds: string[];
}

export const NO_GROUNDING: Grounding = { context: '', chunkIds: [] };

/** The retrieval query for an input: its string values (numbers too), depth-first, capped at 2,000 characters. */
export function groundingQuery(input: Record<string, unknown>): string {
  const parts: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === 'string') parts.push(value);
    else if (typeof value === 'number' || typeof value === 'boolean') parts.push(String(value));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(input);
  return parts.join('\n').replace(/\s+/g, ' ').trim().slice(0, MAX_QUERY_CHARS).trim();
}

/**
 * Chunks for `{{context}}`: top_k (default 5) of the intent's domain, restricted to
 * retrieval_config.collection_ids when set (ids no longer attached are skipped). Each chunk is
 * prefixed with its document's name.
 */
export async function groundIntent(
  em: EntityManager,
  deps: AppDeps,
  tenantId: string,
  domainKey: string,
  config: RetrievalConfig | null,
  input: Record<string, unknown>,
): Promise<Grounding> {
  if (!config?.enabled) return NO_GROUNDING;
  const query = groundingQuery(input);
  if (!query) return NO_GROUNDING;
  const topK = Number.isInteger(config.top_k) ? Math.min(Math.max(1, config.top_k!), MAX_TOP_K) : DEFAULT_TOP_K;
  const collectionIds = Array.isArray(config.collection_ids) && config.collection_ids.length ? config.collection_ids : undefined;
  const { results } = await searchKnowledge(em, deps, tenantId, { domainKey, query, topK, collectionIds, ignoreUnknownCollections: true });
  return {
    context: results.map((r, i) => `[${i + 1}] ${r.document_name}${r.locator ? ` (${r.locator})` : ''}:\n${r.text}`).join('\n\n'),
    chunkIds: results.map((r) => r.chunk_id),
  };
}
