// Cheap in-process instrumentation for the benchmarks' breakdowns, no server change: every SQL
// statement sent through `pg` (both the project's copy and MikroORM's own copy of the package) and
// every chat completion made through the openai SDK, counted and timed from call to result.
// Install after the measured runs (it wraps prototype methods) and restore before anything else.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import pg from 'pg';
import { Completions } from 'openai/resources/chat/completions';

export interface StatementStat {
  /** The statement's text, whitespace collapsed, literals and parameters as `?` / `$n`. */
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

/** Whitespace collapsed, and literals (MikroORM writes values into the SQL text) replaced by `?`. */
const normalise = (text: string) =>
  text
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\b\d+(?:\.\d+)?\b/g, '?')
    .replace(/\s+/g, ' ')
    .trim();

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

// ---------------------------------------------------------------- CPU profile of the main thread

interface ProfileNode {
  id: number;
  callFrame: { url: string; functionName: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

export interface CpuBucket {
  name: string;
  ms: number;
}

export interface CpuProfileSummary {
  /** Sampled time on the main thread that was not idle. */
  busyMs: number;
  /**
   * Self time per package (node_modules/<pkg>) or project folder (liya:<dir>/<dir>), natives and
   * Node internals (socket writes, fetch, JSON, regexps) counted for the package that called them;
   * the rest per Node internals (node:...) or V8 pseudo-node ((program), (garbage collector)).
   */
  packages: CpuBucket[];
  /** Self time per function. */
  functions: CpuBucket[];
}

const shortUrl = (url: string) => url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(server|db|test|worker)\//, '$1/');

function bucketOf(url: string, functionName: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/');
    if (parts[0] !== 'internal') return `node:${parts[0]}`;
    return parts[1] === 'deps' ? `node:${parts[2]}` : `node:internal/${parts[1]}`;
  }
  const own = /\/(server|db|test|worker)\/(.*)$/.exec(url);
  if (own) return `liya:${own[1]}/${own[2].split('/')[0]}`;
  return functionName || '(native)';
}

/** Samples the main thread's CPU until `stop()`; idle time and the inspector itself are left out. */
export async function startCpuProfile(): Promise<{ stop(): Promise<CpuProfileSummary> }> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
      session.disconnect();
      // BENCH_CPU_PROFILE_OUT: the whole profile, for DevTools or a closer look (inclusive times, callers).
      if (process.env.BENCH_CPU_PROFILE_OUT) writeFileSync(process.env.BENCH_CPU_PROFILE_OUT, JSON.stringify(profile));
      const byId = new Map(profile.nodes.map((n) => [n.id, n]));
      const parent = new Map<number, number>();
      for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
      const PSEUDO = new Set(['(program)', '(garbage collector)', '(idle)', '(root)']);
      /** The nearest frame in a package or in the project: natives and Node's internals count for their caller. */
      const owner = (node: ProfileNode): ProfileNode => {
        let current: ProfileNode | undefined = node;
        while (current && (!current.callFrame.url || current.callFrame.url.startsWith('node:')) && !PSEUDO.has(current.callFrame.functionName)) {
          const up = parent.get(current.id);
          current = up === undefined ? undefined : byId.get(up);
        }
        return current && current.callFrame.functionName !== '(root)' ? current : node;
      };
      const packages = new Map<string, number>();
      const functions = new Map<string, number>();
      const samples = profile.samples ?? [];
      const deltas = profile.timeDeltas ?? [];
      for (let i = 0; i < samples.length; i++) {
        const node = byId.get(samples[i]);
        if (!node) continue;
        const { url, functionName, lineNumber } = node.callFrame;
        // Idle time, and the profiler's own stop call (building the profile), are not counted.
        if (functionName === '(idle)' || url.startsWith('node:inspector')) continue;
        const frame = owner(node).callFrame;
        const bucket = bucketOf(frame.url, frame.functionName);
        const ms = (deltas[i] ?? 0) / 1000;
        packages.set(bucket, (packages.get(bucket) ?? 0) + ms);
        const fn = `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
        functions.set(fn, (functions.get(fn) ?? 0) + ms);
      }
      const sorted = (m: Map<string, number>) => [...m.entries()].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
      const list = sorted(packages);
      return { busyMs: list.reduce((n, b) => n + b.ms, 0), packages: list, functions: sorted(functions) };
    },
  };
}
