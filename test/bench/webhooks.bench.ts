// Signed webhook calls (POST /webhooks/workflows/<slug>, Standard Webhooks signature) into a 3-step
// workflow with no model call (trigger webhook > transform > end), the job worker draining them
// in the same server process (WORKER on). Two figures:
//   - accepted calls/s: HTTP 202s per second while the load generator sends (from the first call
//     sent to the last answer), target >= 600;
//   - completed runs/s: the batch's calls / the time from the first 202 until the batch's last run
//     has status completed (polled in the database every POLL_MS), target >= 450.
// For context (not measured here): a tuned n8n on this kind of machine completes 50-66 runs/s of a
// comparable webhook workflow. In the same run, the HTTP floor: an authenticated cheap route of the
// same server (GET /v1/workflows with the API key, autocannon for BENCH_WEBHOOK_DURATION_SECONDS).
// Reported as PASS/MISS, never asserted. Also in the same run, the baseline
// (workflow-baseline-server.ts): the same signed calls into a bare node:http + pg handler with the
// same guarantees (signature, webhook-id claim, a durable run before the 202, each step stored
// before the next), its own tenant and workflow in the same tables; for both, the main thread's CPU
// per accepted-and-completed run. BENCH_WEBHOOK_PROFILE=1 samples Liya's main thread through the
// measured batch and prints where its time goes.
//
// Every call carries its own webhook-id and signature: a pool of signed calls is computed before
// each load phase (signing is not measured) and the load generator's thread takes the next one per
// request (autocannon `requests[].setupRequest`, a small CommonJS module written to a temp folder
// since autocannon's worker thread loads hooks by file path). The same module keeps each answer's
// run_id, so the checks know exactly which calls were accepted. The batch is a fixed number of
// calls (autocannon `amount`, every answer awaited): BENCH_WEBHOOK_CALLS, or by default as many as
// the warm-up's rate sends in BENCH_WEBHOOK_DURATION_SECONDS.
//
// Phases: checks of the route (a signed call answers 202 with a run_id; the same webhook-id again,
// as sent and re-signed, answers 202 with the same run_id; a wrong signature is refused; the run
// completes with the transform's output), the HTTP floor, a warm-up batch (discarded, drained),
// ANALYZE, the measured batch (drained). Finally the stored rows are checked: one completed run
// (output {"ok": true}, three completed run_steps t, x, done) per accepted call and no other,
// no body stored twice, every accepted run_id among them, and a replayed webhook-id of the batch
// answers with its run and creates none.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { ensureDatabase } from '../../db/orm.js';
import { startServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { checkRun } from './collections-list.bench.js';
import { startCpuProfile, type CpuProfileSummary } from './instrument.js';
import { startWebhookBaselineServer } from './workflow-baseline-server.js';
import { benchDatabase, callJson, deployBenchWorkflow, signUpBenchTenant, type Cleanup, fmt, measure, sourceHash, table, tenantIdOf, withDatabase } from './lib.js';

// The parts of autocannon's options this benchmark adds to test/bench/autocannon.d.ts.
declare module 'autocannon' {
  interface Options {
    /** Send exactly this many requests (every answer awaited) instead of running for `duration`. */
    amount?: number;
    /** With `workers`, hooks are absolute paths of CommonJS modules exporting the function. */
    requests?: { setupRequest?: string; onResponse?: string }[];
  }
}

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'webhooks.json');
const DATABASE = 'liya_bench_webhooks';
const WORKFLOW_NAME = 'Bench Webhook Three Steps';
const STEP_IDS = ['t', 'x', 'done'];
const DEFINITION = [
  { id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } },
  { id: 'x', step_type: 'action', action_id: 'transform', config: { output: { x: '{{trigger.n}}' } } },
  { id: 'done', step_type: 'end', config: { output: { ok: true } } },
];
const EXPECTED_OUTPUT = { ok: true };
const TARGETS = { minAcceptedPerSec: 600, minCompletedPerSec: 450 };
const N8N_CONTEXT = 'a tuned n8n on this kind of machine completes 50-66 runs/s of a comparable webhook workflow (figure quoted, not measured here)';
/** How often the completion poller counts the workflow's completed runs. */
const POLL_MS = 100;
/** A drain with no newly completed run for this long fails the benchmark. */
const STALL_MS = 60_000;
/** Bounds of the measured batch when it is sized from the warm-up's rate. */
const MIN_CALLS = 1000;
const MAX_CALLS = 100_000;

export interface WebhooksSettings {
  /** Connections of the load phases (webhook batches and the HTTP floor). */
  connections: number;
  /** Warm-up of the HTTP floor phase. */
  warmupSeconds: number;
  /** The HTTP floor's measured time, and what the measured batch is sized to last. */
  durationSeconds: number;
  /** Calls of the warm-up batch (discarded). */
  warmupCalls: number;
  /** Calls of the measured batch; undefined: the warm-up's rate x durationSeconds. */
  calls: number | undefined;
  /** WORKER_CONCURRENCY of the server; undefined: the server's default. */
  workerConcurrency: number | undefined;
  poolMax: number;
}

/** Epoch milliseconds with sub-millisecond precision, comparable across threads. */
const now = () => performance.timeOrigin + performance.now();

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );

// ---------------------------------------------------------------- signed calls

interface SignedCall {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
}

function signCall(webhook: Webhook, id: string, body: string, at = new Date()): SignedCall {
  return { id, timestamp: String(Math.floor(at.getTime() / 1000)), signature: webhook.sign(id, at, body), body };
}

const bodyOf = (n: number, ref: string) => JSON.stringify({ n, ref });

async function postWebhook(url: string, call: SignedCall): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': call.id, 'webhook-timestamp': call.timestamp, 'webhook-signature': call.signature },
    body: call.body,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // left as text
  }
  return { status: res.status, body, text };
}

function acceptedRunId(label: string, answer: { status: number; body: any; text: string }): string {
  const runId = answer.body?.data?.run_id;
  if (answer.status !== 202 || answer.body?.success !== true || typeof runId !== 'string') {
    throw new Error(`${label}: expected 202 {success: true, data: {run_id}}, got HTTP ${answer.status} ${answer.text.slice(0, 500)}`);
  }
  return runId;
}

// ---------------------------------------------------------------- the load generator's hooks

// CommonJS, loaded by autocannon's worker thread (one module instance per load phase). The pool
// file holds the phase's signed calls; the summary file gets the answers when the last one is in
// (or when the thread exits, if some never came).
const HOOKS_MODULE = `'use strict';
// Written by test/bench/webhooks.bench.ts for one load phase; deleted with the bench's temp folder.
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const pool = JSON.parse(fs.readFileSync(path.join(__dirname, 'pool.json'), 'utf8'));
const now = () => performance.timeOrigin + performance.now();
const state = { sent: 0, exhausted: 0, responses: 0, firstSentAt: null, firstAcceptedAt: null, lastResponseAt: null, statuses: {}, runIds: [], unexpected: [] };
let written = false;
function write() {
  if (written) return;
  written = true;
  fs.writeFileSync(pool.summaryFile, JSON.stringify(state));
}
process.on('exit', write);
exports.setupRequest = function setupRequest(req) {
  const call = pool.calls[state.sent++];
  if (state.firstSentAt === null) state.firstSentAt = now();
  if (!call) {
    // More requests than signed calls: an unsigned call, refused, and counted.
    state.exhausted++;
    req.headers['webhook-id'] = 'pool-exhausted-' + state.sent;
    req.headers['webhook-timestamp'] = String(Math.floor(Date.now() / 1000));
    req.headers['webhook-signature'] = 'v1,' + Buffer.alloc(32).toString('base64');
    req.body = '{}';
    return req;
  }
  req.headers['webhook-id'] = call[0];
  req.headers['webhook-timestamp'] = call[1];
  req.headers['webhook-signature'] = call[2];
  req.body = call[3];
  return req;
};
exports.onResponse = function onResponse(status, body) {
  const at = now();
  state.responses++;
  state.lastResponseAt = at;
  state.statuses[status] = (state.statuses[status] || 0) + 1;
  let runId = null;
  if (status === 202) {
    if (state.firstAcceptedAt === null) state.firstAcceptedAt = at;
    try {
      const parsed = JSON.parse(body);
      if (parsed && parsed.success === true && parsed.data && typeof parsed.data.run_id === 'string') runId = parsed.data.run_id;
    } catch {}
    if (runId !== null) state.runIds.push(runId);
  }
  if (runId === null && state.unexpected.length < 5) state.unexpected.push(status + ' ' + String(body).slice(0, 300));
  if (state.responses === pool.expected) write();
};
`;

interface PhaseSummary {
  sent: number;
  exhausted: number;
  responses: number;
  firstSentAt: number | null;
  firstAcceptedAt: number | null;
  lastResponseAt: number | null;
  statuses: Record<string, number>;
  runIds: string[];
  unexpected: string[];
}

interface Batch {
  label: string;
  calls: SignedCall[];
  result: Result;
  summary: PhaseSummary;
  /** Answers 202 with a run_id. */
  accepted: number;
  /** 202s per second, from the first call sent to the last answer. */
  acceptedPerSec: number;
  spanMs: number;
}

/** Signs `count` calls (plus a margin for reconnects) for one phase and writes the hooks beside them. */
async function preparePhase(dir: string, webhook: Webhook, label: string, count: number, margin: number) {
  const phaseDir = path.join(dir, label);
  await mkdir(phaseDir, { recursive: true });
  const tag = `${label}-${Date.now().toString(36)}`;
  const calls = Array.from({ length: count + margin }, (_, i) => signCall(webhook, `msg_bench_${tag}_${i}`, bodyOf(i, `msg_bench_${tag}_${i}`)));
  const summaryFile = path.join(phaseDir, 'summary.json');
  await writeFile(path.join(phaseDir, 'pool.json'), JSON.stringify({ expected: count, summaryFile, calls: calls.map((c) => [c.id, c.timestamp, c.signature, c.body]) }));
  await writeFile(path.join(phaseDir, 'hooks.cjs'), HOOKS_MODULE);
  await writeFile(path.join(phaseDir, 'setup-request.cjs'), `module.exports = require('./hooks.cjs').setupRequest;\n`);
  await writeFile(path.join(phaseDir, 'on-response.cjs'), `module.exports = require('./hooks.cjs').onResponse;\n`);
  return { phaseDir, calls, summaryFile };
}

async function readSummary(file: string, waitMs: number): Promise<PhaseSummary> {
  const until = Date.now() + waitMs;
  while (!existsSync(file)) {
    if (Date.now() > until) throw new Error(`the load generator's thread wrote no summary (${file})`);
    await sleep(20);
  }
  return JSON.parse(await readFile(file, 'utf8')) as PhaseSummary;
}

/** One batch of signed calls, every answer awaited. */
async function fireBatch(dir: string, webhook: Webhook, url: string, label: string, count: number, connections: number): Promise<Batch> {
  const prepared = await preparePhase(dir, webhook, label, count, 2 * connections + 32);
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: Math.min(connections, count),
    amount: count,
    timeout: 30,
    // Its own thread, so it does not share an event loop with the server (it shares the cores).
    workers: 1,
    requests: [{ setupRequest: path.join(prepared.phaseDir, 'setup-request.cjs'), onResponse: path.join(prepared.phaseDir, 'on-response.cjs') }],
  });
  const summary = await readSummary(prepared.summaryFile, 5000);
  const spanMs = summary.firstSentAt !== null && summary.lastResponseAt !== null ? summary.lastResponseAt - summary.firstSentAt : result.duration * 1000;
  const accepted = summary.runIds.length;
  return { label, calls: prepared.calls, result, summary, accepted, acceptedPerSec: (1000 * accepted) / Math.max(1, spanMs), spanMs };
}

function describeBatch(b: Batch): string {
  const s = b.summary;
  return (
    `${b.accepted} of ${s.sent} sent accepted (202 with run_id); answers ${JSON.stringify(s.statuses)}, ` +
    `${b.result.errors} errors, ${b.result.timeouts} timeouts${s.exhausted ? `, ${s.exhausted} calls beyond the signed pool` : ''}` +
    (s.unexpected.length ? `; unexpected answers: ${s.unexpected.join(' | ')}` : '')
  );
}

function checkBatch(b: Batch, count: number) {
  const s = b.summary;
  if (b.accepted !== count || s.responses !== count || b.result.errors > 0 || b.result.timeouts > 0 || s.exhausted > 0) {
    throw new Error(`${b.label}: ${count} calls sent, expected as many 202 answers with a run_id: ${describeBatch(b)}`);
  }
  if (new Set(s.runIds).size !== s.runIds.length) throw new Error(`${b.label}: ${s.runIds.length - new Set(s.runIds).size} run_ids answered for more than one call`);
}

// ---------------------------------------------------------------- completion poller

interface Sample {
  at: number;
  completed: number;
  /** Runs that ended otherwise (failed, cancelled, rejected). */
  failed: number;
  total: number;
}

const POLL_SQL = `select count(*) filter (where status = 'completed')::int as completed,
                         count(*) filter (where status in ('failed', 'cancelled', 'rejected'))::int as failed,
                         count(*)::int as total
                    from workflow_runs where workflow_id = $1`;

/** Counts the workflow's runs every POLL_MS on its own connection, keeping every sample. */
function startPoller(client: pg.Client, workflowId: string) {
  const samples: Sample[] = [];
  let stopped = false;
  let failure: unknown = null;
  const loop = (async () => {
    while (!stopped) {
      try {
        const { rows } = await client.query<{ completed: number; failed: number; total: number }>(POLL_SQL, [workflowId]);
        samples.push({ at: now(), ...rows[0] });
      } catch (err) {
        failure = err;
        return;
      }
      await sleep(POLL_MS);
    }
  })();
  return {
    samples,
    /** The first sample with at least `target` completed runs (waits for it). */
    async until(target: number, label: string): Promise<Sample> {
      let lastCompleted = -1;
      let lastProgressAt = now();
      for (;;) {
        if (failure) throw failure;
        const last = samples.at(-1);
        if (last) {
          if (last.completed >= target) return samples.find((s) => s.completed >= target)!;
          if (last.failed > 0) throw new Error(`${label}: ${last.failed} runs ended failed, cancelled or rejected (${last.completed} completed of ${target} expected, ${last.total} runs)`);
          if (last.completed !== lastCompleted) {
            lastCompleted = last.completed;
            lastProgressAt = now();
          } else if (now() - lastProgressAt > STALL_MS) {
            throw new Error(`${label}: no run completed for ${STALL_MS / 1000} s: ${last.completed} completed of ${target} expected, ${last.total} runs`);
          }
        }
        await sleep(POLL_MS / 2);
      }
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** A batch fired and drained: accepted and completed per second, and the main thread's CPU per run. */
async function drainedBatch(o: {
  dir: string; webhook: Webhook; url: string; label: string; count: number; connections: number; pollClient: pg.Client; workflowId: string;
  /** The workflow's runs before the batch. */
  before: number;
}) {
  const cpuBefore = process.threadCpuUsage();
  const poller = startPoller(o.pollClient, o.workflowId);
  let batch: Batch;
  let reached: Sample;
  try {
    batch = await fireBatch(o.dir, o.webhook, o.url, o.label, o.count, o.connections);
    checkBatch(batch, o.count);
    reached = await poller.until(o.before + batch.accepted, `${o.label} drain`);
  } finally {
    await poller.stop();
  }
  const cpuAfter = process.threadCpuUsage();
  const completionMs = reached.at - batch.summary.firstAcceptedAt!;
  return {
    batch,
    completionMs,
    completedPerSec: (1000 * batch.accepted) / completionMs,
    cpuUsPerRun: (cpuAfter.user - cpuBefore.user + cpuAfter.system - cpuBefore.system) / batch.accepted,
  };
}

// ---------------------------------------------------------------- set-up

interface Setup {
  apiKey: string;
  tenantId: string;
  workflowId: string;
  workflowKey: string;
  webhookPath: string;
  secret: string;
}

async function tenantWithWebhookWorkflow(baseUrl: string, db: pg.Client): Promise<Setup> {
  const apiKey = await signUpBenchTenant(baseUrl, 'Bench Webhooks');
  const data = (await deployBenchWorkflow(baseUrl, apiKey, WORKFLOW_NAME, DEFINITION)) as { workflow: { id: string; workflow_key: string }; webhook_url?: unknown; webhook_secret?: unknown };
  if (typeof data.webhook_url !== 'string' || typeof data.webhook_secret !== 'string' || !data.webhook_secret.startsWith('whsec_')) {
    throw new Error(`deploying a webhook workflow answered no webhook_url / webhook_secret (whsec_...): ${JSON.stringify(data).slice(0, 800)}`);
  }
  // The URL is built from APP_URL: only its path is used, against this server.
  const webhookPath = new URL(data.webhook_url).pathname;
  return { apiKey, tenantId: await tenantIdOf(db, apiKey), workflowId: data.workflow.id, workflowKey: data.workflow.workflow_key, webhookPath, secret: data.webhook_secret };
}

async function runCount(db: pg.Client, workflowId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from workflow_runs where workflow_id = $1', [workflowId]);
  return rows[0].n;
}

/** The route's contract on single calls, before any load. Returns the calls it made (one run). */
async function checkRoute(url: string, webhook: Webhook, setup: Setup, db: pg.Client) {
  const id = `msg_bench_check_${Date.now().toString(36)}`;
  const n = 7;
  const first = signCall(webhook, id, bodyOf(n, id));
  const answer = await postWebhook(url, first);
  if (answer.status === 404) throw new Error(`POST ${setup.webhookPath} answered 404: is the webhook route there? ${answer.text.slice(0, 300)}`);
  const runId = acceptedRunId('a signed call', answer);
  const replay = acceptedRunId('the same call again (replay)', await postWebhook(url, first));
  if (replay !== runId) throw new Error(`a replayed webhook-id answered run ${replay}, not the first call's run ${runId}`);
  const resigned = acceptedRunId('the same webhook-id re-signed', await postWebhook(url, signCall(webhook, id, first.body, new Date(Date.now() - 5000))));
  if (resigned !== runId) throw new Error(`the same webhook-id re-signed answered run ${resigned}, not the first call's run ${runId}`);
  const otherSecret = new Webhook(`whsec_${Buffer.from('bench-not-the-workflow-secret-32b').toString('base64')}`);
  const forgedId = `${id}_forged`;
  const forged = await postWebhook(url, signCall(otherSecret, forgedId, bodyOf(8, forgedId)));
  if (forged.status < 400 || forged.status >= 500) throw new Error(`a call signed with another secret answered HTTP ${forged.status} (expected 4xx): ${forged.text.slice(0, 300)}`);

  // The run completes with the transform's output.
  const until = Date.now() + 30_000;
  let run: { status: string; output: unknown } | undefined;
  for (;;) {
    run = (await db.query<{ status: string; output: unknown }>('select status, output from workflow_runs where id = $1', [runId])).rows[0];
    if (run && run.status !== 'running') break;
    if (Date.now() > until) throw new Error(`run ${runId} not finished after 30 s (${run ? run.status : 'no row'}): is the worker draining?`);
    await sleep(50);
  }
  if (run.status !== 'completed' || canonical(run.output) !== canonical(EXPECTED_OUTPUT)) throw new Error(`run ${runId}: expected completed with output ${JSON.stringify(EXPECTED_OUTPUT)}, got ${JSON.stringify(run)}`);
  const { rows: steps } = await db.query<{ step_id: string; status: string; output: unknown }>(
    `select step_id, status, output from run_steps where tenant_id = $1 and run_kind = 'workflow' and run_id = $2 order by index`,
    [setup.tenantId, runId],
  );
  const transform = steps.find((s) => s.step_id === 'x');
  if (steps.map((s) => s.step_id).join() !== STEP_IDS.join() || steps.some((s) => s.status !== 'completed') || canonical(transform?.output) !== canonical({ x: n })) {
    throw new Error(`run ${runId}: expected steps ${STEP_IDS.join(', ')} completed, x with output {"x": ${n}}; stored ${JSON.stringify(steps)}`);
  }
  const runs = await runCount(db, setup.workflowId);
  if (runs !== 1) throw new Error(`after one call, two replays and a forged call the workflow has ${runs} runs (expected 1)`);
  return { runId, forgedStatus: forged.status };
}

// ---------------------------------------------------------------- stored rows

async function storedCounts(db: pg.Client, setup: Setup, batchRunIds: string[]) {
  const q = async <T extends pg.QueryResultRow>(sql: string, params: unknown[]) => (await db.query<T>(sql, params)).rows;
  const byStatus = await q<{ status: string; steps_done: number; output: string; n: number }>(
    'select status, steps_done, output::text as output, count(*)::int as n from workflow_runs where workflow_id = $1 group by 1, 2, 3 order by 4 desc',
    [setup.workflowId],
  );
  // Each call's body carries a unique `ref` (its webhook-id): a body stored twice is a duplicate run.
  const [refs] = await q<{ runs: number; distinct_refs: number; without_ref: number }>(
    `select count(*)::int as runs, count(distinct ref)::int as distinct_refs, count(*) filter (where ref is null)::int as without_ref
       from (select jsonb_path_query_first(input, '$.**.ref') #>> '{}' as ref from workflow_runs where workflow_id = $1) r`,
    [setup.workflowId],
  );
  const stepShapes = await q<{ shape: string; n: number }>(
    `select coalesce(s.shape, '(none)') as shape, count(*)::int as n
       from workflow_runs r
       left join (select run_id, string_agg(step_id || ':' || status, ',' order by index) as shape
                    from run_steps where tenant_id = $2 and run_kind = 'workflow' group by run_id) s on s.run_id = r.id
      where r.workflow_id = $1 group by 1 order by 2 desc`,
    [setup.workflowId, setup.tenantId],
  );
  const [batch] = await q<{ found: number; completed: number; first_started: Date | null; last_completed: Date | null }>(
    `select count(*)::int as found, count(*) filter (where status = 'completed')::int as completed,
            min(started_at) as first_started, max(completed_at) as last_completed
       from workflow_runs where workflow_id = $1 and id = any($2::uuid[])`,
    [setup.workflowId, batchRunIds],
  );
  return {
    runs: refs.runs,
    byStatus: byStatus.map((r) => ({ status: r.status, stepsDone: r.steps_done, output: r.output, runs: r.n })),
    distinctBodies: refs.distinct_refs,
    runsWithoutRef: refs.without_ref,
    runStepShapes: Object.fromEntries(stepShapes.map((r) => [r.shape, r.n])),
    batch: { acceptedRunIdsFound: batch.found, acceptedRunIdsCompleted: batch.completed, firstStartedAt: batch.first_started, lastCompletedAt: batch.last_completed },
  };
}

// ---------------------------------------------------------------- the benchmark

/** The sampled self time per accepted-and-completed run: packages, then the heaviest functions. */
function printProfile(profile: CpuProfileSummary, runs: number) {
  const per = (ms: number) => `${fmt((1000 * ms) / runs, 0)} us`;
  console.log(`main-thread profile (sampled, self time per run): busy ${per(profile.busyMs)}`);
  for (const b of profile.packages.slice(0, 14)) console.log(`  ${per(b.ms).padStart(8)}  ${b.name}`);
  console.log('  heaviest functions:');
  for (const f of profile.functions.slice(0, 25)) console.log(`  ${per(f.ms).padStart(8)}  ${f.name}`);
}

export async function runWebhooksBench(adminUrl: string, cleanup: Cleanup, settings: WebhooksSettings) {
  const serverSource = await sourceHash();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-bench-webhooks-'));
  cleanup.add('webhook hooks folder', () => rm(dir, { recursive: true, force: true }));

  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    WORKER: '1',
    ...(settings.workerConcurrency === undefined ? {} : { WORKER_CONCURRENCY: String(settings.workerConcurrency) }),
    DB_POOL_MAX: String(settings.poolMax),
  });
  console.log(`starting Liya (WORKER on, WORKER_CONCURRENCY=${config.WORKER_CONCURRENCY}, LOG_LEVEL=silent) ...`);
  const liya = await startServer({ config, databaseUrl });
  cleanup.add('liya server', () => liya.close());
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());
  const pollClient = new pg.Client({ connectionString: databaseUrl });
  await pollClient.connect();
  cleanup.add('bench poll client', () => pollClient.end());

  const setup = await tenantWithWebhookWorkflow(liya.url, db);
  const webhook = new Webhook(setup.secret);
  const url = `${liya.url}${setup.webhookPath}`;
  console.log(`workflow ${setup.workflowKey} deployed, webhook ${setup.webhookPath}`);

  const check = await checkRoute(url, webhook, setup, db);
  console.log(
    `verified: a signed call answers 202 with a run_id; the same webhook-id again (as sent, and re-signed) answers the same run_id; another secret's signature answers ${check.forgedStatus};` +
      ` the run completed through ${STEP_IDS.join(' > ')} with output ${JSON.stringify(EXPECTED_OUTPUT)}; 1 run stored`,
  );

  // The baseline (workflow-baseline-server.ts): its own tenant and webhook workflow, the same checks.
  const baseSetup = await tenantWithWebhookWorkflow(liya.url, db);
  const [{ live_version: baseVersion }] = (await db.query<{ live_version: number }>('select live_version from workflows where id = $1', [baseSetup.workflowId])).rows;
  const baseline = await startWebhookBaselineServer({
    url: databaseUrl, poolMax: Math.max(2, Math.ceil(settings.poolMax / 2)), tenantId: baseSetup.tenantId, workflowId: baseSetup.workflowId, version: baseVersion, secret: baseSetup.secret,
  });
  cleanup.add('webhook baseline server', () => baseline.close());
  const baseWebhook = new Webhook(baseSetup.secret);
  const baseUrl = `${baseline.url}/webhooks/baseline`;
  const baseCheck = await checkRoute(baseUrl, baseWebhook, baseSetup, db);
  console.log(`baseline (node:http + pg) verified the same way (forged: ${baseCheck.forgedStatus})`);

  const c = settings.connections;
  const analyze = () => db.query('analyze');

  // The HTTP floor: an authenticated cheap route of the same server, nothing queued.
  await analyze();
  console.log(`HTTP floor, GET /v1/workflows (API key), ${c} connections: warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
  const floor = await measure({
    url: `${liya.url}/v1/workflows`,
    headers: { authorization: `Bearer ${setup.apiKey}` },
    connections: c,
    warmupSeconds: settings.warmupSeconds,
    durationSeconds: settings.durationSeconds,
  });
  checkRun('GET /v1/workflows', floor.warmup);
  checkRun('GET /v1/workflows', floor.figures);
  console.log(`${''.padEnd(6)} ${fmt(floor.figures.reqPerSec)} req/s, p50 ${floor.figures.latencyP50Ms} ms, p99 ${floor.figures.latencyP99Ms} ms`);

  // Warm-up batch: discarded, then drained so the measured batch starts with no backlog.
  console.log(`warm-up batch: ${settings.warmupCalls} signed calls, ${c} connections, then drained ...`);
  let expectedRuns = 1;
  const warmPoller = startPoller(pollClient, setup.workflowId);
  let warm: Batch;
  try {
    warm = await fireBatch(dir, webhook, url, 'warmup', settings.warmupCalls, c);
    checkBatch(warm, settings.warmupCalls);
    expectedRuns += warm.accepted;
    await warmPoller.until(expectedRuns, 'warm-up drain');
  } finally {
    await warmPoller.stop();
  }
  console.log(`${''.padEnd(6)} ${fmt(warm.acceptedPerSec)} accepted/s; drained`);
  console.log(`baseline warm-up batch: ${settings.warmupCalls} signed calls, ${c} connections, then drained ...`);
  const baseWarm = await drainedBatch({ dir, webhook: baseWebhook, url: baseUrl, label: 'baseline-warmup', count: settings.warmupCalls, connections: c, pollClient, workflowId: baseSetup.workflowId, before: 1 });
  console.log(`${''.padEnd(6)} ${fmt(baseWarm.batch.acceptedPerSec)} accepted/s; drained`);

  const calls = settings.calls ?? Math.min(MAX_CALLS, Math.max(MIN_CALLS, Math.round((warm.acceptedPerSec * settings.durationSeconds) / 100) * 100));
  await analyze();
  const base = await runCount(db, setup.workflowId);
  if (base !== expectedRuns) throw new Error(`before the measured batch the workflow has ${base} runs, expected ${expectedRuns}`);

  // The measured batch: signed calls as fast as the server answers, the worker draining meanwhile.
  console.log(
    `measured batch: ${calls} signed calls${settings.calls === undefined ? ` (the warm-up's rate x ${settings.durationSeconds}s)` : ''}, ${c} connections, then until the last run completed ...`,
  );
  const cpuBefore = process.threadCpuUsage();
  // BENCH_WEBHOOK_PROFILE=1: the main thread (HTTP and the runs) sampled through the measured batch.
  const profiler = process.env.BENCH_WEBHOOK_PROFILE === '1' ? await startCpuProfile() : null;
  const poller = startPoller(pollClient, setup.workflowId);
  let batch: Batch;
  let reached: Sample;
  try {
    batch = await fireBatch(dir, webhook, url, 'measured', calls, c);
    checkBatch(batch, calls);
    expectedRuns += batch.accepted;
    reached = await poller.until(expectedRuns, 'measured batch drain');
  } finally {
    await poller.stop();
  }
  const cpuAfter = process.threadCpuUsage();
  const profile: CpuProfileSummary | null = profiler ? await profiler.stop() : null;
  if (profile) printProfile(profile, calls);
  const s = batch.summary;
  const firstAcceptedAt = s.firstAcceptedAt!;
  const lastAnswerAt = s.lastResponseAt!;
  const completionMs = reached.at - firstAcceptedAt;
  const completedPerSec = (1000 * batch.accepted) / completionMs;
  // Completed when the last call was answered: the last sample taken before it.
  const atLastAnswer = [...poller.samples].reverse().find((x) => x.at <= lastAnswerAt);
  const completedDuringLoad = atLastAnswer ? atLastAnswer.completed - base : 0;
  const serverCpuUsPerRun = (cpuAfter.user - cpuBefore.user + cpuAfter.system - cpuBefore.system) / batch.accepted;
  console.log(`${''.padEnd(6)} ${fmt(batch.acceptedPerSec)} accepted/s, ${fmt(completedPerSec)} completed runs/s`);

  // The baseline's measured batch: as many calls, right after.
  await analyze();
  console.log(`baseline measured batch: ${calls} signed calls, ${c} connections, then until the last run completed ...`);
  const baseStatementsBefore = baseline.statements();
  const baseRun = await drainedBatch({ dir, webhook: baseWebhook, url: baseUrl, label: 'baseline-measured', count: calls, connections: c, pollClient, workflowId: baseSetup.workflowId, before: 1 + baseWarm.batch.accepted });
  const baseStatementsPerRun = (baseline.statements() - baseStatementsBefore) / baseRun.batch.accepted;
  console.log(`${''.padEnd(6)} ${fmt(baseRun.batch.acceptedPerSec)} accepted/s, ${fmt(baseRun.completedPerSec)} completed runs/s`);
  const baseStored = await storedCounts(db, baseSetup, baseRun.batch.summary.runIds);
  const baseExpectedRuns = 1 + baseWarm.batch.accepted + baseRun.batch.accepted;
  const baseVerified =
    baseStored.runs === baseExpectedRuns && baseStored.byStatus.length === 1 && baseStored.byStatus[0].status === 'completed' &&
    baseStored.runStepShapes[STEP_IDS.map((id) => `${id}:completed`).join(',')] === baseExpectedRuns && baseStored.distinctBodies === baseExpectedRuns &&
    baseStored.batch.acceptedRunIdsCompleted === baseRun.batch.accepted;

  // A replayed webhook-id of the batch: answered with its run, no second run.
  const replayed = batch.calls[0];
  const replayRunId = acceptedRunId('a replayed webhook-id of the batch', await postWebhook(url, signCall(webhook, replayed.id, replayed.body)));
  const acceptedSet = new Set(s.runIds);
  await sleep(500); // a second run, if one was started, has its row by now
  const { rows: replayRows } = await db.query<{ id: string }>(`select id from workflow_runs where workflow_id = $1 and jsonb_path_query_first(input, '$.**.ref') #>> '{}' = $2`, [
    setup.workflowId,
    replayed.id,
  ]);
  const stored = await storedCounts(db, setup, s.runIds);
  const listed = await callJson(liya.url, 'GET', `/v1/workflows/${setup.workflowKey}/runs?status=completed&pageSize=1`, { authorization: `Bearer ${setup.apiKey}` });
  const listedCompleted = typeof listed.body?.data?.pagination?.total === 'number' ? (listed.body.data.pagination.total as number) : null;

  const expectedShape = STEP_IDS.map((id) => `${id}:completed`).join(',');
  const onlyGroup = stored.byStatus.length === 1 ? stored.byStatus[0] : null;
  const checks = {
    oneRunPerAcceptedCall: stored.runs === expectedRuns,
    everyRunCompletedWithOutput: onlyGroup !== null && onlyGroup.status === 'completed' && canonical(JSON.parse(onlyGroup.output)) === canonical(EXPECTED_OUTPUT),
    threeCompletedStepsPerRun: stored.runStepShapes[expectedShape] === stored.runs,
    noBodyStoredTwice: stored.runsWithoutRef === 0 && stored.distinctBodies === stored.runs,
    everyAcceptedRunIdStoredAndCompleted: stored.batch.acceptedRunIdsFound === acceptedSet.size && stored.batch.acceptedRunIdsCompleted === acceptedSet.size && acceptedSet.size === batch.accepted,
    replayAnsweredItsRun: acceptedSet.has(replayRunId) && replayRows.length === 1 && replayRows[0].id === replayRunId,
    replayCreatedNoRun: replayRows.length === 1 && stored.runs === expectedRuns,
    listedCompletedMatches: listedCompleted === stored.runs,
  };
  const verified = Object.values(checks).every(Boolean);
  const dbSpanMs = stored.batch.firstStartedAt && stored.batch.lastCompletedAt ? stored.batch.lastCompletedAt.getTime() - stored.batch.firstStartedAt.getTime() : null;

  // ------------------------------------------------------------ report
  const acceptedPass = batch.acceptedPerSec >= TARGETS.minAcceptedPerSec;
  const completedPass = completedPerSec >= TARGETS.minCompletedPerSec;
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  const r = batch.result;
  const note =
    `the load generator (1 autocannon worker thread), PostgreSQL and the server with its job worker (one main thread) share this machine's ${os.cpus().length} cores;` +
    ' figures are for this machine under these conditions, not capacity';

  console.log('');
  console.log(`server source (server/ + db/) sha256 ${serverSource}`);
  console.log(
    `POST ${setup.webhookPath.replace(/[^/]+$/, '<slug>')}, Standard Webhooks signature, 3 steps (trigger webhook, transform, end), no model call;` +
      ` job worker in the same process (WORKER_CONCURRENCY ${config.WORKER_CONCURRENCY}), pool ${settings.poolMax}, ${c} connections; completion polled every ${POLL_MS} ms`,
  );
  console.log(
    table(
      ['', 'conns', 'calls', 'per s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'seconds', 'non-2xx'],
      [
        ['HTTP floor: GET /v1/workflows (API key)', c, floor.figures.totalRequests, fmt(floor.figures.reqPerSec), floor.figures.latencyP50Ms, floor.figures.latencyP90Ms, floor.figures.latencyP99Ms, floor.figures.latencyMaxMs, fmt(floor.figures.durationSeconds, 1), floor.figures.non2xx],
        ['webhook calls accepted (202)', c, batch.accepted, fmt(batch.acceptedPerSec), r.latency.p50, r.latency.p90, r.latency.p99, r.latency.max, fmt(batch.spanMs / 1000, 2), r.non2xx],
        ['runs completed (first 202 > last completed)', '-', batch.accepted, fmt(completedPerSec), '-', '-', '-', '-', fmt(completionMs / 1000, 2), '-'],
        ['baseline (node:http + pg): calls accepted', c, baseRun.batch.accepted, fmt(baseRun.batch.acceptedPerSec), baseRun.batch.result.latency.p50, baseRun.batch.result.latency.p90, baseRun.batch.result.latency.p99, baseRun.batch.result.latency.max, fmt(baseRun.batch.spanMs / 1000, 2), baseRun.batch.result.non2xx],
        ['baseline: runs completed', '-', baseRun.batch.accepted, fmt(baseRun.completedPerSec), '-', '-', '-', '-', fmt(baseRun.completionMs / 1000, 2), '-'],
      ],
    ),
  );
  console.log(
    `(accepted/s: 202s from the first call sent to the last answer; latencies from autocannon, 1 ms resolution; warm-up batch ${warm.accepted} calls at ${fmt(warm.acceptedPerSec)} accepted/s, discarded)`,
  );
  console.log(
    `completed while calls came in: ${completedDuringLoad} of ${batch.accepted}; the last run completed ${fmt(Math.max(0, reached.at - lastAnswerAt) / 1000, 2)} s after the last 202;` +
      ` database timestamps (first run started > last completed): ${dbSpanMs === null ? '-' : `${fmt(dbSpanMs / 1000, 2)} s, ${fmt((1000 * batch.accepted) / dbSpanMs)} runs/s`};` +
      ` server main thread (HTTP + worker) ${fmt(serverCpuUsPerRun, 0)} us CPU per run`,
  );
  console.log(`webhook accepted/s / HTTP floor req/s: ${fmt(batch.acceptedPerSec / floor.figures.reqPerSec, 2)}`);
  console.log(
    `baseline (same run, after Liya's batch): main thread ${fmt(baseRun.cpuUsPerRun, 0)} us CPU per accepted-and-completed run against Liya's ${fmt(serverCpuUsPerRun, 0)} us;` +
      ` ${fmt(baseStatementsPerRun, 2)} statements per run; Liya / baseline: accepted ${fmt(batch.acceptedPerSec / baseRun.batch.acceptedPerSec, 2)}, completed ${fmt(completedPerSec / baseRun.completedPerSec, 2)};` +
      ` baseline rows ${baseVerified ? 'OK' : `MISMATCH ${JSON.stringify(baseStored)}`}`,
  );
  console.log('');
  console.log(`target: at least ${TARGETS.minAcceptedPerSec} accepted calls/s: ${fmt(batch.acceptedPerSec)}  ${verdict(acceptedPass)}`);
  console.log(`target: at least ${TARGETS.minCompletedPerSec} completed runs/s: ${fmt(completedPerSec)}  ${verdict(completedPass)}`);
  console.log(`for context: ${N8N_CONTEXT}`);
  console.log('');
  console.log(
    `stored: ${stored.runs} runs for ${expectedRuns} accepted calls (1 check, ${warm.accepted} warm-up, ${batch.accepted} measured), by status/steps/output ${JSON.stringify(stored.byStatus)};` +
      ` run_steps per run ${JSON.stringify(stored.runStepShapes)}; ${stored.distinctBodies} distinct bodies (${stored.runsWithoutRef} runs without the body's ref);` +
      ` accepted run_ids found ${stored.batch.acceptedRunIdsFound}, completed ${stored.batch.acceptedRunIdsCompleted}; replayed webhook-id answered ${replayRunId} (runs with its body: ${replayRows.length});` +
      ` GET runs?status=completed total ${listedCompleted ?? '-'}` +
      `  ${verified ? 'OK' : `MISMATCH ${JSON.stringify(checks)}`}`,
  );
  console.log('');
  console.log(`note: ${note}`);

  const results = {
    benchmark: 'webhooks',
    route: 'POST /webhooks/workflows/<slug> (signed, Standard Webhooks), 3 steps: trigger webhook, transform, end; no model call; job worker in the same process',
    date: new Date().toISOString(),
    environment: { database: benchDatabase(), serverSourceHash: serverSource, node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverage: os.loadavg(), note },
    settings: { ...settings, calls, workerConcurrencyEffective: config.WORKER_CONCURRENCY, pollMs: POLL_MS, logLevel: 'silent', loadGeneratorWorkers: 1 },
    definition: DEFINITION,
    httpFloor: { route: 'GET /v1/workflows (API key)', connections: c, ...floor.figures },
    warmup: { calls: settings.warmupCalls, accepted: warm.accepted, acceptedPerSec: warm.acceptedPerSec },
    batch: {
      calls,
      accepted: batch.accepted,
      acceptedPerSec: batch.acceptedPerSec,
      acceptSpanMs: batch.spanMs,
      latency: { p50Ms: r.latency.p50, p90Ms: r.latency.p90, p99Ms: r.latency.p99, maxMs: r.latency.max, avgMs: r.latency.average },
      statuses: s.statuses,
      completedPerSec,
      completionSpanMs: completionMs,
      completedWhileCallsCameIn: completedDuringLoad,
      drainAfterLastAnswerMs: Math.max(0, reached.at - lastAnswerAt),
      databaseSpanMs: dbSpanMs,
      serverCpuUsPerRun,
    },
    baseline: {
      server: 'node:http + pg (test/bench/workflow-baseline-server.ts): signature verified, webhook-id claimed, run and trigger step in one synchronous statement before the 202, then each step stored (asynchronous commit) before the next',
      calls,
      accepted: baseRun.batch.accepted,
      acceptedPerSec: baseRun.batch.acceptedPerSec,
      latency: { p50Ms: baseRun.batch.result.latency.p50, p90Ms: baseRun.batch.result.latency.p90, p99Ms: baseRun.batch.result.latency.p99, maxMs: baseRun.batch.result.latency.max },
      completedPerSec: baseRun.completedPerSec,
      completionSpanMs: baseRun.completionMs,
      serverCpuUsPerRun: baseRun.cpuUsPerRun,
      statementsPerRun: baseStatementsPerRun,
      stored: baseStored,
      verified: baseVerified,
    },
    verification: { route: check, stored, checks, verified },
    targets: {
      acceptedPerSec: { min: TARGETS.minAcceptedPerSec, measured: batch.acceptedPerSec, pass: acceptedPass },
      completedPerSec: { min: TARGETS.minCompletedPerSec, measured: completedPerSec, pass: completedPass },
    },
    context: N8N_CONTEXT,
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  if (!verified) throw new Error(`webhooks: stored runs do not match the accepted calls: ${JSON.stringify(checks)}`);
  if (!baseVerified) throw new Error(`webhooks: the baseline's stored runs do not match its accepted calls: ${JSON.stringify(baseStored)}`);
  return results;
}
