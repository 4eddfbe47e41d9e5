// What an ingestion job stores in ingestion_jobs.options, and how its settings are settled.
import type { EntityManager } from '../../db/orm.js';
import { selectCollectionDefaults } from '../collections/collection-records.js';
import { DEFAULT_CHUNKING, type ChunkingOptions, type ChunkingStrategy } from './chunk-text.js';
import type { SupportedMediaType } from './media-types.js';

export interface IngestionJobOptions {
  mime_type: SupportedMediaType;
  category: string;
  collection_ids: string[];
  /** As sent with the upload (any field may be missing). */
  chunking: { strategy?: ChunkingStrategy; size?: number; overlap?: number } | null;
  embedding_model: string | null;
  /** Settled on the first run, so a resumed run chunks and embeds exactly as the first one did. */
  resolved?: { chunking: ChunkingOptions; embedding_model: string | null };
}

export interface CollectionDefaults {
  id: string;
  default_chunking_strategy: string | null;
  default_chunk_size: number | null;
  default_chunk_overlap: number | null;
  default_embedding_model: string | null;
}

const STRATEGIES = new Set<string>(['fixed', 'sliding_window', 'semantic']);

/**
 * Each setting comes from the upload, else the first (still existing) collection's default, else
 * the platform default: semantic 1200/150, and `fallbackEmbeddingModel` (EMBEDDING_MODEL) or none.
 * `collections` holds the defaults of those of the upload's collections that exist (any order).
 */
export function settleIngestionSettings(
  options: Pick<IngestionJobOptions, 'collection_ids' | 'chunking' | 'embedding_model'>,
  collections: CollectionDefaults[],
  fallbackEmbeddingModel: string | null,
): { chunking: ChunkingOptions; embedding_model: string | null } {
  const first = options.collection_ids.map((id) => collections.find((r) => r.id === id)).find((r) => r !== undefined);
  const sent = options.chunking ?? {};
  const collectionStrategy = first?.default_chunking_strategy && STRATEGIES.has(first.default_chunking_strategy) ? (first.default_chunking_strategy as ChunkingStrategy) : undefined;
  const strategy = sent.strategy ?? collectionStrategy ?? DEFAULT_CHUNKING.strategy;
  const size = sent.size ?? first?.default_chunk_size ?? DEFAULT_CHUNKING.size;
  const overlap = strategy === 'fixed' ? 0 : Math.min(sent.overlap ?? first?.default_chunk_overlap ?? DEFAULT_CHUNKING.overlap, size - 1);
  return {
    chunking: { strategy, size, overlap: Math.max(0, overlap) },
    embedding_model: options.embedding_model ?? first?.default_embedding_model ?? fallbackEmbeddingModel ?? null,
  };
}

/** settleIngestionSettings with the collections' defaults read now (a queued job's first run). */
export async function resolveIngestionSettings(
  em: EntityManager,
  tenantId: string,
  options: IngestionJobOptions,
  fallbackEmbeddingModel: string | null,
): Promise<{ chunking: ChunkingOptions; embedding_model: string | null }> {
  const rows = options.collection_ids.length ? await selectCollectionDefaults(em, tenantId, options.collection_ids) : [];
  return settleIngestionSettings(options, rows, fallbackEmbeddingModel);
}
