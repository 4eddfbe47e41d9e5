// Turning a model's answer into a value that satisfies a JSON Schema, or a list of reasons it doesn't.
// Schemas are compiled and cached by server/common/json-schema.ts.
import type { ErrorObject, ValidateFunction } from 'ajv';

export interface OutputIssue {
  path: string;
  message: string;
}

export type OutputCheck = { ok: true; value: unknown } | { ok: false; errors: OutputIssue[] };

// Enough for a model to fix its answer; a long list only dilutes the re-ask.
const MAX_ISSUES = 20;

function toIssues(errors: ErrorObject[] | null | undefined): OutputIssue[] {
  return (errors ?? []).slice(0, MAX_ISSUES).map((e) => {
    // ajv's message names a missing property but not an extra one, which the model needs to drop it.
    const extra = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty?: string }).additionalProperty : undefined;
    const suffix = extra ? `: ${extra}` : '';
    return { path: e.instancePath || '/', message: `${e.message ?? 'is invalid'}${suffix}` };
  });
}

// Models sometimes wrap JSON in a markdown fence despite response_format; unwrapping is the cheap repair.
const FENCE = /^```[a-zA-Z]*\s*\n?([\s\S]*?)\n?\s*```$/;

/** Parses the answer (unwrapping a code fence) and validates it. */
export function checkJsonAnswer(content: string | null | undefined, validate: ValidateFunction): OutputCheck {
  if (content === null || content === undefined || !content.trim()) return { ok: false, errors: [{ path: '/', message: 'the answer was empty; a JSON value is required' }] };
  const text = content.trim();
  const unfenced = FENCE.exec(text)?.[1] ?? text;
  let value: unknown;
  try {
    value = JSON.parse(unfenced);
  } catch (err) {
    return { ok: false, errors: [{ path: '/', message: `the answer is not valid JSON (${(err as Error).message})` }] };
  }
  if (validate(value)) return { ok: true, value };
  return { ok: false, errors: toIssues(validate.errors) };
}

/** The follow-up that asks the model to fix its answer. */
export function buildRepairMessage(schemaName: string, errors: OutputIssue[]): string {
  const lines = errors.map((e) => `- ${e.path}: ${e.message}`);
  return [
    `Your previous answer does not satisfy the JSON schema "${schemaName}":`,
    ...lines,
    'Answer again with only the corrected JSON value, satisfying the schema.',
  ].join('\n');
}
