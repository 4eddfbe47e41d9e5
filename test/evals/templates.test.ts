// The starter evaluation templates (server/evals/templates/*.json) against the built-in hiring
// intents they target: every case's input passes the intent's input schema (the check a run makes)
// and the request limits, and every expected_output names only fields and values of the output schema.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateWithSchema, type JsonSchemaObject } from '../../server/common/json-schema.js';
import { caseInput } from '../../server/evals/evals.schemas.js';
import { EVAL_TEMPLATES, findEvalTemplate } from '../../server/evals/templates.js';
import { getHiringIntent } from '../../server/hiring/hiring-intents.js';
import { intentInputSchema } from '../../server/intents/intents.schemas.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Why `expected` cannot match an output that satisfies `schema` (empty: it can). An object is a
 * partial match, so each of its keys must be a property of the schema, checked recursively; arrays
 * match element by element against `items`; any other value must itself satisfy the sub-schema
 * (an enum field takes one of its values).
 */
function misfitsOf(schema: JsonSchemaObject, expected: unknown, path = 'expected_output'): string[] {
  if (isObject(expected)) {
    const properties = schema.properties as Record<string, JsonSchemaObject> | undefined;
    if (!properties) return [`${path}: the output schema has no object here`];
    return Object.entries(expected).flatMap(([key, value]) =>
      Object.hasOwn(properties, key) ? misfitsOf(properties[key], value, `${path}.${key}`) : [`${path}.${key}: not a field of the output schema`],
    );
  }
  if (Array.isArray(expected)) {
    const items = schema.items as JsonSchemaObject | undefined;
    if (!items) return [`${path}: the output schema has no array here`];
    return expected.flatMap((value, i) => misfitsOf(items, value, `${path}[${i}]`));
  }
  return validateWithSchema(schema, expected).map((issue) => `${path}: ${issue.message}`);
}

// [title, case] rows: a `%s` title is printed in full (a `$field` one is cut at 40 characters).
const cases = EVAL_TEMPLATES.flatMap((template) => template.cases.map((c, i) => [`${template.id} case ${i + 1} (${String(c.input.user_id)})`, { template, c }] as const));

describe('starter templates', () => {
  it('every data file is listed once, under its own id', () => {
    const files = readdirSync(new URL('../../server/evals/templates/', import.meta.url)).sort();
    expect(files).toEqual(EVAL_TEMPLATES.map((t) => `${t.id}.json`).sort());
    for (const template of EVAL_TEMPLATES) expect(findEvalTemplate(template.id)).toBe(template);
    expect(findEvalTemplate('no-such-template')).toBeUndefined();
  });

  it('every template targets a built-in hiring intent; user ids are unique within a template', () => {
    for (const template of EVAL_TEMPLATES) {
      expect(getHiringIntent(template.intent_key), template.id).toBeDefined();
      const userIds = template.cases.map((c) => c.input.user_id);
      expect(new Set(userIds).size, template.id).toBe(userIds.length);
    }
  });

  it.each(cases)('%s: the input fits the intent and the request limits', (_title, { template, c }) => {
    const intent = getHiringIntent(template.intent_key)!;
    // What a run sends (server/evals/run-eval.ts): the case's message joins the input.
    const input = c.message ? { ...c.input, message: c.message } : c.input;
    expect(intent.inputSchema, 'built-in hiring intents declare an input schema').not.toBeNull();
    expect(validateWithSchema(intent.inputSchema!, input)).toEqual([]);
    expect(intentInputSchema.safeParse(input).error?.issues ?? []).toEqual([]);
    // A clone stores the case as it is, so it must also be a valid case of a dataset request.
    expect(caseInput.safeParse(c).error?.issues ?? []).toEqual([]);
    if (c.message) expect(intent.conversational, 'a message is only read by a conversational intent').toBe(true);
  });

  it.each(cases.filter(([, { c }]) => c.expected_output !== null && c.expected_output !== undefined))(
    '%s: the expected output fits the intent output schema',
    (_title, { template, c }) => {
      const intent = getHiringIntent(template.intent_key)!;
      const expected = c.expected_output!;
      if (typeof expected === 'string') {
        // A substring of the output's JSON text: a character JSON escapes would never match as written.
        expect(JSON.stringify(expected).slice(1, -1)).toBe(expected);
        expect(expected.trim()).toBe(expected);
      } else {
        expect(misfitsOf(intent.outputSchema, expected)).toEqual([]);
      }
    },
  );
});
