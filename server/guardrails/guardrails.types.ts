import { z } from 'zod';

export const PII_ENTITIES = ['email', 'phone', 'credit_card', 'ssn', 'iban', 'ip_address', 'secret'] as const;
export type PiiEntity = (typeof PII_ENTITIES)[number];

export const guardrailsConfigSchema = z
  .object({
    pii: z
      .object({
        action: z.enum(['redact', 'block', 'flag', 'off']).default('redact'),
        entities: z.array(z.enum(PII_ENTITIES)).optional().describe('Default: every entity'),
      })
      .optional(),
    injection: z.object({ action: z.enum(['block', 'flag', 'off']).default('block') }).optional(),
    blocked_terms: z.array(z.string().min(1).max(200)).max(500).optional(),
    max_input_chars: z.number().int().min(1).max(200_000).optional().describe('Default 100000; at most 200000'),
    output: z
      .object({
        pii: z.enum(['redact', 'block', 'flag', 'off']).optional(),
        schema: z.boolean().optional().describe('Check the output against the intent\'s output schema (default true)'),
      })
      .optional(),
  })
  .meta({ id: 'GuardrailsConfig' });
export type GuardrailsConfig = z.infer<typeof guardrailsConfigSchema>;

export const guardrailIssueSchema = z
  .object({
    code: z.string(),
    severity: z.enum(['info', 'warning', 'error', 'critical']),
    message: z.string(),
    action_taken: z.enum(['none', 'modified', 'blocked', 'flagged']),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'GuardrailIssue' });
export type GuardrailIssue = z.infer<typeof guardrailIssueSchema>;

export interface PreLlmResult {
  passed: boolean;
  /** The content after redaction: what the provider receives. */
  content: string;
  issues: GuardrailIssue[];
  /** A user-safe message when `passed` is false. */
  fallback?: string;
}

export interface PostLlmResult {
  passed: boolean;
  response: unknown;
  issues: GuardrailIssue[];
  should_retry: boolean;
}
