import { z } from 'zod';
import { bodyInt, bodyNumber, noCoerce } from '../common/schemas.js';

export const CHUNKING_STRATEGIES = ['fixed', 'semantic', 'sliding_window'] as const;
export const VISIBILITIES = ['workspace', 'restricted'] as const;

/** The color of a collection created without one (and of older rows stored without one). */
export const DEFAULT_COLLECTION_COLOR = '#64748b';

export const retrievalConfigSchema = z.object({
  scope: z.enum(['collection_only', 'collection_plus_domain']),
  boost_priority: z.number(),
  fallback_when_empty: z.enum(['domain_fallback', 'no_results']),
});

export const collectionSchema = z
  .object({
    id: z.string(),
    slug: z.string(),
    label: z.string(),
    color: z.string(),
    created_at: z.string(),
    domain_keys: z.array(z.string()),
    tags: z.array(z.string()),
    visibility: z.enum(VISIBILITIES),
    last_synced_at: z.string().nullable(),
    retrieval_config: retrievalConfigSchema.partial().nullable(),
    default_embedding_model: z.string().nullable(),
    default_chunking_strategy: z.enum(CHUNKING_STRATEGIES).nullable(),
    default_chunk_size: z.number().int().nullable(),
    default_chunk_overlap: z.number().int().nullable(),
  })
  .meta({ id: 'Collection' });
export type CollectionDto = z.infer<typeof collectionSchema>;

// ------------------------------------------------------------------ requests

export const MIN_CHUNK_SIZE = 50;
export const MAX_CHUNK_SIZE = 20_000;
/** Overlap is below 5000 and below the chunk size. */
export const MAX_CHUNK_OVERLAP = 4_999;

const slug = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[a-z0-9_-]+$/, 'Use lower-case letters, digits, - and _');
const domainKey = z.string().min(1).max(100);
const label = z.string().trim().min(1).max(200);
const color = z
  .string()
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'Use a hex color: #rgb or #rrggbb')
  .transform((c) => c.toLowerCase());
const tags = z
  .array(z.string().trim().min(1).max(50))
  .max(50)
  .transform((list) => [...new Set(list)]);

/** A request's retrieval_config: the whole object (a PATCH replaces it; null clears it). */
export const retrievalConfigInput = z.object({
  scope: retrievalConfigSchema.shape.scope,
  boost_priority: bodyNumber(0, 10),
  fallback_when_empty: retrievalConfigSchema.shape.fallback_when_empty,
});

/** The `default_*` fields, shared by create and update; null clears a value. */
const defaultsShape = {
  default_embedding_model: z.string().trim().min(1).max(200).nullable().optional(),
  default_chunking_strategy: z.enum(CHUNKING_STRATEGIES).nullable().optional(),
  default_chunk_size: bodyInt(MIN_CHUNK_SIZE, MAX_CHUNK_SIZE).nullable().optional(),
  default_chunk_overlap: bodyInt(0, MAX_CHUNK_OVERLAP).nullable().optional(),
};

export const createCollectionInput = z
  .object({
    slug,
    label,
    domain_keys: z
      .array(domainKey)
      .min(1)
      .max(100)
      .transform((keys) => [...new Set(keys)]),
    color: color.optional(),
    ...defaultsShape,
  });
export type CreateCollectionInput = z.infer<typeof createCollectionInput>;

/** Updatable fields. `slug` and `domain_keys` are not among them: sent anyway, they are ignored. */
export const updateCollectionFields = {
  label: label.optional(),
  color: color.optional(),
  tags: tags.optional(),
  visibility: z.enum(VISIBILITIES).optional(),
  retrieval_config: noCoerce(retrievalConfigInput).nullable().optional(),
  ...defaultsShape,
};
export type UpdateCollectionInput = z.infer<z.ZodObject<typeof updateCollectionFields>>;

export const collectionId = z.object({ id: z.string().max(64) });

export const updateCollectionInput = collectionId.extend(updateCollectionFields);

export const attachDomainInput = collectionId.extend({ domain_key: domainKey });

export const detachDomainInput = collectionId.extend({ domainKey: z.string().max(200) });

export const collectionOutput = z.object({ collection: collectionSchema });
export const collectionListOutput = z.object({ collections: z.array(collectionSchema) });
