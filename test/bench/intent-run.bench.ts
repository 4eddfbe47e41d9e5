// POST /v1/run (hiring/career-path) through the real server against the same model call made
// directly with the openai SDK behind a bare node:http server, and against that call given Liya's
// guarantees over plain pg and flat tables (key and quota read before the call, the run stored
// before the answer: the fastest honest way to do the same job), all against the fake provider
// (0 ms latency, in a worker thread of its own) and driven by the same load generator. Every
// request's input is unique, so Liya's output cache never answers (a separate short run measures
// cached runs). Figures are printed and written to results/intent-run.json; targets are reported
// as PASS/MISS, never asserted. After the load: the stored sessions and usage events are counted,
// then a sequential, instrumented pass counts SQL statements per run and splits a run's time.
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import pg from 'pg';
import { ensureDatabase } from '../../db/orm.js';
import { startServer } from '../../server/boot.js';
import { validateWithSchema } from '../../server/common/json-schema.js';
import { loadConfig } from '../../server/config.js';
import { getHiringIntent } from '../../server/hiring/hiring-intents.js';
import { checkRun } from './collections-list.bench.js';
import { startFakeLlmThread } from './fake-llm-thread.js';
import { createFlatRunTables, startIntentBaselineServer } from './intent-baseline-server.js';
import { type CpuBucket, instrument, startCpuProfile, type StatementStat } from './instrument.js';
import { benchDatabase, type Cleanup, fmt, type LoadFigures, measure, table, withDatabase, sourceHash, tenantIdOf } from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'intent-run.json');
const ROUTE = '/v1/run';
const DATABASE = 'liya_bench_intent';
const PROVIDER_KEY = 'sk-bench-platform';
const INTENT = getHiringIntent('career-path')!;
const ROLE = 'Data analyst with four years of SQL, Python and dashboards, aiming for analytics engineering';
// autocannon replaces [<id>] with a new 27-character id on every request.
const UNIQUE_ROLE = `${ROLE} (run [<id>])`;
const TARGETS = { maxAddedP50Ms: 3, minRunsPerSec: 300 };

export interface IntentRunSettings {
  /** Connections of the throughput runs (the latency runs use 1). */
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Measured seconds of the cached-run row. */
  cachedSeconds: number;
  poolMax: number;
  /** Requests per server in the sequential sub-millisecond latency pass and in the instrumented pass. */
  sequentialRuns: number;
}


/** A short hash of the server's source (server/ and db/), to tell which code a result measured. */
const runBody = (role: string) => JSON.stringify({ domain: 'hiring', intent: 'career-path', input: { user_id: 'bench-user', current_role: role } });

// ---------------------------------------------------------------- a sequential HTTP client

interface Answer {
  status: number;
  text: string;
  ms: number;
}

function post(agent: http.Agent, url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  agent: http.Agent;
}

const target = (name: string, base: string, headers: Record<string, string>): Target => ({
  name,
  url: `${base}${ROUTE}`,
  headers: { 'content-type': 'application/json', ...headers },
  agent: new http.Agent({ keepAlive: true, maxSockets: 1 }),
});

let sequence = 0;
const uniqueRole = () => `${ROLE} (seq ${process.pid}-${++sequence})`;

interface Percentiles {
  runs: number;
  avgMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  minMs: number;
}

function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return { runs: sorted.length, avgMs: sorted.reduce((a, b) => a + b, 0) / sorted.length, p50Ms: at(0.5), p90Ms: at(0.9), p99Ms: at(0.99), minMs: sorted[0] };
}

/** One request at a time, alternating between the targets, unique inputs; sub-millisecond timings. */
async function sequential(targets: Target[], runs: number, warmup: number): Promise<Map<string, number[]>> {
  const times = new Map(targets.map((t) => [t.name, [] as number[]]));
  for (let i = 0; i < warmup + runs; i++) {
    for (const t of targets) {
      const answer = await post(t.agent, t.url, t.headers, runBody(uniqueRole()));
      if (answer.status !== 200) throw new Error(`${t.name}: sequential run answered HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
      if (i >= warmup) times.get(t.name)!.push(answer.ms);
    }
  }
  return times;
}

// ---------------------------------------------------------------- set-up and verification

async function signUp(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ companyName: 'Bench Intent Corp', email: `bench-intent-${Date.now()}@example.com`, password: 'bench-password-123' }),
  });
  const body = (await res.json()) as { data?: { apiKey?: string } };
  if (res.status !== 201 || !body.data?.apiKey) throw new Error(`signup failed: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body.data.apiKey;
}

interface RunAnswer {
  success?: boolean;
  data?: { output?: unknown; session_id?: string; message_id?: string };
  metadata?: { intent?: string; domain?: string; cached?: boolean; tokens_used?: number; model_used?: string };
}

async function verifyLiya(t: Target, body: string, expectCached: boolean): Promise<RunAnswer> {
  const answer = await post(t.agent, t.url, t.headers, body);
  if (answer.status !== 200) throw new Error(`liya: POST ${ROUTE} answered HTTP ${answer.status}: ${answer.text.slice(0, 500)}`);
  const parsed = JSON.parse(answer.text) as RunAnswer;
  if (parsed.success !== true || !parsed.data?.session_id || !parsed.data.message_id) throw new Error(`liya: unexpected body ${answer.text.slice(0, 500)}`);
  const issues = validateWithSchema(INTENT.outputSchema, parsed.data.output);
  if (issues.length) throw new Error(`liya: the output does not fit career-path's output schema: ${JSON.stringify(issues.slice(0, 5))}`);
  if (parsed.metadata?.intent !== 'career-path' || parsed.metadata.domain !== 'hiring') throw new Error(`liya: unexpected metadata ${JSON.stringify(parsed.metadata)}`);
  if (parsed.metadata.cached !== expectCached) throw new Error(`liya: metadata.cached is ${parsed.metadata.cached}, expected ${expectCached}`);
  if (!expectCached && !(Number(parsed.metadata.tokens_used) > 0)) throw new Error('liya: an uncached run reported no tokens');
  return parsed;
}

async function verifyBaseline(t: Target): Promise<void> {
  const answer = await post(t.agent, t.url, t.headers, runBody(uniqueRole()));
  if (answer.status !== 200) throw new Error(`baseline: POST ${ROUTE} answered HTTP ${answer.status}: ${answer.text.slice(0, 500)}`);
  const parsed = JSON.parse(answer.text) as { data?: { output?: unknown } };
  const issues = validateWithSchema(INTENT.outputSchema, parsed.data?.output);
  if (issues.length) throw new Error(`baseline: the output does not fit the schema: ${JSON.stringify(issues.slice(0, 5))}`);
}

async function storedCounts(client: pg.Client, tenantId: string) {
  const count = async (sql: string) => Number((await client.query<{ n: string }>(sql, [tenantId])).rows[0].n);
  const byStatus = await client.query<{ status: string; n: string }>('select status, count(*)::text as n from usage_events where tenant_id = $1 group by status order by status', [tenantId]);
  return {
    usageEvents: await count('select count(*)::text as n from usage_events where tenant_id = $1'),
    usageEventsByStatus: Object.fromEntries(byStatus.rows.map((r) => [r.status, Number(r.n)])),
    sessions: await count('select count(*)::text as n from sessions where tenant_id = $1'),
    sessionMessages: await count('select count(*)::text as n from session_messages where tenant_id = $1'),
    sessionMessagesByTurnTotals: await count('select coalesce(sum(message_count), 0)::text as n from sessions where tenant_id = $1'),
  };
}

// ---------------------------------------------------------------- the benchmark

/** The SDK called directly; the same with Liya's guarantees over plain pg (see intent-baseline-server.ts); Liya. */
type Server = 'baseline' | 'stored' | 'liya';

interface Phase {
  name: string;
  server: Server;
  connections: number;
  cached: boolean;
  figures: LoadFigures;
  warmup: LoadFigures;
  /** Chat completions the fake provider received during the phase (warm-up included). */
  modelCalls: number;
  /** A diagnostic row (not the default database settings), left out of the comparisons and targets. */
  diagnostic?: string;
}

export async function runIntentRunBench(adminUrl: string, cleanup: Cleanup, settings: IntentRunSettings) {
  const serverSource = await sourceHash();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);

  console.log('starting the fake model provider (worker thread, 0 ms latency) ...');
  const fake = await startFakeLlmThread();
  cleanup.add('fake provider', () => fake.close());

  console.log('starting Liya (WORKER=0, LOG_LEVEL=silent) ...');
  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    WORKER: '0',
    DB_POOL_MAX: String(settings.poolMax),
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: PROVIDER_KEY,
  });
  const liya = await startServer({ config, databaseUrl });
  cleanup.add('liya server', () => liya.close());
  const apiKey = await signUp(liya.url);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());
  const tenantId = await tenantIdOf(db, apiKey);

  // Verification: an uncached run (captures the provider request), then the same input again (cached, no model call).
  const liyaTarget = target('liya', liya.url, { authorization: `Bearer ${apiKey}` });
  const verifyRole = `${ROLE} (verification)`;
  const cachedBody = runBody(verifyRole);
  await fake.reset();
  await verifyLiya(liyaTarget, cachedBody, false);
  const { chatRequests: firstCalls, firstChat } = await fake.stats();
  if (firstCalls !== 1 || !firstChat) throw new Error(`liya: expected 1 model call for one run, the provider saw ${firstCalls}`);
  await verifyLiya(liyaTarget, cachedBody, true);
  if ((await fake.stats()).chatRequests !== 1) throw new Error('liya: a cached run called the model');
  const captured = firstChat.body as ChatCompletionCreateParamsNonStreaming;
  const promptChars = captured.messages.map((m) => (typeof m.content === 'string' ? m.content.length : 0));

  // Both baselines replay the chat request Liya sent, with Liya's client settings.
  const replay = { baseURL: fake.url, apiKey: PROVIDER_KEY, captured, capturedRole: verifyRole, maxRetries: config.LLM_MAX_RETRIES, timeoutMs: config.LLM_TIMEOUT_MS };
  const baseline = await startIntentBaselineServer(replay);
  cleanup.add('baseline server', () => baseline.close());
  const baselineTarget = target('baseline', baseline.url, {});
  await verifyBaseline(baselineTarget);
  const keyHash = (await db.query<{ key_hash: string }>('select key_hash from api_keys where tenant_id = $1', [tenantId])).rows[0].key_hash;
  await createFlatRunTables(databaseUrl, keyHash);
  const storedBaseline = await startIntentBaselineServer({ ...replay, store: { databaseUrl, poolMax: settings.poolMax } });
  cleanup.add('stored baseline server', () => storedBaseline.close());
  const storedTarget = target('stored', storedBaseline.url, { authorization: `Bearer ${apiKey}` });
  await verifyBaseline(storedTarget);
  if (Number((await db.query<{ n: string }>('select count(*)::text as n from flat_run_turns')).rows[0].n) !== 1) throw new Error('stored baseline: its run was not stored');
  // Runs Liya answered 200, and the most that may have run unseen (in flight when a load run stopped).
  const tally = { liyaUncached: 1, liyaCached: 1, uncachedInFlight: 0, cachedInFlight: 0 };
  console.log(
    `verified: all three answer 200 with an output that fits career-path's schema (the stored baseline's run stored); liya: 1 model call per run, the repeated input served from the cache` +
      ` (request replayed by the baseline: model ${captured.model}, system prompt ${promptChars[0]} chars, user prompt ${promptChars[1]} chars)`,
  );

  const loadAtStart = os.loadavg();
  const phases: Phase[] = [];
  const targets = { baseline: baselineTarget, stored: storedTarget, liya: liyaTarget };
  const run = async (name: string, server: Server, connections: number, cached: boolean, diagnostic?: string) => {
    const t = targets[server];
    const seconds = cached ? { warmupSeconds: 1, durationSeconds: settings.cachedSeconds } : { warmupSeconds: settings.warmupSeconds, durationSeconds: settings.durationSeconds };
    console.log(`${name.padEnd(22)} ${connections} connection(s): warm-up ${seconds.warmupSeconds}s, then ${seconds.durationSeconds}s measured ...`);
    await fake.reset();
    const result = await measure({
      url: t.url,
      headers: t.headers,
      method: 'POST',
      body: runBody(cached ? verifyRole : UNIQUE_ROLE),
      idReplacement: !cached,
      connections,
      ...seconds,
    });
    checkRun(name, result.warmup);
    checkRun(name, result.figures);
    await sleep(300); // requests in flight when the load generator stopped
    const modelCalls = (await fake.stats()).chatRequests;
    await fake.reset();
    const ok = result.warmup.totalRequests + result.figures.totalRequests;
    // Every run must reach the model (unique inputs: never the cache), and a cached run never.
    if (cached ? modelCalls !== 0 : modelCalls < ok) throw new Error(`${name}: ${ok} runs answered but the provider saw ${modelCalls} model calls`);
    if (server === 'liya' && !diagnostic) {
      // Up to one request per connection in flight when the warm-up run and the measured run stop.
      if (cached) {
        tally.liyaCached += ok;
        tally.cachedInFlight += 2 * connections;
      } else {
        tally.liyaUncached += ok;
        tally.uncachedInFlight += 2 * connections;
      }
    }
    phases.push({ name, server, connections, cached, figures: result.figures, warmup: result.warmup, modelCalls, ...(diagnostic ? { diagnostic } : {}) });
  };

  const c = settings.connections;
  await run('baseline (SDK direct)', 'baseline', c, false);
  await run('baseline + pg, same guarantees', 'stored', c, false);
  await run('liya POST /v1/run', 'liya', c, false);
  await run('baseline (SDK direct)', 'baseline', 1, false);
  await run('baseline + pg, same guarantees', 'stored', 1, false);
  await run('liya POST /v1/run', 'liya', 1, false);
  await run('liya, cached input', 'liya', c, true);

  // Sub-millisecond added latency: one request at a time, alternating between the three servers.
  console.log(`sequential pass: ${settings.sequentialRuns} runs per server, alternating, unique inputs ...`);
  const seqTimes = await sequential([baselineTarget, storedTarget, liyaTarget], settings.sequentialRuns, 50);
  tally.liyaUncached += settings.sequentialRuns + 50;
  const seq = { baseline: percentiles(seqTimes.get('baseline')!), stored: percentiles(seqTimes.get('stored')!), liya: percentiles(seqTimes.get('liya')!) };

  // What was stored: one session, two session messages and one usage event per run.
  await sleep(500);
  const stored = await storedCounts(db, tenantId);
  const runsAnswered = tally.liyaUncached + tally.liyaCached;
  // Requests in flight when a load run stops are not counted by the load generator, but the server completes them.
  const within = (value: number, expected: number, slack: number) => value >= expected && value <= expected + slack;
  const inFlight = tally.uncachedInFlight + tally.cachedInFlight;
  const storage = {
    runsAnswered200: runsAnswered,
    uncachedRunsAnswered200: tally.liyaUncached,
    cachedRunsAnswered200: tally.liyaCached,
    allowanceForRequestsInFlightAtStop: { uncached: tally.uncachedInFlight, cached: tally.cachedInFlight },
    ...stored,
    checks: {
      usageEventsOk: within(stored.usageEventsByStatus.ok ?? 0, tally.liyaUncached, tally.uncachedInFlight),
      usageEventsCached: within(stored.usageEventsByStatus.cached ?? 0, tally.liyaCached, tally.cachedInFlight),
      onlyOkAndCachedEvents: Object.keys(stored.usageEventsByStatus).every((status) => status === 'ok' || status === 'cached'),
      sessions: within(stored.sessions, runsAnswered, inFlight),
      sessionMessages: within(stored.sessionMessages, 2 * runsAnswered, 2 * inFlight) && stored.sessionMessages === stored.sessionMessagesByTurnTotals,
    },
  };
  const storageOk = Object.values(storage.checks).every(Boolean);

  // Where a run's time goes: sequential passes, instrumented in-process (SQL statements and model
  // calls timed), then one under the CPU profiler (kept apart so its overhead stays out of the timings).
  const instrumentedPass = async (label: string, profile: boolean): Promise<Breakdown> => {
    console.log(`instrumented pass (${label}): ${settings.sequentialRuns} runs per server${profile ? ', then a CPU-profiled liya pass' : ''} ...`);
    await sequential([baselineTarget, liyaTarget], 20, 0);
    const probe = instrument();
    let timings: Omit<Breakdown, 'cpu'>;
    try {
      probe.clear();
      const liyaTimes = (await sequential([liyaTarget], settings.sequentialRuns, 0)).get('liya')!;
      const liyaSql = probe.sql();
      const liyaModel = probe.model();
      probe.clear();
      const baseTimes = (await sequential([baselineTarget], settings.sequentialRuns, 0)).get('baseline')!;
      timings = breakdownOf(label, settings.sequentialRuns, liyaTimes, liyaSql, liyaModel, baseTimes, probe.model());
    } finally {
      probe.restore();
    }
    if (!profile) return { ...timings, cpu: null };
    const profiled = async (t: Target) => {
      const profiler = await startCpuProfile();
      await sequential([t], settings.sequentialRuns, 0);
      return profiler.stop();
    };
    const cpu = await profiled(liyaTarget);
    const baseCpu = await profiled(baselineTarget);
    const perRun = (b: CpuBucket) => ({ name: b.name, usPerRun: (1000 * b.ms) / settings.sequentialRuns });
    const baseOf = new Map(baseCpu.packages.map((b) => [b.name, b.ms]));
    return {
      ...timings,
      cpu: {
        busyUsPerRun: (1000 * cpu.busyMs) / settings.sequentialRuns,
        baselineBusyUsPerRun: (1000 * baseCpu.busyMs) / settings.sequentialRuns,
        packages: cpu.packages.slice(0, 20).map((b) => ({ ...perRun(b), baselineUsPerRun: (1000 * (baseOf.get(b.name) ?? 0)) / settings.sequentialRuns })),
        functions: cpu.functions.slice(0, 25).map(perRun),
      },
    };
  };
  const breakdowns = [await instrumentedPass('default settings', true)];

  // Diagnostic: the same with commits not waiting for the WAL flush (fsync) of the bench's own
  // PostgreSQL, to separate the disk's cost from Liya's. Never counted in the targets.
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  cleanup.add('bench admin client', () => admin.end());
  const setSynchronousCommit = async (off: boolean) => {
    await admin.query(off ? 'alter system set synchronous_commit = off' : 'alter system reset synchronous_commit');
    await admin.query('select pg_reload_conf()');
    await sleep(300);
  };
  await setSynchronousCommit(true);
  try {
    await run('liya, sync commit off', 'liya', c, false, 'synchronous_commit=off');
    breakdowns.push(await instrumentedPass('synchronous_commit=off', false));
  } finally {
    await setSynchronousCommit(false);
  }

  // ------------------------------------------------------------ report
  const find = (server: Server, connections: number, cached = false) =>
    phases.find((p) => p.server === server && p.connections === connections && p.cached === cached && !p.diagnostic)!;
  const added = (connections: number, server: Server = 'liya', over: Server = 'baseline') => {
    const b = find(over, connections).figures;
    const l = find(server, connections).figures;
    return { connections, p50Ms: l.latencyP50Ms - b.latencyP50Ms, p99Ms: l.latencyP99Ms - b.latencyP99Ms, runsPerSecRatio: l.reqPerSec / b.reqPerSec };
  };
  const addedC = added(c);
  const added1 = added(1);
  const addedSeqOf = (a: Percentiles, b: Percentiles) => ({ p50Ms: a.p50Ms - b.p50Ms, p90Ms: a.p90Ms - b.p90Ms, p99Ms: a.p99Ms - b.p99Ms, avgMs: a.avgMs - b.avgMs });
  const addedSeq = addedSeqOf(seq.liya, seq.baseline);
  // The floor of the same guarantees (plain pg over flat tables) over the SDK call, and Liya over that floor.
  const storedSeq = addedSeqOf(seq.stored, seq.baseline);
  const overStoredSeq = addedSeqOf(seq.liya, seq.stored);
  const storedC = added(c, 'stored');
  const overStoredC = added(c, 'liya', 'stored');
  const liyaRunsPerSec = find('liya', c).figures.reqPerSec;
  const latencyPass = addedSeq.p50Ms < TARGETS.maxAddedP50Ms;
  const throughputPass = liyaRunsPerSec >= TARGETS.minRunsPerSec;
  const note =
    `the load generator (1 autocannon worker thread), the fake provider (its own worker thread), PostgreSQL and the servers under test all share this machine's ${os.cpus().length} cores; ` +
    'figures compare the two servers under the same conditions, they are not capacity';

  console.log('');
  console.log(`server source (server/ + db/) sha256 ${serverSource}`);
  console.log(`POST ${ROUTE} hiring/career-path, fake provider at 0 ms; ${settings.durationSeconds}s measured after ${settings.warmupSeconds}s warm-up (cached row: ${settings.cachedSeconds}s after 1s); pool ${settings.poolMax}`);
  console.log(
    table(
      ['server', 'conns', 'runs/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'runs', 'non-2xx', 'model calls', 'server CPU us/run'],
      phases.map((p) => [
        p.name,
        p.connections,
        fmt(p.figures.reqPerSec),
        p.figures.latencyP50Ms,
        p.figures.latencyP90Ms,
        p.figures.latencyP99Ms,
        p.figures.latencyMaxMs,
        p.figures.totalRequests,
        p.figures.non2xx,
        p.modelCalls,
        fmt(p.figures.serverCpuUsPerRequest, 0),
      ]),
    ),
  );
  console.log('(latencies from autocannon have 1 ms resolution; "model calls" counts the warm-up too; CPU is the main thread, where both servers run;');
  console.log(' "sync commit off" is a diagnostic row: the bench PostgreSQL with synchronous_commit=off, not counted in the targets)');
  console.log('');
  const pct = (v: number | null) => (v === null ? 'n/a' : fmt(v, 0));
  console.log(
    table(
      ['CPU per run (measured runs)', 'conns', 'main thread us', 'whole process us', 'rest of machine us', 'cores busy %', 'steal %'],
      phases.map((p) => [
        p.name,
        p.connections,
        fmt(p.figures.serverCpuUsPerRequest, 0),
        fmt(p.figures.processCpuUsPerRequest, 0),
        p.figures.otherCpuUsPerRequest === null ? 'n/a' : fmt(p.figures.otherCpuUsPerRequest, 0),
        pct(p.figures.machineCpuBusyPct),
        pct(p.figures.machineCpuStealPct),
      ]),
    ),
  );
  console.log('(whole process: the servers, the load generator thread and the fake provider thread; rest of machine: PostgreSQL plus anything else running)');
  console.log('');
  console.log(
    table(
      ['added latency (liya - baseline)', 'p50 ms', 'p90 ms', 'p99 ms', 'avg ms', 'runs/s liya/baseline'],
      [
        [`${c} connections (autocannon)`, addedC.p50Ms, '', addedC.p99Ms, '', fmt(addedC.runsPerSecRatio, 2)],
        ['1 connection (autocannon)', added1.p50Ms, '', added1.p99Ms, '', fmt(added1.runsPerSecRatio, 2)],
        [`1 at a time, ${settings.sequentialRuns} runs each (us timer)`, fmt(addedSeq.p50Ms, 2), fmt(addedSeq.p90Ms, 2), fmt(addedSeq.p99Ms, 2), fmt(addedSeq.avgMs, 2), ''],
        [`same guarantees over plain pg - SDK direct, ${c} conns`, storedC.p50Ms, '', storedC.p99Ms, '', fmt(storedC.runsPerSecRatio, 2)],
        ['same guarantees over plain pg - SDK direct, 1 at a time', fmt(storedSeq.p50Ms, 2), fmt(storedSeq.p90Ms, 2), fmt(storedSeq.p99Ms, 2), fmt(storedSeq.avgMs, 2), ''],
        [`liya - same guarantees over plain pg, ${c} conns`, overStoredC.p50Ms, '', overStoredC.p99Ms, '', fmt(overStoredC.runsPerSecRatio, 2)],
        ['liya - same guarantees over plain pg, 1 at a time', fmt(overStoredSeq.p50Ms, 2), fmt(overStoredSeq.p90Ms, 2), fmt(overStoredSeq.p99Ms, 2), fmt(overStoredSeq.avgMs, 2), ''],
      ],
    ),
  );
  console.log(
    `sequential pass: baseline p50 ${fmt(seq.baseline.p50Ms, 2)} / p99 ${fmt(seq.baseline.p99Ms, 2)} ms, same guarantees over plain pg p50 ${fmt(seq.stored.p50Ms, 2)} / p99 ${fmt(seq.stored.p99Ms, 2)} ms,` +
      ` liya p50 ${fmt(seq.liya.p50Ms, 2)} / p99 ${fmt(seq.liya.p99Ms, 2)} ms (client in the servers' thread, one request at a time)`,
  );
  console.log('');
  console.log(`target: added p50 (1 at a time) under ${TARGETS.maxAddedP50Ms} ms: ${fmt(addedSeq.p50Ms, 2)} ms  ${latencyPass ? 'PASS' : 'MISS'}  (1-connection autocannon: ${added1.p50Ms} ms; ${c} connections: ${addedC.p50Ms} ms)`);
  console.log(`target: at least ${TARGETS.minRunsPerSec} runs/s (liya, ${c} connections, unique inputs): ${fmt(liyaRunsPerSec)}  ${throughputPass ? 'PASS' : 'MISS'}`);
  console.log('');
  console.log(
    `stored for the tenant (${runsAnswered} runs answered 200: ${tally.liyaUncached} uncached, ${tally.liyaCached} cached; plus up to ${tally.uncachedInFlight} + ${tally.cachedInFlight} in flight when a load run stopped):`,
  );
  console.log(
    `  usage_events ${stored.usageEvents} ${JSON.stringify(stored.usageEventsByStatus)}, sessions ${stored.sessions}, session_messages ${stored.sessionMessages}` +
      ` (sessions.message_count total ${stored.sessionMessagesByTurnTotals})  ${storageOk ? 'OK' : `MISMATCH ${JSON.stringify(storage.checks)}`}`,
  );
  console.log('');
  for (const b of breakdowns) printBreakdown(b);
  const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  console.log('');
  console.log(`note: ${note}; load average (1/5/15 min) at start ${loadText(loadAtStart)}, at end ${loadText(os.loadavg())}`);

  const results = {
    benchmark: 'intent-run',
    route: `POST ${ROUTE} (hiring/career-path)`,
    date: new Date().toISOString(),
    environment: { database: benchDatabase(), serverSourceHash: serverSource, node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverageAtStart: loadAtStart, loadAverageAtEnd: os.loadavg(), note },
    settings: { ...settings, providerLatencyMs: 0, loadGeneratorWorkers: 1, fakeProvider: 'worker thread', order: phases.map((p) => `${p.server}@${p.connections}${p.cached ? ' cached' : ''}`) },
    verification: {
      outputFitsSchema: true,
      modelCallsPerUncachedRun: 1,
      cachedRunCallsModel: false,
      replayedRequest: { model: captured.model, systemPromptChars: promptChars[0], userPromptChars: promptChars[1] },
      storage,
      storageOk,
    },
    phases: phases.map(({ name, server, connections, cached, figures, modelCalls, diagnostic }) => ({ name, server, connections, cached, diagnostic: diagnostic ?? null, modelCalls, ...figures })),
    sequential: seq,
    added: { [`connections${c}`]: addedC, connections1: added1, sequential: addedSeq },
    // The floor: the same guarantees over plain pg and flat tables, against the SDK call; and Liya against that floor.
    sameGuaranteesOverSdk: { [`connections${c}`]: storedC, connections1: added(1, 'stored'), sequential: storedSeq },
    liyaOverSameGuarantees: { [`connections${c}`]: overStoredC, connections1: added(1, 'liya', 'stored'), sequential: overStoredSeq },
    targets: {
      addedP50Ms: { max: TARGETS.maxAddedP50Ms, measured: addedSeq.p50Ms, basis: 'sequential pass (1 request at a time)', pass: latencyPass },
      runsPerSec: { min: TARGETS.minRunsPerSec, measured: liyaRunsPerSec, basis: `liya, ${c} connections, unique inputs`, pass: throughputPass },
    },
    breakdowns,
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  if (!storageOk) throw new Error(`intent-run: stored rows do not match the runs answered: ${JSON.stringify(storage)}`);
  return results;
}

// ---------------------------------------------------------------- the breakdown

interface Breakdown {
  label: string;
  runs: number;
  liya: { wallMsPerRun: number; statementsPerRun: number; sqlMsPerRun: number; modelCallsPerRun: number; modelCallMsPerRun: number; otherMsPerRun: number };
  baseline: { wallMsPerRun: number; modelCallMsPerRun: number; otherMsPerRun: number };
  statements: { perRun: number; avgMs: number; msPerRun: number; text: string }[];
  cpu: {
    busyUsPerRun: number;
    baselineBusyUsPerRun: number;
    packages: { name: string; usPerRun: number; baselineUsPerRun: number }[];
    functions: { name: string; usPerRun: number }[];
  } | null;
}

function breakdownOf(
  label: string,
  runs: number,
  liyaTimes: number[],
  liyaSql: { count: number; totalMs: number; byText: StatementStat[] },
  liyaModel: { count: number; totalMs: number },
  baseTimes: number[],
  baseModel: { count: number; totalMs: number },
): Omit<Breakdown, 'cpu'> {
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const liyaWall = avg(liyaTimes);
  const baseWall = avg(baseTimes);
  const sqlMs = liyaSql.totalMs / runs;
  const modelMs = liyaModel.totalMs / runs;
  const baseModelMs = baseModel.totalMs / runs;
  return {
    label,
    runs,
    liya: {
      wallMsPerRun: liyaWall,
      statementsPerRun: liyaSql.count / runs,
      sqlMsPerRun: sqlMs,
      modelCallsPerRun: liyaModel.count / runs,
      modelCallMsPerRun: modelMs,
      /** Wall time minus SQL round trips minus the model call: fastify, tRPC, zod, ajv, guardrails, ORM work, JSON, the client. */
      otherMsPerRun: liyaWall - sqlMs - modelMs,
    },
    baseline: { wallMsPerRun: baseWall, modelCallMsPerRun: baseModelMs, otherMsPerRun: baseWall - baseModelMs },
    statements: liyaSql.byText.map((s) => ({ perRun: s.count / runs, avgMs: s.totalMs / s.count, msPerRun: s.totalMs / runs, text: s.text })),
  };
}

function printBreakdown(b: Breakdown) {
  console.log('');
  console.log(`where a run's time goes, ${b.label} (${b.runs} sequential runs per server, instrumented in-process; averages per run):`);
  console.log(
    table(
      ['', 'wall ms', 'SQL statements', 'SQL ms', 'model calls', 'model call ms', 'rest ms'],
      [
        ['baseline', fmt(b.baseline.wallMsPerRun, 2), '0', '0', '1', fmt(b.baseline.modelCallMsPerRun, 2), fmt(b.baseline.otherMsPerRun, 2)],
        ['liya', fmt(b.liya.wallMsPerRun, 2), fmt(b.liya.statementsPerRun, 1), fmt(b.liya.sqlMsPerRun, 2), fmt(b.liya.modelCallsPerRun, 2), fmt(b.liya.modelCallMsPerRun, 2), fmt(b.liya.otherMsPerRun, 2)],
        [
          'liya - baseline',
          fmt(b.liya.wallMsPerRun - b.baseline.wallMsPerRun, 2),
          fmt(b.liya.statementsPerRun, 1),
          fmt(b.liya.sqlMsPerRun, 2),
          '',
          fmt(b.liya.modelCallMsPerRun - b.baseline.modelCallMsPerRun, 2),
          fmt(b.liya.otherMsPerRun - b.baseline.otherMsPerRun, 2),
        ],
      ],
    ),
  );
  console.log('("rest": HTTP, routing, validation, guardrails, ORM unit of work, JSON and the in-process client; SQL ms is each statement\'s round trip as the pg client sees it)');
  console.log('');
  console.log(
    table(
      ['statement (liya, per run)', 'per run', 'avg ms', 'ms/run'],
      b.statements.map((s) => [s.text.length > 110 ? `${s.text.slice(0, 107)}...` : s.text, fmt(s.perRun, 2), fmt(s.avgMs, 3), fmt(s.msPerRun, 3)]),
    ),
  );
  if (!b.cpu) return;
  console.log('');
  console.log(
    `main thread under the CPU profiler (${b.runs} more sequential runs each): liya ${fmt(b.cpu.busyUsPerRun, 0)} us busy per run, baseline ${fmt(b.cpu.baselineBusyUsPerRun, 0)}` +
      ' (self time; natives and Node internals counted for the package calling them; liya:test/bench is the in-process client):',
  );
  console.log(table(['package / folder', 'liya us/run', 'baseline us/run'], b.cpu.packages.slice(0, 16).map((p) => [p.name, fmt(p.usPerRun), fmt(p.baselineUsPerRun)])));
  console.log('');
  console.log(table(['function (self time, liya)', 'us/run'], b.cpu.functions.slice(0, 20).map((f) => [f.name.slice(0, 110), fmt(f.usPerRun)])));
}
