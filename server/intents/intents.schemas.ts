import { z } from 'zod';
import { bodyNumber } from '../common/schemas.js';

/** IntentRequest.input: `user_id` plus the named optional fields; any other property is allowed. */
export const intentInputSchema = z
  .looseObject({
    user_id: z.string().min(1).max(200),
    resume_text: z.string().max(200_000).optional(),
    job_title: z.string().max(500).optional(),
    job_description: z.string().max(200_000).optional(),
    target_role: z.string().max(500).optional(),
    current_role: z.string().max(500).optional(),
    years_experience: bodyNumber(0, 100).optional(),
    skills: z.array(z.string().max(200)).max(500).optional(),
    message: z.string().max(100_000).optional(),
  })
  .meta({ id: 'IntentInput' });

export const intentRequestFields = {
  input: intentInputSchema,
  session_id: z.string().max(64).optional().describe('Continue this session (must belong to the same input.user_id)'),
  metadata: z.record(z.string(), z.unknown()).optional(),
  preferences: z.record(z.string(), z.unknown()).optional(),
};
export const intentRequestSchema = z.object(intentRequestFields).meta({ id: 'IntentRequest' });
export type IntentRequest = z.infer<typeof intentRequestSchema>;

export const intentResponseSchema = z
  .object({
    success: z.literal(true),
    data: z.object({
      output: z.record(z.string(), z.unknown()),
      session_id: z.string(),
      message_id: z.string(),
    }),
    metadata: z.object({
      intent: z.string(),
      domain: z.string(),
      model_used: z.string(),
      tokens_used: z.number().int(),
      cost_usd: z.number(),
      latency_ms: z.number().int(),
      cached: z.boolean(),
      version: z.number().int().describe('Version of the intent definition that ran'),
      guardrail_issues: z.array(z.record(z.string(), z.unknown())).describe('What the guardrails changed or flagged (never blocked: a block is a 422)'),
      context_chunk_ids: z.array(z.string()).describe('Knowledge chunks put in the prompt\'s {{context}} (retrieval_config enabled); [] when none, and on a cached answer'),
    }),
    usage: z.object({
      requests_remaining: z.number().int().nullable(),
      tokens_remaining: z.number().int().nullable(),
    }),
  })
  .meta({ id: 'IntentResponse' });
export type IntentResponse = z.infer<typeof intentResponseSchema>;

export const intentSummarySchema = z
  .object({
    id: z.string(),
    intent_key: z.string(),
    display_name: z.string(),
    description: z.string().nullable(),
    endpoint: z.string(),
    method: z.literal('POST'),
    input_schema: z.record(z.string(), z.unknown()).nullable(),
    output_schema: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'IntentSummary' });
export type IntentSummary = z.infer<typeof intentSummarySchema>;

export const domainListItemSchema = z
  .object({
    domain_key: z.string(),
    display_name: z.string(),
    description: z.string().nullable(),
    is_active: z.boolean(),
    intents: z.array(z.object({ intent_key: z.string(), display_name: z.string(), endpoint: z.string(), method: z.literal('POST') })),
  })
  .meta({ id: 'DomainListItem' });
