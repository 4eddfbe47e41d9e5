// Where does Liya's time go on GET /v1/collections? Not part of `npm run bench`; run with
//   node bin/run-ts.mjs test/bench/profile-collections-list.ts
// It measures, one after the other on the same database, servers that add one layer at a time:
//   baseline           node:http + pg (the bench's yardstick)
//   fastify+pg         a bare fastify route, same handler as the baseline
//   fastify+orm        a bare fastify route calling Liya's own authenticateApiKey + listCollections
//                      (MikroORM connection, em.fork())
//   fastify+orm+zod    the same, plus parsing the result with the route's output schema
//   fastify+trpc       a bare fastify route calling the tRPC procedure through createCaller
//                      (middlewares, input and output parsing; no REST adapter, no Liya hooks)
//   fastify+openapi    a bare fastify with trpc-to-openapi registered as Liya does (no Liya hooks,
//                      no logger)
//   liya               the real server (fastify + hooks + trpc-to-openapi + tRPC)
// It also measures main-thread CPU per request in-process (fastify inject, no sockets), then
// CPU-profiles the main thread during a run against each variant and sums self time per package.
// Settings: BENCH_CONNECTIONS (32), BENCH_WARMUP_SECONDS (2), BENCH_DURATION_SECONDS (8),
// BENCH_POOL_MAX (10), PROFILE_ROUNDS (1; 0 skips the HTTP runs), PROFILE (0 skips the CPU profiles),
// PROFILE_DETAIL (variants to break down, default baseline,liya), PROFILE_CALLERS (regexps),
// INJECT_REQUESTS (4000), INJECT_ROUNDS (3; 0 skips the in-process measurement).
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import pg from 'pg';
import { fastifyTRPCOpenApiPlugin } from 'trpc-to-openapi';
import { z } from 'zod';
import { startEmbeddedPostgres } from '../../db/embedded.js';
import type { RunningServer } from '../../server/boot.js';
import { collectionSchema } from '../../server/collections/collections.schemas.js';
import { LIST_COLLECTIONS_SQL, listCollections, toCollectionDto } from '../../server/collections/collections.service.js';
import { envelope, ok } from '../../server/common/schemas.js';
import { authenticateApiKey } from '../../server/keys/authenticate-api-key.js';
import { appRouter } from '../../server/router.js';
import type { Context } from '../../server/trpc.js';
import { checkRun, setUpCollectionsList } from './collections-list.bench.js';
import { freePort } from '../support/free-port.js';
import { Cleanup, fmt, type LoadFigures, measure, table } from './lib.js';

const ROUTE = '/v1/collections';

function intSetting(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  const value = raw ? Number(raw) : fallback;
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}`);
  return value;
}

const settings = {
  connections: intSetting('BENCH_CONNECTIONS', 32),
  warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 2),
  durationSeconds: intSetting('BENCH_DURATION_SECONDS', 8),
  poolMax: intSetting('BENCH_POOL_MAX', 10),
  rounds: intSetting('PROFILE_ROUNDS', 1, 0),
};

const LOOKUP_SQL = `
  select k.id as key_id, k.revoked_at, k.environment_id, t.id as tenant_id, t.is_active
    from api_keys k join tenants t on t.id = k.tenant_id left join environments e on e.id = k.environment_id
   where k.key_hash = $1`;
const LIST_SQL = LIST_COLLECTIONS_SQL;
const outputSchema = ok(z.object({ collections: z.array(collectionSchema) }));

// Fastify instances by variant, for the in-process (inject) measurement.
const apps = new Map<string, FastifyInstance>();

async function listen(name: string, app: FastifyInstance): Promise<string> {
  apps.set(name, app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

async function fastifyPg(databaseUrl: string, cleanup: Cleanup): Promise<string> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: settings.poolMax });
  const app = Fastify({ logger: false });
  app.get(ROUTE, async (req, reply) => {
    const auth = req.headers.authorization ?? '';
    const key = /^Bearer\s+(.+)$/i.exec(auth.trim())?.[1]?.trim() ?? '';
    if (!/^svc_[A-Za-z0-9_-]{43}$/.test(key)) return reply.code(401).send({ success: false });
    const found = await pool.query(LOOKUP_SQL, [createHash('sha256').update(key).digest('hex')]);
    const row = found.rows[0];
    if (!row || row.revoked_at || !row.is_active) return reply.code(401).send({ success: false });
    const list = await pool.query(LIST_SQL, [row.tenant_id]);
    return { success: true, data: { collections: list.rows.map(toCollectionDto) } };
  });
  cleanup.add('fastify+pg', async () => {
    await app.close();
    await pool.end();
  });
  return listen('fastify+pg', app);
}

async function fastifyOrm(liya: RunningServer, cleanup: Cleanup, withZod: boolean): Promise<string> {
  const deps = liya.deps;
  const app = Fastify({ logger: false });
  app.get(ROUTE, async (req) => {
    const scope = await authenticateApiKey(deps, req.headers);
    const body = envelope(await listCollections(deps.sql, scope.tenantId));
    return withZod ? outputSchema.parse(body) : body;
  });
  const name = withZod ? 'fastify+orm+zod' : 'fastify+orm';
  cleanup.add(name, () => app.close());
  return listen(name, app);
}

async function fastifyTrpc(liya: RunningServer, cleanup: Cleanup): Promise<string> {
  const deps = liya.deps;
  const app = Fastify({ logger: false });
  app.get(ROUTE, async (req) => {
    const ctx: Context = { deps, em: deps.orm.em.fork(), req: { id: 'x', ip: req.ip, headers: req.headers }, res: { headers: {} } };
    return appRouter.createCaller(ctx).collections.list();
  });
  cleanup.add('fastify+trpc', () => app.close());
  return listen('fastify+trpc', app);
}

/** A bare fastify (no Liya hooks, no logger) with the same REST adapter registration as Liya. */
async function fastifyOpenApi(liya: RunningServer, cleanup: Cleanup): Promise<string> {
  const deps = liya.deps;
  const app = Fastify({ logger: false });
  await app.register(fastifyTRPCOpenApiPlugin, {
    router: appRouter,
    basePath: '/',
    createContext: ({ req }: { req: FastifyRequest }): Context => ({
      deps,
      em: deps.orm.em.fork(),
      req: { id: req.id, ip: req.ip, headers: req.headers },
      res: { headers: {} },
    }),
    responseMeta: ({ ctx }: { ctx?: Context }) => ({ status: ctx?.res.status ?? 200, headers: ctx?.res.headers ?? {} }),
  } as never);
  cleanup.add('fastify+openapi', () => app.close());
  return listen('fastify+openapi', app);
}

interface Bucketed {
  name: string;
  ms: number;
}

/** Self time per package (node_modules/<pkg>), per project folder, or per V8 pseudo-node. */
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

const shortUrl = (url: string) => url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/work\/main\//, '');
const frameName = (node: ProfileNode) => `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ''}`;

/** Self time of the functions matching `pattern`, attributed to their caller chain (`depth` frames up). */
function callersOf(profile: CpuProfile, pattern: RegExp, depth: number): Bucketed[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const totals = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i]);
    if (!node || !pattern.test(frameName(node))) continue;
    const chain: string[] = [];
    let id = parent.get(node.id);
    while (id !== undefined && chain.length < depth) {
      const p = byId.get(id)!;
      chain.push(frameName(p));
      id = parent.get(id);
    }
    const key = chain.join(' < ');
    totals.set(key, (totals.get(key) ?? 0) + (deltas[i] ?? 0) / 1000);
  }
  return [...totals.entries()].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
}

function bucketProfile(profile: CpuProfile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  const fns = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i]);
    if (!node) continue;
    const { url, functionName } = node.callFrame;
    let bucket: string;
    const nm = url.lastIndexOf('node_modules/');
    if (nm >= 0) {
      const rest = url.slice(nm + 'node_modules/'.length).split('/');
      bucket = rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    } else if (url.startsWith('node:')) {
      bucket = `node:${url.slice(5).split('/')[0]}`;
    } else if (url.includes('/work/main/') || url.startsWith('file://')) {
      bucket = `liya:${url.replace(/^file:\/\//, '').replace(/^.*\/work\/main\//, '').split('/').slice(0, 2).join('/')}`;
    } else {
      bucket = functionName || '(native)';
    }
    const ms = (deltas[i] ?? 0) / 1000;
    totals.set(bucket, (totals.get(bucket) ?? 0) + ms);
    const fnKey = frameName(node);
    fns.set(fnKey, (fns.get(fnKey) ?? 0) + ms);
  }
  const sort = (m: Map<string, number>): Bucketed[] => [...m.entries()].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
  return { buckets: sort(totals), functions: sort(fns) };
}

function zodMicro(sample: unknown) {
  const n = 5000;
  for (let i = 0; i < 500; i++) outputSchema.parse(sample);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) outputSchema.parse(sample);
  const zodUs = Number(process.hrtime.bigint() - start) / 1000 / n;
  const start2 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) JSON.stringify(sample);
  const jsonUs = Number(process.hrtime.bigint() - start2) / 1000 / n;
  return { zodParseUs: zodUs, jsonStringifyUs: jsonUs };
}

function printVariants(names: string[], results: Map<string, LoadFigures[]>) {
  const base = results.get('baseline')!;
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const baseRps = avg(base.map((f) => f.reqPerSec));
  const baseP99 = avg(base.map((f) => f.latencyP99Ms));
  const baseCpu = avg(base.map((f) => f.serverCpuUsPerRequest));
  console.log('');
  console.log(
    table(
      ['variant', 'req/s', 'p50 ms', 'p99 ms', 'rps vs baseline', 'p99 vs baseline', 'server CPU us/req', 'CPU vs baseline'],
      names.map((name) => {
        const fs = results.get(name)!;
        const rps = avg(fs.map((f) => f.reqPerSec));
        const p99 = avg(fs.map((f) => f.latencyP99Ms));
        const cpu = avg(fs.map((f) => f.serverCpuUsPerRequest));
        return [name, fmt(rps), fmt(avg(fs.map((f) => f.latencyP50Ms))), fmt(p99), fmt(rps / baseRps, 2), fmt(p99 / baseP99, 2), fmt(cpu, 0), fmt(cpu / baseCpu, 2)];
      }),
    ),
  );

}

/**
 * Main-thread CPU per request through fastify's inject (no sockets: no syscalls, no HTTP parsing),
 * `concurrency` requests in flight, after a warm-up. Robust to a loaded machine: CPU time, not wall.
 */
async function injectCpu(app: FastifyInstance, headers: Record<string, string>, requests: number, concurrency: number): Promise<number> {
  const one = async () => {
    const res = await app.inject({ method: 'GET', url: ROUTE, headers });
    if (res.statusCode !== 200) throw new Error(`inject: HTTP ${res.statusCode}`);
  };
  const batch = async (n: number) => {
    let left = n;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await one();
      }),
    );
  };
  await batch(Math.min(1000, requests));
  const start = process.threadCpuUsage();
  await batch(requests);
  const used = process.threadCpuUsage(start);
  return (used.user + used.system) / requests;
}

async function profileVariants(variants: [string, string][], headers: Record<string, string>) {
  // CPU profile of the main thread (the servers; the load generator runs in a worker thread) during
  // a run against each variant: busy time per request is less sensitive to a loaded machine than
  // req/s. The profiler's own stop call (building the profile) is not counted.
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  const profiles = new Map<string, { profile: CpuProfile; requests: number; busyMs: number; wallMs: number; rps: number; cpuUs: number }>();
  for (const [name, url] of variants) {
    await session.post('Profiler.start');
    const run = await measure({ url: `${url}${ROUTE}`, headers, connections: settings.connections, warmupSeconds: 1, durationSeconds: settings.durationSeconds });
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    const { buckets } = bucketProfile(profile);
    const counted = buckets.filter((b) => b.name !== 'node:inspector');
    const wallMs = counted.reduce((a, b) => a + b.ms, 0);
    const busyMs = counted.filter((b) => b.name !== '(idle)').reduce((a, b) => a + b.ms, 0);
    profiles.set(name, { profile, requests: run.figures.totalRequests + run.warmup.totalRequests, busyMs, wallMs, rps: run.figures.reqPerSec, cpuUs: run.figures.serverCpuUsPerRequest });
  }
  session.disconnect();
  console.log('');
  console.log(
    table(
      ['main thread, profiled', 'req/s', 'busy %', 'busy us/request', 'vs baseline', 'thread CPU us/req'],
      variants.map(([name]) => {
        const p = profiles.get(name)!;
        const per = (1000 * p.busyMs) / p.requests;
        const base = profiles.get('baseline')!;
        return [name, fmt(p.rps), fmt((100 * p.busyMs) / p.wallMs), fmt(per, 0), fmt(per / ((1000 * base.busyMs) / base.requests), 2), fmt(p.cpuUs, 0)];
      }),
    ),
  );

  for (const name of (process.env.PROFILE_DETAIL ?? 'baseline,liya').split(',')) {
    const p = profiles.get(name);
    if (!p) throw new Error(`PROFILE_DETAIL: no variant named ${name}`);
    const { buckets, functions } = bucketProfile(p.profile);
    console.log('');
    console.log(`${name}: self time on the main thread (${p.requests} requests)`);
    console.log(
      table(
        ['package', 'ms', 'us/request'],
        buckets.filter((b) => b.name !== 'node:inspector').slice(0, 22).map((b) => [b.name, fmt(b.ms, 0), fmt((1000 * b.ms) / p.requests)]),
      ),
    );
    console.log('');
    console.log(
      table(
        ['function (self)', 'us/request'],
        functions.filter((f) => !f.name.startsWith('post ')).slice(0, 25).map((f) => [f.name.slice(0, 120), fmt((1000 * f.ms) / p.requests)]),
      ),
    );
  }
  const liyaProfile = profiles.get('liya')!;
  for (const pattern of (process.env.PROFILE_CALLERS ?? '^_objectSpread2 ,^DOMException ,schemas\\.ts').split(',')) {
    console.log('');
    console.log(
      table(
        [`liya: callers of /${pattern}/`, 'us/request'],
        callersOf(liyaProfile.profile, new RegExp(pattern), 4).slice(0, 6).map((c) => [c.name.slice(0, 220), fmt((1000 * c.ms) / liyaProfile.requests)]),
      ),
    );
  }
}

const cleanup = new Cleanup();

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-bench-'));
  cleanup.add('temp folder', () => rm(dir, { recursive: true, force: true }));
  const embedded = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
  cleanup.add('embedded postgres', () => embedded.stop());
  const { databaseUrl, liya, baseline, headers } = await setUpCollectionsList(embedded.url('postgres'), cleanup, settings.poolMax);

  const variants: [string, string][] = [
    ['baseline', baseline.url],
    ['fastify+pg', await fastifyPg(databaseUrl, cleanup)],
    ['fastify+orm', await fastifyOrm(liya, cleanup, false)],
    ['fastify+orm+zod', await fastifyOrm(liya, cleanup, true)],
    ['fastify+trpc', await fastifyTrpc(liya, cleanup)],
    ['fastify+openapi', await fastifyOpenApi(liya, cleanup)],
    ['liya', liya.url],
  ];
  for (const [name, url] of variants) {
    const res = await fetch(`${url}${ROUTE}`, { headers });
    const body = (await res.json()) as { data?: { collections?: unknown[] } };
    if (res.status !== 200 || body.data?.collections?.length !== 20) throw new Error(`${name}: HTTP ${res.status}`);
  }

  const sample = await (await fetch(`${liya.url}${ROUTE}`, { headers })).json();
  const micro = zodMicro(sample);
  console.log(`output schema parse of the 20-collection envelope: ${fmt(micro.zodParseUs)} us; JSON.stringify of it: ${fmt(micro.jsonStringifyUs)} us`);

  apps.set('liya', liya.app);
  const injectRequests = intSetting('INJECT_REQUESTS', 4000);
  const injectRounds = intSetting('INJECT_ROUNDS', 3, 0);
  if (injectRounds > 0) {
    const cpu = new Map<string, number[]>();
    for (let round = 0; round < injectRounds; round++) {
      for (const [name, app] of apps) cpu.set(name, [...(cpu.get(name) ?? []), await injectCpu(app, headers, injectRequests, settings.connections)]);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const names = [...apps.keys()];
    console.log('');
    console.log(`in-process (fastify inject, ${settings.connections} in flight, ${injectRequests} requests x ${injectRounds} rounds): main-thread CPU per request`);
    console.log(
      table(
        ['variant', 'CPU us/req (median)', 'rounds', 'step vs previous'],
        names.map((name, i) => {
          const m = median(cpu.get(name)!);
          const prev = i > 0 ? median(cpu.get(names[i - 1])!) : null;
          return [name, fmt(m, 0), cpu.get(name)!.map((v) => fmt(v, 0)).join(' / '), prev === null ? '' : `${m - prev >= 0 ? '+' : ''}${fmt(m - prev, 0)}`];
        }),
      ),
    );
  }

  const results = new Map<string, LoadFigures[]>();
  for (let round = 1; round <= settings.rounds; round++) {
    for (const [name, url] of variants) {
      console.log(`round ${round}: ${name} ...`);
      const { figures } = await measure({ url: `${url}${ROUTE}`, headers, connections: settings.connections, warmupSeconds: settings.warmupSeconds, durationSeconds: settings.durationSeconds });
      checkRun(name, figures);
      results.set(name, [...(results.get(name) ?? []), figures]);
    }
  }
  if (settings.rounds > 0) printVariants(variants.map(([name]) => name), results);

  if (process.env.PROFILE !== '0') await profileVariants(variants, headers);
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  console.error('profile failed:', err);
  exitCode = 1;
} finally {
  await cleanup.run();
}
process.exit(exitCode);
