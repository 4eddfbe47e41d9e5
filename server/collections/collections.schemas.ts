import { z } from 'zod';

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
    color: z.string().nullable(),
    created_at: z.string(),
    domain_keys: z.array(z.string()),
    tags: z.array(z.string()),
    visibility: z.enum(['workspace', 'restricted']),
    last_synced_at: z.string().nullable(),
    retrieval_config: retrievalConfigSchema.partial().nullable(),
    default_embedding_model: z.string().nullable(),
    default_chunking_strategy: z.enum(['fixed', 'semantic', 'sliding_window']).nullable(),
    default_chunk_size: z.number().int().nullable(),
    default_chunk_overlap: z.number().int().nullable(),
  })
  .meta({ id: 'Collection' });
export type CollectionDto = z.infer<typeof collectionSchema>;
