// Workflow expressions (CEL, via cel-js) and `{{path}}` templates: what a definition is checked
// against at save and what the runtime evaluates. CEL cannot reach JavaScript (no `process`, no
// prototypes: cel-js reads own properties only and refuses `__proto__`/`constructor` keys), and it
// has no loops or recursion, but it can still burn CPU and memory: comprehension macros over big
// lists (nested ones multiply), `matches` with a backtracking regular expression (ReDoS), and
// operators that copy (`l + l`, doubled 8 times by a tree of 256 terms, is 256 copies of `l`). So
// source length, node count and nesting are capped at compile time, and every evaluation keeps to
// its plan's deadline and size cap (expression-limits.ts, meter-cel-tree.ts).
import { Environment, EvaluationError, TypeError as CelTypeError, type ASTNode, type ParseResult } from '@marcbachmann/cel-js';
import { UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { LimitExceededError } from '../tenants/plan-limits.js';
import { DEFAULT_EXPRESSION_LIMITS, lastRunInterrupted, runMetered, type ExpressionLimits } from './expression-limits.js';
import { meterTree } from './meter-cel-tree.js';

/** Longest accepted expression source, in characters. */
export const MAX_EXPRESSION_LENGTH = 4000;
/** Deepest accepted expression tree (cel-js's own `maxDepth` only counts some nestings, not `!`/`-` or operator chains). */
export const MAX_EXPRESSION_DEPTH = 64;
/** Comprehension macros (`map`, `filter`, `all`, `exists`, `exists_one`, `cel.bind`) nested deeper than this are refused: their cost multiplies. */
export const MAX_MACRO_NESTING = 3;
/** Compiled expressions kept (least recently used go first). */
export const EXPRESSION_CACHE_SIZE = 1000;

/** The variables every expression sees; each is a map (a missing one is an empty map). */
export interface ExpressionVars {
  trigger: unknown;
  steps: Record<string, unknown>;
  state: Record<string, unknown>;
  run: Record<string, unknown>;
}

/**
 * The tenant's plan limits for one evaluation (a whole `PlanLimits` may be passed): `expression_ms`,
 * its deadline, and `expression_result_size`, the largest string, list or map it may build. Each
 * defaults to the trial plan's ({@link DEFAULT_EXPRESSION_LIMITS}).
 */
export type EvaluateOptions = Partial<ExpressionLimits>;

export type CompiledExpression =
  | {
      ok: true;
      /** Step ids the expression reads as `steps.<id>` or `steps["<id>"]`. */
      stepRefs: string[];
      /**
       * Throws {@link ExpressionError} when evaluation fails (missing key, type error), and
       * `LimitExceededError` (code EXPRESSION_LIMIT) when it reaches `expression_ms` or
       * `expression_result_size`. `vars`: the dialect's variables ({@link ExpressionVars} for workflows).
       */
      evaluate(vars: object, options?: EvaluateOptions): unknown;
    }
  | { ok: false; error: string };

/** An expression failed while evaluating; `code` is cel-js's (`no_such_key`, `no_such_overload`, ...) or `internal`. A limit reached is a `LimitExceededError` instead. */
export class ExpressionError extends Error {
  readonly code: string;
  constructor(message: string, code: string) {
    super(message);
    this.name = 'ExpressionError';
    this.code = code;
  }
}

/** What workflow expressions can name. */
export const EXPRESSION_VARIABLES = ['trigger', 'steps', 'state', 'run'] as const;

/**
 * The variable sets expressions are compiled against: workflow steps see the run, an evaluation's
 * custom scorer sees one case (`output` and `expected` may be strings or objects, so they are dyn).
 */
const DIALECTS = {
  workflow: { trigger: 'map', steps: 'map', state: 'map', run: 'map' },
  eval_scorer: { input: 'map', output: 'dyn', expected: 'dyn', judge: 'map' },
} as const;
export type ExpressionDialect = keyof typeof DIALECTS;
/** What templates can name: the same, and `loop` (`{item, index}` inside a loop body), a reserved word in CEL. */
export const TEMPLATE_ROOTS = [...EXPRESSION_VARIABLES, 'loop'] as const;
const COMPREHENSIONS = new Set(['map', 'filter', 'all', 'exists', 'exists_one']);

const environments = new Map<ExpressionDialect, Environment>();

/** Built on first use: an Environment is costly to set up. */
function getEnvironment(dialect: ExpressionDialect): Environment {
  const built = environments.get(dialect);
  if (built) return built;
  const env = new Environment({
    // Payloads are JSON: `{"name": trigger.name, "count": 1}` or `[1, "a"]` should not need dyn() around each value.
    homogeneousAggregateLiterals: false,
    // Limits cel-js enforces while parsing; the source cap bounds them anyway, these fail earlier with a clear message.
    limits: { maxAstNodes: 1000, maxDepth: 32, maxListElements: 500, maxMapEntries: 500, maxCallArguments: 16 },
  });
  for (const [name, type] of Object.entries(DIALECTS[dialect])) env.registerVariable(name, type);
  // JSON numbers are CEL doubles and CEL has no implicit conversion, so `trigger.amount + 1` would be
  // a type error on every payload. Mixed double/int arithmetic gives a double, as JavaScript would.
  const toNumber = (v: unknown) => Number(v as bigint);
  const arithmetic: Record<string, (a: number, b: number) => number> = {
    '+': (a, b) => a + b,
    '-': (a, b) => a - b,
    '*': (a, b) => a * b,
    '/': (a, b) => a / b,
  };
  for (const [op, fn] of Object.entries(arithmetic)) {
    env.registerOperator(`double ${op} int`, (a, b) => fn(a as number, toNumber(b)));
    env.registerOperator(`int ${op} double`, (a, b) => fn(toNumber(a), b as number));
  }
  // `trigger.count % 2 == 0` on a JSON number.
  env.registerOperator('double % int', (a, b) => (a as number) % toNumber(b));
  environments.set(dialect, env);
  return env;
}

interface Analysis {
  depth: number;
  macroNesting: number;
  /** Uses `matches`: a regular expression cannot be metered, so the whole evaluation runs under the watchdog. */
  regex: boolean;
  stepRefs: Set<string>;
}

const isNode = (value: unknown): value is ASTNode =>
  typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string';

/** The literal name of `steps.<name>` / `steps["<name>"]`, when `node` is one. */
function stepRefOf(node: ASTNode): string | null {
  if (node.op !== '.' && node.op !== '[]') return null;
  const [target, key] = node.args as [ASTNode, unknown];
  if (target.op !== 'id' || target.args !== 'steps') return null;
  if (typeof key === 'string') return key;
  return isNode(key) && key.op === 'value' && typeof key.args === 'string' ? key.args : null;
}

/**
 * Walks the parsed tree once: depth, macro nesting, whether it needs the deadline, and the steps it
 * reads. Recursion is bounded by the node cap. `shadowed`: a macro bound a variable named `steps`.
 */
function analyse(node: ASTNode, depth: number, nesting: number, shadowed: boolean, out: Analysis): void {
  out.depth = Math.max(out.depth, depth);
  out.macroNesting = Math.max(out.macroNesting, nesting);
  if (!shadowed) {
    const ref = stepRefOf(node);
    if (ref !== null) out.stepRefs.add(ref);
  }
  if (node.op === 'value' || node.op === 'id') return;
  if (node.op === 'rcall' || node.op === 'call') {
    const name = node.args[0];
    const receiver = node.op === 'rcall' ? (node.args[1] as ASTNode) : null;
    const args = (node.op === 'rcall' ? node.args[2] : node.args[1]) as ASTNode[];
    if (name === 'matches') out.regex = true;
    const isBind = name === 'bind' && receiver?.op === 'id' && receiver.args === 'cel';
    const isMacro = (receiver !== null && COMPREHENSIONS.has(name)) || isBind;
    if (receiver) analyse(receiver, depth + 1, nesting, shadowed, out);
    const bindsSteps = isMacro && args[0]?.op === 'id' && args[0].args === 'steps';
    args.forEach((arg, i) => {
      // The variable a macro binds is in scope after its first argument; `cel.bind`'s value (second) is outside it.
      const inScope = bindsSteps && i > 0 && !(isBind && i === 1);
      analyse(arg, depth + 1, isMacro ? nesting + 1 : nesting, shadowed || inScope, out);
    });
    return;
  }
  const visit = (value: unknown): void => {
    if (isNode(value)) analyse(value, depth + 1, nesting, shadowed, out);
    else if (Array.isArray(value)) value.forEach(visit);
  };
  visit(node.args);
}

/** cel-js messages carry a source excerpt on later lines; the summary and a position read better in a 400. */
function describeCelError(error: unknown): string {
  const e = error as { summary?: string; message?: string; range?: { start: number } };
  const summary = e.summary ?? String(e.message ?? error).split('\n')[0];
  return e.range ? `${summary} (at character ${e.range.start + 1})` : summary;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * CEL results as plain JavaScript: integers (bigint, and cel-js's UnsignedInt) become numbers when
 * they fit exactly, and stay bigint otherwise; lists and maps are converted deeply (a cel-js map with
 * a null prototype becomes a plain object). Anything else (string, double, bool, null, Date,
 * Uint8Array, durations, types) is returned as is. Unchanged values keep their identity, so a
 * large `trigger` payload is not copied, and a value the result holds many times (`l.map(x, l)`)
 * is converted once.
 */
export function toPlainValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return plainScalar(value);
  return toPlain(value, new Map());
}

const plainScalar = (value: unknown) => (typeof value === 'bigint' && Number.isSafeInteger(Number(value)) ? Number(value) : value);

function toPlain(value: unknown, done: Map<object, unknown>): unknown {
  if (typeof value !== 'object' || value === null) return plainScalar(value);
  if (done.has(value)) return done.get(value);
  const plain = toPlainObject(value, done);
  done.set(value, plain);
  return plain;
}

function toPlainObject(value: object, done: Map<object, unknown>): unknown {
  if (value instanceof UnsignedInt) return plainScalar(value.valueOf());
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const plain = toPlain(item, done);
      if (plain !== item) changed = true;
      return plain;
    });
    return changed ? out : value;
  }
  if (value instanceof Map) {
    return Object.fromEntries([...value].map(([k, v]) => [String(toPlain(k, done)), toPlain(v, done)]));
  }
  if (!isPlainObject(value)) return value;
  let changed = Object.getPrototypeOf(value) === null;
  // fromEntries defines properties: a `__proto__` key stays data and never sets a prototype.
  const out = Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      const plain = toPlain(v, done);
      if (plain !== v) changed = true;
      return [k, plain];
    }),
  );
  return changed ? out : value;
}

const cache = new Map<string, CompiledExpression>();

function compileUncached(source: string, dialect: ExpressionDialect, cacheKey: string): CompiledExpression {
  let parsed: ParseResult;
  try {
    parsed = getEnvironment(dialect).parse(source);
  } catch (error) {
    return { ok: false, error: describeCelError(error) };
  }
  const analysis: Analysis = { depth: 0, macroNesting: 0, regex: false, stepRefs: new Set() };
  analyse(parsed.ast, 1, 0, false, analysis);
  if (analysis.depth > MAX_EXPRESSION_DEPTH) {
    return { ok: false, error: `expression is nested too deeply (more than ${MAX_EXPRESSION_DEPTH} levels)` };
  }
  if (analysis.macroNesting > MAX_MACRO_NESTING) {
    return { ok: false, error: `macros (map, filter, all, exists, exists_one, cel.bind) are nested more than ${MAX_MACRO_NESTING} deep` };
  }
  // Unknown variables (`process`, `this`) and static type errors (`"a" * 3`) fail here, at save.
  const checked = parsed.check();
  if (!checked.valid) return { ok: false, error: describeCelError(checked.error) };
  meterTree(parsed.ast);

  const variables = Object.entries(DIALECTS[dialect]);
  const evaluate = (vars: object, options: EvaluateOptions = {}): unknown => {
    // A missing map is an empty map; a missing dyn value is null.
    const context: Record<string, unknown> = {};
    for (const [name, type] of variables) context[name] = (vars as Record<string, unknown> | undefined)?.[name] ?? (type === 'map' ? {} : null);
    const ms = options.expression_ms ?? DEFAULT_EXPRESSION_LIMITS.expression_ms;
    const maxSize = options.expression_result_size ?? DEFAULT_EXPRESSION_LIMITS.expression_result_size;
    let result: unknown;
    try {
      result = runMetered(parsed, context, ms, maxSize, analysis.regex);
    } catch (error) {
      // An interrupted evaluation may leave the tree's scratch state half-written: parse afresh next time.
      if (lastRunInterrupted()) cache.delete(cacheKey);
      if (error instanceof LimitExceededError) throw error;
      if (error instanceof EvaluationError || error instanceof CelTypeError) {
        throw new ExpressionError(describeCelError(error), error.code);
      }
      // A RangeError (string too long, stack) or anything unexpected: still an error of this expression.
      throw new ExpressionError(`expression failed: ${(error as Error)?.message ?? String(error)}`, 'internal');
    }
    if (result instanceof Promise) throw new ExpressionError('expression returned a promise', 'internal');
    try {
      return toPlainValue(result);
    } catch (error) {
      throw new ExpressionError(`expression result could not be converted: ${(error as Error).message}`, 'internal');
    }
  };
  return { ok: true, stepRefs: [...analysis.stepRefs], evaluate };
}

/**
 * Compiles a CEL expression over the dialect's variables (default `workflow`: `trigger`, `steps`,
 * `state` and `run`). Never throws: a source that is not a string, empty, longer than
 * {@link MAX_EXPRESSION_LENGTH}, too deep, or does not parse and type-check gives `{ok: false,
 * error}`. Results (good and bad) are cached by dialect and source.
 */
export function compileExpression(source: string, dialect: ExpressionDialect = 'workflow'): CompiledExpression {
  if (typeof source !== 'string') return { ok: false, error: 'expression must be a string' };
  if (source.length > MAX_EXPRESSION_LENGTH) {
    return { ok: false, error: `expression is longer than ${MAX_EXPRESSION_LENGTH} characters` };
  }
  if (!source.trim()) return { ok: false, error: 'expression is empty' };
  const cacheKey = `${dialect}\0${source}`;
  const hit = cache.get(cacheKey);
  if (hit) {
    cache.delete(cacheKey);
    cache.set(cacheKey, hit);
    return hit;
  }
  let compiled: CompiledExpression;
  try {
    compiled = compileUncached(source, dialect, cacheKey);
  } catch (error) {
    // cel-js bugs or stack exhaustion must not escape as a 500.
    compiled = { ok: false, error: `expression could not be compiled: ${(error as Error)?.message ?? String(error)}` };
  }
  cache.set(cacheKey, compiled);
  if (cache.size > EXPRESSION_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return compiled;
}

// ---- Templates -------------------------------------------------------------------------------

// The placeholder grammar of the template renderer (engine/templates.ts): a name, then `.key` or
// `[index]` segments. Anything else between braces is left as literal text by the renderer.
const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*)\s*\}\}/g;
const ROOT_NAMES: ReadonlySet<string> = new Set(TEMPLATE_ROOTS);

export interface TemplatePlaceholder {
  /** The path between the braces (`steps.score.output.value`). */
  path: string;
  /** The first name of the path; when it is not one of {@link TEMPLATE_ROOTS} the placeholder renders empty. */
  root: string;
  valid: boolean;
  /** For `steps.<id>...`: the step id. */
  stepId: string | null;
}

/** The `{{...}}` placeholders of a string that the renderer replaces, in order. */
export function findTemplatePlaceholders(text: string): TemplatePlaceholder[] {
  return [...text.matchAll(PLACEHOLDER)].map((match) => {
    const path = match[1];
    const root = /^[A-Za-z_][\w-]*/.exec(path)![0];
    const stepId = root === 'steps' ? (/^steps\.([\w-]+)/.exec(path)?.[1] ?? null) : null;
    return { path, root, valid: ROOT_NAMES.has(root), stepId };
  });
}

// Not global: `test` on a global regex moves its lastIndex, which matchAll would then start from.
const ANY_PLACEHOLDER = new RegExp(PLACEHOLDER.source);

/** The string holds at least one `{{...}}` placeholder, so its final value is known only at run time. */
export function hasTemplate(text: string): boolean {
  return ANY_PLACEHOLDER.test(text);
}
