// Agent runs (POST /v1/agents/{key}/run) through the real server against the same tool loop written
// directly on the openai SDK behind a bare node:http server (agent-baseline-server.ts), both against
// the fake provider at 0 ms latency in a worker thread of its own, scripted so that every run is
// exactly two model calls: a current_time tool call, then a text answer. Driven by the same load
// generator; every request's message is unique. The figure wanted is the platform's time per agent
// step: (liya - baseline) / 2 per run, reported as PASS/MISS against the target, never asserted.
// Before the first phase the tenant gets a history (sequential runs), and the planner statistics are
// refreshed (ANALYZE) before every phase and pass. Phases: autocannon at 1 connection (latency) and
// at BENCH_AGENT_CONNECTIONS (throughput), a sequential alternating pass with a microsecond timer
// (the target's basis), an instrumented pass (SQL statements and model calls timed per run), a
// CPU-profiled pass, and a diagnostic sequential pass with synchronous_commit=off. Finally the
// stored rows are checked: every run completed with steps = 2, three run_steps rows each (llm, tool,
// llm), two usage events, one session, two messages, one counted request.
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
import { loadConfig } from '../../server/config.js';
import { FINAL_ANSWER_PREFIX, startAgentBaselineServer, startAgentFakeLlmThread } from './agent-baseline-server.js';
import { checkRun } from './collections-list.bench.js';
import { type CpuBucket, instrument, startCpuProfile, type StatementStat } from './instrument.js';
import { benchDatabase, callJson, signUpBenchTenant, type Cleanup, fmt, type LoadFigures, measure, table, withDatabase, sourceHash, tenantIdOf } from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'agents.json');
const DATABASE = 'liya_bench_agents';
const PROVIDER_KEY = 'sk-bench-platform';
const AGENT_KEY = 'bench-clock';
const ROUTE = `/v1/agents/${AGENT_KEY}/run`;
const MESSAGE = 'What time is it right now? Please check the clock before answering';
// autocannon replaces [<id>] with a new 27-character id on every request.
const UNIQUE_MESSAGE = `${MESSAGE} (run [<id>])`;
/** Model calls (= steps) per run. */
const STEPS = 2;
/** run_steps rows per run: llm, tool, llm. */
const STEP_ROWS = ['llm', 'tool', 'llm'];
const TARGETS = { maxAddedMsPerStep: 3 };
/** Sequential Liya runs before any measurement (then ANALYZE), so the tenant has a history. */
const SEED_RUNS = 200;

export interface AgentsSettings {
  /** Connections of the throughput runs (the latency runs use 1). */
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Runs per server in the sequential pass, in the instrumented pass and in the CPU-profiled pass. */
  sequentialRuns: number;
  poolMax: number;
}

/** A short hash of the server's source (server/ and db/), to tell which code a result measured. */
const runBody = (message: string) => JSON.stringify({ input: { message } });
let sequence = 0;
const uniqueMessage = () => `${MESSAGE} (seq ${process.pid}-${++sequence})`;

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
  name: 'liya' | 'baseline';
  url: string;
  headers: Record<string, string>;
  /** Replaced at the start of each sequential pass: a socket left idle longer than the server's keep-alive timeout would be reset on reuse. */
  agent: http.Agent;
}

const target = (name: Target['name'], base: string, headers: Record<string, string>): Target => ({
  name,
  url: `${base}${ROUTE}`,
  headers: { 'content-type': 'application/json', ...headers },
  agent: new http.Agent({ keepAlive: true, maxSockets: 1 }),
});

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

interface RunData {
  run_id?: string;
  session_id?: string;
  status?: string;
  output?: string;
  steps?: number;
  total_cost?: number;
  total_latency_ms?: number;
}

/** One request at a time, alternating between the targets, unique messages; sub-millisecond timings. */
async function sequential(targets: Target[], runs: number, warmup: number): Promise<Map<string, number[]>> {
  const times = new Map(targets.map((t) => [t.name, [] as number[]]));
  for (const t of targets) {
    t.agent.destroy();
    t.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  }
  for (let i = 0; i < warmup + runs; i++) {
    for (const t of targets) {
      const answer = await post(t.agent, t.url, t.headers, runBody(uniqueMessage()));
      if (answer.status !== 200) throw new Error(`${t.name}: sequential run answered HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
      if (i >= warmup) times.get(t.name)!.push(answer.ms);
    }
  }
  return times;
}

// ---------------------------------------------------------------- set-up and verification

const signUp = (baseUrl: string) => signUpBenchTenant(baseUrl, 'Bench Agents Corp');

async function createAgent(baseUrl: string, apiKey: string): Promise<void> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const created = await callJson(baseUrl, 'POST', '/v1/agents', auth, {
    agent_key: AGENT_KEY,
    name: 'Bench Clock',
    goal: 'Tell people the current time',
    tools_config: { enabled_platform_tools: ['current_time'] },
  });
  if (created.status !== 201) throw new Error(`creating the agent failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  const deployed = await callJson(baseUrl, 'POST', `/v1/agents/${AGENT_KEY}/deploy`, auth);
  if (deployed.status !== 200) throw new Error(`deploying the agent failed: HTTP ${deployed.status} ${JSON.stringify(deployed.body)}`);
}

async function runOnce(t: Target): Promise<RunData> {
  const answer = await post(t.agent, t.url, t.headers, runBody(uniqueMessage()));
  if (answer.status !== 200) throw new Error(`${t.name}: POST ${ROUTE} answered HTTP ${answer.status}: ${answer.text.slice(0, 500)}`);
  const parsed = JSON.parse(answer.text) as { success?: boolean; data?: RunData };
  const data = parsed.data;
  if (parsed.success !== true || !data) throw new Error(`${t.name}: unexpected body ${answer.text.slice(0, 500)}`);
  if (data.status !== 'completed' || data.steps !== STEPS || !data.output?.startsWith(FINAL_ANSWER_PREFIX)) {
    throw new Error(`${t.name}: expected a completed run of ${STEPS} steps answering "${FINAL_ANSWER_PREFIX}...", got ${answer.text.slice(0, 500)}`);
  }
  return data;
}

/** JSON with object keys sorted, so two bodies compare by content whatever their key order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );

/** The request as sent, messages reduced to their roles and tool call names, for comparing Liya's with the baseline's. */
const shapeOf = (body: ChatCompletionCreateParamsNonStreaming) =>
  canonical({
    ...body,
    messages: body.messages.map((m) => [m.role, 'tool_calls' in m && m.tool_calls ? m.tool_calls.map((c) => (c.type === 'function' ? c.function.name : c.type)).join() : '']),
  });

async function storedCounts(client: pg.Client, tenantId: string) {
  const rows = async <T extends pg.QueryResultRow>(sql: string) => (await client.query<T>(sql, [tenantId])).rows;
  const count = async (sql: string) => Number((await rows<{ n: string }>(sql))[0].n);
  const byStatus = await rows<{ status: string; steps: number; n: string }>(
    'select status, steps, count(*)::text as n from agent_runs where tenant_id = $1 group by status, steps order by status, steps',
  );
  // Each run's step rows as a list of types in index order, then how many runs have each list.
  const stepShapes = await rows<{ shape: string; n: string }>(
    `select coalesce(s.shape, '(none)') as shape, count(*)::text as n
       from agent_runs r
       left join (select run_id, string_agg(type, ',' order by index) as shape from run_steps where tenant_id = $1 and run_kind = 'agent' group by run_id) s on s.run_id = r.id
      where r.tenant_id = $1 group by 1 order by 1`,
  );
  return {
    runs: await count('select count(*)::text as n from agent_runs where tenant_id = $1'),
    runsByStatusAndSteps: byStatus.map((r) => ({ status: r.status, steps: r.steps, runs: Number(r.n) })),
    runStepRows: await count(`select count(*)::text as n from run_steps where tenant_id = $1 and run_kind = 'agent'`),
    runStepShapes: Object.fromEntries(stepShapes.map((r) => [r.shape, Number(r.n)])),
    stepErrors: await count(`select count(*)::text as n from run_steps where tenant_id = $1 and status <> 'ok'`),
    usageEvents: await count(`select count(*)::text as n from usage_events where tenant_id = $1 and kind = 'agent_run'`),
    usageEventsNotOk: await count(`select count(*)::text as n from usage_events where tenant_id = $1 and status <> 'ok'`),
    sessions: await count('select count(*)::text as n from agent_sessions where tenant_id = $1'),
    messages: await count('select count(*)::text as n from agent_messages where tenant_id = $1'),
    counterRequests: await count('select coalesce(sum(requests), 0)::text as n from usage_counters where tenant_id = $1'),
  };
}

// ---------------------------------------------------------------- the benchmark

interface Phase {
  name: string;
  server: 'baseline' | 'liya';
  connections: number;
  figures: LoadFigures;
  warmup: LoadFigures;
  /** Chat completions the fake provider received during the phase (warm-up included). */
  modelCalls: number;
}

interface Added {
  basis: string;
  perRun: { p50Ms: number; p90Ms: number; p99Ms: number; avgMs: number };
  perStep: { p50Ms: number; p90Ms: number; p99Ms: number; avgMs: number };
}

const addedOf = (basis: string, liya: { p50: number; p90: number; p99: number; avg: number }, base: { p50: number; p90: number; p99: number; avg: number }): Added => {
  const perRun = { p50Ms: liya.p50 - base.p50, p90Ms: liya.p90 - base.p90, p99Ms: liya.p99 - base.p99, avgMs: liya.avg - base.avg };
  return { basis, perRun, perStep: { p50Ms: perRun.p50Ms / STEPS, p90Ms: perRun.p90Ms / STEPS, p99Ms: perRun.p99Ms / STEPS, avgMs: perRun.avgMs / STEPS } };
};

export async function runAgentsBench(adminUrl: string, cleanup: Cleanup, settings: AgentsSettings) {
  const serverSource = await sourceHash();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);

  console.log('starting the fake model provider (worker thread, 0 ms latency, scripted: current_time call, then an answer) ...');
  const fake = await startAgentFakeLlmThread();
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
  await createAgent(liya.url, apiKey);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());
  const tenantId = await tenantIdOf(db, apiKey);

  // Verification: one Liya run (captures its two provider requests and checks its stored steps), then the baseline.
  const liyaTarget = target('liya', liya.url, { authorization: `Bearer ${apiKey}` });
  await fake.reset();
  const first = await runOnce(liyaTarget);
  const liyaStats = await fake.stats();
  if (liyaStats.chatRequests !== STEPS || liyaStats.toolResultRequests !== 1) {
    throw new Error(`liya: expected ${STEPS} model calls for one run (the second with the tool result), the provider saw ${liyaStats.chatRequests} (${liyaStats.toolResultRequests} with a tool result)`);
  }
  const captured = liyaStats.firstChats as [ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsNonStreaming];
  const { rows: firstSteps } = await db.query<{ type: string; name: string; status: string }>(
    `select type, name, status from run_steps where tenant_id = $1 and run_id = $2 order by index`,
    [tenantId, first.run_id],
  );
  if (firstSteps.map((s) => s.type).join() !== STEP_ROWS.join() || firstSteps.some((s) => s.status !== 'ok') || firstSteps[1]?.name !== 'current_time') {
    throw new Error(`liya: the run's stored steps are ${JSON.stringify(firstSteps)}, expected ${STEP_ROWS.join(', ')} (current_time) all ok`);
  }

  const baseline = await startAgentBaselineServer({ baseURL: fake.url, apiKey: PROVIDER_KEY, captured, maxRetries: config.LLM_MAX_RETRIES, timeoutMs: config.LLM_TIMEOUT_MS });
  cleanup.add('baseline server', () => baseline.close());
  const baselineTarget = target('baseline', baseline.url, {});
  await fake.reset();
  await runOnce(baselineTarget);
  const baseStats = await fake.stats();
  if (baseStats.chatRequests !== STEPS || baseStats.toolResultRequests !== 1) throw new Error(`baseline: expected ${STEPS} model calls for one run, the provider saw ${baseStats.chatRequests}`);
  const baseCaptured = baseStats.firstChats as ChatCompletionCreateParamsNonStreaming[];
  for (let i = 0; i < STEPS; i++) {
    const [l, b] = [shapeOf(captured[i]), shapeOf(baseCaptured[i])];
    if (l !== b) throw new Error(`the baseline's model call ${i + 1} differs from Liya's:\n  liya     ${l}\n  baseline ${b}`);
  }
  const systemChars = typeof captured[0].messages[0].content === 'string' ? captured[0].messages[0].content.length : 0;
  const tally = { liyaRuns: 1, inFlight: 0 };
  console.log(
    `verified: both answer 200, status completed, steps ${STEPS}, ${STEPS} model calls per run with the same request shape ` +
      `(model ${captured[0].model}, tools [${(captured[0].tools ?? []).map((t) => (t.type === 'function' ? t.function.name : t.type)).join(', ')}], ` +
      `system prompt ${systemChars} chars); liya stored ${STEP_ROWS.join(', ')} steps`,
  );

  // A history for the tenant before anything is measured, and fresh planner statistics before
  // every phase: plans then do not depend on when autovacuum happens to analyze the new tables
  // (with stale statistics the run-finish statement's plan reads every session of the tenant, so
  // its time grows with the runs made so far; see the notes printed with the results).
  const analyze = () => db.query('analyze');
  console.log(`seeding: ${SEED_RUNS} sequential liya runs, then ANALYZE ...`);
  await sequential([liyaTarget], SEED_RUNS, 0);
  tally.liyaRuns += SEED_RUNS;

  const loadAtStart = os.loadavg();
  const phases: Phase[] = [];
  const run = async (name: string, server: 'baseline' | 'liya', connections: number) => {
    const t = server === 'liya' ? liyaTarget : baselineTarget;
    console.log(`${name.padEnd(32)} ${connections} connection(s): warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
    await analyze();
    await fake.reset();
    const result = await measure({
      url: t.url,
      headers: t.headers,
      method: 'POST',
      body: runBody(UNIQUE_MESSAGE),
      idReplacement: true,
      connections,
      warmupSeconds: settings.warmupSeconds,
      durationSeconds: settings.durationSeconds,
    });
    checkRun(name, result.warmup);
    checkRun(name, result.figures);
    await sleep(300); // requests in flight when the load generator stopped
    const modelCalls = (await fake.stats()).chatRequests;
    await fake.reset();
    const ok = result.warmup.totalRequests + result.figures.totalRequests;
    // Every run makes two model calls (unique messages: nothing answers from a cache); up to one run per connection in flight at each stop.
    if (modelCalls < STEPS * ok || modelCalls > STEPS * (ok + 2 * connections)) throw new Error(`${name}: ${ok} runs answered but the provider saw ${modelCalls} model calls`);
    if (server === 'liya') {
      tally.liyaRuns += ok;
      tally.inFlight += 2 * connections;
    }
    phases.push({ name, server, connections, figures: result.figures, warmup: result.warmup, modelCalls });
    const f = result.figures;
    console.log(`${''.padEnd(32)} ${fmt(f.reqPerSec)} runs/s, p50 ${f.latencyP50Ms} ms, avg ${fmt(f.latencyAvgMs, 2)} ms, p99 ${f.latencyP99Ms} ms`);
  };

  const c = settings.connections;
  await run('baseline (SDK direct)', 'baseline', 1);
  await run(`liya POST ${ROUTE.replace(AGENT_KEY, '{key}')}`, 'liya', 1);
  await run('baseline (SDK direct)', 'baseline', c);
  await run(`liya POST ${ROUTE.replace(AGENT_KEY, '{key}')}`, 'liya', c);

  // Sub-millisecond timings: one request at a time, alternating baseline / liya.
  const seqWarmup = 30;
  await analyze();
  console.log(`sequential pass: ${settings.sequentialRuns} runs per server after ${seqWarmup} each, alternating, unique messages ...`);
  const seqTimes = await sequential([baselineTarget, liyaTarget], settings.sequentialRuns, seqWarmup);
  tally.liyaRuns += settings.sequentialRuns + seqWarmup;
  const seq = { baseline: percentiles(seqTimes.get('baseline')!), liya: percentiles(seqTimes.get('liya')!) };
  console.log(`${''.padEnd(32)} p50 baseline ${fmt(seq.baseline.p50Ms, 2)} ms, liya ${fmt(seq.liya.p50Ms, 2)} ms`);

  // Where a run's time goes: sequential passes, instrumented in-process (SQL statements and model
  // calls timed), then one under the CPU profiler (apart, so its overhead stays out of the timings).
  console.log(`instrumented pass: ${settings.sequentialRuns} runs per server, then a CPU-profiled pass of as many ...`);
  await analyze();
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
    timings = breakdownOf(settings.sequentialRuns, liyaTimes, liyaSql, liyaModel, baseTimes, probe.model());
  } finally {
    probe.restore();
  }
  const profiled = async (t: Target) => {
    const profiler = await startCpuProfile();
    await sequential([t], settings.sequentialRuns, 0);
    return profiler.stop();
  };
  const liyaCpu = await profiled(liyaTarget);
  const baseCpu = await profiled(baselineTarget);
  tally.liyaRuns += 20 + 2 * settings.sequentialRuns;
  const perRun = (b: CpuBucket) => ({ name: b.name, usPerRun: (1000 * b.ms) / settings.sequentialRuns });
  const baseOf = new Map(baseCpu.packages.map((b) => [b.name, b.ms]));
  const breakdown: Breakdown = {
    ...timings,
    cpu: {
      busyUsPerRun: (1000 * liyaCpu.busyMs) / settings.sequentialRuns,
      baselineBusyUsPerRun: (1000 * baseCpu.busyMs) / settings.sequentialRuns,
      packages: liyaCpu.packages.slice(0, 20).map((b) => ({ ...perRun(b), baselineUsPerRun: (1000 * (baseOf.get(b.name) ?? 0)) / settings.sequentialRuns })),
      functions: liyaCpu.functions.slice(0, 25).map(perRun),
    },
  };

  // Diagnostic: the sequential pass again with commits not waiting for the WAL flush (fsync) of the
  // bench's own PostgreSQL, to separate the disk's cost from Liya's. Never counted in the target.
  console.log(`diagnostic sequential pass, synchronous_commit=off: ${settings.sequentialRuns} runs per server after ${seqWarmup} each ...`);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  cleanup.add('bench admin client', () => admin.end());
  const setSynchronousCommit = async (off: boolean) => {
    await admin.query(off ? 'alter system set synchronous_commit = off' : 'alter system reset synchronous_commit');
    await admin.query('select pg_reload_conf()');
    await sleep(300);
  };
  let seqAsyncTimes: Map<string, number[]>;
  await analyze();
  await setSynchronousCommit(true);
  try {
    seqAsyncTimes = await sequential([baselineTarget, liyaTarget], settings.sequentialRuns, seqWarmup);
  } finally {
    await setSynchronousCommit(false);
  }
  tally.liyaRuns += settings.sequentialRuns + seqWarmup;
  const seqAsync = { baseline: percentiles(seqAsyncTimes.get('baseline')!), liya: percentiles(seqAsyncTimes.get('liya')!) };
  console.log(`${''.padEnd(32)} p50 baseline ${fmt(seqAsync.baseline.p50Ms, 2)} ms, liya ${fmt(seqAsync.liya.p50Ms, 2)} ms`);

  // What was stored: per run one agent_runs row (completed, steps 2), three run_steps rows
  // (llm, tool, llm), two usage events, one session, two messages, one counted request.
  await sleep(500);
  const stored = await storedCounts(db, tenantId);
  const within = (value: number, expected: number, slack: number) => value >= expected && value <= expected + slack;
  const runs = stored.runs;
  const storage = {
    runsAnswered200: tally.liyaRuns,
    allowanceForRequestsInFlightAtStop: tally.inFlight,
    ...stored,
    checks: {
      runsStored: within(runs, tally.liyaRuns, tally.inFlight),
      everyRunCompletedWith2Steps: stored.runsByStatusAndSteps.length === 1 && stored.runsByStatusAndSteps[0].status === 'completed' && stored.runsByStatusAndSteps[0].steps === STEPS,
      runStepRows3PerRun: stored.runStepRows === STEP_ROWS.length * runs && stored.runStepShapes[STEP_ROWS.join(',')] === runs,
      noStepErrors: stored.stepErrors === 0,
      usageEvents2PerRun: stored.usageEvents === STEPS * runs && stored.usageEventsNotOk === 0,
      sessions1PerRun: stored.sessions === runs,
      messages2PerRun: stored.messages === 2 * runs,
      counterRequests1PerRun: stored.counterRequests === runs,
    },
  };
  const storageOk = Object.values(storage.checks).every(Boolean);

  // ------------------------------------------------------------ report
  const find = (server: 'baseline' | 'liya', connections: number) => phases.find((p) => p.server === server && p.connections === connections)!;
  const fromLoad = (connections: number) => {
    const [l, b] = [find('liya', connections).figures, find('baseline', connections).figures];
    const pick = (f: LoadFigures) => ({ p50: f.latencyP50Ms, p90: f.latencyP90Ms, p99: f.latencyP99Ms, avg: f.latencyAvgMs });
    return addedOf(`autocannon, ${connections} connection${connections === 1 ? '' : 's'}`, pick(l), pick(b));
  };
  const pickSeq = (p: Percentiles) => ({ p50: p.p50Ms, p90: p.p90Ms, p99: p.p99Ms, avg: p.avgMs });
  const added1 = fromLoad(1);
  const addedC = fromLoad(c);
  const addedSeq = addedOf(`1 at a time, ${settings.sequentialRuns} runs each (us timer)`, pickSeq(seq.liya), pickSeq(seq.baseline));
  const addedAsync = addedOf('diagnostic: 1 at a time, synchronous_commit=off', pickSeq(seqAsync.liya), pickSeq(seqAsync.baseline));
  // The basis: the sequential pass (sub-millisecond timer; autocannon's latencies have 1 ms resolution, 0.5 ms per step).
  const verdict = (v: number) => (v < TARGETS.maxAddedMsPerStep ? 'PASS' : 'MISS');
  const pass = addedSeq.perStep.p50Ms < TARGETS.maxAddedMsPerStep;
  const note =
    `the load generator (1 autocannon worker thread), the fake provider (its own worker thread), PostgreSQL and the servers under test all share this machine's ${os.cpus().length} cores; ` +
    'figures compare the two servers under the same conditions, they are not capacity';

  console.log('');
  console.log(`server source (server/ + db/) sha256 ${serverSource}`);
  console.log(
    `POST ${ROUTE} (agent with current_time; ${STEPS} model calls per run), fake provider at 0 ms; ${settings.durationSeconds}s measured after ${settings.warmupSeconds}s warm-up; pool ${settings.poolMax};` +
      ` ${SEED_RUNS} runs before the first phase, ANALYZE before each phase and pass`,
  );
  console.log(
    table(
      ['server', 'conns', 'runs/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'avg ms', 'runs', 'non-2xx', 'model calls', 'server CPU us/run'],
      phases.map((p) => [
        p.name,
        p.connections,
        fmt(p.figures.reqPerSec),
        p.figures.latencyP50Ms,
        p.figures.latencyP90Ms,
        p.figures.latencyP99Ms,
        p.figures.latencyMaxMs,
        fmt(p.figures.latencyAvgMs, 2),
        p.figures.totalRequests,
        p.figures.non2xx,
        p.modelCalls,
        fmt(p.figures.serverCpuUsPerRequest, 0),
      ]),
    ),
  );
  console.log('(latencies from autocannon have 1 ms resolution; "model calls" counts the warm-up too; CPU is the main thread, where both servers run)');
  const seqLine = (label: string, q: { baseline: Percentiles; liya: Percentiles }) =>
    `${label}: baseline p50 ${fmt(q.baseline.p50Ms, 2)} / p90 ${fmt(q.baseline.p90Ms, 2)} / p99 ${fmt(q.baseline.p99Ms, 2)} / avg ${fmt(q.baseline.avgMs, 2)} ms, ` +
    `liya p50 ${fmt(q.liya.p50Ms, 2)} / p90 ${fmt(q.liya.p90Ms, 2)} / p99 ${fmt(q.liya.p99Ms, 2)} / avg ${fmt(q.liya.avgMs, 2)} ms`;
  console.log(seqLine("sequential pass (us timer, client in the servers' thread)", seq));
  console.log(seqLine('diagnostic sequential pass, synchronous_commit=off', seqAsync));
  console.log('');
  const addedRows = [addedSeq, added1, addedC, addedAsync];
  console.log(
    table(
      ['added by liya, per step (= per run / 2)', 'p50 ms', 'p90 ms', 'p99 ms', 'avg ms', 'per run p50', 'per run avg'],
      addedRows.map((a) => [a.basis, fmt(a.perStep.p50Ms, 2), fmt(a.perStep.p90Ms, 2), fmt(a.perStep.p99Ms, 2), fmt(a.perStep.avgMs, 2), fmt(a.perRun.p50Ms, 2), fmt(a.perRun.avgMs, 2)]),
    ),
  );
  const runsPerSec = { liya: find('liya', c).figures.reqPerSec, baseline: find('baseline', c).figures.reqPerSec };
  console.log('(the synchronous_commit=off row is a diagnostic, the bench PostgreSQL not waiting for its WAL flush; never counted in the target)');
  console.log(`throughput at ${c} connections: liya ${fmt(runsPerSec.liya)} runs/s (${fmt(STEPS * runsPerSec.liya)} steps/s), baseline ${fmt(runsPerSec.baseline)} runs/s; ratio ${fmt(runsPerSec.liya / runsPerSec.baseline, 2)}`);
  console.log('');
  console.log(
    `target: added time per step (p50, 1 at a time) under ${TARGETS.maxAddedMsPerStep} ms: ${fmt(addedSeq.perStep.p50Ms, 2)} ms  ${pass ? 'PASS' : 'MISS'}` +
      `  (from means ${fmt(addedSeq.perStep.avgMs, 2)} ms ${verdict(addedSeq.perStep.avgMs)}; autocannon 1 connection p50 ${fmt(added1.perStep.p50Ms, 2)} ms ${verdict(added1.perStep.p50Ms)},` +
      ` avg ${fmt(added1.perStep.avgMs, 2)} ms ${verdict(added1.perStep.avgMs)}; ${c} connections p50 ${fmt(addedC.perStep.p50Ms, 2)} ms)`,
  );
  console.log('');
  console.log(`stored for the tenant (${tally.liyaRuns} runs answered 200, plus up to ${tally.inFlight} in flight when a load run stopped):`);
  console.log(
    `  agent_runs ${stored.runs} ${JSON.stringify(stored.runsByStatusAndSteps)}, run_steps ${stored.runStepRows} (per run ${JSON.stringify(stored.runStepShapes)}, ${stored.stepErrors} not ok),` +
      ` usage_events ${stored.usageEvents} (${stored.usageEventsNotOk} not ok), agent_sessions ${stored.sessions}, agent_messages ${stored.messages}, counted requests ${stored.counterRequests}` +
      `  ${storageOk ? 'OK' : `MISMATCH ${JSON.stringify(storage.checks)}`}`,
  );
  printBreakdown(breakdown);
  const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  console.log('');
  console.log(`note: ${note}; load average (1/5/15 min) at start ${loadText(loadAtStart)}, at end ${loadText(os.loadavg())}`);

  const results = {
    benchmark: 'agents',
    route: `POST /v1/agents/{key}/run (current_time tool call, then an answer: ${STEPS} model calls per run)`,
    date: new Date().toISOString(),
    environment: { database: benchDatabase(), serverSourceHash: serverSource, node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverageAtStart: loadAtStart, loadAverageAtEnd: os.loadavg(), note },
    settings: { ...settings, seedRuns: SEED_RUNS, analyzeBeforeEachPhase: true, providerLatencyMs: 0, loadGeneratorWorkers: 1, fakeProvider: 'worker thread, scripted tool loop', order: phases.map((p) => `${p.server}@${p.connections}`) },
    verification: {
      stepsPerRun: STEPS,
      modelCallsPerRun: STEPS,
      storedStepRowsPerRun: STEP_ROWS,
      sameRequestShape: true,
      replayedRequest: { model: captured[0].model, tools: (captured[0].tools ?? []).length, systemPromptChars: systemChars, maxTokens: captured[0].max_tokens ?? null },
      storage,
      storageOk,
    },
    phases: phases.map(({ name, server, connections, figures, modelCalls }) => ({ name, server, connections, modelCalls, ...figures })),
    sequential: seq,
    sequentialSynchronousCommitOff: seqAsync,
    added: { sequential: addedSeq, connections1: added1, [`connections${c}`]: addedC, sequentialSynchronousCommitOff: addedAsync },
    throughput: { connections: c, liyaRunsPerSec: runsPerSec.liya, baselineRunsPerSec: runsPerSec.baseline },
    targets: {
      addedMsPerStep: { max: TARGETS.maxAddedMsPerStep, measured: addedSeq.perStep.p50Ms, basis: 'p50, sequential pass (1 request at a time, us timer), (liya - baseline) / 2', pass },
    },
    breakdown,
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  if (!storageOk) throw new Error(`agents: stored rows do not match the runs answered: ${JSON.stringify(storage.checks)}`);
  return results;
}

// ---------------------------------------------------------------- the breakdown

interface Breakdown {
  runs: number;
  liya: { wallMsPerRun: number; statementsPerRun: number; sqlMsPerRun: number; modelCallsPerRun: number; modelCallMsPerRun: number; otherMsPerRun: number };
  baseline: { wallMsPerRun: number; modelCallsPerRun: number; modelCallMsPerRun: number; otherMsPerRun: number };
  statements: { perRun: number; avgMs: number; msPerRun: number; text: string }[];
  cpu: {
    busyUsPerRun: number;
    baselineBusyUsPerRun: number;
    packages: { name: string; usPerRun: number; baselineUsPerRun: number }[];
    functions: { name: string; usPerRun: number }[];
  };
}

function breakdownOf(
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
    runs,
    liya: {
      wallMsPerRun: liyaWall,
      statementsPerRun: liyaSql.count / runs,
      sqlMsPerRun: sqlMs,
      modelCallsPerRun: liyaModel.count / runs,
      modelCallMsPerRun: modelMs,
      /** Wall time minus SQL round trips minus the model calls: fastify, tRPC, zod, guardrails, ORM work, JSON, the tool, the client. */
      otherMsPerRun: liyaWall - sqlMs - modelMs,
    },
    baseline: { wallMsPerRun: baseWall, modelCallsPerRun: baseModel.count / runs, modelCallMsPerRun: baseModelMs, otherMsPerRun: baseWall - baseModelMs },
    statements: liyaSql.byText.map((s) => ({ perRun: s.count / runs, avgMs: s.totalMs / s.count, msPerRun: s.totalMs / runs, text: s.text })),
  };
}

function printBreakdown(b: Breakdown) {
  console.log('');
  console.log(`where a run's time goes (${b.runs} sequential runs per server, instrumented in-process; averages per run of ${STEPS} steps):`);
  console.log(
    table(
      ['', 'wall ms', 'SQL statements', 'SQL ms', 'model calls', 'model call ms', 'rest ms'],
      [
        ['baseline', fmt(b.baseline.wallMsPerRun, 2), '0', '0', fmt(b.baseline.modelCallsPerRun, 2), fmt(b.baseline.modelCallMsPerRun, 2), fmt(b.baseline.otherMsPerRun, 2)],
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
        [
          'per step (/ 2)',
          fmt((b.liya.wallMsPerRun - b.baseline.wallMsPerRun) / STEPS, 2),
          fmt(b.liya.statementsPerRun / STEPS, 1),
          fmt(b.liya.sqlMsPerRun / STEPS, 2),
          '',
          fmt((b.liya.modelCallMsPerRun - b.baseline.modelCallMsPerRun) / STEPS, 2),
          fmt((b.liya.otherMsPerRun - b.baseline.otherMsPerRun) / STEPS, 2),
        ],
      ],
    ),
  );
  console.log("(\"rest\": HTTP, routing, validation, guardrails, ORM unit of work, JSON, the tool and the in-process client; SQL ms is each statement's round trip as the pg client sees it)");
  console.log('');
  console.log(
    table(
      ['statement (liya, per run)', 'per run', 'avg ms', 'ms/run'],
      b.statements.map((s) => [s.text.length > 110 ? `${s.text.slice(0, 107)}...` : s.text, fmt(s.perRun, 2), fmt(s.avgMs, 3), fmt(s.msPerRun, 3)]),
    ),
  );
  console.log('');
  console.log(
    `main thread under the CPU profiler (${b.runs} more sequential runs each): liya ${fmt(b.cpu.busyUsPerRun, 0)} us busy per run, baseline ${fmt(b.cpu.baselineBusyUsPerRun, 0)}` +
      ' (self time; natives and Node internals counted for the package calling them; liya:test/bench is the in-process client):',
  );
  console.log(table(['package / folder', 'liya us/run', 'baseline us/run'], b.cpu.packages.slice(0, 16).map((p) => [p.name, fmt(p.usPerRun), fmt(p.baselineUsPerRun)])));
  console.log('');
  console.log(table(['function (self time, liya)', 'us/run'], b.cpu.functions.slice(0, 20).map((f) => [f.name.slice(0, 110), fmt(f.usPerRun)])));
}
