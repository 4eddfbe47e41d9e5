// `npm run bench`: one embedded PostgreSQL in a temp folder, then every benchmark in turn; name
// some to run only those (`npm run bench -- intent-run`).
// Settings (optional): BENCH_CONNECTIONS (32, collections-list), BENCH_INTENT_CONNECTIONS (16,
// intent-run; its latency rows use 1), BENCH_WARMUP_SECONDS (3), BENCH_DURATION_SECONDS (15),
// BENCH_CACHED_SECONDS (5, intent-run's cached row), BENCH_SEQUENTIAL_RUNS (300, intent-run's
// one-at-a-time passes), BENCH_POOL_MAX (10), BENCH_KNOWLEDGE_CHUNKS (100000, knowledge's second
// size; the first is 10000), BENCH_KNOWLEDGE_QUERIES (200, knowledge), BENCH_INGESTION_DOCUMENTS
// (1000, ingestion), BENCH_INGESTION_WORKER_CONCURRENCY (4,8: one ingestion run per value),
// BENCH_AGENT_CONNECTIONS (8, agents' throughput rows; its latency rows use 1),
// BENCH_AGENT_WARMUP_SECONDS (2), BENCH_AGENT_DURATION_SECONDS (10), BENCH_AGENT_SEQUENTIAL_RUNS
// (300, agents' one-at-a-time, instrumented and profiled passes), BENCH_WORKFLOW_CONNECTIONS (16,
// workflows' throughput rows), BENCH_WORKFLOW_WARMUP_SECONDS (2), BENCH_WORKFLOW_DURATION_SECONDS
// (8), BENCH_WORKFLOW_SEQUENTIAL_RUNS (300, workflows' one-at-a-time, instrumented and profiled
// passes), BENCH_WEBHOOK_CONNECTIONS (16, webhooks' batches and HTTP floor),
// BENCH_WEBHOOK_WARMUP_SECONDS (2, the HTTP floor's warm-up), BENCH_WEBHOOK_DURATION_SECONDS (10, the
// HTTP floor, and how long the measured batch is sized to last), BENCH_WEBHOOK_WARMUP_CALLS (2000),
// BENCH_WEBHOOK_CALLS (the measured batch; default: the warm-up's rate x the duration),
// BENCH_WEBHOOK_WORKER_CONCURRENCY (the server's WORKER_CONCURRENCY; default: the server's default),
// BENCH_EVAL_CASES (200, evals' measured runs), BENCH_EVAL_WARMUP_CASES (200, and as many for the baseline), BENCH_EVAL_CPU_ROUNDS (4, more
// pairs of runs at 0 ms for the CPU ratio, in alternating order), BENCH_EVAL_CONCURRENCY
// (10, the server's EVAL_CONCURRENCY), BENCH_EVAL_LATENCY_MS (500, the fake provider's latency in
// evals' second run), BENCH_DEPLOY_TENANTS (10, deploys: tenants deploying at once),
// BENCH_DEPLOY_INTENTS (1000, intents in each one's project), BENCH_DEPLOY_IDLE_SECONDS (5, deploys'
// idle reads), BENCH_GROWTH_ROWS (5000000, growth: the heavy tenant's history rows),
// BENCH_GROWTH_SAMPLES (200, growth: timed calls per hot path and phase), BENCH_GROWTH_RETENTION
// (1, growth: 0 skips the retention and disk phases), BENCH_PROVIDERS_RATE (50, providers: requests/s on
// the loaded process during the outage), BENCH_PROVIDERS_CONNECTIONS (32, carrying that rate),
// BENCH_PROVIDERS_LOAD_SECONDS (45), BENCH_PROVIDERS_OUTAGE_START_SECONDS (5),
// BENCH_PROVIDERS_OUTAGE_SECONDS (30, the primary answering 503), BENCH_PROVIDERS_PROPAGATION_REPEATS
// (5, breaker openings timed from one process to the other), BENCH_PROVIDERS_PROPAGATION_COOLDOWN_MS
// (1000, LLM_BREAKER_COOLDOWN_MS of that phase's processes), BENCH_PROVIDERS_CALLS (10000, providers:
// calls per arm of the router overhead phase), BENCH_EVENTS_RATE (200, events: changes a second),
// BENCH_EVENTS_SECONDS (10, each phase), BENCH_EVENTS_SLOW_RATE (20, the slow neighbour's changes a second),
// BENCH_ONLINE_DURATION_SECONDS (10, online-eval: each arm), BENCH_ONLINE_ROUNDS (3, off/on pairs), BENCH_ONLINE_BACKLOG_SECONDS (20),
// BENCH_ONLINE_PAIRED_ROUNDS (20, off/on pairs at 1 connection), BENCH_ONLINE_PAIRED_SECONDS (3, each arm of those),
// BENCH_ONLINE_STATEMENT_PAIRS (3000, run record statements with and without the sample).
// BENCH_DATABASE_URL: run against that PostgreSQL (an administrator's URL; its databases named
// liya_bench* are dropped before each benchmark, which creates its own) instead of starting an embedded one; `bash scripts/bench-postgres.sh
// start` makes one at default settings.
// Exit code 0 whatever the figures; non-zero only when a benchmark broke.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../db/embedded.js';
import { runAgentsBench } from './agents.bench.js';
import { runCollectionsListBench } from './collections-list.bench.js';
import { runDeploysBench } from './deploys.bench.js';
import { runEvalsBench } from './evals.bench.js';
import { runEventsBench } from './events.bench.js';
import { runOnlineEvalBench } from './online-eval.bench.js';
import { runGrowthBench } from './growth.bench.js';
import { runIngestionBench } from './ingestion.bench.js';
import { runIntentRunBench } from './intent-run.bench.js';
import { runKnowledgeBench } from './knowledge.bench.js';
import { runProvidersBench } from './providers.bench.js';
import { runWebhooksBench } from './webhooks.bench.js';
import { runWorkflowsBench } from './workflows.bench.js';
import { freePort } from '../support/free-port.js';
import { Cleanup, describeDatabase, dropBenchDatabases, setBenchDatabase } from './lib.js';

function intSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer (got ${raw})`);
  return value;
}

function optionalIntSetting(name: string): number | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : intSetting(name, 1);
}

function intListSetting(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < 1)) throw new Error(`${name} must be a comma-separated list of positive integers (got ${raw})`);
  return values;
}

const cleanup = new Cleanup();

type Bench = (adminUrl: string, cleanup: Cleanup) => Promise<unknown>;

const BENCHES: Record<string, Bench> = {
  'collections-list': (adminUrl, benchCleanup) =>
    runCollectionsListBench(adminUrl, benchCleanup, {
      connections: intSetting('BENCH_CONNECTIONS', 32),
      warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 3),
      durationSeconds: intSetting('BENCH_DURATION_SECONDS', 15),
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  'intent-run': (adminUrl, benchCleanup) =>
    runIntentRunBench(adminUrl, benchCleanup, {
      connections: intSetting('BENCH_INTENT_CONNECTIONS', 16),
      warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 3),
      durationSeconds: intSetting('BENCH_DURATION_SECONDS', 15),
      cachedSeconds: intSetting('BENCH_CACHED_SECONDS', 5),
      sequentialRuns: intSetting('BENCH_SEQUENTIAL_RUNS', 300),
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  knowledge: (adminUrl, benchCleanup) =>
    runKnowledgeBench(adminUrl, benchCleanup, {
      sizes: [10_000, intSetting('BENCH_KNOWLEDGE_CHUNKS', 100_000)],
      queries: intSetting('BENCH_KNOWLEDGE_QUERIES', 200),
      chunksPerDocument: 100,
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  ingestion: (adminUrl, benchCleanup) =>
    runIngestionBench(adminUrl, benchCleanup, {
      documents: intSetting('BENCH_INGESTION_DOCUMENTS', 1000),
      uploadConcurrency: 8,
      workerConcurrencies: intListSetting('BENCH_INGESTION_WORKER_CONCURRENCY', [4, 8]),
      baselineClients: 4,
      timeoutSeconds: 120,
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  agents: (adminUrl, benchCleanup) =>
    runAgentsBench(adminUrl, benchCleanup, {
      connections: intSetting('BENCH_AGENT_CONNECTIONS', 8),
      warmupSeconds: intSetting('BENCH_AGENT_WARMUP_SECONDS', 2),
      durationSeconds: intSetting('BENCH_AGENT_DURATION_SECONDS', 10),
      sequentialRuns: intSetting('BENCH_AGENT_SEQUENTIAL_RUNS', 300),
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  workflows: (adminUrl, benchCleanup) =>
    runWorkflowsBench(adminUrl, benchCleanup, {
      connections: intSetting('BENCH_WORKFLOW_CONNECTIONS', 16),
      warmupSeconds: intSetting('BENCH_WORKFLOW_WARMUP_SECONDS', 2),
      durationSeconds: intSetting('BENCH_WORKFLOW_DURATION_SECONDS', 8),
      sequentialRuns: intSetting('BENCH_WORKFLOW_SEQUENTIAL_RUNS', 300),
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  webhooks: (adminUrl, benchCleanup) =>
    runWebhooksBench(adminUrl, benchCleanup, {
      connections: intSetting('BENCH_WEBHOOK_CONNECTIONS', 16),
      warmupSeconds: intSetting('BENCH_WEBHOOK_WARMUP_SECONDS', 2),
      durationSeconds: intSetting('BENCH_WEBHOOK_DURATION_SECONDS', 10),
      warmupCalls: intSetting('BENCH_WEBHOOK_WARMUP_CALLS', 2000),
      calls: optionalIntSetting('BENCH_WEBHOOK_CALLS'),
      workerConcurrency: optionalIntSetting('BENCH_WEBHOOK_WORKER_CONCURRENCY'),
      poolMax: intSetting('BENCH_POOL_MAX', 10),
    }),
  'online-eval': (adminUrl, benchCleanup) =>
    runOnlineEvalBench(adminUrl, benchCleanup, {
      connections: intSetting('BENCH_INTENT_CONNECTIONS', 16),
      warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 3),
      durationSeconds: intSetting('BENCH_ONLINE_DURATION_SECONDS', 10),
      rounds: intSetting('BENCH_ONLINE_ROUNDS', 3),
      rate: 0.1,
      backlogSeconds: intSetting('BENCH_ONLINE_BACKLOG_SECONDS', 20),
      pairedRounds: intSetting('BENCH_ONLINE_PAIRED_ROUNDS', 20),
      pairedSeconds: intSetting('BENCH_ONLINE_PAIRED_SECONDS', 3),
      statementPairs: intSetting('BENCH_ONLINE_STATEMENT_PAIRS', 3000),
    }),
  events: (adminUrl, benchCleanup) =>
    runEventsBench(adminUrl, benchCleanup, {
      rate: intSetting('BENCH_EVENTS_RATE', 200),
      seconds: intSetting('BENCH_EVENTS_SECONDS', 10),
      slowRate: intSetting('BENCH_EVENTS_SLOW_RATE', 20),
    }),
  evals: (adminUrl, benchCleanup) =>
    runEvalsBench(adminUrl, benchCleanup, {
      cases: intSetting('BENCH_EVAL_CASES', 200),
      warmupCases: intSetting('BENCH_EVAL_WARMUP_CASES', 200),
      concurrency: intSetting('BENCH_EVAL_CONCURRENCY', 10),
      latencyMs: intSetting('BENCH_EVAL_LATENCY_MS', 500),
      poolMax: intSetting('BENCH_POOL_MAX', 10),
      cpuRounds: intSetting('BENCH_EVAL_CPU_ROUNDS', 8),
    }),
  deploys: (adminUrl, benchCleanup) =>
    runDeploysBench(adminUrl, benchCleanup, {
      tenants: intSetting('BENCH_DEPLOY_TENANTS', 10),
      intents: intSetting('BENCH_DEPLOY_INTENTS', 1000),
      idleSeconds: intSetting('BENCH_DEPLOY_IDLE_SECONDS', 5),
    }),
  growth: (adminUrl, benchCleanup) =>
    runGrowthBench(adminUrl, benchCleanup, {
      rows: intSetting('BENCH_GROWTH_ROWS', 5_000_000),
      samples: intSetting('BENCH_GROWTH_SAMPLES', 200),
      retention: process.env.BENCH_GROWTH_RETENTION !== '0',
    }),
  providers: (adminUrl, benchCleanup) =>
    runProvidersBench(adminUrl, benchCleanup, {
      rate: intSetting('BENCH_PROVIDERS_RATE', 50),
      connections: intSetting('BENCH_PROVIDERS_CONNECTIONS', 32),
      loadSeconds: intSetting('BENCH_PROVIDERS_LOAD_SECONDS', 45),
      outageStartSeconds: intSetting('BENCH_PROVIDERS_OUTAGE_START_SECONDS', 5),
      outageSeconds: intSetting('BENCH_PROVIDERS_OUTAGE_SECONDS', 30),
      propagationRepeats: intSetting('BENCH_PROVIDERS_PROPAGATION_REPEATS', 5),
      propagationCooldownMs: intSetting('BENCH_PROVIDERS_PROPAGATION_COOLDOWN_MS', 1000),
      calls: intSetting('BENCH_PROVIDERS_CALLS', 10000),
    }),
};

async function main() {
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !(name in BENCHES));
  if (unknown.length) throw new Error(`unknown benchmark ${unknown.join(', ')}; available: ${Object.keys(BENCHES).join(', ')}`);
  const selected = requested.length ? Object.keys(BENCHES).filter((name) => requested.includes(name)) : Object.keys(BENCHES);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-bench-'));
  cleanup.add('temp folder', () => rm(dir, { recursive: true, force: true }));
  let adminUrl = process.env.BENCH_DATABASE_URL;
  if (!adminUrl) {
    console.log('starting an embedded PostgreSQL ...');
    const embedded = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
    cleanup.add('embedded postgres', () => embedded.stop());
    adminUrl = embedded.url('postgres');
  }
  const database = await describeDatabase(adminUrl, process.env.BENCH_DATABASE_URL ? 'external' : 'embedded');
  setBenchDatabase(database);
  console.log(`database: ${database.label}`);

  for (const name of selected) {
    console.log(`\n=== ${name} ===`);
    // Each benchmark's servers are stopped before the next one starts.
    const benchCleanup = new Cleanup();
    cleanup.add(name, () => benchCleanup.run());
    if (process.env.BENCH_DATABASE_URL) await dropBenchDatabases(adminUrl);
    await BENCHES[name](adminUrl, benchCleanup);
    await benchCleanup.run();
  }
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: shutting down ...`);
    void cleanup.run().finally(() => process.exit(130));
  });
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  console.error('benchmark failed:', err);
  exitCode = 1;
} finally {
  await cleanup.run();
}
process.exit(exitCode);
