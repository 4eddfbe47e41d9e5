// Workflow runs (POST /v1/workflows/{key}/run) through the real server, for a synchronous 5-step
// workflow with no model call (trigger, condition, transform, log, end), against the same five
// steps written by hand behind a bare node:http route (workflow-baseline-server.ts) in the same
// run, twice: in memory (nothing stored), and writing the same rows (the run row and five
// run_steps rows, same tables) with plain `pg` in one statement per run, committed synchronously.
// The figures wanted: Liya's runs/s and p99 at BENCH_WORKFLOW_CONNECTIONS (target >= 500 runs/s),
// and the engine's time per step: (liya - baseline) / 5 at p50, one run at a time (target < 1 ms,
// basis: the baseline that writes the rows; the in-memory one shows what durability itself costs).
// Reported as PASS/MISS, never asserted.
// Before the first phase each tenant gets a history (sequential runs), and the planner statistics
// are refreshed (ANALYZE) before every phase and pass. Phases: autocannon at
// BENCH_WORKFLOW_CONNECTIONS for each server (throughput, p99), a sequential alternating pass with a
// microsecond timer (the per-step target's basis), an instrumented pass (SQL statements timed per
// run), a CPU-profiled pass, and a diagnostic sequential pass with synchronous_commit=off. Finally
// the stored rows are checked: every Liya run completed with steps_done 5 and five run_steps rows
// (start, check, shape, note, done) all completed, as many runs as answered (plus those in flight
// when a load run stopped); the same for the baseline's rows.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '../../db/orm.js';
import { startServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { checkRun } from './collections-list.bench.js';
import { type CpuBucket, instrument, startCpuProfile, type StatementStat } from './instrument.js';
import { benchDatabase, deployBenchWorkflow, signUpBenchTenant, type Cleanup, fmt, type LoadFigures, measure, table, withDatabase, sourceHash } from './lib.js';
import { startWorkflowBaselineServer } from './workflow-baseline-server.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'workflows.json');
const DATABASE = 'liya_bench_workflows';
const WORKFLOW_NAME = 'Bench Five Steps';
/** Steps per run. */
const STEPS = 5;
const STEP_IDS = ['start', 'check', 'shape', 'note', 'done'];
const DEFINITION = [
  { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
  { id: 'check', step_type: 'condition', config: { expression: 'trigger.amount > 100' }, on_success_ref: 'shape', on_failure_ref: 'shape' },
  { id: 'shape', step_type: 'action', action_id: 'transform', config: { output: { amount: '{{trigger.amount}}', big: '{{steps.check.output.result}}' } } },
  { id: 'note', step_type: 'action', action_id: 'log', config: { message: 'run {{run.id}}' } },
  { id: 'done', step_type: 'end', config: { output: '{{steps.shape.output}}' } },
];
const AMOUNT = 150;
const EXPECTED_OUTPUT = { amount: AMOUNT, big: true };
// autocannon replaces [<id>] with a new 27-character id on every request: every payload differs.
const LOAD_BODY = JSON.stringify({ input: { amount: AMOUNT, ref: '[<id>]' } });
const TARGETS = { minRunsPerSec: 500, maxAddedMsPerStep: 1 };
/** Sequential runs per server before any measurement (then ANALYZE), so each tenant has a history. */
const SEED_RUNS = 200;
const SEQ_WARMUP = 30;

type ServerName = 'memory' | 'rows' | 'liya';
const LABELS: Record<ServerName, string> = {
  memory: 'baseline, in memory',
  rows: 'baseline + rows (pg, 1 stmt/run)',
  liya: 'liya POST /v1/workflows/{key}/run',
};

export interface WorkflowsSettings {
  /** Connections of the throughput runs. */
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Runs per server in the sequential pass, in the instrumented pass and in the CPU-profiled pass. */
  sequentialRuns: number;
  poolMax: number;
}

/** A short hash of the server's source (server/ and db/), to tell which code a result measured. */
let sequence = 0;
const uniqueBody = () => JSON.stringify({ input: { amount: AMOUNT, ref: `seq-${process.pid}-${++sequence}` } });

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
  name: ServerName;
  url: string;
  headers: Record<string, string>;
  /** Replaced at the start of each sequential pass: a socket left idle longer than the server's keep-alive timeout would be reset on reuse. */
  agent: http.Agent;
}

const target = (name: ServerName, base: string, workflowKey: string, headers: Record<string, string>): Target => ({
  name,
  url: `${base}/v1/workflows/${workflowKey}/run`,
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

/** One request at a time, alternating between the targets; sub-millisecond timings. */
async function sequential(targets: Target[], runs: number, warmup: number): Promise<Map<ServerName, number[]>> {
  const times = new Map(targets.map((t) => [t.name, [] as number[]]));
  for (const t of targets) {
    t.agent.destroy();
    t.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  }
  for (let i = 0; i < warmup + runs; i++) {
    for (const t of targets) {
      const answer = await post(t.agent, t.url, t.headers, uniqueBody());
      if (answer.status !== 200) throw new Error(`${t.name}: sequential run answered HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
      if (i >= warmup) times.get(t.name)!.push(answer.ms);
    }
  }
  return times;
}

// ---------------------------------------------------------------- set-up and verification

interface Tenant {
  apiKey: string;
  tenantId: string;
  workflowId: string;
  workflowKey: string;
  version: number;
}

/** A tenant with the benchmark's workflow created and deployed. */
async function tenantWithWorkflow(baseUrl: string, label: string): Promise<Tenant> {
  const apiKey = await signUpBenchTenant(baseUrl, `Bench Workflows ${label}`);
  const wf = (await deployBenchWorkflow(baseUrl, apiKey, WORKFLOW_NAME, DEFINITION)).workflow as { id: string; tenant_id: string; workflow_key: string; version: number };
  return { apiKey, tenantId: wf.tenant_id, workflowId: wf.id, workflowKey: wf.workflow_key, version: wf.version };
}

interface RunData {
  run_id: string;
  conversation_id: string;
  status: string;
  output: unknown;
  trace: { step_id: string; status: string }[];
}

async function runOnce(t: Target): Promise<{ data: RunData; text: string }> {
  const answer = await post(t.agent, t.url, t.headers, uniqueBody());
  if (answer.status !== 200) throw new Error(`${t.name}: POST answered HTTP ${answer.status}: ${answer.text.slice(0, 500)}`);
  const parsed = JSON.parse(answer.text) as { success?: boolean; data?: RunData };
  const data = parsed.data;
  if (parsed.success !== true || !data) throw new Error(`${t.name}: unexpected body ${answer.text.slice(0, 500)}`);
  if (
    data.status !== 'completed' ||
    canonical(data.output) !== canonical(EXPECTED_OUTPUT) ||
    data.trace?.map((s) => s.step_id).join() !== STEP_IDS.join() ||
    data.trace.some((s) => s.status !== 'completed')
  ) {
    throw new Error(`${t.name}: expected a completed run through ${STEP_IDS.join(', ')} with output ${JSON.stringify(EXPECTED_OUTPUT)}, got ${answer.text.slice(0, 800)}`);
  }
  return { data, text: answer.text };
}

/** JSON with object keys sorted, so two values compare by content whatever their key order (jsonb reorders keys). */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );

/** The answer with ids and times replaced by placeholders, canonical, to compare two answers by content. */
function normalised(text: string, data: RunData): string {
  const replaced = text
    .split(data.run_id)
    .join('<run_id>')
    .split(data.conversation_id)
    .join('<conversation_id>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/seq-\d+-\d+/g, '<ref>');
  return canonical(JSON.parse(replaced));
}

async function storedCounts(client: pg.Client, tenantId: string) {
  const rows = async <T extends pg.QueryResultRow>(sql: string) => (await client.query<T>(sql, [tenantId])).rows;
  const count = async (sql: string) => Number((await rows<{ n: string }>(sql))[0].n);
  const byStatus = await rows<{ status: string; steps_done: number; n: string }>(
    'select status, steps_done, count(*)::text as n from workflow_runs where tenant_id = $1 group by status, steps_done order by status, steps_done',
  );
  // Each run's step rows as a list of step ids in index order, then how many runs have each list.
  const stepShapes = await rows<{ shape: string; n: string }>(
    `select coalesce(s.shape, '(none)') as shape, count(*)::text as n
       from workflow_runs r
       left join (select run_id, string_agg(step_id, ',' order by index) as shape from run_steps where tenant_id = $1 and run_kind = 'workflow' group by run_id) s on s.run_id = r.id
      where r.tenant_id = $1 group by 1 order by 1`,
  );
  const outputs = await rows<{ output: string; n: string }>(`select output::text as output, count(*)::text as n from workflow_runs where tenant_id = $1 group by 1 order by 2 desc limit 5`);
  return {
    runs: await count('select count(*)::text as n from workflow_runs where tenant_id = $1'),
    runsByStatusAndSteps: byStatus.map((r) => ({ status: r.status, stepsDone: r.steps_done, runs: Number(r.n) })),
    runOutputs: Object.fromEntries(outputs.map((r) => [r.output, Number(r.n)])),
    runStepRows: await count(`select count(*)::text as n from run_steps where tenant_id = $1 and run_kind = 'workflow'`),
    runStepShapes: Object.fromEntries(stepShapes.map((r) => [r.shape, Number(r.n)])),
    stepsNotCompleted: await count(`select count(*)::text as n from run_steps where tenant_id = $1 and run_kind = 'workflow' and status <> 'completed'`),
  };
}

type Stored = Awaited<ReturnType<typeof storedCounts>>;

function storageChecks(stored: Stored, answered: number, inFlight: number) {
  const runs = stored.runs;
  const expectedOutput = canonical(EXPECTED_OUTPUT);
  return {
    runsStored: runs >= answered && runs <= answered + inFlight,
    everyRunCompletedWith5Steps: stored.runsByStatusAndSteps.length === 1 && stored.runsByStatusAndSteps[0].status === 'completed' && stored.runsByStatusAndSteps[0].stepsDone === STEPS,
    everyRunOutput: Object.keys(stored.runOutputs).length === 1 && canonical(JSON.parse(Object.keys(stored.runOutputs)[0])) === expectedOutput,
    runStepRows5PerRun: stored.runStepRows === STEPS * runs && stored.runStepShapes[STEP_IDS.join(',')] === runs,
    everyStepCompleted: stored.stepsNotCompleted === 0,
  };
}

/** How busy the machine is while the bench does nothing (other processes), from /proc/stat (Linux). */
async function backgroundCpu(ms: number): Promise<{ busyPct: number; stealPct: number } | null> {
  const read = async () => {
    try {
      // user nice system idle iowait irq softirq steal
      const [user, nice, system, idle, iowait, irq, softirq, steal] = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
      const busy = user + nice + system + irq + softirq;
      return { busy, steal: steal || 0, total: busy + idle + iowait + (steal || 0) };
    } catch {
      return null;
    }
  };
  const before = await read();
  await sleep(ms);
  const after = await read();
  if (!before || !after || after.total === before.total) return null;
  const total = after.total - before.total;
  return { busyPct: (100 * (after.busy - before.busy)) / total, stealPct: (100 * (after.steal - before.steal)) / total };
}

// ---------------------------------------------------------------- the benchmark

interface Phase {
  name: string;
  server: ServerName;
  connections: number;
  figures: LoadFigures;
  warmup: LoadFigures;
}

interface Added {
  basis: string;
  versus: ServerName;
  perRun: { p50Ms: number; p90Ms: number; p99Ms: number; avgMs: number };
  perStep: { p50Ms: number; p90Ms: number; p99Ms: number; avgMs: number };
}

const addedOf = (basis: string, versus: ServerName, liya: Percentiles, base: Percentiles): Added => {
  const perRun = { p50Ms: liya.p50Ms - base.p50Ms, p90Ms: liya.p90Ms - base.p90Ms, p99Ms: liya.p99Ms - base.p99Ms, avgMs: liya.avgMs - base.avgMs };
  return { basis, versus, perRun, perStep: { p50Ms: perRun.p50Ms / STEPS, p90Ms: perRun.p90Ms / STEPS, p99Ms: perRun.p99Ms / STEPS, avgMs: perRun.avgMs / STEPS } };
};

export async function runWorkflowsBench(adminUrl: string, cleanup: Cleanup, settings: WorkflowsSettings) {
  const serverSource = await sourceHash();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);

  console.log('starting Liya (WORKER=0, LOG_LEVEL=silent) ...');
  const config = loadConfig({ NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', WORKER: '0', DB_POOL_MAX: String(settings.poolMax) });
  const liya = await startServer({ config, databaseUrl });
  cleanup.add('liya server', () => liya.close());
  const liyaTenant = await tenantWithWorkflow(liya.url, 'liya');
  // The baseline's rows go to a tenant and workflow of their own, so each side's rows are counted apart.
  const baseTenant = await tenantWithWorkflow(liya.url, 'baseline');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());

  const memory = await startWorkflowBaselineServer();
  cleanup.add('baseline server (memory)', () => memory.close());
  const rows = await startWorkflowBaselineServer({
    database: { url: databaseUrl, poolMax: settings.poolMax, tenantId: baseTenant.tenantId, workflowId: baseTenant.workflowId, version: baseTenant.version },
  });
  cleanup.add('baseline server (rows)', () => rows.close());

  const liyaTarget = target('liya', liya.url, liyaTenant.workflowKey, { authorization: `Bearer ${liyaTenant.apiKey}` });
  const memoryTarget = target('memory', memory.url, liyaTenant.workflowKey, {});
  const rowsTarget = target('rows', rows.url, baseTenant.workflowKey, {});
  const targets = [memoryTarget, rowsTarget, liyaTarget];

  // Verification: one run each; the same answer (ids and times aside); Liya's stored steps.
  const first = await runOnce(liyaTarget);
  const { rows: firstSteps } = await db.query<{ step_id: string; type: string; status: string }>(
    'select step_id, type, status from run_steps where tenant_id = $1 and run_id = $2 order by index',
    [liyaTenant.tenantId, first.data.run_id],
  );
  if (firstSteps.map((s) => s.step_id).join() !== STEP_IDS.join() || firstSteps.some((s) => s.status !== 'completed')) {
    throw new Error(`liya: the run's stored steps are ${JSON.stringify(firstSteps)}, expected ${STEP_IDS.join(', ')} all completed`);
  }
  const liyaShape = normalised(first.text, first.data);
  for (const t of [memoryTarget, rowsTarget]) {
    const answer = await runOnce(t);
    const shape = normalised(answer.text, answer.data);
    if (shape !== liyaShape) throw new Error(`the ${t.name} baseline's answer differs from Liya's:\n  liya     ${liyaShape}\n  baseline ${shape}`);
  }
  const tally: Record<'liya' | 'rows', { answered: number; inFlight: number }> = { liya: { answered: 1, inFlight: 0 }, rows: { answered: 1, inFlight: 0 } };
  const countRuns = (name: ServerName, n: number) => {
    if (name !== 'memory') tally[name].answered += n;
  };
  console.log(`verified: all three answer 200 with the same body (ids and times aside): status completed, trace ${STEP_IDS.join(' > ')}, output ${JSON.stringify(EXPECTED_OUTPUT)}; liya stored 5 step rows`);

  // A history for each tenant before anything is measured, and fresh planner statistics before every phase.
  const analyze = () => db.query('analyze');
  console.log(`seeding: ${SEED_RUNS} sequential runs per storing server, then ANALYZE ...`);
  await sequential([rowsTarget, liyaTarget], SEED_RUNS, 0);
  countRuns('liya', SEED_RUNS);
  countRuns('rows', SEED_RUNS);

  const loadAtStart = os.loadavg();
  const background = await backgroundCpu(2000);
  console.log(
    background === null
      ? 'machine CPU outside the bench: not readable'
      : `machine CPU with the bench idle (2 s): ${fmt(background.busyPct)}% of ${os.cpus().length} cores busy, ${fmt(background.stealPct)}% stolen (other processes on this machine)`,
  );
  const c = settings.connections;
  const phases: Phase[] = [];
  for (const t of targets) {
    const name = LABELS[t.name];
    console.log(`${name.padEnd(34)} ${c} connections: warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
    await analyze();
    const result = await measure({
      url: t.url,
      headers: t.headers,
      method: 'POST',
      body: LOAD_BODY,
      idReplacement: true,
      connections: c,
      warmupSeconds: settings.warmupSeconds,
      durationSeconds: settings.durationSeconds,
    });
    checkRun(name, result.warmup);
    checkRun(name, result.figures);
    await sleep(300); // requests in flight when the load generator stopped
    countRuns(t.name, result.warmup.totalRequests + result.figures.totalRequests);
    if (t.name !== 'memory') tally[t.name].inFlight += 2 * c;
    phases.push({ name, server: t.name, connections: c, figures: result.figures, warmup: result.warmup });
    const f = result.figures;
    console.log(`${''.padEnd(34)} ${fmt(f.reqPerSec)} runs/s, p50 ${f.latencyP50Ms} ms, p99 ${f.latencyP99Ms} ms, avg ${fmt(f.latencyAvgMs, 2)} ms`);
  }

  // Sub-millisecond timings: one request at a time, alternating memory / rows / liya.
  await analyze();
  console.log(`sequential pass: ${settings.sequentialRuns} runs per server after ${SEQ_WARMUP} each, alternating ...`);
  const seqTimes = await sequential(targets, settings.sequentialRuns, SEQ_WARMUP);
  for (const t of targets) countRuns(t.name, settings.sequentialRuns + SEQ_WARMUP);
  const seq = Object.fromEntries(targets.map((t) => [t.name, percentiles(seqTimes.get(t.name)!)])) as Record<ServerName, Percentiles>;
  console.log(`${''.padEnd(34)} p50 memory ${fmt(seq.memory.p50Ms, 2)} ms, rows ${fmt(seq.rows.p50Ms, 2)} ms, liya ${fmt(seq.liya.p50Ms, 2)} ms`);

  // Where a run's time goes: sequential passes, instrumented in-process (SQL statements timed),
  // then one under the CPU profiler (apart, so its overhead stays out of the timings).
  console.log(`instrumented pass: ${settings.sequentialRuns} runs per server, then a CPU-profiled pass of as many ...`);
  await analyze();
  await sequential(targets, 20, 0);
  for (const t of targets) countRuns(t.name, 20);
  const probe = instrument();
  const wall: Partial<Record<ServerName, number[]>> = {};
  const sql: Partial<Record<ServerName, ReturnType<typeof probe.sql>>> = {};
  try {
    for (const t of targets) {
      probe.clear();
      wall[t.name] = (await sequential([t], settings.sequentialRuns, 0)).get(t.name)!;
      sql[t.name] = probe.sql();
      countRuns(t.name, settings.sequentialRuns);
    }
  } finally {
    probe.restore();
  }
  const cpu: Partial<Record<ServerName, Awaited<ReturnType<Awaited<ReturnType<typeof startCpuProfile>>['stop']>>>> = {};
  // A discarded profiled pass first: the first pass under a fresh profiler pays for starting it
  // (code recompiled for sampling), which would be counted against whichever server came first.
  {
    const profiler = await startCpuProfile();
    await sequential(targets, 30, 0);
    await profiler.stop();
    for (const t of targets) countRuns(t.name, 30);
  }
  for (const t of targets) {
    const profiler = await startCpuProfile();
    await sequential([t], settings.sequentialRuns, 0);
    cpu[t.name] = await profiler.stop();
    countRuns(t.name, settings.sequentialRuns);
  }
  const n = settings.sequentialRuns;
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const perRunUs = (ms: number) => (1000 * ms) / n;
  const bucketsOf = (name: ServerName) => new Map(cpu[name]!.packages.map((b) => [b.name, b.ms]));
  const [memBuckets, rowsBuckets] = [bucketsOf('memory'), bucketsOf('rows')];
  const breakdown: Breakdown = {
    runs: n,
    servers: Object.fromEntries(
      targets.map((t) => {
        const s = sql[t.name]!;
        const w = avg(wall[t.name]!);
        return [t.name, { wallMsPerRun: w, statementsPerRun: s.count / n, sqlMsPerRun: s.totalMs / n, restMsPerRun: w - s.totalMs / n, cpuBusyUsPerRun: perRunUs(cpu[t.name]!.busyMs) }];
      }),
    ) as Breakdown['servers'],
    statements: sql.liya!.byText.map((s: StatementStat) => ({ perRun: s.count / n, avgMs: s.totalMs / s.count, msPerRun: s.totalMs / n, text: s.text })),
    cpu: {
      packages: cpu.liya!.packages.slice(0, 20).map((b: CpuBucket) => ({
        name: b.name,
        usPerRun: perRunUs(b.ms),
        memoryUsPerRun: perRunUs(memBuckets.get(b.name) ?? 0),
        rowsUsPerRun: perRunUs(rowsBuckets.get(b.name) ?? 0),
      })),
      functions: cpu.liya!.functions.slice(0, 25).map((b: CpuBucket) => ({ name: b.name, usPerRun: perRunUs(b.ms) })),
    },
  };

  // Diagnostic: the sequential pass again with commits not waiting for the WAL flush (fsync) of the
  // bench's own PostgreSQL, to separate the disk's cost from the servers'. Never counted in a target.
  console.log(`diagnostic sequential pass, synchronous_commit=off: ${n} runs per server after ${SEQ_WARMUP} each ...`);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  cleanup.add('bench admin client', () => admin.end());
  const setSynchronousCommit = async (off: boolean) => {
    await admin.query(off ? 'alter system set synchronous_commit = off' : 'alter system reset synchronous_commit');
    await admin.query('select pg_reload_conf()');
    await sleep(300);
  };
  let seqAsyncTimes: Map<ServerName, number[]>;
  await analyze();
  await setSynchronousCommit(true);
  try {
    seqAsyncTimes = await sequential(targets, n, SEQ_WARMUP);
  } finally {
    await setSynchronousCommit(false);
  }
  for (const t of targets) countRuns(t.name, n + SEQ_WARMUP);
  const seqAsync = Object.fromEntries(targets.map((t) => [t.name, percentiles(seqAsyncTimes.get(t.name)!)])) as Record<ServerName, Percentiles>;
  console.log(`${''.padEnd(34)} p50 memory ${fmt(seqAsync.memory.p50Ms, 2)} ms, rows ${fmt(seqAsync.rows.p50Ms, 2)} ms, liya ${fmt(seqAsync.liya.p50Ms, 2)} ms`);

  // What was stored, for Liya's tenant and for the baseline's.
  await sleep(500);
  const storedLiya = await storedCounts(db, liyaTenant.tenantId);
  const storedRows = await storedCounts(db, baseTenant.tenantId);
  const storage = {
    liya: { runsAnswered200: tally.liya.answered, allowanceForRequestsInFlightAtStop: tally.liya.inFlight, ...storedLiya, checks: storageChecks(storedLiya, tally.liya.answered, tally.liya.inFlight) },
    baselineRows: { runsAnswered200: tally.rows.answered, allowanceForRequestsInFlightAtStop: tally.rows.inFlight, ...storedRows, checks: storageChecks(storedRows, tally.rows.answered, tally.rows.inFlight) },
  };
  const storageOk = Object.values(storage.liya.checks).every(Boolean) && Object.values(storage.baselineRows.checks).every(Boolean);

  // ------------------------------------------------------------ report
  const find = (server: ServerName) => phases.find((p) => p.server === server)!;
  const addedRows = addedOf(`1 at a time, ${n} runs each (us timer)`, 'rows', seq.liya, seq.rows);
  const addedMemory = addedOf(`1 at a time, ${n} runs each (us timer)`, 'memory', seq.liya, seq.memory);
  const addedRowsAsync = addedOf('diagnostic: 1 at a time, synchronous_commit=off', 'rows', seqAsync.liya, seqAsync.rows);
  const addedMemoryAsync = addedOf('diagnostic: 1 at a time, synchronous_commit=off', 'memory', seqAsync.liya, seqAsync.memory);
  const liyaLoad = find('liya').figures;
  const throughputPass = liyaLoad.reqPerSec >= TARGETS.minRunsPerSec;
  const stepPass = addedRows.perStep.p50Ms < TARGETS.maxAddedMsPerStep;
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  const note =
    `the load generator (1 autocannon worker thread), PostgreSQL and the three servers under test (one main thread) all share this machine's ${os.cpus().length} cores` +
    (background ? ` with whatever else runs on it (${fmt(background.busyPct)}% busy with the bench idle)` : '') +
    '; figures compare the servers under the same conditions, they are not capacity; "other CPU" counts everything outside this process, PostgreSQL and other processes alike';

  console.log('');
  console.log(`server source (server/ + db/) sha256 ${serverSource}`);
  console.log(
    `POST /v1/workflows/{key}/run, ${STEPS} steps (trigger, condition, transform, log, end), no model call; ${settings.durationSeconds}s measured after ${settings.warmupSeconds}s warm-up;` +
      ` pool ${settings.poolMax}; ${SEED_RUNS} runs per storing server before the first phase, ANALYZE before each phase and pass`,
  );
  console.log(
    table(
      ['server', 'conns', 'runs/s', 'steps/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'avg ms', 'runs', 'non-2xx', 'server CPU us/run', 'other CPU us/run'],
      phases.map((p) => [
        p.name,
        p.connections,
        fmt(p.figures.reqPerSec),
        fmt(STEPS * p.figures.reqPerSec, 0),
        p.figures.latencyP50Ms,
        p.figures.latencyP90Ms,
        p.figures.latencyP99Ms,
        p.figures.latencyMaxMs,
        fmt(p.figures.latencyAvgMs, 2),
        p.figures.totalRequests,
        p.figures.non2xx,
        fmt(p.figures.serverCpuUsPerRequest, 0),
        p.figures.otherCpuUsPerRequest === null ? '-' : fmt(p.figures.otherCpuUsPerRequest, 0),
      ]),
    ),
  );
  console.log('(latencies from autocannon have 1 ms resolution; "server CPU" is the main thread, where all three servers run; "other CPU" is the rest of the machine, mostly PostgreSQL)');
  const seqLine = (label: string, q: Record<ServerName, Percentiles>) =>
    `${label}:\n` +
    targets.map((t) => `  ${LABELS[t.name].padEnd(34)} p50 ${fmt(q[t.name].p50Ms, 2)} / p90 ${fmt(q[t.name].p90Ms, 2)} / p99 ${fmt(q[t.name].p99Ms, 2)} / avg ${fmt(q[t.name].avgMs, 2)} ms`).join('\n');
  console.log(seqLine("sequential pass (us timer, client in the servers' thread)", seq));
  console.log(seqLine('diagnostic sequential pass, synchronous_commit=off', seqAsync));
  console.log('');
  console.log(
    table(
      ['added by liya, per step (= per run / 5)', 'versus', 'p50 ms', 'p90 ms', 'p99 ms', 'avg ms', 'per run p50', 'per run avg'],
      [addedRows, addedMemory, addedRowsAsync, addedMemoryAsync].map((a) => [
        a.basis,
        a.versus === 'rows' ? 'baseline + rows' : 'baseline in memory',
        fmt(a.perStep.p50Ms, 2),
        fmt(a.perStep.p90Ms, 2),
        fmt(a.perStep.p99Ms, 2),
        fmt(a.perStep.avgMs, 2),
        fmt(a.perRun.p50Ms, 2),
        fmt(a.perRun.avgMs, 2),
      ]),
    ),
  );
  console.log('(the synchronous_commit=off rows are a diagnostic, the bench PostgreSQL not waiting for its WAL flush; never counted in a target)');
  const rps = { liya: liyaLoad.reqPerSec, rows: find('rows').figures.reqPerSec, memory: find('memory').figures.reqPerSec };
  console.log(
    `throughput at ${c} connections: liya ${fmt(rps.liya)} runs/s (p99 ${liyaLoad.latencyP99Ms} ms), baseline + rows ${fmt(rps.rows)} runs/s, baseline in memory ${fmt(rps.memory)} runs/s;` +
      ` liya / baseline + rows ${fmt(rps.liya / rps.rows, 2)}`,
  );
  console.log('');
  console.log(`target: at least ${TARGETS.minRunsPerSec} runs/s at ${c} connections: ${fmt(rps.liya)} runs/s  ${verdict(throughputPass)}`);
  console.log(
    `target: added time per step (p50, 1 at a time, versus the baseline writing the same rows) under ${TARGETS.maxAddedMsPerStep} ms: ${fmt(addedRows.perStep.p50Ms, 2)} ms  ${verdict(stepPass)}` +
      `  (from means ${fmt(addedRows.perStep.avgMs, 2)} ms ${verdict(addedRows.perStep.avgMs < TARGETS.maxAddedMsPerStep)};` +
      ` versus the in-memory baseline p50 ${fmt(addedMemory.perStep.p50Ms, 2)} ms ${verdict(addedMemory.perStep.p50Ms < TARGETS.maxAddedMsPerStep)})`,
  );
  console.log('');
  const storedLine = (label: string, s: (typeof storage)['liya']) =>
    `  ${label}: ${s.runsAnswered200} runs answered 200 (plus up to ${s.allowanceForRequestsInFlightAtStop} in flight when a load run stopped); workflow_runs ${s.runs} ${JSON.stringify(s.runsByStatusAndSteps)},` +
    ` outputs ${JSON.stringify(s.runOutputs)}, run_steps ${s.runStepRows} (per run ${JSON.stringify(s.runStepShapes)}, ${s.stepsNotCompleted} not completed)` +
    `  ${Object.values(s.checks).every(Boolean) ? 'OK' : `MISMATCH ${JSON.stringify(s.checks)}`}`;
  console.log('stored:');
  console.log(storedLine('liya', storage.liya));
  console.log(storedLine('baseline + rows', storage.baselineRows));
  printBreakdown(breakdown);
  const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  console.log('');
  console.log(`note: ${note}; load average (1/5/15 min) at start ${loadText(loadAtStart)}, at end ${loadText(os.loadavg())}`);

  const results = {
    benchmark: 'workflows',
    route: `POST /v1/workflows/{key}/run (${STEPS} steps: trigger, condition, transform, log, end; no model call)`,
    date: new Date().toISOString(),
    environment: { database: benchDatabase(), backgroundCpu: background, serverSourceHash: serverSource, node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverageAtStart: loadAtStart, loadAverageAtEnd: os.loadavg(), note },
    settings: { ...settings, seedRuns: SEED_RUNS, analyzeBeforeEachPhase: true, logLevel: 'silent', loadGeneratorWorkers: 1, order: phases.map((p) => `${p.server}@${p.connections}`) },
    definition: DEFINITION,
    baselines: {
      memory: 'node:http, the five steps by hand in JS (condition, output objects, the same trace), nothing stored',
      rows:
        'the same, plus the run row (completed) and its five run_steps rows written to the same tables by plain pg in one statement per run ' +
        '(run insert + five-row VALUES insert in one CTE, prepared), one transaction, synchronous commit; its own tenant and workflow',
    },
    verification: { sameAnswerAsBaselines: true, stepsPerRun: STEPS, storedStepIds: STEP_IDS, storage, storageOk },
    phases: phases.map(({ name, server, connections, figures }) => ({ name, server, connections, ...figures })),
    sequential: seq,
    sequentialSynchronousCommitOff: seqAsync,
    added: { versusRows: addedRows, versusMemory: addedMemory, versusRowsSynchronousCommitOff: addedRowsAsync, versusMemorySynchronousCommitOff: addedMemoryAsync },
    throughput: { connections: c, liyaRunsPerSec: rps.liya, liyaP99Ms: liyaLoad.latencyP99Ms, baselineRowsRunsPerSec: rps.rows, baselineMemoryRunsPerSec: rps.memory },
    targets: {
      runsPerSec: { min: TARGETS.minRunsPerSec, measured: rps.liya, basis: `autocannon, ${c} connections, ${settings.durationSeconds}s`, pass: throughputPass },
      addedMsPerStep: {
        max: TARGETS.maxAddedMsPerStep,
        measured: addedRows.perStep.p50Ms,
        basis: 'p50, sequential pass (1 request at a time, us timer), (liya - baseline writing the same rows) / 5',
        pass: stepPass,
        versusMemory: addedMemory.perStep.p50Ms,
      },
    },
    breakdown,
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  if (!storageOk) throw new Error(`workflows: stored rows do not match the runs answered: ${JSON.stringify({ liya: storage.liya.checks, baselineRows: storage.baselineRows.checks })}`);
  return results;
}

// ---------------------------------------------------------------- the breakdown

interface Breakdown {
  runs: number;
  servers: Record<ServerName, { wallMsPerRun: number; statementsPerRun: number; sqlMsPerRun: number; restMsPerRun: number; cpuBusyUsPerRun: number }>;
  statements: { perRun: number; avgMs: number; msPerRun: number; text: string }[];
  cpu: {
    packages: { name: string; usPerRun: number; memoryUsPerRun: number; rowsUsPerRun: number }[];
    functions: { name: string; usPerRun: number }[];
  };
}

function printBreakdown(b: Breakdown) {
  const { memory, rows, liya } = b.servers;
  console.log('');
  console.log(`where a run's time goes (${b.runs} sequential runs per server, instrumented in-process; averages per run of ${STEPS} steps):`);
  const line = (label: string, s: Breakdown['servers']['liya']) => [label, fmt(s.wallMsPerRun, 2), fmt(s.statementsPerRun, 1), fmt(s.sqlMsPerRun, 2), fmt(s.restMsPerRun, 2), fmt(s.cpuBusyUsPerRun, 0)];
  console.log(
    table(
      ['', 'wall ms', 'SQL statements', 'SQL ms', 'rest ms', 'CPU us (profiled)'],
      [
        line('baseline, in memory', memory),
        line('baseline + rows', rows),
        line('liya', liya),
        ['liya - baseline + rows', fmt(liya.wallMsPerRun - rows.wallMsPerRun, 2), fmt(liya.statementsPerRun - rows.statementsPerRun, 1), fmt(liya.sqlMsPerRun - rows.sqlMsPerRun, 2), fmt(liya.restMsPerRun - rows.restMsPerRun, 2), fmt(liya.cpuBusyUsPerRun - rows.cpuBusyUsPerRun, 0)],
        [
          'per step (/ 5)',
          fmt((liya.wallMsPerRun - rows.wallMsPerRun) / STEPS, 2),
          fmt((liya.statementsPerRun - rows.statementsPerRun) / STEPS, 1),
          fmt((liya.sqlMsPerRun - rows.sqlMsPerRun) / STEPS, 2),
          fmt((liya.restMsPerRun - rows.restMsPerRun) / STEPS, 2),
          fmt((liya.cpuBusyUsPerRun - rows.cpuBusyUsPerRun) / STEPS, 0),
        ],
      ],
    ),
  );
  console.log("(\"rest\": HTTP, routing, validation, the steps, ORM, JSON and the in-process client; SQL ms is each statement's round trip as the pg client sees it; CPU is main-thread self time under the profiler)");
  console.log('');
  console.log(
    table(
      ['statement (liya, per run)', 'per run', 'avg ms', 'ms/run'],
      b.statements.map((s) => [s.text.length > 110 ? `${s.text.slice(0, 107)}...` : s.text, fmt(s.perRun, 2), fmt(s.avgMs, 3), fmt(s.msPerRun, 3)]),
    ),
  );
  console.log('');
  console.log('main thread under the CPU profiler (self time; natives and Node internals counted for the package calling them; liya:test/bench is the in-process client):');
  console.log(
    table(
      ['package / folder', 'liya us/run', 'memory us/run', 'rows us/run'],
      b.cpu.packages.slice(0, 16).map((p) => [p.name, fmt(p.usPerRun), fmt(p.memoryUsPerRun), fmt(p.rowsUsPerRun)]),
    ),
  );
  console.log('');
  console.log(table(['function (self time, liya)', 'us/run'], b.cpu.functions.slice(0, 20).map((f) => [f.name.slice(0, 110), fmt(f.usPerRun)])));
}
