// The one JSON Schema validator of the platform: intent input and output schemas, model answers,
// guardrail schema checks. Compiled validators are cached by the schema's canonical hash.
import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export type JsonSchemaObject = Record<string, unknown>;

export interface SchemaIssue {
  path: string;
  message: string;
}

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

export const hashSchema = (schema: JsonSchemaObject) => createHash('sha256').update(canonicalJson(schema)).digest('hex');

export interface SchemaValidatorCache {
  /** The compiled validator for `schema` (compiled once per distinct schema); throws on a broken schema. */
  validatorFor(schema: JsonSchemaObject): ValidateFunction;
  /** Problems that make `schema` unusable (empty: fine). */
  checkSchema(schema: unknown): SchemaIssue[];
}

/** Options: `maxEntries` compiled schemas are kept (default 1000), least recently used go first. */
export function createSchemaValidatorCache(options: { maxEntries?: number } = {}): SchemaValidatorCache {
  const maxEntries = options.maxEntries ?? 1000;
  // Lenient on purpose: schemas are written for models, with keywords ajv does not know.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  const cache = new Map<string, { validate: ValidateFunction; compiled: object }>();
  // Most schemas are long-lived objects (an intent's definition): remember their validator by
  // identity, so the canonical hash is computed once per object rather than on every call.
  const byObject = new WeakMap<object, ValidateFunction>();

  const validatorFor = (schema: JsonSchemaObject): ValidateFunction => {
    const known = byObject.get(schema);
    if (known) return known;
    const validate = compileCached(schema);
    byObject.set(schema, validate);
    return validate;
  };

  const compileCached = (schema: JsonSchemaObject): ValidateFunction => {
    const hash = hashSchema(schema);
    const hit = cache.get(hash);
    if (hit) {
      cache.delete(hash);
      cache.set(hash, hit);
      return hit.validate;
    }
    // `$schema` and `$id` would make ajv refuse a draft or clash between intents; the keywords that matter stay.
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
      if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return [{ path: '', message: 'must be a JSON Schema object' }];
      try {
        validatorFor(schema as JsonSchemaObject);
        return [];
      } catch (err) {
        return [{ path: '', message: (err as Error).message }];
      }
    },
  };
}

const shared = createSchemaValidatorCache();

/** Problems with a JSON Schema itself (an empty list means it is usable). */
export const checkJsonSchema = (schema: unknown): SchemaIssue[] => shared.checkSchema(schema);

/** Validates `value` against `schema`; issues carry dotted paths (`skills.0.level`). */
export function validateWithSchema(schema: JsonSchemaObject, value: unknown): SchemaIssue[] {
  const validate = shared.validatorFor(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const missing = e.keyword === 'required' ? (e.params as { missingProperty?: string }).missingProperty : undefined;
    const path = missing ? (base ? `${base}.${missing}` : missing) : base;
    // `pattern: "\S"` is how schemas say "required text": its raw message would read `must match pattern "\S"`.
    const blank = e.keyword === 'pattern' && (e.params as { pattern?: string }).pattern === '\\S';
    return { path: path || '(root)', message: blank ? 'must not be blank' : (e.message ?? 'invalid') };
  });
}
