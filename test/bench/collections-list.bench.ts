// GET /v1/collections (API-key auth + one list query) on Liya against two hand-written node:http + pg
// servers measured in the same run:
// - the fastest honest one (flat-baseline-server.ts): the simplest table shape that holds the same
//   answer, prepared statements, nothing else — the yardstick of the targets;
// - the framework-only one (baseline-server.ts): Liya's own statements and DTO mapper on node:http,
//   so the gap to it is the framework's share alone.
// Figures are printed and written to results/collections-list.json; the targets are reported as
// PASS/MISS, never asserted.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { ensureDatabase } from '../../db/orm.js';
import { type RunningServer, startServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { type BaselineServer, startBaselineServer } from './baseline-server.js';
import { createFlatTables, startFlatBaselineServer } from './flat-baseline-server.js';
import { benchDatabase, type Cleanup, fmt, type LoadFigures, measure, table, withDatabase } from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'collections-list.json');
const ROUTE = '/v1/collections';
const COLLECTIONS = 20;

export interface BenchSettings {
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  poolMax: number;
}

// Against the fastest honest baseline (the flat one).
const TARGETS = { minThroughputRatio: 0.75, maxP99Ratio: 1.5 };

async function signUp(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ companyName: 'Bench Corp', email: 'bench@example.com', password: 'bench-password-123' }),
  });
  const body = (await res.json()) as { data?: { apiKey?: string } };
  if (res.status !== 201 || !body.data?.apiKey) throw new Error(`signup failed: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body.data.apiKey;
}

/** 20 collections, each with one or two domain keys, for the tenant behind `apiKey`. */
async function seed(databaseUrl: string, apiKey: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const hash = createHash('sha256').update(apiKey).digest('hex');
    const { rows } = await client.query<{ tenant_id: string }>('select tenant_id from api_keys where key_hash = $1', [hash]);
    if (!rows[0]) throw new Error('seed: the signed-up key is not in api_keys');
    const tenantId = rows[0].tenant_id;
    const domains = ['hiring', 'support', 'sales', 'legal'];
    await client.query('begin');
    for (let i = 0; i < COLLECTIONS; i++) {
      const createdAt = new Date(Date.UTC(2026, 0, 1, 0, 0, i));
      const inserted = await client.query<{ id: string }>(
        `insert into collections (tenant_id, slug, label, color, tags, visibility, retrieval_config, default_embedding_model,
                                  default_chunking_strategy, default_chunk_size, default_chunk_overlap, last_synced_at, created_at, updated_at)
         values ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $13) returning id`,
        [
          tenantId,
          `collection-${i + 1}`,
          `Collection ${i + 1}`,
          i % 3 === 0 ? null : '#3366ff',
          JSON.stringify(i % 2 === 0 ? ['bench', `group-${i % 4}`] : ['bench']),
          i % 5 === 0 ? 'restricted' : 'workspace',
          i % 2 === 0 ? JSON.stringify({ scope: 'collection_only', boost_priority: 1.5, fallback_when_empty: 'domain_fallback' }) : null,
          i % 2 === 0 ? 'text-embedding-3-small' : null,
          i % 2 === 0 ? 'fixed' : null,
          i % 2 === 0 ? 800 : null,
          i % 2 === 0 ? 100 : null,
          i % 4 === 0 ? createdAt : null,
          createdAt,
        ],
      );
      const keys = i % 2 === 0 ? [domains[i % 4]] : [domains[i % 4], domains[(i + 1) % 4]];
      for (const key of keys) {
        await client.query('insert into collection_domains (collection_id, domain_key, tenant_id, created_at) values ($1, $2, $3, $4)', [
          inserted.rows[0].id,
          key,
          tenantId,
          createdAt,
        ]);
      }
    }
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}

/** Both servers must answer 200 with the same collections before anything is measured. */
async function verify(name: string, baseUrl: string, headers: Record<string, string>): Promise<unknown[]> {
  const res = await fetch(`${baseUrl}${ROUTE}`, { headers });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${name}: GET ${ROUTE} answered HTTP ${res.status}: ${text}`);
  const body = JSON.parse(text) as { success?: boolean; data?: { collections?: unknown[] } };
  if (body.success !== true || !Array.isArray(body.data?.collections)) throw new Error(`${name}: unexpected body ${text.slice(0, 300)}`);
  return body.data.collections;
}

const row = (name: string, f: LoadFigures) => [
  name,
  fmt(f.reqPerSec),
  f.latencyP50Ms,
  f.latencyP90Ms,
  f.latencyP99Ms,
  f.latencyMaxMs,
  f.totalRequests,
  f.non2xx,
  fmt(f.serverCpuUsPerRequest, 0),
];

export function checkRun(name: string, figures: LoadFigures) {
  if (figures.non2xx > 0 || figures.errors > 0 || figures.timeouts > 0) {
    throw new Error(
      `${name}: ${figures.non2xx} non-2xx responses, ${figures.errors} errors, ${figures.timeouts} timeouts during the run (status codes ${JSON.stringify(figures.statusCodes)})`,
    );
  }
  if (figures.totalRequests === 0) throw new Error(`${name}: no request completed`);
}

export interface CollectionsListSetup {
  databaseUrl: string;
  liya: RunningServer;
  baseline: BaselineServer;
  flat: BaselineServer;
  headers: Record<string, string>;
  sameBodies: boolean;
}

/**
 * Creates the bench database, starts Liya on it, signs a tenant up, seeds its collections, starts
 * the baseline and checks that both answer the same. Everything started is registered on `cleanup`.
 */
export async function setUpCollectionsList(adminUrl: string, cleanup: Cleanup, poolMax: number): Promise<CollectionsListSetup> {
  const database = 'liya_bench';
  await ensureDatabase(adminUrl, database);
  const databaseUrl = withDatabase(adminUrl, database);

  console.log('starting Liya (WORKER=0, LOG_LEVEL=silent) ...');
  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    WORKER: '0',
    DB_POOL_MAX: String(poolMax),
  });
  const liya = await startServer({ config, databaseUrl });
  cleanup.add('liya server', () => liya.close());

  const apiKey = await signUp(liya.url);
  await seed(databaseUrl, apiKey);

  const baseline = await startBaselineServer({ databaseUrl, poolMax });
  cleanup.add('baseline server', () => baseline.close());

  await createFlatTables(databaseUrl);
  const flat = await startFlatBaselineServer({ databaseUrl, poolMax });
  cleanup.add('flat baseline server', () => flat.close());

  const headers = { authorization: `Bearer ${apiKey}` };
  const fromBaseline = await verify('baseline', baseline.url, headers);
  const fromFlat = await verify('flat baseline', flat.url, headers);
  const fromLiya = await verify('liya', liya.url, headers);
  if (fromBaseline.length !== COLLECTIONS || fromLiya.length !== COLLECTIONS || fromFlat.length !== COLLECTIONS) {
    throw new Error(`collections count differs: flat ${fromFlat.length}, baseline ${fromBaseline.length}, liya ${fromLiya.length}, seeded ${COLLECTIONS}`);
  }
  const sameBodies = isDeepStrictEqual(fromBaseline, fromLiya) && isDeepStrictEqual(fromFlat, fromLiya);
  if (!sameBodies) console.warn('warning: the servers return the same number of collections but different contents');
  console.log(`verified: all three servers answer 200 with ${COLLECTIONS} collections (identical data: ${sameBodies ? 'yes' : 'NO'})`);
  return { databaseUrl, liya, baseline, flat, headers, sameBodies };
}

export async function runCollectionsListBench(adminUrl: string, cleanup: Cleanup, settings: BenchSettings) {
  const { liya, baseline, flat, headers, sameBodies } = await setUpCollectionsList(adminUrl, cleanup, settings.poolMax);

  const loadAtStart = os.loadavg();
  const load = { headers, connections: settings.connections, warmupSeconds: settings.warmupSeconds, durationSeconds: settings.durationSeconds };
  console.log(`flat baseline: warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
  const f = await measure({ ...load, url: `${flat.url}${ROUTE}` });
  checkRun('flat baseline', f.warmup);
  checkRun('flat baseline', f.figures);
  console.log(`baseline: warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
  const b = await measure({ ...load, url: `${baseline.url}${ROUTE}` });
  checkRun('baseline', b.warmup);
  checkRun('baseline', b.figures);
  console.log(`liya:     warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
  const l = await measure({ ...load, url: `${liya.url}${ROUTE}` });
  checkRun('liya', l.warmup);
  checkRun('liya', l.figures);

  const throughputRatio = l.figures.reqPerSec / f.figures.reqPerSec;
  const p99Ratio = l.figures.latencyP99Ms / f.figures.latencyP99Ms;
  const cpuRatio = l.figures.serverCpuUsPerRequest / f.figures.serverCpuUsPerRequest;
  const framework = {
    throughput: l.figures.reqPerSec / b.figures.reqPerSec,
    p99: l.figures.latencyP99Ms / b.figures.latencyP99Ms,
    serverCpuPerRequest: l.figures.serverCpuUsPerRequest / b.figures.serverCpuUsPerRequest,
  };
  const throughputPass = throughputRatio >= TARGETS.minThroughputRatio;
  const p99Pass = p99Ratio <= TARGETS.maxP99Ratio;
  const note = `load generator (1 autocannon worker thread) and both servers share this machine's ${os.cpus().length} cores; figures are relative, not capacity`;

  console.log('');
  console.log(`GET ${ROUTE}  (${settings.connections} connections, ${settings.durationSeconds}s measured after ${settings.warmupSeconds}s warm-up, pool ${settings.poolMax})`);
  console.log(
    table(
      ['server', 'req/s (avg)', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'requests', 'non-2xx', 'server CPU us/req'],
      [row('fastest honest (node:http + pg, flat tables)', f.figures), row('framework-only (node:http + pg, same SQL)', b.figures), row('liya (fastify + tRPC REST)', l.figures)],
    ),
  );
  console.log('');
  console.log(`against the fastest honest baseline:`);
  console.log(`throughput ratio liya/baseline: ${fmt(throughputRatio, 2)}  target >= ${TARGETS.minThroughputRatio.toFixed(2)}  ${throughputPass ? 'PASS' : 'MISS'}`);
  console.log(`p99 ratio liya/baseline:        ${fmt(p99Ratio, 2)}  target <= ${TARGETS.maxP99Ratio.toFixed(2)}  ${p99Pass ? 'PASS' : 'MISS'}`);
  console.log(`server CPU per request liya/baseline: ${fmt(cpuRatio, 2)}  (main-thread CPU time / requests; informational, less sensitive to machine load)`);
  console.log(`against the framework-only baseline: throughput ${fmt(framework.throughput, 2)}, p99 ${fmt(framework.p99, 2)}, CPU per request ${fmt(framework.serverCpuPerRequest, 2)}`);
  const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  console.log(`note: ${note}; load average (1/5/15 min) at start ${loadText(loadAtStart)}, at end ${loadText(os.loadavg())}`);

  const results = {
    benchmark: 'collections-list',
    route: `GET ${ROUTE}`,
    date: new Date().toISOString(),
    environment: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverageAtStart: loadAtStart, loadAverageAtEnd: os.loadavg(), note },
    database: benchDatabase(),
    settings: { ...settings, collections: COLLECTIONS, loadGeneratorWorkers: 1, order: ['flat', 'baseline', 'liya'] },
    verification: { collections: COLLECTIONS, identicalData: sameBodies },
    fastestHonestBaseline: f.figures,
    baseline: b.figures,
    liya: l.figures,
    ratios: { throughput: throughputRatio, p99: p99Ratio, serverCpuPerRequest: cpuRatio },
    frameworkOnlyRatios: framework,
    targets: {
      throughputRatio: { min: TARGETS.minThroughputRatio, pass: throughputPass },
      p99Ratio: { max: TARGETS.maxP99Ratio, pass: p99Pass },
    },
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  return results;
}
