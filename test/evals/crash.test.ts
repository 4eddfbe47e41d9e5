// An evaluation run survives its process: `liya start` as a child process runs a suite, is killed
// with SIGKILL mid-run, and a new process on the same database continues the run (the dead worker's
// job lock released after its heartbeat stops). Every case ends scored exactly once: a trigger
// records each change of a result's status, and no result is written twice.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { uniqueEmail } from '../support/fixtures.js';
import { ADMIN_SECRET, createTestDatabase } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { waitFor } from '../support/wait-for.js';
import { refuseWrites } from '../support/db-faults.js';

const CASES = 24;
let fake: FakeLlm;
let pool: pg.Pool;
let databaseUrl: string;
const procs: ServerProcess[] = [];

const sql = async <T extends pg.QueryResultRow = any>(text: string, params: unknown[] = []) => (await pool.query<T>(text, params)).rows;

async function start(name: string) {
  const proc = await startServerProcess(
    name,
    {
      DATABASE_URL: databaseUrl, ADMIN_SECRET, WORKER: '1', HEARTBEAT_MS: '300', EVAL_CONCURRENCY: '3', LOG_LEVEL: 'info',
      OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0',
    },
    (output) => output.includes('job runner started'),
  );
  procs.push(proc);
  return proc;
}

beforeAll(async () => {
  fake = await startFakeLlm();
  databaseUrl = await createTestDatabase();
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  pool.on('error', () => undefined);
}, 120_000);
afterAll(async () => {
  await Promise.all(procs.map(stopServerProcess));
  await pool?.end();
  await fake?.close();
});

describe('an evaluation run whose process is killed', () => {
  it('is continued by the next process; every case is scored exactly once', { timeout: 90_000 }, async () => {
    const first = await start('eval-process-1');
    const signup = await first.api.post('/auth/signup', { companyName: 'Eval crash', email: uniqueEmail('evalcrash'), password: 'eval crash password' });
    expect(signup.status, signup.text).toBe(201);
    const auth = { headers: bearer(signup.body.data.apiKey) };
    // Every status change of a result, with the time it happened.
    await sql(`
      create table test_result_events (seq bigserial primary key, result_id uuid not null, old_status text, new_status text);
      create function test_record_result_event() returns trigger language plpgsql as $$
      begin
        insert into test_result_events (result_id, old_status, new_status) values (new.id, old.status, new.status);
        return new;
      end $$;
      create trigger test_result_changed after update on eval_results for each row when (old.status is distinct from new.status) execute function test_record_result_event();
    `);
    const ds = await first.api.post(
      '/v1/evals/datasets',
      { name: 'Crash set', cases: Array.from({ length: CASES }, (_, i) => ({ input: { user_id: `u${i}`, resume_text: `Resume ${i}: Go and PostgreSQL.` } })) },
      auth,
    );
    expect(ds.status, ds.text).toBe(201);
    const suite = await first.api.post('/v1/evals/suites', { name: 'Crash', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: ds.body.data.dataset.id }, auth);
    expect(suite.status, suite.text).toBe(201);
    fake.setLatency(150);
    const started = await first.api.post(`/v1/evals/suites/${suite.body.data.suite.id}/run`, {}, auth);
    expect(started.status, started.text).toBe(202);
    const runId = started.body.data.run.id;

    await waitFor(async () => (await sql(`select cases_done from eval_runs where id = $1`, [runId]))[0].cases_done >= 4, 'four cases done', 30_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const [atKill] = await sql(`select status, cases_done from eval_runs where id = $1`, [runId]);
    expect(atKill.status).toBe('running');
    expect(atKill.cases_done).toBeLessThan(CASES);

    const second = await start('eval-process-2');
    const run = await waitFor(async () => {
      const res = await second.api.get(`/v1/evals/runs/${runId}`, auth);
      return res.body.data.run.status === 'completed' ? res.body.data.run : null;
    }, 'the run to complete in the new process', 60_000);
    expect(run).toMatchObject({ cases_total: CASES, cases_done: CASES, progress: 100, error: null });

    const statuses = await sql(`select status, count(*)::int as n from eval_results where run_id = $1 group by status`, [runId]);
    expect(statuses).toEqual([{ status: 'scored', n: CASES }]);
    // Each result went pending -> scored once; none was written again.
    const events = await sql<{ result_id: string; changes: string[] }>(
      `select result_id::text, array_agg(old_status || '->' || new_status order by seq) as changes from test_result_events group by result_id`,
    );
    expect(events).toHaveLength(CASES);
    expect(events.every((e) => e.changes.length === 1 && e.changes[0] === 'pending->scored')).toBe(true);
    // The trace rows agree: two per case (intent and judge), none twice.
    const [steps] = await sql(`select count(*)::int as n, count(distinct index)::int as distinct_index from run_steps where run_kind = 'eval' and run_id = $1`, [runId]);
    expect(steps).toEqual({ n: CASES * 2, distinct_index: CASES * 2 });
  });

  it('fails, resumably, when its job used up its attempts; resume then completes it', { timeout: 90_000 }, async () => {
    fake.setLatency(0);
    const proc = await start('eval-process-3');
    const signup = await proc.api.post('/auth/signup', { companyName: 'Eval give up', email: uniqueEmail('evalgiveup'), password: 'eval give up password' });
    expect(signup.status, signup.text).toBe(201);
    const auth = { headers: bearer(signup.body.data.apiKey) };
    const ds = await proc.api.post('/v1/evals/datasets', { name: 'Give up', cases: [{ input: { user_id: 'g1', resume_text: 'Resume: Go.' } }, { input: { user_id: 'g2', resume_text: 'Resume: Rust.' } }] }, auth);
    expect(ds.status, ds.text).toBe(201);
    const suite = await proc.api.post('/v1/evals/suites', { name: 'Give up', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: ds.body.data.dataset.id }, auth);
    expect(suite.status, suite.text).toBe(201);
    // A real failure of the database on every write of this tenant's results.
    const tenantId = signup.body.data.tenant.tenantId;
    const allow = await refuseWrites(sql, 'test_refuse_result_write', 'eval_results', 'update', `new.tenant_id = '${tenantId}' and new.status <> 'pending'`);
    const started = await proc.api.post(`/v1/evals/suites/${suite.body.data.suite.id}/run`, {}, auth);
    expect(started.status, started.text).toBe(202);
    const runId = started.body.data.run.id;
    const jobOf = async () => (await sql(`select id, attempts, max_attempts, last_error from graphile_worker.jobs where key = $1`, [`eval-run:${runId}`]))[0];
    await waitFor(async () => ((await jobOf())?.attempts >= 1 && (await jobOf())?.last_error ? true : null), 'the first attempt to fail', 30_000);
    // Skip to the last attempt instead of waiting out the backoff of 24 (between attempts, never during one).
    await waitFor(
      async () => (await sql(`update graphile_worker._private_jobs set attempts = max_attempts - 1, run_at = now() where key = $1 and locked_at is null returning 1`, [`eval-run:${runId}`])).length > 0,
      'the job between two attempts',
      30_000,
    );
    const failed = await waitFor(async () => {
      const run = (await proc.api.get(`/v1/evals/runs/${runId}`, auth)).body.data.run;
      return run.status === 'failed' ? run : null;
    }, 'the run to fail after its last attempt', 30_000);
    expect(failed.error).toEqual({ code: 'INTERNAL_ERROR', message: expect.stringContaining('resume it') });
    expect(JSON.stringify(failed.error)).not.toContain('refused');

    await allow();
    const resumed = await proc.api.post(`/v1/evals/runs/${runId}/resume`, {}, auth);
    expect(resumed.status, resumed.text).toBe(200);
    const done = await waitFor(async () => {
      const run = (await proc.api.get(`/v1/evals/runs/${runId}`, auth)).body.data.run;
      return run.status === 'completed' ? run : null;
    }, 'the resumed run to complete', 30_000);
    expect(done).toMatchObject({ cases_total: 2, cases_done: 2, error: null });
  });
});
