import { z } from 'zod';

export const diagnosticCheckSchema = z.object({
  name: z.string().describe('database, migrations, job runner, model provider or optional features'),
  status: z.enum(['ok', 'warn', 'fail']),
  detail: z.string().describe('What was found. optional features is always ok: it names the features this install left out (OCR, embedded PostgreSQL, API reference page, pretty logs), what the server does without each, and how to add them'),
  fix: z.string().nullable().describe('What to do about a warn or fail; null when ok'),
});
export type DiagnosticCheck = z.infer<typeof diagnosticCheckSchema>;

export const diagnosticsSchema = z.object({
  ok: z.boolean().describe('No check failed (warnings allowed)'),
  checks: z.array(diagnosticCheckSchema),
});
export type Diagnostics = z.infer<typeof diagnosticsSchema>;
