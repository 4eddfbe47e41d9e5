// The retention job: what each tenant's days have passed goes, in bounded batches, with the
// children of each run and session; younger rows, other tenants' rows kept longer, hiring rows
// under the floor, pinned baselines and monthly totals stay. A batch never waits long for a lock,
// and two runs never work side by side.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforceRetention } from '../../server/maintenance/enforce-retention.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer();
  [a, b] = await Promise.all([signupTenant(t.api), signupTenant(t.api)]);
  // A keeps less than its plan (trial) allows; B keeps the plan's days.
  const set = await t.api.patch(
    '/dashboard/retention',
    { usage_events: 10, sessions: 5, workflow_runs: 7, eval_runs: 7, agent_sessions: 10, ingestion_jobs: 3 },
    { headers: bearer(a.token) },
  );
  expect(set.status, set.text).toBe(200);
});
afterAll(() => t?.close());

const ago = (days: number) => `now() - interval '${days} days'`;
const count = async (text: string, params: unknown[]) => Number((await t.sql<{ n: string }>(`select count(*) as n from (${text}) x`, params))[0].n);

/** Seeds one tenant's history; returns the ids the assertions look at. */
async function seed(s: SignedUpTenant) {
  const tenant = s.tenantId;
  // Usage events, labelled by intent.
  await t.sql(
    `insert into usage_events (tenant_id, kind, domain, intent, created_at) values
       ($1, 'intent_run', 'support', 'old', ${ago(20)}), ($1, 'intent_run', 'support', 'new', ${ago(2)}),
       ($1, 'intent_run', 'hiring', 'hiring-old', ${ago(20)}), ($1, 'intent_run', 'hiring', 'hiring-ancient', ${ago(200)})`,
    [tenant],
  );
  await t.sql(`insert into usage_counters (tenant_id, month, requests, tokens, cost_usd) values ($1, to_char(${ago(200)}, 'YYYY-MM'), 7, 70, 0.7)`, [tenant]);

  // Sessions with two messages each, labelled by user_id.
  for (const [user, domain, idle] of [['stale', 'support', 8], ['fresh', 'support', 1], ['hiring-stale', 'hiring', 30]] as const) {
    const [row] = await t.sql<{ id: string }>(
      `insert into sessions (id, tenant_id, user_id, domain, status, message_count, tokens_used, cost_usd, last_activity_at, created_at)
       values (gen_random_uuid(), $1, $2, $3, 'expired', 2, 0, 0, ${ago(idle)}, ${ago(idle)}) returning id`,
      [tenant, user, domain],
    );
    await t.sql(
      `insert into session_messages (tenant_id, session_id, role, content, created_at) values ($1, $2, 'user', '"q"', ${ago(idle)}), ($1, $2, 'assistant', '"a"', ${ago(idle)})`,
      [tenant, row.id],
    );
  }

  // Workflow runs (real ones, with their steps): one ended 10 days ago, one now, one waiting since 10 days.
  const wf = await createWorkflow(t.api, s.apiKey, 'Retained', [MANUAL_TRIGGER, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
  const runIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await t.api.post(`/v1/workflows/${wf.workflow_key}/run`, { input: { i } }, { headers: bearer(s.apiKey) });
    expect(res.status, res.text).toBe(200);
    runIds.push(res.body.data.run_id);
  }
  const [oldRun, newRun, waitingRun] = runIds;
  await t.sql(`update workflow_runs set started_at = ${ago(10)}, completed_at = ${ago(10)} where id = $1`, [oldRun]);
  await t.sql(`update workflow_runs set started_at = ${ago(10)}, completed_at = null, status = 'waiting' where id = $1`, [waitingRun]);

  // Evaluation runs: ended 10 days ago (with results and steps), one of them pinned as a baseline.
  const evalRun = async (domain: string) => {
    const [run] = await t.sql<{ id: string }>(
      `insert into eval_runs (tenant_id, domain_key, intent_key, execution_mode, triggered_by, status, cases_total, started_at, updated_at, completed_at)
       values ($1, $2, 'x', 'external_output', 'api', 'completed', 2, ${ago(10)}, ${ago(10)}, ${ago(10)}) returning id`,
      [tenant, domain],
    );
    await t.sql(`insert into eval_results (tenant_id, run_id, position, status, input, created_at) values ($1, $2, 0, 'scored', '{}', ${ago(10)}), ($1, $2, 1, 'scored', '{}', ${ago(10)})`, [tenant, run.id]);
    await t.sql(
      `insert into run_steps (tenant_id, run_kind, run_id, index, type, name, status, started_at, completed_at) values ($1, 'eval', $2, 0, 'llm', 'case', 'completed', ${ago(10)}, ${ago(10)})`,
      [tenant, run.id],
    );
    return run.id;
  };
  const oldEval = await evalRun('support');
  const hiringEval = await evalRun('hiring');
  const baselineEval = await evalRun('support');
  const [dataset] = await t.sql<{ id: string }>(`insert into eval_datasets (tenant_id, name, created_at, updated_at) values ($1, 'ds', now(), now()) returning id`, [tenant]);
  await t.sql(
    `insert into eval_suites (tenant_id, name, domain_key, intent_key, dataset_id, baseline_run_id, created_at, updated_at) values ($1, 'suite', 'support', 'x', $2, $3, now(), now())`,
    [tenant, dataset.id, baselineEval],
  );

  // An agent keeping conversations ten years; a conversation idle for 15 days, with a run and its step.
  const [agent] = await t.sql<{ id: string }>(
    `insert into agents (tenant_id, agent_key, name, goal, status, intent_ids, workflow_ids, action_ids, knowledge_domain_keys, memory_config, created_at, updated_at)
     values ($1, 'keeper', 'Keeper', 'Keep', 'active', '[]', '[]', '[]', '[]', '{"retention_days": 3650}', now(), now()) returning id`,
    [tenant],
  );
  const [agentSession] = await t.sql<{ id: string }>(
    `insert into agent_sessions (id, tenant_id, agent_id, status, turns, last_activity_at, created_at) values (gen_random_uuid(), $1, $2, 'active', 1, ${ago(15)}, ${ago(15)}) returning id`,
    [tenant, agent.id],
  );
  const [agentRun] = await t.sql<{ id: string }>(
    `insert into agent_runs (id, tenant_id, agent_id, session_id, status, input, started_at, completed_at) values (gen_random_uuid(), $1, $2, $3, 'completed', '{}', ${ago(15)}, ${ago(15)}) returning id`,
    [tenant, agent.id, agentSession.id],
  );
  await t.sql(`insert into agent_messages (tenant_id, session_id, run_id, role, content, created_at) values ($1, $2, $3, 'user', 'hi', ${ago(15)})`, [tenant, agentSession.id, agentRun.id]);
  await t.sql(
    `insert into run_steps (tenant_id, run_kind, run_id, index, type, name, status, started_at, completed_at) values ($1, 'agent', $2, 0, 'llm', 'think', 'completed', ${ago(15)}, ${ago(15)})`,
    [tenant, agentRun.id],
  );

  // Audit entries 400 and 300 days old; ingestion jobs five days old, one finished and one pending.
  await t.sql(
    `insert into audit_log (tenant_id, actor_type, actor_name, action, target_type, created_at) values ($1, 'user', 'x', 'old.thing', 't', ${ago(400)}), ($1, 'user', 'x', 'recent.thing', 't', ${ago(300)})`,
    [tenant],
  );
  await t.sql(
    `insert into ingestion_jobs (tenant_id, name, status, options, created_by, created_at, completed_at) values ($1, 'done.pdf', 'completed', '{}', 'x', ${ago(5)}, ${ago(5)}), ($1, 'waiting.pdf', 'pending', '{}', 'x', ${ago(5)}, null)`,
    [tenant],
  );
  return { oldRun, newRun, waitingRun, oldEval, hiringEval, baselineEval, agentSession: agentSession.id, agentRun: agentRun.id };
}

describe('the retention job', () => {
  let seededA: Awaited<ReturnType<typeof seed>>;
  let seededB: Awaited<ReturnType<typeof seed>>;
  let dailyBefore: number;

  beforeAll(async () => {
    seededA = await seed(a);
    seededB = await seed(b);
    dailyBefore = await count(`select 1 from usage_daily where tenant_id = any($1::uuid[])`, [[a.tenantId, b.tenantId]]);
  });

  it('deletes what each tenant\'s days have passed, in batches, with every child; keeps the rest', async () => {
    // Two rows a batch: every loop turns many times.
    const report = await enforceRetention(t.server.deps, { batchRows: 2, pauseMs: 0 });
    expect(report).toMatchObject({ skipped: false, complete: true, deferred: [] });

    const intents = async (s: SignedUpTenant) => (await t.sql<{ intent: string }>(`select intent from usage_events where tenant_id = $1 order by intent`, [s.tenantId])).map((r) => r.intent);
    // A keeps 10 days; hiring events 183 days whatever it says. B keeps 90 (183 for hiring).
    expect(await intents(a)).toEqual(['hiring-old', 'new']);
    expect(await intents(b)).toEqual(['hiring-old', 'new', 'old']);
    // Monthly totals and the daily rollup outlive the events.
    expect(await count(`select 1 from usage_counters where tenant_id = any($1::uuid[]) and requests = 7`, [[a.tenantId, b.tenantId]])).toBe(2);
    expect(await count(`select 1 from usage_daily where tenant_id = any($1::uuid[])`, [[a.tenantId, b.tenantId]])).toBe(dailyBefore);

    const sessions = async (s: SignedUpTenant) => (await t.sql<{ user_id: string }>(`select user_id from sessions where tenant_id = $1 order by user_id`, [s.tenantId])).map((r) => r.user_id);
    expect(await sessions(a)).toEqual(['fresh', 'hiring-stale']);
    expect(await sessions(b)).toEqual(['fresh', 'hiring-stale', 'stale']);
    expect(await count(`select 1 from session_messages where tenant_id = $1`, [a.tenantId])).toBe(4);
    expect(await count(`select 1 from session_messages where tenant_id = $1`, [b.tenantId])).toBe(6);

    const runs = async (s: SignedUpTenant) => (await t.sql<{ id: string }>(`select id::text from workflow_runs where tenant_id = $1 order by id`, [s.tenantId])).map((r) => r.id);
    expect(await runs(a)).toEqual([seededA.newRun, seededA.waitingRun].sort());
    expect(await runs(b)).toHaveLength(3);
    expect(await count(`select 1 from run_steps where run_id = $1`, [seededA.oldRun])).toBe(0);
    expect(await count(`select 1 from run_steps where run_id = $1`, [seededA.newRun])).toBeGreaterThan(0);
    expect(await count(`select 1 from run_steps where run_id = $1`, [seededB.oldRun])).toBeGreaterThan(0);

    // A's evaluation runs ended 10 days ago: the plain one goes, the hiring one (floor) and the pinned baseline stay.
    const evals = async (s: SignedUpTenant) => (await t.sql<{ id: string }>(`select id::text from eval_runs where tenant_id = $1 order by id`, [s.tenantId])).map((r) => r.id);
    expect(await evals(a)).toEqual([seededA.hiringEval, seededA.baselineEval].sort());
    expect(await evals(b)).toHaveLength(3);
    expect(await count(`select 1 from eval_results where run_id = $1`, [seededA.oldEval])).toBe(0);
    expect(await count(`select 1 from run_steps where run_id = $1`, [seededA.oldEval])).toBe(0);
    expect(await count(`select 1 from eval_results where run_id = $1`, [seededA.baselineEval])).toBe(2);

    // The agent keeps conversations ten years, but A keeps 10 days: A's goes, B's (30 days) stays.
    expect(await count(`select 1 from agent_sessions where id = $1`, [seededA.agentSession])).toBe(0);
    expect(await count(`select 1 from agent_messages where session_id = $1`, [seededA.agentSession])).toBe(0);
    expect(await count(`select 1 from agent_runs where id = $1`, [seededA.agentRun])).toBe(0);
    expect(await count(`select 1 from run_steps where run_id = $1`, [seededA.agentRun])).toBe(0);
    expect(await count(`select 1 from agent_sessions where id = $1`, [seededB.agentSession])).toBe(1);
    expect(await count(`select 1 from run_steps where run_id = $1`, [seededB.agentRun])).toBe(1);

    // Audit entries: a year on this plan, for both (no tenant may keep them less).
    for (const s of [a, b]) {
      expect((await t.sql<{ action: string }>(`select action from audit_log where tenant_id = $1 and action like '%.thing'`, [s.tenantId])).map((r) => r.action)).toEqual(['recent.thing']);
    }
    // Ingestion jobs: A's finished one goes, the pending one stays; B keeps both.
    expect((await t.sql<{ name: string }>(`select name from ingestion_jobs where tenant_id = $1`, [a.tenantId])).map((r) => r.name)).toEqual(['waiting.pdf']);
    expect(await count(`select 1 from ingestion_jobs where tenant_id = $1`, [b.tenantId])).toBe(2);

    expect(report.deleted).toMatchObject({
      usage_events: 3, sessions: 1, session_messages: 2, workflow_runs: 1, eval_runs: 1, eval_results: 2, agent_sessions: 1, agent_runs: 1, agent_messages: 1,
      audit_log: 2, ingestion_jobs: 1,
    });
    // The workflow run's steps, the eval run's and the agent run's.
    expect(report.deleted.run_steps).toBeGreaterThanOrEqual(3);

    // Idempotent: a second run finds nothing more.
    const again = await enforceRetention(t.server.deps, { pauseMs: 0 });
    expect(Object.values(again.deleted).every((n) => n === 0), JSON.stringify(again.deleted)).toBe(true);
  });

  it('a batch that waits for a lock longer than the timeout is left for the next run, and the run goes on', async () => {
    await t.sql(`insert into audit_log (tenant_id, actor_type, actor_name, action, target_type, created_at) values ($1, 'user', 'x', 'locked.thing', 't', ${ago(500)})`, [b.tenantId]);
    await t.sql(`insert into usage_events (tenant_id, kind, domain, intent, created_at) values ($1, 'intent_run', 'support', 'after-lock', ${ago(500)})`, [b.tenantId]);
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`select 1 from audit_log where tenant_id = $1 and action = 'locked.thing' for update`, [b.tenantId]);
      const report = await enforceRetention(t.server.deps, { pauseMs: 0, lockTimeoutMs: 50 });
      expect(report.deferred).toEqual(['audit_log']);
      expect(report.complete).toBe(true);
      expect(await count(`select 1 from audit_log where action = 'locked.thing'`, [])).toBe(1);
      // Other kinds went on.
      expect(await count(`select 1 from usage_events where intent = 'after-lock'`, [])).toBe(0);
      await holder.query('rollback');
    } finally {
      await holder.end();
    }
    const report = await enforceRetention(t.server.deps, { pauseMs: 0 });
    expect(report.deferred).toEqual([]);
    expect(await count(`select 1 from audit_log where action = 'locked.thing'`, [])).toBe(0);
  });

  it('a run finding another one at work does nothing', async () => {
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      // server/maintenance/store/history-retention.ts's RETENTION_LOCK_KEY.
      await holder.query('select pg_advisory_lock(7311402120)');
      const report = await enforceRetention(t.server.deps, { pauseMs: 0 });
      expect(report).toMatchObject({ skipped: true, deleted: {} });
    } finally {
      await holder.end();
    }
  });

  it('runs as the enforce_retention job of the worker', async () => {
    await t.sql(`insert into usage_events (tenant_id, kind, domain, intent, created_at) values ($1, 'intent_run', 'support', 'by-the-job', ${ago(50)})`, [a.tenantId]);
    await t.sql(`select graphile_worker.add_job('enforce_retention', '{}'::json)`);
    await waitFor(async () => (await t.sql(`select 1 from graphile_worker.jobs where task_identifier = 'enforce_retention'`)).length === 0, 'the job to finish');
    expect(await count(`select 1 from usage_events where intent = 'by-the-job'`, [])).toBe(0);
  });
});
