// Workflow definitions over HTTP: drafts, step upsert, live edits, versions, toggle, delete.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });

const SIMPLE = [
  { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
  { id: 'check', step_type: 'condition', config: { expression: 'trigger.amount > 100' }, on_success_ref: 'big', on_failure_ref: 'small' },
  { id: 'big', step_type: 'end', config: { output: { size: 'big' } } },
  { id: 'small', step_type: 'end', config: { output: { size: 'small', amount: '{{trigger.amount}}' } } },
];

async function create(s: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/workflows', body, key(s));
  expect(res.status, res.text).toBe(201);
  return res.body.data.workflow;
}

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Flows A' });
  b = await signupTenant(t.api, { companyName: 'Flows B' });
});
afterAll(async () => {
  await t?.close();
});

describe('workflow definitions', () => {
  it('creates a draft with a generated key; a draft is invisible to GET and the list', async () => {
    const wf = await create(a, { name: 'Refund Review!', description: 'Checks refunds', steps: SIMPLE });
    expect(wf).toMatchObject({ name: 'Refund Review!', workflow_key: 'refund-review', status: 'draft', is_active: false, version: null, has_draft: true, trigger_type: 'manual' });
    expect(wf.steps.map((s: any) => s.id)).toEqual(['start', 'check', 'big', 'small']);
    expect(wf.steps[1]).toMatchObject({ on_success_step_id: 'big', on_failure_step_id: 'small', step_order: 1, action_id: null, action_name: null });
    const again = await create(a, { name: 'Refund review' });
    expect(again.workflow_key).toMatch(/^refund-review-[0-9a-f]{6}$/);
    expect((await t.api.get(`/v1/workflows/${wf.workflow_key}`, key(a))).status).toBe(404);
    expect((await t.api.get('/v1/workflows', key(a))).body.data).toEqual([]);
  });

  it('deploys a valid draft as version 1; GET, list and versions show it', async () => {
    const wf = await create(a, { name: 'Deployable', steps: SIMPLE });
    const dep = await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key(a));
    expect(dep.status, dep.text).toBe(200);
    expect(dep.body.data.workflow).toMatchObject({ status: 'active', is_active: true, version: 1, has_draft: false, draft_steps: null });
    const got = await t.api.get(`/v1/workflows/${wf.workflow_key}`, key(a));
    expect(got.status).toBe(200);
    expect(got.body.data.workflow.steps).toHaveLength(4);
    const list = await t.api.get('/v1/workflows', key(a));
    expect(list.body.data).toEqual([expect.objectContaining({ workflow_key: 'deployable', endpoint: '/v1/workflows/deployable/run', method: 'POST' })]);
    const versions = await t.api.get(`/v1/workflows/deployable/versions`, key(a));
    expect(versions.body.data.versions).toEqual([expect.objectContaining({ version: 1, steps_count: 4 })]);
  });

  it('refuses to deploy an invalid definition, naming the step and the problem', async () => {
    const wf = await create(a, { name: 'Broken', steps: [{ id: 'a1', step_type: 'end', config: { output: {} } }] });
    const dep = await t.api.post(`/v1/workflows/${wf.workflow_key}/deploy`, undefined, key(a));
    expect(dep.status).toBe(400);
    expect(dep.body.error.code).toBe('INVALID_INPUT');
    expect(JSON.stringify(dep.body.error.details.issues)).toMatch(/trigger/);
  });

  it('refuses steps whose config or expression is wrong at save, naming the step', async () => {
    const bad = await t.api.post('/v1/workflows', {
      name: 'Bad expr',
      steps: [{ id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } }, { id: 'cond', name: 'Gate', step_type: 'condition', config: { expression: 'trigger.amount >' } }],
    }, key(a));
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues.some((i: any) => i.step_id === 'cond')).toBe(true);
    const action = await t.api.post('/v1/workflows', { name: 'Bad action', steps: [{ step_type: 'action', action_id: 'launch_rockets', config: {} }] }, key(a));
    expect(action.status).toBe(400);
    const ref = await t.api.post('/v1/workflows', { name: 'Bad ref', steps: [{ id: 'x', step_type: 'trigger', config: { trigger_subtype: 'manual' }, on_success_ref: 'nowhere' }] }, key(a));
    expect(ref.status).toBe(400);
    expect(ref.body.error.details.issues[0]).toMatchObject({ path: 'steps.0.on_success_ref' });
  });

  it('upserts steps by id: edits, adds with temporary ids, deletes omitted ones', async () => {
    const wf = await create(a, { name: 'Upsert', steps: SIMPLE });
    const res = await t.api.patch(`/v1/workflows/${wf.id}`, {
      steps: [
        { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' }, on_success_ref: 'tmp-1' },
        { id: 'tmp-1', step_type: 'action', action_id: 'log', config: { message: 'hello {{trigger.name}}' }, on_success_ref: 'big' },
        { id: 'big', step_type: 'end', config: { output: { done: true } } },
      ],
    }, key(a));
    expect(res.status, res.text).toBe(200);
    const steps = res.body.data.workflow.steps;
    expect(steps.map((s: any) => s.id)).toEqual(['start', expect.stringMatching(/^s_[0-9a-f]{10}$/), 'big']);
    expect(steps[0].on_success_step_id).toBe(steps[1].id);
    expect(steps[1]).toMatchObject({ action_id: 'log', action_name: expect.any(String), on_success_step_id: 'big' });
  });

  it('live edits change the definition at once; as_draft keeps them apart until deploy or discard', async () => {
    const wf = await create(a, { name: 'Drafts', steps: SIMPLE });
    await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key(a));
    const draftSteps = SIMPLE.map((s) => (s.id === 'big' ? { ...s, config: { output: { size: 'huge' } } } : s));
    const drafted = await t.api.patch(`/v1/workflows/${wf.id}`, { steps: draftSteps, as_draft: true }, key(a));
    expect(drafted.body.data.workflow.has_draft).toBe(true);
    expect(drafted.body.data.workflow.steps.find((s: any) => s.id === 'big').config.output.size).toBe('big');
    expect(drafted.body.data.workflow.draft_steps.find((s: any) => s.id === 'big').config.output.size).toBe('huge');

    const discarded = await t.api.delete(`/v1/workflows/${wf.id}/draft`, key(a));
    expect(discarded.status).toBe(200);
    expect(discarded.body.data.workflow.has_draft).toBe(false);
    const again = await t.api.delete(`/v1/workflows/${wf.id}/draft`, key(a));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('NO_DRAFT');

    await t.api.patch(`/v1/workflows/${wf.id}`, { steps: draftSteps, as_draft: true }, key(a));
    const dep = await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key(a));
    expect(dep.body.data.workflow).toMatchObject({ version: 2, has_draft: false });
    expect(dep.body.data.workflow.steps.find((s: any) => s.id === 'big').config.output.size).toBe('huge');

    // A live edit that would break the definition is refused whole.
    const broken = await t.api.patch(`/v1/workflows/${wf.id}`, { steps: SIMPLE.filter((s) => s.id !== 'start') }, key(a));
    expect(broken.status).toBe(400);
    const live = await t.api.patch(`/v1/workflows/${wf.id}`, { steps: SIMPLE }, key(a));
    expect(live.status).toBe(200);
    expect(live.body.data.workflow.steps.find((s: any) => s.id === 'big').config.output.size).toBe('big');
  });

  it('renames the key (WORKFLOW_KEY_TAKEN when taken), toggles, and deletes for good', async () => {
    const one = await create(a, { name: 'Keyed one', steps: SIMPLE });
    await create(a, { name: 'Keyed two' });
    const taken = await t.api.patch(`/v1/workflows/${one.id}`, { workflow_key: 'keyed-two' }, key(a));
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('WORKFLOW_KEY_TAKEN');
    const bad = await t.api.patch(`/v1/workflows/${one.id}`, { workflow_key: 'Not Valid' }, key(a));
    expect(bad.status).toBe(400);

    const toggleDraft = await t.api.patch(`/v1/workflows/${one.id}/toggle`, undefined, key(a));
    expect(toggleDraft.status).toBe(409);
    expect(toggleDraft.body.error.code).toBe('DEPLOY_REQUIRED');
    await t.api.post(`/v1/workflows/${one.id}/deploy`, undefined, key(a));
    const off = await t.api.patch(`/v1/workflows/${one.id}/toggle`, undefined, key(a));
    expect(off.body.data.workflow).toMatchObject({ is_active: false, status: 'inactive' });
    expect((await t.api.get('/v1/workflows', key(a))).body.data.some((w: any) => w.id === one.id)).toBe(false);
    const on = await t.api.patch(`/v1/workflows/${one.id}/toggle`, undefined, key(a));
    expect(on.body.data.workflow).toMatchObject({ is_active: true, status: 'active' });

    const del = await t.api.delete(`/v1/workflows/${one.id}`, key(a));
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await t.api.patch(`/v1/workflows/${one.id}`, { name: 'x' }, key(a))).status).toBe(404);
    const [{ n }] = await t.sql<{ n: string }>('select count(*)::text as n from workflow_versions where workflow_id = $1', [one.id]);
    expect(n).toBe('0');
  });

  it('another tenant\'s workflow is a 404 on every route', async () => {
    const wf = await create(a, { name: 'Private flow', steps: SIMPLE });
    await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key(a));
    for (const ref of [wf.id, wf.workflow_key]) {
      expect((await t.api.get(`/v1/workflows/${ref}`, key(b))).status).toBe(404);
      expect((await t.api.patch(`/v1/workflows/${ref}`, { name: 'mine' }, key(b))).status).toBe(404);
      expect((await t.api.patch(`/v1/workflows/${ref}/toggle`, undefined, key(b))).status).toBe(404);
      expect((await t.api.post(`/v1/workflows/${ref}/deploy`, undefined, key(b))).status).toBe(404);
      expect((await t.api.delete(`/v1/workflows/${ref}/draft`, key(b))).status).toBe(404);
      expect((await t.api.get(`/v1/workflows/${ref}/versions`, key(b))).status).toBe(404);
      expect((await t.api.delete(`/v1/workflows/${ref}`, key(b))).status).toBe(404);
    }
    expect((await t.api.get(`/v1/workflows/${wf.id}`, key(a))).body.data.workflow.name).toBe('Private flow');
  });

  it('serves the action catalog', async () => {
    const res = await t.api.get('/v1/workflows/actions', key(a));
    expect(res.status).toBe(200);
    expect(res.body.data.actions.map((x: any) => x.id).sort()).toEqual(['get_state', 'http_request', 'log', 'send_email', 'set_state', 'transform', 'wait_for_callback']);
  });
});
