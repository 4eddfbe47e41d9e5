// The least a client may send for a workflow, over HTTP: a trigger without config is manual, an end
// step without output ends the run with null, an ai_intent step without input reads the run's input,
// unknown config keys are dropped, and workflow keys never take a fixed path word under /v1/workflows.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { promptOf, startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;

const auth = (tenant = a) => ({ headers: bearer(tenant.apiKey) });
const UUID = '123e4567-e89b-42d3-a456-426614174000';

async function create(body: Record<string, unknown>, tenant = a) {
  const res = await t.api.post('/v1/workflows', body, auth(tenant));
  expect(res.status, res.text).toBe(201);
  return res.body.data.workflow;
}
async function deploy(ref: string, tenant = a) {
  const res = await t.api.post(`/v1/workflows/${ref}/deploy`, undefined, auth(tenant));
  expect(res.status, res.text).toBe(200);
  return res.body.data.workflow;
}
const run = (ref: string, input: Record<string, unknown>) => t.api.post(`/v1/workflows/${ref}/run`, { input }, auth());

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Minimal Flows' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

describe('minimal step configs', () => {
  it('a trigger without config (or without trigger_subtype) is manual; an end step without output ends the run with null', async () => {
    const variants = [
      { name: 'Bare minimum', steps: [{ id: 'start', step_type: 'trigger' }, { id: 'done', step_type: 'end' }] },
      { name: 'Empty configs', steps: [{ id: 'start', step_type: 'trigger', config: {} }, { id: 'done', step_type: 'end', config: {} }] },
    ];
    for (const variant of variants) {
      const wf = await create(variant);
      expect(wf).toMatchObject({ trigger_type: 'manual', status: 'draft' });
      expect(wf.steps.map((s: any) => [s.step_type, s.config])).toEqual([['trigger', {}], ['end', {}]]);
      expect(await deploy(wf.workflow_key)).toMatchObject({ trigger_type: 'manual', version: 1, status: 'active' });
      const res = await run(wf.workflow_key, { any: 'thing' });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toMatchObject({ status: 'completed', output: null });
      expect(res.body.data.trace.map((s: any) => [s.step_id, s.status])).toEqual([['start', 'completed'], ['done', 'completed']]);
      const detail = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs/${res.body.data.run_id}`, auth());
      expect(detail.body.data.run).toMatchObject({ status: 'completed', output: null });
    }
  });

  it('a trigger without trigger_subtype still refuses settings of other trigger types', async () => {
    const res = await t.api.post('/v1/workflows', { name: 'Half a schedule', steps: [{ id: 'start', step_type: 'trigger', config: { cron: '* * * * *' } }] }, auth());
    const error = expectError(res, 400, 'INVALID_INPUT');
    expect(error.details.issues).toEqual([expect.objectContaining({ path: 'steps[0].config.cron', code: 'invalid_config', message: expect.stringContaining('only for schedule triggers') })]);
  });

  it('an ai_intent step with only intent_id runs the intent on the run\'s input', async () => {
    const wf = await create({
      name: 'Screen as sent',
      steps: [
        { id: 'start', step_type: 'trigger' },
        { id: 'assess', step_type: 'ai_intent', config: { intent_id: 'hiring/resume-analysis' } },
        { id: 'done', step_type: 'end', config: { output: '{{steps.assess.output}}' } },
      ],
    });
    expect(wf.steps[1].config).toEqual({ intent_id: 'hiring/resume-analysis' });
    await deploy(wf.workflow_key);
    const res = await run(wf.workflow_key, { resume_text: 'Senior engineer, 8 years of TypeScript and Postgres', target_role: 'Staff platform engineer' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status, JSON.stringify(res.body.data.trace)).toBe('completed');
    expect(res.body.data.output).toEqual(expect.objectContaining({ summary: expect.any(String) }));
    const prompt = promptOf(fake.chatRequests()[0]);
    expect(prompt).toContain('Senior engineer, 8 years of TypeScript and Postgres');
    expect(prompt).toContain('Staff platform engineer');

    // The run's input is what the intent checks: without resume_text the step fails naming it.
    const missing = await run(wf.workflow_key, { note: 'no resume' });
    expect(missing.body.data.status).toBe('failed');
    expect(missing.body.data.trace[1]).toMatchObject({ step_id: 'assess', status: 'failed', error: expect.stringContaining('resume-analysis') });
  });
});

describe('unknown config keys', () => {
  it('are dropped at save, nested ones too; the workflow deploys and runs; other validation stays', async () => {
    const wf = await create({
      name: 'Extra settings',
      steps: [
        { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual', colour: 'blue' } },
        {
          id: 'route', step_type: 'switch',
          config: { expression: 'trigger.tier', cases: [{ value: 'gold', next_ref: 'gold', label: 'Gold customers' }], default_ref: 'other', layout: { collapsed: true } },
        },
        { id: 'gold', step_type: 'end', config: { output: { tier: 'gold', note: '{{trigger.note}}' }, style: 'bold' } },
        { id: 'other', step_type: 'action', action_id: 'log', config: { message: 'other tier', level: 'debug' } },
      ],
    });
    expect(wf.steps.map((s: any) => s.config)).toEqual([
      { trigger_subtype: 'manual' },
      { expression: 'trigger.tier', cases: [{ value: 'gold', next_ref: 'gold' }], default_ref: 'other' },
      // The end output is free-form JSON: every key in it is the client's.
      { output: { tier: 'gold', note: '{{trigger.note}}' } },
      { message: 'other tier' },
    ]);
    await deploy(wf.id);
    const gold = await run(wf.workflow_key, { tier: 'gold', note: 'vip' });
    expect(gold.body.data).toMatchObject({ status: 'completed', output: { tier: 'gold', note: 'vip' } });

    // PATCH drops them too, and a config that is wrong otherwise is still refused, naming only the real problem.
    const patched = await t.api.patch(`/v1/workflows/${wf.id}`, {
      steps: [{ id: 'start', step_type: 'trigger', config: { legacy_flag: true } }, { id: 'done', step_type: 'end', config: { output: 1, extra: { deep: true } } }],
    }, auth());
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.workflow.steps.map((s: any) => s.config)).toEqual([{}, { output: 1 }]);
    const bad = await t.api.post('/v1/workflows', {
      name: 'Still checked', steps: [{ id: 'start', step_type: 'trigger' }, { id: 'say', step_type: 'action', action_id: 'log', config: { message: '', level: 'debug' } }],
    }, auth());
    expect(expectError(bad, 400, 'INVALID_INPUT').details.issues).toEqual([expect.objectContaining({ path: 'steps[1].config.message', code: 'invalid_config', step_id: 'say' })]);
  });
});

describe('workflow keys and the fixed paths under /v1/workflows', () => {
  it('a workflow named "Actions" gets a key of its own and is readable by it; /v1/workflows/actions stays the catalog', async () => {
    const wf = await create({ name: 'Actions', steps: [{ id: 'start', step_type: 'trigger' }, { id: 'done', step_type: 'end' }] });
    expect(wf.workflow_key).toBe('actions-workflow');
    await deploy(wf.id);
    const got = await t.api.get('/v1/workflows/actions-workflow', auth());
    expect(got.status, got.text).toBe(200);
    expect(got.body.data.workflow).toMatchObject({ id: wf.id, name: 'Actions' });
    expect((await run('actions-workflow', {})).body.data).toMatchObject({ status: 'completed', output: null });
    const catalog = await t.api.get('/v1/workflows/actions', auth());
    expect(catalog.body.data.actions.map((x: any) => x.id)).toContain('http_request');
    // Unique per tenant as before: the next "Actions" gets the short random suffix.
    expect((await create({ name: 'actions' })).workflow_key).toMatch(/^actions-workflow-[0-9a-f]{6}$/);
  });

  it('no name makes a key equal to a literal path segment after /v1/workflows/, or one read as a workflow id', async () => {
    const doc = (await t.api.get('/openapi.json')).body as { paths: Record<string, unknown> };
    const words = new Set(['actions', 'approvals', 'runs', 'events']);
    for (const path of Object.keys(doc.paths)) {
      const second = /^\/v1\/workflows\/([^/{}]+)(\/|$)/.exec(path)?.[1];
      if (second) words.add(second);
    }
    // A tenant of its own: no key taken before, so each first choice is visible.
    const fresh = await signupTenant(t.api, { companyName: 'Path Words' });
    for (const word of words) {
      const wf = await create({ name: word.toUpperCase() }, fresh);
      expect(wf.workflow_key, word).toBe(`${word}-workflow`);
    }
    const byUuid = await create({ name: UUID.toUpperCase(), steps: [{ id: 'start', step_type: 'trigger' }] }, fresh);
    expect(byUuid.workflow_key).toBe(`${UUID}-workflow`);
    await deploy(byUuid.workflow_key, fresh);
    expect((await t.api.get(`/v1/workflows/${byUuid.workflow_key}`, auth(fresh))).body.data.workflow.id).toBe(byUuid.id);
  });

  it('an explicit workflow_key that is a path word or a UUID is 400 INVALID_INPUT naming the field', async () => {
    const wf = await create({ name: 'Renamed later' });
    for (const reserved of ['actions', 'runs', 'approvals', 'events', UUID]) {
      const res = await t.api.patch(`/v1/workflows/${wf.id}`, { workflow_key: reserved }, auth());
      const error = expectError(res, 400, 'INVALID_INPUT');
      expect(error.details.issues, reserved).toEqual([expect.objectContaining({ path: 'workflow_key' })]);
    }
    const fine = await t.api.patch(`/v1/workflows/${wf.id}`, { workflow_key: 'runs-report' }, auth());
    expect(fine.status, fine.text).toBe(200);
    expect(fine.body.data.workflow.workflow_key).toBe('runs-report');
  });
});

describe('the README example', () => {
  it('Application triage: the short branch ends with its own output, the long one screens the resume against the job', async () => {
    const wf = await create({
      name: 'Application triage',
      steps: [
        { id: 'start', step_type: 'trigger' },
        { id: 'check', step_type: 'condition', config: { expression: 'size(trigger.resume) > 200' }, on_success_ref: 'screen', on_failure_ref: 'too_short' },
        {
          id: 'screen', step_type: 'ai_intent',
          config: { intent_id: 'hiring/candidate-screening', input: { resume_text: '{{trigger.resume}}', job_description: '{{trigger.job}}' } },
          on_success_ref: 'done',
        },
        { id: 'done', step_type: 'end', config: { output: '{{steps.screen.output}}' } },
        { id: 'too_short', step_type: 'end', config: { output: { screened: false, reason: 'resume too short' } } },
      ],
    });
    expect(wf.workflow_key).toBe('application-triage');
    await deploy('application-triage');
    const short = await run('application-triage', { resume: 'Go developer', job: 'Backend engineer' });
    expect(short.status, short.text).toBe(200);
    expect(short.body.data).toMatchObject({ status: 'completed', output: { screened: false, reason: 'resume too short' } });

    const long = await run('application-triage', { resume: `Go developer. ${'Built payment systems in Go and PostgreSQL. '.repeat(8)}`, job: 'Backend engineer, Go required' });
    expect(long.status, long.text).toBe(200);
    expect(long.body.data.status).toBe('completed');
    expect(long.body.data.output).toEqual(expect.any(Object));
    expect(promptOf(fake.chatRequests().at(-1)!)).toContain('Backend engineer, Go required');
  });
});
