import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { guardrailCheckInput, guardrailCheckResponse } from './guardrails.schemas.js';
import { checkGuardrails } from './guardrails.service.js';

const TAGS = ['Guardrails'];

export const guardrailsRouter = router({
  check: apiKeyProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/guardrails/check',
        tags: TAGS,
        summary: 'Run a guardrail stage: pre_llm (length, prompt injection, blocked terms, PII redaction) or post_llm (PII, blocked terms, output schema)',
      },
    })
    .input(guardrailCheckInput)
    .output(ok(guardrailCheckResponse))
    .mutation(async ({ input }) => envelope(await checkGuardrails(input))),
});
