import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, keyedRunProcedure, router } from '../trpc.js';
import { intentEndpoint, listDomainCatalog } from './domain-catalog.service.js';
import { domainListItemSchema, intentRequestFields, intentRequestSchema, intentResponseSchema, intentSummarySchema } from './intents.schemas.js';
import { builtInIntents, listDomainIntents } from './resolve-intent.js';
import { runKeyedIntent } from './run-intent.service.js';

const RUN_TAGS = ['Intent execution'];
const DOMAIN_TAGS = ['Domains'];
const RUN_ERRORS = [
  'DOMAIN_NOT_ENABLED', 'INTENT_NOT_PERMITTED', 'NOT_FOUND', 'SESSION_EXPIRED', 'GUARDRAIL_BLOCKED', 'QUOTA_EXCEEDED',
  'LLM_PROVIDER_ERROR', 'LLM_UNAVAILABLE', 'OUTPUT_INVALID', 'LLM_NOT_CONFIGURED',
  // An input over 64 K characters is scanned on the shared worker-thread pool, which takes at most 16 waiting tasks.
  'CONCURRENCY_LIMIT',
] as const;

// One route per built-in hiring intent, so each is documented with its own input and output schema.
const hiringRoutes = Object.fromEntries(
  builtInIntents('hiring').map((intent) => [
    intent.key.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()),
    keyedRunProcedure('intents:run')
      .meta({
        openapi: { method: 'POST', path: `/v1/hiring/${intent.key}`, tags: ['Hiring'], summary: intent.displayName, description: intent.description ?? undefined },
        errors: [...RUN_ERRORS],
        jsonSchemas: { input: intent.inputSchema, output: intent.outputSchema },
      })
      .input(intentRequestSchema)
      .output(intentResponseSchema)
      .mutation(async ({ ctx, input }) => runKeyedIntent(ctx.em, ctx.deps, ctx.key, 'hiring', intent.key, input)),
  ]),
);

export const intentsRouter = router({
  run: keyedRunProcedure('intents:run')
    .meta({ openapi: { method: 'POST', path: '/v1/run', tags: RUN_TAGS, summary: 'Run any intent by domain and intent key' }, errors: [...RUN_ERRORS] })
    .input(z.object({ domain: z.string().min(1).max(100), intent: z.string().min(1).max(100), ...intentRequestFields }))
    .output(intentResponseSchema)
    .mutation(async ({ ctx, input }) => {
      const { domain, intent, ...request } = input;
      return runKeyedIntent(ctx.em, ctx.deps, ctx.key, domain, intent, request);
    }),

  hiring: router(hiringRoutes),

  listDomains: apiKeyProcedure('intents:read')
    .meta({ openapi: { method: 'GET', path: '/v1/domains', tags: DOMAIN_TAGS, summary: 'The tenant\'s own (custom) domains with their intents' } })
    .input(z.object({}).optional())
    .output(ok(z.array(domainListItemSchema)))
    .query(async ({ ctx }) => envelope(await listDomainCatalog(ctx.em, ctx.tenantId, ctx.apiKey.tenant))),

  listDomainIntents: apiKeyProcedure('intents:read')
    .meta({ openapi: { method: 'GET', path: '/v1/domains/{domainKey}/intents', tags: DOMAIN_TAGS, summary: 'Intents of a domain (built-in or custom) with their schemas' }, errors: ['NOT_FOUND', 'DOMAIN_NOT_ENABLED'] })
    .input(z.object({ domainKey: z.string().max(100) }))
    .output(ok(z.object({ intents: z.array(intentSummarySchema) })))
    .query(async ({ ctx, input }) => {
      const { tenant } = ctx.apiKey;
      const intents = await listDomainIntents(ctx.em, tenant, input.domainKey);
      return envelope({
        intents: intents.map((i) => ({
          id: i.id,
          intent_key: i.key,
          display_name: i.displayName,
          description: i.description,
          endpoint: intentEndpoint(i),
          method: 'POST' as const,
          input_schema: i.inputSchema,
          output_schema: i.outputSchema,
        })),
      });
    }),

  runDomainIntent: keyedRunProcedure('intents:run')
    .meta({ openapi: { method: 'POST', path: '/v1/domains/{domainKey}/intents/{intentKey}/run', tags: RUN_TAGS, summary: 'Run an intent of a saved (custom) or built-in domain' }, errors: [...RUN_ERRORS] })
    .input(z.object({ domainKey: z.string().max(100), intentKey: z.string().max(100), ...intentRequestFields }))
    .output(intentResponseSchema)
    .mutation(async ({ ctx, input }) => {
      const { domainKey, intentKey, ...request } = input;
      return runKeyedIntent(ctx.em, ctx.deps, ctx.key, domainKey, intentKey, request);
    }),
});
