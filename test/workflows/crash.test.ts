// Crash recovery of workflow runs with real processes: `liya start` (API and in-process job runner)
// as a child process on the test database, killed with SIGKILL while runs are in flight (taken from
// the job queue, or executed by the process that accepted them, without a job) or waiting at a
// delay, then a new process started on the same database. Every run must end completed exactly
// once; a step whose result was saved never runs again; the step that was in flight at the kill
// runs again with the same Idempotency-Key; job locks of the dead worker are released. Also a
// graceful stop (SIGTERM): the runs waiting in the process get jobs at once, its running ones end.
//
// Each process beats every 300 ms (HEARTBEAT_MS), so a killed one counts as dead after 1.2 s.
// A local recorder plays the remote side of the http_request steps: it logs every request with its
// Idempotency-Key, and holds the first request of each `.../slow` step without answering, so the
// step is surely in flight when its process is killed (no timing race); a repeat of the same key
// (the step run again after the crash) is answered after 1.5 s.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiClient } from '../support/client.js';
import { uniqueEmail } from '../support/fixtures.js';
import { ADMIN_SECRET, createTestDatabase } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

const HEARTBEAT_MS = 300;
const POLL_MS = 20_000;
/** How long the slow endpoint takes to answer a repeated request. */
const SLOW_MS = 1_500;

type Proc = ServerProcess;

const procs: Proc[] = [];
let pool: pg.Pool;
let databaseUrl: string;
let recorder: http.Server;
let recorderUrl: string;
let apiKey: string;

const sql = async <T extends pg.QueryResultRow = any>(text: string, params: unknown[] = []) => (await pool.query<T>(text, params)).rows;
const auth = () => ({ headers: bearer(apiKey) });

// ---- Child processes ------------------------------------------------------------------------------

const describeProcs = () => procs.map((p) => `--- ${p.name} (pid ${p.child.pid}, ${p.child.exitCode ?? p.child.signalCode ?? 'running'})\n${p.output.slice(-3000)}`).join('\n');

/** waitFor, with the processes' output in the error. */
async function poll<T>(probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = POLL_MS): Promise<T> {
  try {
    return await waitFor(probe, what, timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${describeProcs()}`);
  }
}

/**
 * `bin/liya.mjs start` on the test database (`env` over the defaults); resolves once it serves and,
 * unless WORKER is 0, its job runner runs.
 */
async function startProcess(name: string, env: Record<string, string> = {}): Promise<Proc> {
  const proc = await startServerProcess(
    name,
    {
      LOG_LEVEL: 'info', DATABASE_URL: databaseUrl, ADMIN_SECRET, WORKER: '1', WORKER_CONCURRENCY: '6', DB_POOL_MAX: '6', HEARTBEAT_MS: String(HEARTBEAT_MS),
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      // A process paused (SIGSTOP) for a while must not find its outbound calls timed out when it resumes.
      OUTBOUND_TIMEOUT_MS: '60000',
      ...env,
    },
    (output) => env.WORKER === '0' || output.includes('job runner started'),
  );
  procs.push(proc);
  return proc;
}

/** The owner id (worker_heartbeats id) the process puts on the runs it executes: `process:<host>:<pid>:<random>`. */
async function processIdOf(proc: Proc): Promise<string> {
  const [row] = await sql<{ worker_id: string }>(`select worker_id from worker_heartbeats where worker_id like 'process:%:' || $1::text || ':%'`, [String(proc.child.pid)]);
  expect(row, `heartbeat row of ${proc.name}`).toBeDefined();
  return row.worker_id;
}

async function kill(proc: Proc) {
  proc.child.kill('SIGKILL');
  await proc.exited;
  expect(proc.child.signalCode).toBe('SIGKILL');
}

const stop = stopServerProcess;

// ---- The remote side of the http_request steps -----------------------------------------------------

interface Hit {
  path: string;
  key: string;
  body: unknown;
  /** 1 for the first request with this path and Idempotency-Key, 2 for its repeat, ... */
  attempt: number;
}

const hits: Hit[] = [];
/** The first requests of the slow steps, not answered yet. */
const held = new Map<http.ServerResponse, Hit>();
const hitsOf = (p: string) => hits.filter((h) => h.path === p);
const runIdOfKey = (key: string) => key.split(':')[0];

async function startRecorder() {
  recorder = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const p = req.url ?? '/';
      const key = String(req.headers['idempotency-key'] ?? '');
      const attempt = hits.filter((h) => h.path === p && h.key === key).length + 1;
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        // kept as text
      }
      hits.push({ path: p, key, body, attempt });
      if (p.endsWith('/slow') && attempt === 1) {
        // Never answered: its process is killed meanwhile.
        held.set(res, hits.at(-1)!);
        res.on('close', () => held.delete(res));
        return;
      }
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ path: p, attempt }));
      };
      // A repeat of the slow step (run again by the new process) is slow too.
      if (p.endsWith('/slow')) setTimeout(answer, SLOW_MS);
      else answer();
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
}

/** Answers the held first requests under `prefix` (as the slow endpoint would have), once they are sent. */
async function answerHeld(prefix: string) {
  const answered = [...held].filter(([, hit]) => hit.path.startsWith(prefix)).map(
    ([res, hit]) =>
      new Promise<void>((resolve) => {
        res.once('finish', resolve);
        res.once('close', resolve);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ path: hit.path, attempt: hit.attempt }));
      }),
  );
  await Promise.all(answered);
  return answered.length;
}

// ---- Workflows ---------------------------------------------------------------------------------------

const trigger = MANUAL_TRIGGER;
const post = (id: string, p: string, body: Record<string, unknown>) => ({ id, step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${recorderUrl}${p}`, body } });

/** trigger -> POST first (fast) -> POST slow (held at the first attempt) -> POST after (fast) -> end. */
const midRunSteps = (prefix: string) => [
  trigger,
  post('first', `/${prefix}/first`, { n: '{{trigger.n}}' }),
  post('slow', `/${prefix}/slow`, { n: '{{trigger.n}}', first_attempt: '{{steps.first.output.body.attempt}}' }),
  post('after', `/${prefix}/after`, { n: '{{trigger.n}}', slow_attempt: '{{steps.slow.output.body.attempt}}' }),
  { id: 'done', step_type: 'end', config: { output: { n: '{{trigger.n}}', slow_attempt: '{{steps.slow.output.body.attempt}}' } } },
];

/** Starts `count` async runs through `api` (input {n}); their ids in order. */
async function startAsyncRuns(api: ApiClient, workflowKey: string, count: number): Promise<string[]> {
  const runIds: string[] = [];
  for (let n = 0; n < count; n++) {
    const res = await api.post(`/v1/workflows/${workflowKey}/run`, { input: { n }, mode: 'async' }, auth());
    expect(res.status, res.text).toBe(202);
    runIds.push(res.body.data.run_id);
  }
  return runIds;
}

const jobsOf = async (runIds: string[]) =>
  (await sql<{ key: string }>('select key from graphile_worker._private_jobs where key = any($1::text[]) order by key', [runIds.map((id) => `wf-run:${id}`)])).map((j) => j.key);

const deploy = (api: ApiClient, name: string, steps: unknown[]) => createWorkflow(api, apiKey, name, steps);

/** Polls the run through `api` until it is completed (fails at once on another final status). */
async function completed(api: ApiClient, workflowKey: string, runId: string) {
  return poll(async () => {
    const res = await api.get(`/v1/workflows/${workflowKey}/runs/${runId}`, auth());
    if (res.status !== 200) return null;
    const run = res.body.data.run;
    if (['failed', 'cancelled', 'rejected'].includes(run.status)) throw new Error(`run ${runId} ended ${run.status}: ${JSON.stringify(run.error)}\n${describeProcs()}`);
    return run.status === 'completed' ? run : null;
  }, `run ${runId} to complete`);
}

interface RunRow {
  id: string;
  status: string;
  owner_id: string | null;
  steps_done: number;
  next_step_id: string | null;
  resume_at: Date | null;
  completed_at: Date | null;
  output: unknown;
}
const runRows = (ids: string[]) =>
  sql<RunRow>('select id::text, status, owner_id, steps_done, next_step_id, resume_at, completed_at, output from workflow_runs where id = any($1::uuid[]) order by id', [ids]);

/** The rows of run_steps of each run: [index, step_id, status]. */
async function stepRows(runId: string) {
  return (await sql<{ index: number; step_id: string; status: string }>(`select index, step_id, status from run_steps where run_kind = 'workflow' and run_id = $1 order by index, started_at`, [runId])).map(
    (r) => [r.index, r.step_id, r.status],
  );
}

interface RunEvent {
  run_id: string;
  old_status: string;
  new_status: string;
  old_owner: string | null;
  new_owner: string | null;
}
const runEvents = async (runId: string) => sql<RunEvent>('select run_id::text, old_status, new_status, old_owner, new_owner from test_run_events where run_id = $1 order by seq', [runId]);

interface JobEvent {
  event: 'locked' | 'unlocked' | 'removed';
  job_key: string;
  locked_by: string | null;
  attempts: number;
  last_error: string | null;
}
const jobEvents = async (jobKey: string) => sql<JobEvent>('select event, job_key, locked_by, attempts, last_error from test_job_events where job_key = $1 order by seq', [jobKey]);

/** Names the processes in what a test compares: `dead` for the killed one, `new` for its successor. */
type Names = Record<string, string>;
const nameOf = (names: Names, id: string | null) => (id === null ? null : (names[id] ?? id));

/**
 * What happened to a run, in one object (a failure shows every difference at once): its step rows
 * ([index, step_id, status]), its status changes (completed exactly once), who took it over
 * ([from, to] for each change to a new owner), and the requests each http_request step sent
 * (`<Idempotency-Key> #<attempt> <body>`).
 */
async function observe(runId: string, prefix: string, requestSteps: string[], names: Names) {
  const events = await runEvents(runId);
  return {
    run: runId,
    step_rows: await stepRows(runId),
    status_changes: events.filter((e) => e.new_status !== e.old_status).map((e) => `${e.old_status} -> ${e.new_status}`),
    takeovers: events.filter((e) => e.new_owner !== null && e.new_owner !== e.old_owner).map((e) => [nameOf(names, e.old_owner), nameOf(names, e.new_owner)]),
    requests: Object.fromEntries(
      requestSteps.map((step) => [step, hitsOf(`${prefix}/${step}`).filter((h) => runIdOfKey(h.key) === runId).map((h) => `${h.key} #${h.attempt} ${JSON.stringify(h.body)}`)]),
    ),
  };
}

/** A job's lock history: [event, whose lock] (`dead` or `live` worker pool). */
async function lockHistory(jobKey: string, deadWorkers: Set<string>) {
  return (await jobEvents(jobKey)).map((e) => [e.event, e.locked_by === null ? null : deadWorkers.has(e.locked_by) ? 'dead' : 'live', e.last_error]);
}

// ---- Set-up ----------------------------------------------------------------------------------------

beforeAll(async () => {
  await startRecorder();
  databaseUrl = await createTestDatabase();
  pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  pool.on('error', () => undefined);

  // A row for every change of a run's status or owner, and for every lock, unlock and removal of a
  // job: graphile-worker deletes a job when it has succeeded, so the queue alone cannot tell who
  // held it and how often.
  await sql(`
    create table test_run_events (seq bigserial primary key, run_id uuid not null, old_status text, new_status text, old_owner text, new_owner text,
                                  steps_done int, at timestamptz not null default clock_timestamp());
    create function test_record_run_event() returns trigger language plpgsql as $$
    begin
      insert into test_run_events (run_id, old_status, new_status, old_owner, new_owner, steps_done) values (new.id, old.status, new.status, old.owner_id, new.owner_id, new.steps_done);
      return new;
    end $$;
    create trigger test_run_changed after update on workflow_runs
      for each row when (old.status is distinct from new.status or old.owner_id is distinct from new.owner_id) execute function test_record_run_event();

    create table test_job_events (seq bigserial primary key, event text not null, job_key text, locked_by text, attempts int, last_error text,
                                  at timestamptz not null default clock_timestamp());
    create function test_record_job_event() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' then
        insert into test_job_events (event, job_key, locked_by, attempts, last_error)
        values (case when new.locked_by is null then 'unlocked' else 'locked' end, new.key, coalesce(new.locked_by, old.locked_by), new.attempts, new.last_error);
        return new;
      end if;
      insert into test_job_events (event, job_key, locked_by, attempts, last_error) values ('removed', old.key, old.locked_by, old.attempts, old.last_error);
      return old;
    end $$;
    create trigger test_job_lock_changed after update on graphile_worker._private_jobs
      for each row when (old.locked_by is distinct from new.locked_by) execute function test_record_job_event();
    create trigger test_job_removed after delete on graphile_worker._private_jobs
      for each row execute function test_record_job_event();
  `);
}, 120_000);

afterAll(async () => {
  await Promise.all(procs.map(stop));
  for (const res of held.keys()) res.destroy();
  recorder?.closeAllConnections();
  await new Promise((resolve) => recorder?.close(resolve));
  await pool?.end();
});

// ---- The scenarios -----------------------------------------------------------------------------------

describe('a process killed with SIGKILL, then another started on the same database', () => {
  // The live process; each scenario kills it and starts the next one.
  let live: Proc;
  // Scenario 1's jobs and the dead worker pool that held them, for the lock check.
  const midRun = { jobKeys: [] as string[], deadWorkers: new Set<string>() };

  beforeAll(async () => {
    live = await startProcess('process-1');
    const signup = await live.api.post('/auth/signup', { companyName: 'Crash Co', email: uniqueEmail('crash'), password: 'crash test password' });
    expect(signup.status, signup.text).toBe(201);
    apiKey = signup.body.data.apiKey;
  }, 120_000);

  const MID_RUN_ROWS = [[0, 'start', 'completed'], [1, 'first', 'completed'], [2, 'slow', 'completed'], [3, 'after', 'completed'], [4, 'done', 'completed']];

  it('mid-run: async runs in flight, taken from the job queue, are continued once by the next process, from the step in flight', { timeout: 120_000 }, async () => {
    const RUNS = 5;
    const victim = live;
    const wf = await deploy(victim.api, 'Crash mid-run', midRunSteps('s1'));
    // Accepted by a process without a job runner: each run gets a job, which the victim takes.
    const front = await startProcess('front (WORKER=0)', { WORKER: '0' });
    const runIds = await startAsyncRuns(front.api, wf.workflow_key, RUNS);
    await stop(front);
    // Every run is at its slow step (held unanswered), the steps before it saved.
    await poll(() => runIds.every((id) => hitsOf('/s1/slow').some((h) => runIdOfKey(h.key) === id)), 'every run to send its slow request');
    const victimId = await processIdOf(victim);
    const jobKeys = runIds.map((id) => `wf-run:${id}`);
    const locked = await sql<{ key: string; locked_by: string | null }>('select key, locked_by from graphile_worker._private_jobs where key = any($1::text[])', [jobKeys]);
    midRun.jobKeys = jobKeys;
    for (const j of locked) if (j.locked_by) midRun.deadWorkers.add(j.locked_by);
    const beforeKill = (await runRows(runIds)).map((r) => [r.id, r.status, r.owner_id === victimId ? 'dead' : r.owner_id, r.steps_done, r.next_step_id]);
    expect(beforeKill, 'the runs just before the kill').toEqual(runIds.map((id) => [id, 'running', 'dead', 2, 'slow']).sort());
    expect(locked.map((j) => [j.key, j.locked_by !== null]).sort(), 'their jobs, locked').toEqual(jobKeys.map((k) => [k, true]).sort());

    await kill(victim);
    // Nothing moves while no process is alive: the runs stay where they were, the dead process's.
    for (const row of await runRows(runIds)) expect(row).toMatchObject({ status: 'running', owner_id: victimId, steps_done: 2 });

    live = await startProcess('process-2');
    const names = { [victimId]: 'dead', [await processIdOf(live)]: 'new' };
    for (const [n, runId] of runIds.entries()) {
      const run = await completed(live.api, wf.workflow_key, runId);
      // The answer of the slow step's second attempt is the one the run went on with.
      expect(run.output).toEqual({ n, slow_attempt: 2 });
      expect(run.trace.map((s: { step_id: string; status: string }) => [s.step_id, s.status])).toEqual(MID_RUN_ROWS.map((r) => r.slice(1)));
    }

    // The step saved before the kill (first) never ran again; the step in flight (slow) ran once
    // more, with the same Idempotency-Key and body; the step after it ran once.
    const observed = await Promise.all(runIds.map((id) => observe(id, '/s1', ['first', 'slow', 'after'], names)));
    expect(observed).toEqual(
      runIds.map((id, n) => ({
        run: id,
        step_rows: MID_RUN_ROWS,
        status_changes: ['running -> completed'],
        takeovers: [[null, 'dead'], ['dead', 'new']],
        requests: {
          first: [`${id}:first:1 #1 {"n":${n}}`],
          slow: [`${id}:slow:2 #1 {"n":${n},"first_attempt":1}`, `${id}:slow:2 #2 {"n":${n},"first_attempt":1}`],
          after: [`${id}:after:3 #1 {"n":${n},"slow_attempt":2}`],
        },
      })),
    );
  });

  it("stale job locks: the dead worker's jobs are unlocked and taken by the live worker, once", { timeout: 120_000 }, async () => {
    expect(midRun.jobKeys.length, 'the mid-run scenario got as far as its kill').toBeGreaterThan(0);
    // The queue drains: each job ended (deleted) by the new worker.
    await poll(async () => (await sql<{ n: number }>('select count(*)::int as n from graphile_worker._private_jobs where key = any($1::text[])', [midRun.jobKeys]))[0].n === 0, 'the mid-run jobs to leave the queue');
    expect(await sql('select key, locked_by from graphile_worker._private_jobs where locked_by = any($1::text[])', [[...midRun.deadWorkers]])).toEqual([]);
    // Locked by the dead worker, released (not failed: no error), then locked once by a live worker
    // and removed by it when done.
    const histories = await Promise.all(midRun.jobKeys.map(async (key) => [key, await lockHistory(key, midRun.deadWorkers)]));
    expect(histories).toEqual(midRun.jobKeys.map((key) => [key, [['locked', 'dead', null], ['unlocked', 'dead', null], ['locked', 'live', null], ['removed', 'live', null]]]));
  });

  it('mid-run: async runs executed by the process that accepted them (no job) are continued once by the next process', { timeout: 120_000 }, async () => {
    const RUNS = 3;
    const victim = live;
    const wf = await deploy(victim.api, 'Crash mid-run local', midRunSteps('s6'));
    const runIds = await startAsyncRuns(victim.api, wf.workflow_key, RUNS);
    await poll(() => runIds.every((id) => hitsOf('/s6/slow').some((h) => runIdOfKey(h.key) === id)), 'every run to send its slow request');
    const victimId = await processIdOf(victim);
    expect(await jobsOf(runIds), 'no job: the accepting process runs them').toEqual([]);

    await kill(victim);
    for (const row of await runRows(runIds)) expect(row).toMatchObject({ status: 'running', owner_id: victimId, steps_done: 2 });
    live = await startProcess('process-2b');
    const names = { [victimId]: 'dead', [await processIdOf(live)]: 'new' };
    for (const [n, runId] of runIds.entries()) expect((await completed(live.api, wf.workflow_key, runId)).output).toEqual({ n, slow_attempt: 2 });

    const observed = await Promise.all(runIds.map((id) => observe(id, '/s6', ['first', 'slow', 'after'], names)));
    expect(observed).toEqual(
      runIds.map((id, n) => ({
        run: id,
        step_rows: MID_RUN_ROWS,
        status_changes: ['running -> completed'],
        // Written owned by the process that accepted it; taken over once its heartbeat stopped.
        takeovers: [['dead', 'new']],
        requests: {
          first: [`${id}:first:1 #1 {"n":${n}}`],
          slow: [`${id}:slow:2 #1 {"n":${n},"first_attempt":1}`, `${id}:slow:2 #2 {"n":${n},"first_attempt":1}`],
          after: [`${id}:after:3 #1 {"n":${n},"slow_attempt":2}`],
        },
      })),
    );
  });

  it('a graceful stop (SIGTERM) hands the runs waiting in the process over to the job queue at once and lets its running ones finish', { timeout: 120_000 }, async () => {
    // One run at a time: the first run holds the only slot (held at its slow step), two wait.
    const stopping = await startProcess('stopping (WORKER_CONCURRENCY=1)', { WORKER_CONCURRENCY: '1' });
    const wf = await deploy(stopping.api, 'Graceful stop', midRunSteps('s7'));
    const runIds = await startAsyncRuns(stopping.api, wf.workflow_key, 3);
    await poll(() => hitsOf('/s7/slow').length === 1, 'the first run to send its slow request');
    const stoppingId = await processIdOf(stopping);
    const [inFlight, ...waiting] = [...new Set([runIdOfKey(hitsOf('/s7/slow')[0].key), ...runIds])];
    // Accepted with their trigger step stored (at intake), owned by the process, not started.
    for (const row of await runRows(waiting)) expect(row).toMatchObject({ status: 'running', owner_id: stoppingId, steps_done: 1, next_step_id: 'first' });

    stopping.child.kill('SIGTERM');
    // Handed over while the process still waits for its running run: owner cleared, a job each.
    await poll(async () => (await runEvents(waiting[0])).length > 0 && (await runEvents(waiting[1])).length > 0, 'the waiting runs to be handed over');
    for (const id of waiting) expect((await runEvents(id))[0]).toMatchObject({ old_owner: stoppingId, new_owner: null, old_status: 'running', new_status: 'running' });
    expect(stopping.child.exitCode, 'the process waits for its running run').toBeNull();
    // The live process takes them; every first slow request is answered (the held one included).
    await poll(() => runIds.every((id) => hitsOf('/s7/slow').some((h) => runIdOfKey(h.key) === id)), 'every run to send its slow request');
    expect(await answerHeld('/s7/slow')).toBe(3);
    await stopping.exited;
    expect(stopping.child.exitCode).toBe(0);

    const names = { [stoppingId]: 'stopping', [await processIdOf(live)]: 'live' };
    for (const runId of runIds) await completed(live.api, wf.workflow_key, runId);
    const observed = await Promise.all(runIds.map(async (id) => ({ ...(await observe(id, '/s7', ['first', 'slow', 'after'], names)), job: (await jobEvents(`wf-run:${id}`)).map((e) => e.event) })));
    expect(observed).toEqual(
      runIds.map((id, n) => ({
        run: id,
        step_rows: MID_RUN_ROWS,
        status_changes: ['running -> completed'],
        // The running one finished in the stopping process; the waiting ones ran once, in the live one.
        takeovers: id === inFlight ? [] : [[null, 'live']],
        requests: {
          first: [`${id}:first:1 #1 {"n":${n}}`],
          slow: [`${id}:slow:2 #1 {"n":${n},"first_attempt":1}`],
          after: [`${id}:after:3 #1 {"n":${n},"slow_attempt":1}`],
        },
        job: id === inFlight ? [] : ['locked', 'removed'],
      })),
    );
  });

  it('sync runs in flight: left running with the dead owner, continued once by the next process', { timeout: 120_000 }, async () => {
    const RUNS = 3;
    const victim = live;
    const wf = await deploy(victim.api, 'Crash sync', midRunSteps('s3'));
    // The callers' requests die with the process: no answer is expected.
    const requests = Array.from({ length: RUNS }, (_, n) =>
      victim.api.post(`/v1/workflows/${wf.workflow_key}/run`, { input: { n } }, auth()).then(
        (res) => ({ answered: res.status }),
        (err: Error) => ({ failed: err.message }),
      ),
    );
    const slowRuns = () => [...new Set(hitsOf('/s3/slow').map((h) => runIdOfKey(h.key)))];
    await poll(() => slowRuns().length === RUNS, 'every sync run to send its slow request');
    const runIds = slowRuns();
    const victimId = await processIdOf(victim);
    const beforeKill = (await runRows(runIds)).map((r) => [r.id, r.status, r.owner_id === victimId ? 'dead' : r.owner_id, r.steps_done, r.next_step_id]);
    expect(beforeKill, 'the runs just before the kill').toEqual(runIds.map((id) => [id, 'running', 'dead', 2, 'slow']).sort());
    // A sync run has no job: only the recovery can continue it.
    expect(await sql('select key from graphile_worker._private_jobs where key = any($1::text[])', [runIds.map((id) => `wf-run:${id}`)])).toEqual([]);

    await kill(victim);
    for (const outcome of await Promise.all(requests)) expect(outcome).toHaveProperty('failed');
    for (const row of await runRows(runIds)) expect(row, `run ${row.id} after the kill`).toMatchObject({ status: 'running', owner_id: victimId, steps_done: 2 });

    live = await startProcess('process-3');
    const names = { [victimId]: 'dead', [await processIdOf(live)]: 'new' };
    const inputs: number[] = [];
    for (const runId of runIds) {
      const run = await completed(live.api, wf.workflow_key, runId);
      inputs.push(run.input.n);
      expect(run.output).toEqual({ n: run.input.n, slow_attempt: 2 });
    }
    const observed = await Promise.all(
      runIds.map(async (id) => ({ ...(await observe(id, '/s3', ['first', 'slow', 'after'], names)), recovery_job: (await jobEvents(`wf-run:${id}`)).map((e) => e.event) })),
    );
    expect(observed).toEqual(
      runIds.map((id, i) => ({
        run: id,
        step_rows: MID_RUN_ROWS,
        status_changes: ['running -> completed'],
        takeovers: [['dead', 'new']],
        requests: {
          first: [`${id}:first:1 #1 {"n":${inputs[i]}}`],
          slow: [`${id}:slow:2 #1 {"n":${inputs[i]},"first_attempt":1}`, `${id}:slow:2 #2 {"n":${inputs[i]},"first_attempt":1}`],
          after: [`${id}:after:3 #1 {"n":${inputs[i]},"slow_attempt":2}`],
        },
        // The recovery queued one job for it, which a live worker took once and removed when done.
        recovery_job: ['locked', 'removed'],
      })),
    );
  });

  it('mid-delay: runs waiting at a delay when their process dies complete once after the delay', { timeout: 120_000 }, async () => {
    const RUNS = 3;
    const DELAY_S = 5; // room for the set-up before the kill on a loaded machine
    const victim = live;
    const wf = await deploy(victim.api, 'Crash delay', [
      trigger,
      post('before', '/s2/before', { n: '{{trigger.n}}' }),
      { id: 'pause', step_type: 'delay', config: { seconds: DELAY_S } },
      post('after', '/s2/after', { n: '{{trigger.n}}' }),
      { id: 'done', step_type: 'end', config: { output: { n: '{{trigger.n}}', woke: '{{steps.pause.output.resumed_at}}' } } },
    ]);
    const started = await Promise.all(Array.from({ length: RUNS }, (_, n) => victim.api.post(`/v1/workflows/${wf.workflow_key}/run`, { input: { n } }, auth())));
    const runs = started.map((res) => {
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toMatchObject({ status: 'waiting', resume_at: expect.any(String) });
      return { id: res.body.data.run_id as string, resumeAt: Date.parse(res.body.data.resume_at) };
    });
    const runIds = runs.map((r) => r.id);
    for (const row of await runRows(runIds)) expect(row, `run ${row.id} waiting`).toMatchObject({ status: 'waiting', owner_id: null, next_step_id: 'pause' });
    const wakes = await sql<{ key: string; locked_by: string | null }>('select key, locked_by from graphile_worker._private_jobs where key = any($1::text[])', [runIds.map((id) => `wf-wake:${id}`)]);
    expect(wakes.map((j) => [j.key, j.locked_by]).sort()).toEqual(runIds.map((id) => [`wf-wake:${id}`, null]).sort());
    const victimId = await processIdOf(victim);

    await kill(victim);
    // Killed while every run still waited: with no process alive, the rows show where the kill found them.
    for (const row of await runRows(runIds)) expect(row, `run ${row.id} waiting at the kill`).toMatchObject({ status: 'waiting', next_step_id: 'pause' });

    live = await startProcess('process-4');
    const names = { [victimId]: 'dead', [await processIdOf(live)]: 'new' };
    for (const { id, resumeAt } of runs) {
      const run = await completed(live.api, wf.workflow_key, id);
      expect(Date.parse(run.output.woke)).toBeGreaterThanOrEqual(resumeAt);
      const [row] = await runRows([id]);
      expect(row.completed_at!.getTime()).toBeGreaterThanOrEqual(resumeAt);
    }
    const observed = await Promise.all(runIds.map(async (id) => ({ ...(await observe(id, '/s2', ['before', 'after'], names)), wake_job: (await jobEvents(`wf-wake:${id}`)).map((e) => e.event) })));
    expect(observed).toEqual(
      runIds.map((id, n) => ({
        run: id,
        // The delay step's row as it waited, and its row when it went on.
        step_rows: [[0, 'start', 'completed'], [1, 'before', 'completed'], [2, 'pause', 'waiting'], [3, 'pause', 'completed'], [4, 'after', 'completed'], [5, 'done', 'completed']],
        status_changes: ['running -> waiting', 'waiting -> running', 'running -> completed'],
        // The dead process left it at the wait (owner cleared); only the new one continued it.
        takeovers: [[null, 'new']],
        requests: { before: [`${id}:before:1 #1 {"n":${n}}`], after: [`${id}:after:4 #1 {"n":${n}}`] },
        // Its wake-up job, run once by the live worker.
        wake_job: ['locked', 'removed'],
      })),
    );
  });

  it('a process paused (SIGSTOP) past its heartbeat, whose runs were taken over, does not run or write them again when it resumes', { timeout: 120_000 }, async () => {
    const RUNS = 2;
    const victim = live;
    const wf = await deploy(victim.api, 'Paused mid-run', midRunSteps('s5'));
    const runIds: string[] = [];
    for (let n = 0; n < RUNS; n++) {
      const res = await victim.api.post(`/v1/workflows/${wf.workflow_key}/run`, { input: { n }, mode: 'async' }, auth());
      expect(res.status, res.text).toBe(202);
      runIds.push(res.body.data.run_id);
    }
    await poll(() => runIds.every((id) => hitsOf('/s5/slow').some((h) => runIdOfKey(h.key) === id)), 'every run to send its slow request');
    const victimId = await processIdOf(victim);

    // Paused, not killed: its heartbeat stops, so the next process takes its runs over.
    victim.child.kill('SIGSTOP');
    live = await startProcess('process-5');
    const names = { [victimId]: 'paused', [await processIdOf(live)]: 'new' };
    for (const [n, runId] of runIds.entries()) expect((await completed(live.api, wf.workflow_key, runId)).output).toEqual({ n, slow_attempt: 2 });

    // The paused process comes back and gets the answers to its slow requests; then it is stopped
    // gracefully, which waits for the jobs it still runs to end.
    expect(await answerHeld('/s5/slow')).toBe(RUNS);
    victim.child.kill('SIGCONT');
    await poll(async () => (await sql('select 1 from worker_heartbeats where worker_id = $1 and last_seen_at > now() - make_interval(secs => $2)', [victimId, HEARTBEAT_MS / 1000])).length > 0, 'the paused process to beat again');
    await stop(victim);

    const observed = await Promise.all(
      runIds.map(async (id) => ({ ...(await observe(id, '/s5', ['first', 'after'], names)), now: (await runRows([id])).map((r) => [r.status, r.steps_done, r.next_step_id, r.output]) })),
    );
    expect(observed).toEqual(
      runIds.map((id, n) => ({
        run: id,
        step_rows: MID_RUN_ROWS,
        status_changes: ['running -> completed'],
        // Written owned by the process that accepted it (no job), taken over when it stopped beating.
        takeovers: [['paused', 'new']],
        requests: { first: [`${id}:first:1 #1 {"n":${n}}`], after: [`${id}:after:3 #1 {"n":${n},"slow_attempt":2}`] },
        // As the new process left it: its output is the one of the slow step's second attempt.
        now: [['completed', 5, null, { n, slow_attempt: 2 }]],
      })),
    );
  });
});
