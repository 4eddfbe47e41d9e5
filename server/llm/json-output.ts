// Turning a model's answer into a value that satisfies a JSON Schema, or a list of reasons it doesn't.
import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import type { ValidationIssue } from '../errors.js';
import type { JsonSchema } from './llm.types.js';

export interface OutputIssue {
  path: string;
  message: string;
}

export type OutputCheck = { ok: true; value: unknown } | { ok: false; errors: OutputIssue[] };

// Enough for a model to fix its answer; a long list only dilutes the re-ask.
const MAX_ISSUES = 20;

/** Canonical JSON (sorted keys): equal schemas hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const hashSchema = (schema: JsonSchema) => createHash('sha256').update(canonicalJson(schema)).digest('hex');

function toIssues(errors: ErrorObject[] | null | undefined): OutputIssue[] {
  return (errors ?? []).slice(0, MAX_ISSUES).map((e) => {
    // ajv's message names a missing property but not an extra one, which the model needs to drop it.
    const extra = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty?: string }).additionalProperty : undefined;
    const suffix = extra ? `: ${extra}` : '';
    return { path: e.instancePath || '/', message: `${e.message ?? 'is invalid'}${suffix}` };
  });
}

export interface SchemaValidatorCache {
  /** The compiled validator for `schema` (compiled once per distinct schema); throws on a broken schema. */
  validatorFor(schema: JsonSchema): ValidateFunction;
  /** Problems that make `schema` unusable as an output schema (empty: fine). */
  checkSchema(schema: JsonSchema): ValidationIssue[];
}

/** Options: `maxEntries` compiled schemas are kept (default 500), least recently used go first. */
export function createSchemaValidatorCache(options: { maxEntries?: number } = {}): SchemaValidatorCache {
  const maxEntries = options.maxEntries ?? 500;
  // Lenient on purpose: intent authors write schemas for models, with keywords ajv doesn't know.
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: true });
  formatsModule.default(ajv);
  const cache = new Map<string, { validate: ValidateFunction; compiled: object }>();

  const validatorFor = (schema: JsonSchema): ValidateFunction => {
    const hash = hashSchema(schema);
    const hit = cache.get(hash);
    if (hit) {
      cache.delete(hash);
      cache.set(hash, hit);
      return hit.validate;
    }
    // `$schema` (e.g. 2020-12) and `$id` would make ajv refuse or clash between intents; the keywords that matter stay.
    const { $schema: _schema, $id: _id, ...compiled } = structuredClone(schema);
    const validate = ajv.compile(compiled);
    cache.set(hash, { validate, compiled });
    if (cache.size > maxEntries) {
      const [oldest, entry] = cache.entries().next().value!;
      cache.delete(oldest);
      // ajv keeps its own reference to every compiled schema; let it go too.
      ajv.removeSchema(entry.compiled);
    }
    return validate;
  };

  return {
    validatorFor,
    checkSchema(schema) {
      if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return [{ path: 'schema', message: 'must be a JSON Schema object' }];
      try {
        validatorFor(schema);
        return [];
      } catch (err) {
        return [{ path: 'schema', message: (err as Error).message }];
      }
    },
  };
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
