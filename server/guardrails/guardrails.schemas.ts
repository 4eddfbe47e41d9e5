import { z } from 'zod';
import { bodyBoolean, bodyInt } from '../common/schemas.js';
import { guardrailIssueSchema, guardrailsConfigSchema, type GuardrailsConfig } from './guardrails.types.js';

/** Content larger than this (UTF-8 bytes) is refused with 400: 1 MB. */
export const MAX_CHECK_CONTENT_BYTES = 1_000_000;

const withinLimit = (s: string) => s.length <= MAX_CHECK_CONTENT_BYTES && Buffer.byteLength(s, 'utf8') <= MAX_CHECK_CONTENT_BYTES;
const LIMIT_MESSAGE = `must be at most 1 MB (${MAX_CHECK_CONTENT_BYTES} bytes as UTF-8)`;

// The GuardrailsConfig contract with strict number/boolean fields: the REST adapter would
// otherwise coerce "7" to 7 and "false" to true inside request bodies.
const outputConfig = guardrailsConfigSchema.shape.output.unwrap();
export const guardrailsConfigBody = guardrailsConfigSchema.extend({
  max_input_chars: bodyInt(1, 1_000_000).optional(),
  output: outputConfig.extend({ schema: bodyBoolean().optional().describe('Check the output against output_schema (default true)') }).optional(),
});
// Compile-time guard: a parsed body is a GuardrailsConfig.
const _sameShape: (v: z.output<typeof guardrailsConfigBody>) => GuardrailsConfig = (v) => v;
void _sameShape;

const jsonObject = z.record(z.string(), z.unknown());
const responseValue = z.union([z.string(), jsonObject, z.array(z.unknown())]);

export const guardrailCheckInput = z
  .object({
    stage: z.enum(['pre_llm', 'post_llm']).describe('pre_llm: check content before it is sent to a model; post_llm: check a model\'s response'),
    content: z.string().refine(withinLimit, LIMIT_MESSAGE).optional().describe('Stage pre_llm (required there): the text to check'),
    response: z
      .union([z.string().refine(withinLimit, LIMIT_MESSAGE), jsonObject, z.array(z.unknown())])
      .optional()
      .describe('Stage post_llm (required there): the model\'s response, text or JSON'),
    config: guardrailsConfigBody.nullable().optional().describe('Guardrails to apply; omitted or null: PII redact, injection block, output PII redact'),
    output_schema: jsonObject.optional().describe('Stage post_llm: a JSON Schema the response must match (a mismatch sets should_retry)'),
  })
  .superRefine((body, ctx) => {
    if (body.stage === 'pre_llm' && body.content === undefined) {
      ctx.addIssue({ code: 'custom', path: ['content'], message: 'content is required for stage pre_llm' });
    }
    if (body.stage === 'post_llm' && body.response === undefined) {
      ctx.addIssue({ code: 'custom', path: ['response'], message: 'response is required for stage post_llm' });
    }
  });
export type GuardrailCheckInput = z.infer<typeof guardrailCheckInput>;

const issues = z.array(guardrailIssueSchema).describe(
  'Codes: pii_detected (details.entity, count), prompt_injection (details.categories, rules, score), blocked_term (details.terms), input_too_long (details.length, limit), output_schema_mismatch (details.errors), output_schema_invalid',
);

export const preLlmCheckResult = z
  .object({
    passed: z.boolean().describe('false: the content was blocked'),
    content: z.string().describe('The content after redaction: what a model would receive'),
    issues,
    fallback: z.string().optional().describe('When passed is false: a message safe to show the end user'),
  })
  .meta({ id: 'GuardrailPreLlmResult' });

export const postLlmCheckResult = z
  .object({
    passed: z.boolean().describe('false: the response was blocked'),
    response: responseValue.describe('The response after modification (PII redacted)'),
    issues,
    should_retry: z.boolean().describe('true when the response does not match output_schema'),
  })
  .meta({ id: 'GuardrailPostLlmResult' });

export const guardrailCheckResponse = z.union([preLlmCheckResult, postLlmCheckResult]).meta({ id: 'GuardrailCheckResponse' });
export type GuardrailCheckResponse = z.infer<typeof guardrailCheckResponse>;
export type GuardrailResponseValue = z.infer<typeof responseValue>;
