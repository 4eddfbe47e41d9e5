// ajv's errors about a project file turned into one message per problem, at the path it concerns.
// ajv reports every branch of an alternative (a nullable field is "a string, or null") that failed;
// a person wants the branch they meant: the one whose type the value has, or else "must be X or Y".
import type { ErrorObject } from 'ajv';
import { pointerPath } from './yaml-source.js';
import type { JsonSchema } from './file-schema.js';

export interface SchemaProblem {
  /** Path of the value inside the file's document. */
  path: string[];
  message: string;
  /** Point at the field's key rather than its value (an unknown field). */
  atKey?: boolean;
}

type Resolve = (schema: unknown) => JsonSchema;

function typesOf(schema: unknown, resolve: Resolve, depth = 0): string[] | null {
  const s = resolve(schema);
  if (depth > 10) return null;
  if (typeof s.type === 'string') return [s.type];
  if (Array.isArray(s.type)) return s.type as string[];
  if ('const' in s) return [jsonType(s.const)];
  if (Array.isArray(s.enum)) return [...new Set(s.enum.map(jsonType))];
  const branches = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(branches)) {
    const all = branches.map((b) => typesOf(b, resolve, depth + 1));
    return all.some((t) => t === null) ? null : [...new Set(all.flat() as string[])];
  }
  return null; // anything
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

const fits = (types: string[] | null, value: unknown) => {
  if (types === null) return true;
  const type = jsonType(value);
  return types.includes(type) || (type === 'integer' && types.includes('number'));
};

const typeNames = (types: string[]) => {
  const names = types.map((t) => (t === 'object' ? 'a mapping' : t === 'array' ? 'a list' : t === 'null' ? 'null' : t === 'integer' ? 'an integer' : `a ${t}`));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : names[0];
};

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = current;
    }
  }
  return row[b.length];
}

/** The closest of `candidates` to `word`, when it is close enough to be a typo. */
export function closest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function describe(e: ErrorObject, resolve: Resolve): SchemaProblem {
  const path = pointerPath(e.instancePath);
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const field = String(params.additionalProperty);
      const known = Object.keys((resolve(e.parentSchema).properties ?? {}) as object);
      const suggestion = closest(field, known);
      return { path: [...path, field], atKey: true, message: `unknown field "${field}"${suggestion ? `; did you mean "${suggestion}"?` : known.length ? ` (fields: ${known.join(', ')})` : ''}` };
    }
    case 'required':
      return { path, message: `missing field "${String(params.missingProperty)}"` };
    case 'type':
      return { path, message: `must be ${typeNames(String(params.type).split(','))}, not ${typeNames([jsonType(e.data)])}` };
    case 'enum':
      return { path, message: `must be one of: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'const':
      return { path, message: `must be ${JSON.stringify(params.allowedValue)}` };
    case 'pattern':
      return { path, message: `must match the pattern ${String(params.pattern)}` };
    default:
      return { path, message: e.message ?? e.keyword };
  }
}

/** One problem per mistake, in the order ajv found them. */
export function schemaProblems(errors: ErrorObject[], resolve: Resolve): SchemaProblem[] {
  const dropped = new Set<ErrorObject>();
  const added = new Map<ErrorObject, SchemaProblem>();
  const alternatives = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const alt of alternatives) {
    if (dropped.has(alt)) continue;
    const inner = errors.filter((e) => e !== alt && e.schemaPath.startsWith(`${alt.schemaPath}/`));
    const branches = Array.isArray(alt.schema) ? (alt.schema as unknown[]) : [];
    const matching = branches.map((b, i) => ({ i, types: typesOf(b, resolve) })).filter((b) => b.types !== null && fits(b.types, alt.data));
    const typed = branches.every((b) => typesOf(b, resolve) !== null);
    dropped.add(alt);
    if (matching.length === 1) {
      // The value has the type of one branch: that is what the user meant; its errors tell what is wrong.
      const prefix = `${alt.schemaPath}/${matching[0].i}/`;
      inner.filter((e) => !e.schemaPath.startsWith(prefix)).forEach((e) => dropped.add(e));
      if (!inner.some((e) => e.schemaPath.startsWith(prefix))) added.set(alt, { path: pointerPath(alt.instancePath), message: alt.message ?? 'is not valid' });
      continue;
    }
    inner.forEach((e) => dropped.add(e));
    if (typed && matching.length === 0) {
      const types = [...new Set(branches.flatMap((b) => typesOf(b, resolve) ?? []))];
      added.set(alt, { path: pointerPath(alt.instancePath), message: `must be ${typeNames(types)}, not ${typeNames([jsonType(alt.data)])}` });
      continue;
    }
    // Branches that only require fields (a dataset's `cases` or `cases_file`).
    const required = branches.flatMap((b) => ((b as JsonSchema).required as string[] | undefined) ?? []);
    const message =
      required.length && required.length === branches.length
        ? `${alt.keyword === 'oneOf' ? 'needs exactly one' : 'needs one'} of the fields ${required.map((r) => `"${r}"`).join(', ')}`
        : (alt.message ?? 'is not valid');
    added.set(alt, { path: pointerPath(alt.instancePath), message });
  }
  const problems: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const problem = added.get(e) ?? (dropped.has(e) ? undefined : describe(e, resolve));
    if (!problem) continue;
    const id = `${problem.path.join('/')}\0${problem.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    problems.push(problem);
  }
  return problems;
}

/** A path for people: `steps[2].config` (empty for the whole document). */
export function fieldLabel(path: (string | number)[]): string {
  let label = '';
  for (const segment of path) label += /^\d+$/.test(String(segment)) ? `[${segment}]` : `${label ? '.' : ''}${segment}`;
  return label;
}

/** `label: message`, or the message alone for the whole document; an unknown field is told of its parent. */
export function problemText(problem: SchemaProblem): string {
  const label = fieldLabel(problem.atKey ? problem.path.slice(0, -1) : problem.path);
  return label ? `${label}: ${problem.message}` : problem.message;
}
