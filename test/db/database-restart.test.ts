// The server rides out a restart of its database. A `liya start` child process runs on a
// PostgreSQL of this test's own (never the one the other test files share), with signed webhooks
// arriving ten a second into two workflows whose http_request step takes ~200 ms at a local
// recorder: one the accepting process runs itself, one that waits 1 s first so the rest of its
// run is a job. So steps, step writes, jobs and their completions are in flight when PostgreSQL
// goes away. Two outages: a stop, 2 s, start; then `pg_ctl restart -m fast`.
//
// Checked each time: the process stays up (same pid, never exits); a delivery the server cannot
// take, and an authenticated REST call, answer 503 DATABASE_UNAVAILABLE with Retry-After, never a
// 500; /health/ready answers 503 during the outage and 200 afterwards without a restart of the
// process; each delivery refused with 503 is sent again (as a sender honouring Retry-After would)
// and accepted; and every accepted delivery ends with exactly one completed run (one row per
// webhook message, counted in workflow_runs), whose step reached the recorder with one
// Idempotency-Key. A step whose result could not be stored because of the outage runs again after
// it, under the same key, so a receiver that honours the key sees the call once.
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../db/embedded.js';
import { applyMigrations, ensureDatabase, openOrm } from '../../db/orm.js';
import { loadConfig } from '../../server/config.js';
import type { AppDeps } from '../../server/deps.js';
import { migrateJobSchema } from '../../worker/runner.js';
import { bearer } from '../support/client.js';
import { uniqueEmail } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { ADMIN_SECRET } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { pgCtl as pgCtlIn } from '../support/pg-ctl.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow } from '../support/workflows.js';


const HEARTBEAT_MS = 500;
/** Webhook deliveries a second while the database goes away and comes back. */
const RATE_PER_S = 10;
/** How long the recorder takes to answer a step's request. */
const STEP_MS = 200;
const OUTAGE_MS = 2000;

let dir: string;
let dataDir: string;
let pgPort: number;
let embedded: EmbeddedPostgres | null = null;
let databaseUrl: string;
let pool: pg.Pool;
let proc: ServerProcess;
let exitedAt: number | null = null;
let apiKey: string;

/**
 * A webhook workflow of the load. `direct`: trigger > call > done, executed by the process that
 * accepted the delivery; `delayed`: a 1 s delay before the call, so the rest of the run is a job
 * of the job runner (its completion written to graphile-worker's tables when it ends).
 */
interface Flow {
  name: 'direct' | 'delayed';
  path: string;
  secret: string;
  /** The step rows of a completed run. */
  stepRows: number;
  /** The Idempotency-Key of the run's call. */
  callKey(runId: string): string;
}
const flows: Flow[] = [];
let recorder: http.Server;
let recorderUrl: string;

const sql = async <T extends pg.QueryResultRow = any>(text: string, params: unknown[] = []) => (await pool.query<T>(text, params)).rows;

// ---- The database's own server ---------------------------------------------------------------------

const pgCtl = (args: string[]) => pgCtlIn(dataDir, args);

async function startPostgres() {
  embedded = await startEmbeddedPostgres({ dataDir, port: pgPort });
}

// ---- The remote side of the http_request step ---------------------------------------------------------

interface Hit {
  key: string;
  n: number;
}
const hits: Hit[] = [];

async function startRecorder() {
  recorder = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      let n = -1;
      try {
        n = Number(JSON.parse(text).n);
      } catch {
        // counted with n = -1
      }
      hits.push({ key: String(req.headers['idempotency-key'] ?? ''), n });
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ n }));
      }, STEP_MS);
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
}

// ---- Deliveries --------------------------------------------------------------------------------------

interface Answer {
  status: number;
  /** Connection refused or reset: the process did not answer. */
  error?: string;
  retryAfter: string | null;
  code: string | null;
  runId: string | null;
  at: number;
}

interface Delivery {
  flow: Flow;
  n: number;
  id: string;
  body: string;
  answers: Answer[];
}

/** Deliveries answered before the outage begins and after it ends, at least. */
const LOAD_AROUND_OUTAGE = 10;
const deliveries: Delivery[] = [];
let nextN = 0;

async function send(delivery: Delivery): Promise<Answer> {
  const at = new Date();
  const headers = {
    'webhook-id': delivery.id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(delivery.flow.secret).sign(delivery.id, at, delivery.body),
  };
  let answer: Answer;
  try {
    const res = await proc.api.post(delivery.flow.path, undefined, { raw: delivery.body, contentType: 'application/json', headers });
    answer = { status: res.status, retryAfter: res.headers.get('retry-after'), code: res.body?.error?.code ?? null, runId: res.body?.data?.run_id ?? null, at: Date.now() };
  } catch (err) {
    answer = { status: 0, error: (err as Error).message, retryAfter: null, code: null, runId: null, at: Date.now() };
  }
  delivery.answers.push(answer);
  return answer;
}

/** Sends new deliveries RATE_PER_S a second (without waiting for answers) until stopped. */
function startLoad() {
  const pending: Promise<unknown>[] = [];
  const timer = setInterval(() => {
    const n = nextN++;
    const delivery: Delivery = { flow: flows[n % flows.length], n, id: `msg_restart_${n}_${Date.now()}`, body: JSON.stringify({ n }), answers: [] };
    deliveries.push(delivery);
    pending.push(send(delivery));
  }, 1000 / RATE_PER_S);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
    },
  };
}

interface Probe {
  status: number;
  code: string | null;
  retryAfter: string | null;
  sentAt: number;
  at: number;
}

/**
 * Every 100 ms until stopped: /health/ready, and an authenticated REST route (a tRPC procedure,
 * whose errors take the other way to the envelope than the webhook route's).
 */
function watchProbes() {
  const ready: Probe[] = [];
  const api: Probe[] = [];
  let stopped = false;
  const probe = async (into: Probe[], path: string, headers?: Record<string, string>) => {
    const sentAt = Date.now();
    const res = await proc.api.get(path, headers ? { headers } : undefined).catch(() => null);
    into.push({ status: res?.status ?? 0, code: res?.body?.error?.code ?? null, retryAfter: res?.headers.get('retry-after') ?? null, sentAt, at: Date.now() });
  };
  const loop = (async () => {
    while (!stopped) {
      await Promise.all([probe(ready, '/health/ready'), probe(api, '/v1/workflows?pageSize=1', bearer(apiKey))]);
      // Sleep: paces the probe loop (about ten rounds a second, as a monitor would ask); not a wait for a condition.
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { ready, api };
    },
  };
}

const readyNow = () => proc.api.get('/health/ready').then((res) => res.status, () => 0);

const describeProc = () => `--- liya start (pid ${proc.child.pid}, ${proc.child.exitCode ?? proc.child.signalCode ?? 'running'})\n${proc.output.slice(-6000)}`;

async function poll<T>(probe: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 30_000): Promise<T> {
  try {
    return await waitFor(probe, what, timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${describeProc()}`);
  }
}

// ---- Set-up --------------------------------------------------------------------------------------------

beforeAll(async () => {
  await startRecorder();
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-restart-'));
  dataDir = path.join(dir, 'pg');
  pgPort = await freePort();
  await startPostgres();
  // Migrated as the shared test database is, so the process starts as fast as in the other tests.
  await ensureDatabase(embedded!.url(), 'liya');
  databaseUrl = embedded!.url('liya');
  const orm = await openOrm({ url: databaseUrl, quiet: true });
  await applyMigrations(orm);
  await orm.close(true);
  pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  // This pool lives through the restarts too.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  await migrateJobSchema(pool, { log: pino({ level: 'silent' }), config: loadConfig({}) } as unknown as AppDeps);

  proc = await startServerProcess(
    'liya start',
    {
      LOG_LEVEL: 'info', DATABASE_URL: databaseUrl, ADMIN_SECRET, WORKER: '1', WORKER_CONCURRENCY: '4', DB_POOL_MAX: '6', HEARTBEAT_MS: String(HEARTBEAT_MS),
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    },
    (output) => output.includes('job runner started'),
  );
  proc.child.once('exit', () => (exitedAt = Date.now()));
  const signup = await proc.api.post('/auth/signup', { companyName: 'Restart Co', email: uniqueEmail('restart'), password: 'restart test password' });
  expect(signup.status, signup.text).toBe(201);
  apiKey = signup.body.data.apiKey;
  const call = { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${recorderUrl}/step`, body: { n: '{{trigger.n}}' } } };
  const done = { id: 'done', step_type: 'end', config: { output: { n: '{{trigger.n}}', answered: '{{steps.call.output.body.n}}' } } };
  const definitions = {
    direct: [{ id: 'in', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, call, done],
    delayed: [{ id: 'in', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'pause', step_type: 'delay', config: { seconds: 1 } }, call, done],
  };
  for (const name of ['direct', 'delayed'] as const) {
    const wf = await createWorkflow(proc.api, apiKey, `Ride out the database (${name})`, definitions[name]);
    expect(wf.webhook_secret).toMatch(/^whsec_/);
    const detail = await proc.api.get(`/v1/workflows/${wf.workflow_key}`, { headers: bearer(apiKey) });
    expect(detail.status, detail.text).toBe(200);
    flows.push({
      name,
      path: `/webhooks/workflows/${detail.body.data.workflow.trigger_config.slug}`,
      secret: wf.webhook_secret!,
      // The delay step stores a row when it starts waiting and one when it goes on.
      stepRows: name === 'direct' ? 3 : 5,
      callKey: (runId) => `${runId}:call:${name === 'direct' ? 1 : 3}`,
    });
  }
}, 120_000);

afterAll(async () => {
  await stopServerProcess(proc);
  await pool?.end().catch(() => undefined);
  recorder?.closeAllConnections();
  await new Promise((resolve) => recorder?.close(resolve));
  await embedded?.stop();
  // A restart by pg_ctl leaves a server the handle does not know: stop whatever runs in the folder.
  if (dataDir) await pgCtl(['stop', '-m', 'immediate']).catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

// ---- The scenarios ----------------------------------------------------------------------------------------

/**
 * Load before, during and after `outage`; then the checks every outage shares. `mustRefuse`: the
 * outage is long enough that some deliveries and readiness probes surely meet it. Answers the
 * deliveries sent.
 */
async function rideOut(outage: () => Promise<{ downAt: number; upAt: number }>, mustRefuse: boolean) {
  const pid = proc.child.pid;
  const first = deliveries.length;
  const probes = watchProbes();
  const load = startLoad();
  // Load before the outage: deliveries answered while the database is up.
  await poll(async () => deliveries.slice(first).filter((d) => d.answers.length > 0).length >= LOAD_AROUND_OUTAGE, 'deliveries answered before the outage');
  const { downAt, upAt } = await outage();
  // And after it: deliveries sent once the database is back, answered.
  const afterUp = deliveries.length;
  await poll(async () => deliveries.slice(afterUp).filter((d) => d.answers.length > 0).length >= LOAD_AROUND_OUTAGE, 'deliveries answered after the outage');
  await load.stop();
  // Ready again without a restart of the process.
  await poll(async () => (await readyNow()) === 200, '/health/ready to answer 200 after the outage');
  const { ready: readySeen, api: apiSeen } = await probes.stop();
  const mine = deliveries.slice(first);

  expect(exitedAt, `the process exited\n${describeProc()}`).toBeNull();
  expect(proc.child.pid).toBe(pid);

  // Every answer is an acceptance or a 503 the sender can act on; never a 500, never no answer.
  const firstAnswers = mine.map((d) => d.answers[0]);
  const refusal = '503 DATABASE_UNAVAILABLE retry-after';
  const shapes = firstAnswers.map((a) => (a.status === 202 ? '202' : `${a.status} ${a.code}${a.retryAfter !== null && Number(a.retryAfter) >= 1 ? ' retry-after' : ''}${a.error ? ` ${a.error}` : ''}`));
  expect.soft([...new Set(shapes)].filter((s) => s !== '202' && s !== refusal), `answers other than 202 and ${refusal}\n${describeProc()}`).toEqual([]);
  expect.soft(shapes.filter((s) => s === '202').length, 'deliveries accepted around the outage').toBeGreaterThan(10);
  if (mustRefuse) expect.soft(shapes.filter((s) => s === refusal).length, 'deliveries refused during the outage').toBeGreaterThan(0);

  // The REST route: served, or refused the same way.
  const apiShapes = [...new Set(apiSeen.map((a) => `${a.status} ${a.code ?? ''}${a.status === 503 && Number(a.retryAfter) >= 1 ? ' retry-after' : ''}`.trim()))];
  expect.soft(apiShapes.filter((s) => s !== '200' && s !== refusal), `REST answers other than 200 and ${refusal}`).toEqual([]);
  if (mustRefuse) expect.soft(apiShapes, 'REST answers during the outage').toContain(refusal);
  expect.soft(apiSeen.at(-1)?.status).toBe(200);

  // The probe saw the outage (when it lasted long enough to be seen for sure) and the way back.
  if (mustRefuse) {
    const during = readySeen.filter((s) => s.sentAt > downAt && s.at < upAt);
    expect.soft(during.length).toBeGreaterThan(0);
    expect.soft([...new Set(during.map((s) => s.status))], 'readiness during the outage').toEqual([503]);
  }
  expect.soft(readySeen.at(-1)!.status).toBe(200);

  // The sender delivers the refused ones again after Retry-After: all are accepted now.
  for (const d of mine.filter((x) => x.answers[0].status !== 202)) {
    const again = await send(d);
    expect(again.status, JSON.stringify(again)).toBe(202);
  }
  return mine;
}

/** Every delivery so far: accepted once, one run each, completed once, its step's call under one key. */
async function expectEveryDeliveryCompletedOnce(mine: Delivery[]) {
  const runIds = mine.map((d) => d.answers.find((a) => a.status === 202)!.runId!);
  expect(runIds.every((id) => typeof id === 'string')).toBe(true);
  await poll(
    async () => {
      const [row] = await sql<{ open: number }>(`select count(*)::int as open from workflow_runs where id = any($1::uuid[]) and status <> 'completed'`, [runIds]).catch(() => [{ open: -1 }]);
      return row.open === 0;
    },
    `the ${runIds.length} runs of the deliveries to complete`,
    45_000,
  ).catch(async (err: Error) => {
    const open = await sql(`select id::text, status, owner_id, steps_done, next_step_id, error from workflow_runs where id = any($1::uuid[]) and status <> 'completed'`, [runIds]);
    const jobs = await sql(`select key, attempts, locked_by, run_at, last_error from graphile_worker._private_jobs`);
    throw new Error(`${err.message}\nopen runs: ${JSON.stringify(open)}\njobs: ${JSON.stringify(jobs)}`);
  });

  const ns = mine.map((d) => d.n);
  const rows = await sql<{ n: number; runs: number; ids: string[]; statuses: string[]; outputs: unknown[]; steps: number[] }>(
    `select (input->>'n')::int as n, count(*)::int as runs, array_agg(id::text) as ids, array_agg(status) as statuses, array_agg(output) as outputs,
            array_agg((select count(*)::int from run_steps s where s.run_kind = 'workflow' and s.run_id = r.id)) as steps
       from workflow_runs r where (input->>'n')::int = any($1::int[]) group by 1 order by 1`,
    [ns],
  );
  // One run per delivery, the one its 202 named (a redelivery answered the same run), completed with the step's answer.
  expect(rows.map((r) => [r.n, r.runs, r.statuses, r.outputs, r.steps])).toEqual(mine.map((d) => [d.n, 1, ['completed'], [{ n: d.n, answered: d.n }], [d.flow.stepRows]]));
  for (const d of mine) {
    const accepted = d.answers.filter((a) => a.status === 202);
    expect(new Set(accepted.map((a) => a.runId)).size, `delivery ${d.n}: every 202 names one run`).toBe(1);
    expect(rows.find((r) => r.n === d.n)!.ids).toEqual([accepted[0].runId]);
  }
  // The step's call: made for every run, always under the one Idempotency-Key of the run's step.
  const byRun = new Map<string, Hit[]>();
  for (const h of hits) {
    const id = h.key.split(':')[0];
    byRun.set(id, [...(byRun.get(id) ?? []), h]);
  }
  expect(
    runIds.map((id, i) => {
      const calls = byRun.get(id) ?? [];
      return [mine[i].n, calls.length > 0, [...new Set(calls.map((c) => c.key))], [...new Set(calls.map((c) => c.n))]];
    }),
  ).toEqual(runIds.map((id, i) => [mine[i].n, true, [mine[i].flow.callKey(id)], [mine[i].n]]));
  expect(exitedAt, `the process exited\n${describeProc()}`).toBeNull();
  const repeated = runIds.filter((id) => (byRun.get(id)?.length ?? 0) > 1).length;
  return { runs: runIds.length, refused: mine.filter((d) => d.answers[0].status === 503).length, repeatedCalls: repeated };
}

describe('a PostgreSQL restart under webhook load', () => {
  it('stop, 2 s, start: the process stays up, answers 503 meanwhile, and every accepted delivery completes once', { timeout: 120_000 }, async () => {
    const mine = await rideOut(async () => {
      await pgCtl(['stop', '-m', 'fast']);
      const downAt = Date.now();
      // Sleep: the outage itself, of a set length (the database is down; nothing to wait for).
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      const upAt = Date.now();
      await startPostgres();
      return { downAt, upAt };
    }, true);
    const summary = await expectEveryDeliveryCompletedOnce(mine);
    console.log(`stop/start: ${JSON.stringify(summary)}`);
  });

  it('pg_ctl restart -m fast: the same', { timeout: 120_000 }, async () => {
    const mine = await rideOut(async () => {
      const downAt = Date.now();
      await pgCtl(['restart', '-m', 'fast']);
      return { downAt, upAt: Date.now() };
    }, false);
    const summary = await expectEveryDeliveryCompletedOnce(mine);
    console.log(`restart: ${JSON.stringify(summary)}`);
  });
});
