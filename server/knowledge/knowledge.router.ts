import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { knowledgeQueryInput, knowledgeQueryOutput } from './knowledge.schemas.js';
import { searchKnowledge } from './knowledge.service.js';

export const knowledgeRouter = router({
  query: apiKeyProcedure('knowledge:read')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/domains/{domainKey}/knowledge/query',
        tags: ['Knowledge'],
        summary: 'Search the knowledge of a domain',
        description:
          'Hybrid retrieval over the ready documents of the domain\'s collections: full-text and trigram (typo-tolerant) matching, plus vector similarity when the documents were embedded (the query is embedded with the same model; ranked inside PostgreSQL when it has pgvector: exactly for a small scope, through an approximate HNSW index for a large one once that index is built; else in the server over at most 1,000 chunks or the lexical candidates), fused by reciprocal rank fusion. ' +
          'Full-text candidates are chunks holding every query word (words found in more than 20% of the account\'s chunks are left out); chunks holding only some of the words are candidates only when fewer than 100 chunks hold them all. ' +
          '`collection_ids` narrows the search to those collections (each must be attached to the domain: otherwise 404 NOT_FOUND). Each requested collection\'s `retrieval_config` applies: `boost_priority` multiplies its chunks\' scores (default 1); ' +
          'scope `collection_plus_domain` also searches the domain\'s other collections at half weight (default `collection_only`); `fallback_when_empty: domain_fallback` searches the whole domain when the requested collections match nothing (default `no_results`). ' +
          'An unknown domain is 404; a built-in domain not enabled for the account, or an inactive custom domain, is 403 DOMAIN_NOT_ENABLED.',
      },
      errors: ['NOT_FOUND', 'DOMAIN_NOT_ENABLED'],
    })
    .input(knowledgeQueryInput)
    .output(ok(knowledgeQueryOutput))
    .mutation(async ({ ctx, input }) =>
      envelope(
        await searchKnowledge(ctx.em, ctx.deps, ctx.tenantId, {
          domainKey: input.domainKey,
          query: input.query,
          topK: input.top_k,
          collectionIds: input.collection_ids,
          category: input.category,
        }),
      ),
    ),
});
