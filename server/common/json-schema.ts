import { createHash } from 'node:crypto';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// One validator for every JSON Schema the platform checks (intent input and output schemas, tool
// arguments, ...). Compiled validators are cached by the schema's content.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

const cache = new Map<string, ValidateFunction>();
const MAX_CACHED = 2000;

export interface SchemaIssue {
  path: string;
  message: string;
}

function keyOf(schema: object) {
  return createHash('sha256').update(JSON.stringify(schema)).digest('hex');
}

function compile(schema: object): ValidateFunction {
  const key = keyOf(schema);
  let validate = cache.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, validate);
  }
  return validate;
}

/** Problems with a JSON Schema itself (an empty list means it is usable). */
export function checkJsonSchema(schema: unknown): SchemaIssue[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return [{ path: '', message: 'must be a JSON Schema object' }];
  try {
    if (!ajv.validateSchema(schema)) {
      return (ajv.errors ?? []).map((e) => ({ path: e.instancePath || '', message: e.message ?? 'invalid' }));
    }
    compile(schema);
    return [];
  } catch (err) {
    return [{ path: '', message: (err as Error).message }];
  }
}

/** Validates `value` against `schema`; issues carry dotted paths (`skills.0.level`). */
export function validateWithSchema(schema: object, value: unknown): SchemaIssue[] {
  const validate = compile(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const missing = e.keyword === 'required' ? (e.params as { missingProperty?: string }).missingProperty : undefined;
    const path = missing ? (base ? `${base}.${missing}` : missing) : base;
    return { path: path || '(root)', message: e.message ?? 'invalid' };
  });
}
