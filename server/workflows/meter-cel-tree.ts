// Wraps the nodes of a checked cel-js tree that copy, build or may run long, so that evaluating it
// under runMetered (expression-limits.ts) keeps to the plan's deadline and size cap.
//
// cel-js has no hook for either, and refuses to register an operator or function over one it
// already has. But a checked tree is data: each binary operator and function call node holds the
// handler it will call (`handle`, chosen by the type checker), and every node evaluates through
// `meta.evaluate`. So, once per compiled expression, those nodes get their handler or evaluator
// wrapped here; every other node (field access, arithmetic, `<`, logic) is left exactly as cel-js
// made it, and an expression without such nodes runs at its full speed.
import { EvaluationError, type ASTNode } from '@marcbachmann/cel-js';
import { isWatchdogTimeout, meter, runWithDeadline, sizeError } from './expression-limits.js';

/** Comparisons (`==`, `!=`, `in`) walking more elements than this run under the watchdog. */
const LARGE_COMPARISON = 200_000;
/** Longest string `duration()` accepts: cel-js parses it with a regular expression that is cubic in a run of digits (300 digits: 10 ms). */
export const MAX_DURATION_LENGTH = 100;

type Evaluate = (ev: unknown, ast: Node, ctx: { accuValue?: unknown[] }) => unknown;
type Handle = (...args: unknown[]) => unknown;

/** The internals of a checked cel-js node this module reads and wraps. */
interface Node {
  op: string;
  args: unknown;
  handle?: Handle;
  meta: { alternate?: Node; macro?: unknown; evaluate?: Evaluate };
  setMeta(key: string, value: unknown): Node;
}

interface ComprehensionArgs {
  kind?: string;
  errorsAreFatal?: boolean;
  iterable: Node;
  init: Node;
  step: Node;
  condition?: (accu: unknown) => boolean;
}

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string' && typeof (value as { setMeta?: unknown }).setMeta === 'function';

function internalsChanged(what: string): never {
  throw new Error(`cel-js internals changed (${what}): expressions cannot be metered`);
}

function wrapHandle(node: Node, wrap: (inner: Handle) => Handle): void {
  if (typeof node.handle !== 'function') internalsChanged(`no handler on ${node.op}`);
  node.handle = wrap(node.handle);
}

function wrapEvaluate(node: Node, wrap: (inner: Evaluate) => Evaluate): void {
  const { meta } = node;
  if (meta.alternate || meta.macro || typeof meta.evaluate !== 'function') internalsChanged(`no evaluator on ${node.op}`);
  node.setMeta('evaluate', wrap(meta.evaluate));
}

/** Nodes in a subtree: what one run of a macro body costs at most, outside the nodes that meter themselves. */
function countNodes(value: unknown, seen = new Set<Node>()): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + countNodes(v, seen), 0);
  if (!isNode(value) || seen.has(value)) return 0;
  seen.add(value);
  const target = value.meta.alternate ?? value;
  if (target.op === 'comprehension') {
    const args = target.args as ComprehensionArgs;
    return 1 + countNodes([args.iterable, args.init, args.step], seen);
  }
  return 1 + (target.op === 'value' || target.op === 'id' ? 0 : countNodes(target.args, seen));
}

const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
/** Elements or characters a function reads from its arguments (about what it costs). */
function argumentUnits(args: unknown[]): number {
  let units = 16;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (typeof arg === 'string') units += arg.length;
    else if (typeof arg === 'object' && arg !== null && (Array.isArray(arg) || isBytes(arg))) units += arg.length;
  }
  return units;
}

/**
 * What a function is about to build, from its arguments (receiver first for a method), before it
 * builds it; null when it builds nothing that can grow.
 */
const BUILDERS: Record<string, (args: unknown[]) => [size: number, what: string, unit: string] | null> = {
  join(args) {
    const [list, separator = ''] = args as [unknown, unknown];
    if (!Array.isArray(list) || typeof separator !== 'string') return null;
    let size = Math.max(0, list.length - 1) * separator.length;
    // A non-string element makes cel-js refuse the call, which then builds nothing.
    for (const item of list) if (typeof item === 'string') size += item.length;
    return [size, 'a string', 'characters'];
  },
  // split(sep, n) counts every part too: cel-js splits the whole text before keeping n of them.
  split(args) {
    const [text, separator] = args;
    if (typeof text !== 'string' || typeof separator !== 'string') return null;
    let parts = text.length + 1;
    const max = meter.max;
    if (parts > max) {
      // Only a long text may split into too many parts: count them (stopping past the cap) without building them.
      if (separator === '') parts = text.length;
      else {
        parts = 1;
        for (let at = text.indexOf(separator); at !== -1 && parts <= max; at = text.indexOf(separator, at + separator.length)) parts++;
      }
    }
    return [parts, 'a list', 'elements'];
  },
  lowerAscii: (args) => (typeof args[0] === 'string' ? [args[0].length, 'a string', 'characters'] : null),
  upperAscii: (args) => (typeof args[0] === 'string' ? [args[0].length, 'a string', 'characters'] : null),
  trim: (args) => (typeof args[0] === 'string' ? [args[0].length, 'a string', 'characters'] : null),
  substring(args) {
    const [text, start, end] = args;
    if (typeof text !== 'string') return null;
    const from = Math.max(0, Number(start));
    const to = end === undefined ? text.length : Math.min(text.length, Number(end));
    return [Math.max(0, to - from), 'a string', 'characters'];
  },
  // string(bytes), bytes.string(): at most one character per byte.
  string: (args) => (isBytes(args[0]) ? [args[0].length, 'a string', 'characters'] : null),
  bytes: (args) => (typeof args[0] === 'string' ? [Buffer.byteLength(args[0]), 'bytes', 'bytes'] : null),
  hex: (args) => (isBytes(args[0]) ? [args[0].length * 2, 'a string', 'characters'] : null),
  base64: (args) => (isBytes(args[0]) ? [Math.ceil(args[0].length / 3) * 4, 'a string', 'characters'] : null),
  json: (args) => (isBytes(args[0]) ? [args[0].length, 'a value', 'bytes of JSON'] : null),
};

/** Functions whose cost is not known before they run: the clock is read after each call. */
const CHECK_AFTER = new Set(['duration', 'matches', 'getDate', 'getDayOfMonth', 'getDayOfWeek', 'getDayOfYear', 'getFullYear', 'getHours', 'getMilliseconds', 'getMinutes', 'getMonth', 'getSeconds']);

function meterCall(node: Node): void {
  const name = (node.args as [string])[0];
  const builder = Object.hasOwn(BUILDERS, name) ? BUILDERS[name] : null;
  if (name === 'size') {
    // size() of a string counts its code points (charged before, as its length); of a map, its keys (known after).
    wrapHandle(node, (inner) => (args, b, c) => {
      if (meter.failure) throw meter.failure;
      meter.work += argumentUnits(args as unknown[]);
      if (meter.work >= meter.nextCheck) meter.check();
      const result = inner(args, b, c);
      const arg = (args as unknown[])[0];
      if (typeof arg === 'object' && arg !== null && !Array.isArray(arg) && !isBytes(arg) && typeof result === 'bigint') meter.tick(Number(result));
      return result;
    });
    return;
  }
  if (!builder && name !== 'duration' && !CHECK_AFTER.has(name)) {
    // Most calls (startsWith, contains, int(), ...) only read their arguments: one flat wrapper, a few ns.
    // The handle's arguments: (args, ast, ev) for a function, (args, ev, ast) for a method; args first either way.
    wrapHandle(node, (inner) => (args, b, c) => {
      if (meter.failure) throw meter.failure;
      meter.work += argumentUnits(args as unknown[]);
      if (meter.work >= meter.nextCheck) meter.check();
      return inner(args, b, c);
    });
    return;
  }
  const before = (args: unknown[]) => {
    if (meter.failure) throw meter.failure;
    if (builder) {
      const built = builder(args);
      if (built) meter.build(built[0], built[1], built[2]);
    }
    meter.tick(argumentUnits(args));
  };
  const after = CHECK_AFTER.has(name) ? () => meter.check() : null;
  let call = before;
  if (name === 'duration') {
    call = (args) => {
      if (typeof args[0] === 'string' && args[0].length > MAX_DURATION_LENGTH) {
        throw new EvaluationError({ code: 'invalid_duration', message: `duration() accepts at most ${MAX_DURATION_LENGTH} characters`, node: node as unknown as ASTNode });
      }
      before(args);
    };
  }
  wrapHandle(node, (inner) =>
    after
      ? (args, b, c) => {
          call(args as unknown[]);
          const result = inner(args, b, c);
          after();
          return result;
        }
      : (args, b, c) => {
          call(args as unknown[]);
          return inner(args, b, c);
        },
  );
}

/**
 * `+` on lists and bytes copies both sides: checked before the copy. On strings V8 links the two
 * (a rope, copied only when something reads it flat), so the result's length is capped but it
 * costs one unit, not its length, towards all that the evaluation builds.
 */
function meterConcatenation(node: Node): void {
  wrapHandle(node, (inner) => (left, right, ast, ev) => {
    if (typeof left === 'string') {
      if (typeof right === 'string') meter.build(left.length + right.length, 'a string', 'characters', 1);
    } else if (Array.isArray(left)) {
      if (Array.isArray(right)) meter.build(left.length + right.length, 'a list', 'elements');
    } else if (isBytes(left) && isBytes(right)) meter.build(left.length + right.length, 'bytes', 'bytes');
    return inner(left, right, ast, ev);
  });
}

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null && !isBytes(v);

/** Elements and entries in a nested value, counting a shared one each time it appears (as a comparison walks it), stopping past `limit`. */
function nestedSize(value: object, limit: number): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length && size <= limit) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      size += v.length;
      for (const item of v) if (isContainer(item)) stack.push(item);
    } else if (v instanceof Map) {
      size += v.size;
      for (const item of v.values()) if (isContainer(item)) stack.push(item);
    } else if (isContainer(v) && !(v instanceof Date)) {
      for (const key in v) {
        size++;
        const item = (v as Record<string, unknown>)[key];
        if (isContainer(item)) stack.push(item);
      }
    }
  }
  return size;
}

/** A comparison whose cost is `factor` times the size of `probe`: metered, or run under the watchdog when large. */
function compareMetered(inner: Handle, args: unknown[], probe: object, factor: number): unknown {
  const limit = Math.floor(LARGE_COMPARISON / Math.max(1, factor));
  const size = nestedSize(probe, limit);
  if (size <= limit) {
    meter.tick((size + 1) * factor);
    return inner(...args);
  }
  const remaining = meter.remainingMs();
  if (remaining <= 0) meter.fail(meter.timeoutError());
  try {
    return runWithDeadline(() => inner(...args), remaining);
  } catch (error) {
    if (!isWatchdogTimeout(error)) throw error;
    meter.interrupted = true;
    return meter.fail(meter.timeoutError());
  }
}

/** `==` and `!=` of two lists or maps compare them element by element, nested values included. */
function meterEquality(node: Node): void {
  wrapHandle(node, (inner) => (left, right, ast, ev) => {
    if (isContainer(left) && isContainer(right)) return compareMetered(inner, [left, right, ast, ev], left, 1);
    return inner(left, right, ast, ev);
  });
}

/**
 * cel-js looks a key up with `hasOwn(map, key)` and names a missing one in its error: a list or map
 * used as a key is turned into text, at least a character per element, nested ones included.
 */
function meterKeyText(key: object): void {
  meter.build(nestedSize(key, meter.max), 'a key from a list or map', 'characters or more');
}

/** `x in list` compares x with each element; `x in map` looks x up as a key. */
function meterMembership(node: Node): void {
  wrapHandle(node, (inner) => (value, collection, ast, ev) => {
    if (Array.isArray(collection)) {
      if (isContainer(value)) return compareMetered(inner, [value, collection, ast, ev], value, collection.length);
      meter.tick(collection.length);
    } else if (isContainer(value)) meterKeyText(value);
    return inner(value, collection, ast, ev);
  });
}

/** `m[key]` with a list or map as the key. */
function meterIndex(node: Node): void {
  wrapHandle(node, (inner) => (target, key, ast, ev) => {
    if (isContainer(key)) meterKeyText(key);
    return inner(target, key, ast, ev);
  });
}

/** List and map literals hold a few hundred elements at most: only a macro body, which builds one per item, is metered. */
function meterLiteral(node: Node): void {
  const size = (node.args as unknown[]).length;
  const [what, unit] = node.op === 'list' ? ['a list', 'elements'] : ['a map', 'entries'];
  wrapEvaluate(node, (inner) => function (this: unknown, ev, ast, ctx) {
    meter.build(size, what, unit);
    return inner.call(this, ev, ast, ctx);
  });
}

/** The list a `map` or `filter` macro builds grows by one element per item: checked before each. */
function meterAccumulation(node: Node): void {
  wrapEvaluate(node, (inner) => function (this: unknown, ev, ast, ctx) {
    const list = ctx.accuValue;
    if (Array.isArray(list) && list.length >= meter.max) meter.fail(sizeError(list.length + 1, 'a list', 'elements', meter.max));
    meter.build(1, 'a list', 'elements');
    return inner.call(this, ev, ast, ctx);
  });
}

/**
 * Each run of a macro body costs its node count. `all` and `exists` swallow a body's error while
 * another item may still decide the result: once a limit is reached, the body answers the value
 * that ends their loop (the limit is thrown at the end all the same).
 */
function meterComprehension(node: Node): void {
  const args = node.args as ComprehensionArgs;
  if (!isNode(args?.step) || !isNode(args.iterable)) internalsChanged('comprehension');
  const units = countNodes(args.step);
  const swallows = args.kind === 'quantifier' && !args.errorsAreFatal;
  const stopValue = swallows && typeof args.condition === 'function' ? !args.condition(true) : undefined;
  wrapEvaluate(args.step, (inner) => function (this: unknown, ev, ast, ctx) {
    if (meter.failure) {
      if (stopValue !== undefined) return stopValue;
      throw meter.failure;
    }
    meter.tick(units);
    return inner.call(this, ev, ast, ctx);
  });
}

const CONCATENATION = new Set(['+']);
const EQUALITY = new Set(['==', '!=']);

/**
 * Wraps the nodes of a checked tree (after `parse(...).check()`, before its first evaluation)
 * that copy, build or run long, so that evaluating it under runMetered (expression-limits.ts) keeps to the limits.
 * Throws when cel-js's tree no longer has the shape this relies on.
 */
export function meterTree(root: ASTNode): void {
  const seen = new Set<Node>();
  /** `inBody`: inside a macro body, run once per item. */
  const visit = (value: unknown, inBody: boolean): void => {
    if (Array.isArray(value)) return value.forEach((v) => visit(v, inBody));
    if (!isNode(value) || seen.has(value)) return;
    seen.add(value);
    const { alternate, macro } = value.meta;
    // A macro (map, filter, all, exists) is evaluated as its expansion; has() and cel.bind as the macro over the same argument nodes.
    if (alternate) return visit(alternate, inBody);
    if (macro) return visit(value.args, inBody);
    const op = value.op;
    if (op === 'value' || op === 'id') return;
    if (op === 'comprehension') {
      const args = value.args as ComprehensionArgs;
      meterComprehension(value);
      visit([args.iterable, args.init], inBody);
      return visit(args.step, true);
    }
    if (op === 'call' || op === 'rcall') meterCall(value);
    else if (CONCATENATION.has(op)) meterConcatenation(value);
    else if (EQUALITY.has(op)) meterEquality(value);
    else if (op === 'in') meterMembership(value);
    else if (op === '[]') meterIndex(value);
    else if ((op === 'list' || op === 'map') && inBody && (value.args as unknown[]).length > 0) meterLiteral(value);
    else if (op === 'accuPush') meterAccumulation(value);
    visit(value.args, inBody);
  };
  visit(root, false);
}
