// A run's steps go with the run, however the run goes: a workflow deleted with its runs, an agent
// conversation deleted with its runs, a suite deleted with its evaluation runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let a: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api);
});
afterAll(() => t?.close());

const key = () => ({ headers: bearer(a.apiKey) });
const stepsOf = async (runIds: string[]) => Number((await t.sql<{ n: string }>(`select count(*) as n from run_steps where run_id = any($1::uuid[])`, [runIds]))[0].n);
const step = (kind: string, runId: string, index = 0) =>
  t.sql(`insert into run_steps (tenant_id, run_kind, run_id, index, type, name, status, started_at, completed_at) values ($1, $2, $3, $4, 'llm', 's', 'completed', now(), now())`, [a.tenantId, kind, runId, index]);

describe('run_steps follow their runs', () => {
  it('deleting a workflow deletes its runs\' steps, and no other workflow\'s', async () => {
    const steps = [MANUAL_TRIGGER, { id: 'done', step_type: 'end', config: { output: { ok: true } } }];
    const doomed = await createWorkflow(t.api, a.apiKey, 'Doomed', steps);
    const kept = await createWorkflow(t.api, a.apiKey, 'Kept', steps);
    const runOf = async (workflowKey: string) => {
      const res = await t.api.post(`/v1/workflows/${workflowKey}/run`, { input: {} }, key());
      expect(res.status, res.text).toBe(200);
      return res.body.data.run_id as string;
    };
    const doomedRuns = [await runOf(doomed.workflow_key), await runOf(doomed.workflow_key)];
    const keptRuns = [await runOf(kept.workflow_key)];
    expect(await stepsOf(doomedRuns)).toBeGreaterThan(0);
    const keptSteps = await stepsOf(keptRuns);
    expect(keptSteps).toBeGreaterThan(0);

    const del = await t.api.delete(`/v1/workflows/${doomed.id}`, key());
    expect(del.status, del.text).toBe(200);
    expect(await t.sql(`select 1 from workflow_runs where id = any($1::uuid[])`, [doomedRuns])).toEqual([]);
    expect(await stepsOf(doomedRuns)).toBe(0);
    expect(await stepsOf(keptRuns)).toBe(keptSteps);
  });

  it('deleting an agent conversation deletes its runs and their steps', async () => {
    const [agent] = await t.sql<{ id: string }>(
      `insert into agents (tenant_id, agent_key, name, goal, status, intent_ids, workflow_ids, action_ids, knowledge_domain_keys, created_at, updated_at)
       values ($1, 'talker', 'Talker', 'Talk', 'active', '[]', '[]', '[]', '[]', now(), now()) returning id`,
      [a.tenantId],
    );
    const session = async () =>
      (await t.sql<{ id: string }>(`insert into agent_sessions (id, tenant_id, agent_id, status, turns, last_activity_at, created_at) values (gen_random_uuid(), $1, $2, 'active', 1, now(), now()) returning id`, [a.tenantId, agent.id]))[0].id;
    const run = async (sessionId: string) =>
      (await t.sql<{ id: string }>(`insert into agent_runs (id, tenant_id, agent_id, session_id, status, input, started_at) values (gen_random_uuid(), $1, $2, $3, 'completed', '{}', now()) returning id`, [a.tenantId, agent.id, sessionId]))[0].id;
    const [gone, kept] = [await session(), await session()];
    const goneRuns = [await run(gone), await run(gone)];
    const keptRun = await run(kept);
    for (const id of [...goneRuns, keptRun]) {
      await step('agent', id, 0);
      await step('agent', id, 1);
    }
    await t.sql(`delete from agent_sessions where id = $1`, [gone]);
    expect(await stepsOf(goneRuns)).toBe(0);
    expect(await stepsOf([keptRun])).toBe(2);
  });

  it('deleting a suite deletes its evaluation runs\' steps', async () => {
    const [dataset] = await t.sql<{ id: string }>(`insert into eval_datasets (tenant_id, name, created_at, updated_at) values ($1, 'cleanup', now(), now()) returning id`, [a.tenantId]);
    const [suite] = await t.sql<{ id: string }>(
      `insert into eval_suites (tenant_id, name, domain_key, intent_key, dataset_id, created_at, updated_at) values ($1, 'cleanup', 'hiring', 'job-match', $2, now(), now()) returning id`,
      [a.tenantId, dataset.id],
    );
    const evalRun = async (suiteId: string | null) =>
      (await t.sql<{ id: string }>(
        `insert into eval_runs (tenant_id, suite_id, execution_mode, triggered_by, status, started_at, updated_at, completed_at) values ($1, $2, 'external_output', 'api', 'completed', now(), now(), now()) returning id`,
        [a.tenantId, suiteId],
      ))[0].id;
    const goneRun = await evalRun(suite.id);
    const keptRun = await evalRun(null);
    for (const id of [goneRun, keptRun]) await step('eval', id);
    const del = await t.api.delete(`/v1/evals/suites/${suite.id}`, key());
    expect(del.status, del.text).toBe(200);
    expect(await stepsOf([goneRun])).toBe(0);
    expect(await stepsOf([keptRun])).toBe(1);
  });

  it('a run of one kind never takes another kind\'s steps', async () => {
    // The same id under two kinds cannot happen (ids are UUIDs); the trigger still matches on the kind.
    const [run] = await t.sql<{ id: string }>(
      `insert into eval_runs (tenant_id, execution_mode, triggered_by, status, started_at, updated_at) values ($1, 'external_output', 'api', 'completed', now(), now()) returning id`,
      [a.tenantId],
    );
    await step('workflow', run.id);
    await t.sql(`delete from eval_runs where id = $1`, [run.id]);
    expect(await stepsOf([run.id])).toBe(1);
  });
});
