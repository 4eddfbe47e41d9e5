import { z } from 'zod';
import { bodyInt } from '../common/schemas.js';

export const MAX_QUERY_CHARS = 2_000;
export const DEFAULT_TOP_K = 5;
export const MAX_TOP_K = 50;

export const knowledgeQueryInput = z.object({
  domainKey: z.string().max(100),
  query: z
    .string()
    .max(MAX_QUERY_CHARS)
    .refine((q) => q.trim().length > 0, 'The query is empty')
    .describe('Natural-language question or keywords (at most 2,000 characters)'),
  top_k: bodyInt(1, MAX_TOP_K).optional().describe('How many chunks to return (default 5, at most 50)'),
  collection_ids: z
    .array(z.string().max(64))
    .min(1)
    .max(100)
    .optional()
    .describe('Search these collections of the domain (each must be attached to it: otherwise 404)'),
  category: z.string().min(1).max(100).optional().describe('Only documents of this category'),
});

export const knowledgeResultSchema = z
  .object({
    chunk_id: z.string(),
    document_id: z.string(),
    document_name: z.string(),
    collection_ids: z.array(z.string()),
    text: z.string(),
    score: z.number().describe('Fused relevance (reciprocal rank fusion x collection weight); higher is better, comparable within one answer only'),
    locator: z.string().nullable().describe('Section heading or page the chunk came from, when known'),
  })
  .meta({ id: 'KnowledgeResult' });
export type KnowledgeResult = z.infer<typeof knowledgeResultSchema>;

export const knowledgeQueryOutput = z.object({ results: z.array(knowledgeResultSchema) });
