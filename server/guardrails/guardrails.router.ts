import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { guardrailCheckInput, guardrailCheckResponse } from './guardrails.schemas.js';
import { checkGuardrails } from './guardrails.service.js';

const TAGS = ['Guardrails'];

export const guardrailsRouter = router({
  check: apiKeyProcedure('intents:run')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/guardrails/check',
        tags: TAGS,
        summary: 'Run a guardrail stage: pre_llm (length, prompt injection, blocked terms, PII redaction) or post_llm (PII, blocked terms, output schema)',
        description:
          'Content over 64 K characters is scanned on the server\'s shared worker-thread pool, off the request thread; when that pool already has 16 tasks waiting the answer is 429 CONCURRENCY_LIMIT with Retry-After.',
      },
      errors: ['CONCURRENCY_LIMIT'],
    })
    .input(guardrailCheckInput)
    .output(ok(guardrailCheckResponse))
    .mutation(async ({ input }) => envelope(await checkGuardrails(input))),
});
