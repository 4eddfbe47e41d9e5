import { z } from 'zod';

export const diagnosticCheckSchema = z.object({
  name: z.string().describe('database, migrations, job runner, model provider, provider breakers or optional features'),
  status: z.enum(['ok', 'warn', 'fail']),
  detail: z.string().describe('What was found. optional features is always ok: it names the features this install left out (OCR, embedded PostgreSQL, API reference page, pretty logs), what the server does without each, and how to add them'),
  fix: z.string().nullable().describe('What to do about a warn or fail; null when ok'),
});
export type DiagnosticCheck = z.infer<typeof diagnosticCheckSchema>;

export const breakerReadingSchema = z.object({
  provider: z.string(),
  credential: z.enum(['platform', 'tenant']).describe('Whose key the target calls with: the platform\'s, or a tenant\'s own'),
  credential_id: z.string().describe('A short digest of the credential, so targets read apart; never the key'),
  state: z.enum(['closed', 'open', 'half_open']).describe('open: no call goes to the target (fallbacks serve) until a probe may; half_open: one probe is in flight'),
  remote: z.boolean().describe('Opened by another process; this one holds it open on its word'),
  open_until: z.string().nullable().describe('When a probe may next go (open only)'),
  rate_limited_until: z.string().nullable().describe('Until when the provider asked not to be called (its Retry-After), when later than now'),
});
export type BreakerReadingDto = z.infer<typeof breakerReadingSchema>;

export const diagnosticsSchema = z.object({
  ok: z.boolean().describe('No check failed (warnings allowed)'),
  checks: z.array(diagnosticCheckSchema),
  breakers: z.array(breakerReadingSchema).describe('Every model provider target (provider and credential) this process has called or heard of, with its breaker; targets never called are not listed'),
});
export type Diagnostics = z.infer<typeof diagnosticsSchema>;
