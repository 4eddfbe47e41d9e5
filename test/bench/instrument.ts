// Cheap in-process instrumentation for the benchmarks' breakdowns, no server change: every SQL
// statement sent through `pg` (both the project's copy and MikroORM's own copy of the package) and
// every chat completion made through the openai SDK, counted and timed from call to result.
// Install after the measured runs (it wraps prototype methods) and restore before anything else.
import { createRequire } from 'node:module';
import pg from 'pg';
import { Completions } from 'openai/resources/chat/completions';

export interface StatementStat {
  /** The statement's text, whitespace collapsed, parameters as sent ($1 / ?). */
  text: string;
  count: number;
  totalMs: number;
}

export interface Instrumentation {
  /** Forget what was recorded so far. */
  clear(): void;
  sql(): { count: number; totalMs: number; byText: StatementStat[] };
  model(): { count: number; totalMs: number };
  restore(): void;
}

type QueryFn = (this: unknown, ...args: unknown[]) => unknown;

/** The `pg` module MikroORM's driver loads (it ships its own copy when versions differ). */
function pgCopies(): { Client: { prototype: { query: QueryFn } } }[] {
  const copies = new Set<{ Client: { prototype: { query: QueryFn } } }>([pg as never]);
  try {
    const ormRequire = createRequire(import.meta.resolve('@mikro-orm/postgresql'));
    copies.add(ormRequire('pg'));
  } catch {
    // the driver uses the top-level pg
  }
  return [...copies];
}

const normalise = (text: string) => text.replace(/\s+/g, ' ').trim();

export function instrument(): Instrumentation {
  const statements = new Map<string, StatementStat>();
  const calls = { count: 0, totalMs: 0 };
  const restores: (() => void)[] = [];

  const record = (text: string, ms: number) => {
    const key = normalise(text);
    let stat = statements.get(key);
    if (!stat) statements.set(key, (stat = { text: key, count: 0, totalMs: 0 }));
    stat.count += 1;
    stat.totalMs += ms;
  };

  for (const copy of pgCopies()) {
    const proto = copy.Client.prototype;
    const original = proto.query;
    proto.query = function (this: unknown, ...args: unknown[]) {
      const config = args[0] as { text?: string; submit?: unknown } | string;
      const text = typeof config === 'string' ? config : (config?.text ?? '(submittable)');
      const started = performance.now();
      const done = () => record(text, performance.now() - started);
      const last = args.length - 1;
      if (typeof args[last] === 'function') {
        const callback = args[last] as (...a: unknown[]) => unknown;
        args[last] = (...a: unknown[]) => {
          done();
          return callback(...a);
        };
        return original.apply(this, args);
      }
      const result = original.apply(this, args) as { then?: (ok: () => void, fail: () => void) => unknown } | undefined;
      if (result && typeof result.then === 'function') result.then(done, done);
      else done();
      return result;
    };
    restores.push(() => (proto.query = original));
  }

  const completions = Completions.prototype as unknown as { create: QueryFn };
  const originalCreate = completions.create;
  completions.create = function (this: unknown, ...args: unknown[]) {
    const started = performance.now();
    const result = originalCreate.apply(this, args) as Promise<unknown>;
    const done = () => {
      calls.count += 1;
      calls.totalMs += performance.now() - started;
    };
    result.then(done, done);
    return result;
  };
  restores.push(() => (completions.create = originalCreate));

  return {
    clear() {
      statements.clear();
      calls.count = 0;
      calls.totalMs = 0;
    },
    sql() {
      const byText = [...statements.values()].sort((a, b) => b.totalMs - a.totalMs);
      return { count: byText.reduce((n, s) => n + s.count, 0), totalMs: byText.reduce((n, s) => n + s.totalMs, 0), byText };
    },
    model: () => ({ ...calls }),
    restore() {
      for (const undo of restores.reverse()) undo();
      restores.length = 0;
    },
  };
}
