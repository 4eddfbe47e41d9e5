// One nesting limit for every JSON request body, checked before any route runs: a body nested deeper
// is a 400 INVALID_INPUT naming where, on resource routes, project plans, run routes and the signed
// webhook route alike; data stored before the limit still exports, and its plan is the same clear 400.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../server/common/json-body.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let tenant: SignedUpTenant;

const keyed = () => ({ headers: bearer(tenant.apiKey), contentType: 'application/json' });
const dashboard = () => ({ headers: bearer(tenant.token), contentType: 'application/json' });

/** JSON text of objects nested `levels` deep: {"a":{"a":...1...}}. */
const nested = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
const aPath = (levels: number) => Array.from({ length: levels }, () => 'a').join('.');

/** The 400 every too-deep body answers; its issue path starts with `prefix`. */
function expectTooDeep(res: Parameters<typeof expectError>[0], prefix: string) {
  const error = expectError(res, 400, 'INVALID_INPUT');
  expect(error.details.max_depth).toBe(MAX_JSON_DEPTH);
  expect(error.details.issues).toHaveLength(1);
  expect(error.details.issues[0]).toMatchObject({ code: 'too_deep', message: expect.stringContaining(String(MAX_JSON_DEPTH)) });
  expect(error.details.issues[0].path.startsWith(prefix), error.details.issues[0].path).toBe(true);
}

beforeAll(async () => {
  t = await startTestServer();
  tenant = await signupTenant(t.api);
  const domain = await t.api.post('/dashboard/custom-domains', { domain_key: 'deep', display_name: 'Deep' }, { headers: bearer(tenant.token) });
  expect(domain.status, domain.text).toBe(201);
});
afterAll(() => t?.close());

describe('a body nested past the limit is 400 INVALID_INPUT too_deep, before any route runs', () => {
  it('is a limit generous for real data', () => {
    expect(MAX_JSON_DEPTH).toBeGreaterThanOrEqual(64);
  });

  it('POST /v1/project/plan with a deep case input', async () => {
    const raw = `{"project":{"eval_datasets":[{"key":"deep","description":null,"cases":[{"input":${nested(5000)}}]}]}}`;
    const res = await t.api.post('/v1/project/plan', undefined, { ...keyed(), raw });
    expectTooDeep(res, 'project.eval_datasets.0.cases.0.input.a.a');
  });

  it('creating a custom intent with a deep output_schema', async () => {
    const raw = `{"intent_key":"deep-intent","display_name":"Deep","prompt_template":"Say {{input.text}}","output_schema":{"type":"object","properties":${nested(5000)}}}`;
    const res = await t.api.post('/dashboard/custom-domains/deep/intents', undefined, { ...dashboard(), raw });
    expectTooDeep(res, 'output_schema.properties.a');
    const list = await t.api.get('/dashboard/custom-domains/deep/intents', { headers: bearer(tenant.token) });
    expect(list.status, list.text).toBe(200);
    expect(JSON.stringify(list.body.data)).not.toContain('deep-intent');
  });

  it('a workflow run: deeper than the limit is refused, exactly at the limit runs', async () => {
    const workflow = await createWorkflow(t.api, tenant.apiKey, 'Deep input', [MANUAL_TRIGGER, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
    const deep = await t.api.post(`/v1/workflows/${workflow.id}/run`, undefined, { ...keyed(), raw: `{"input":${nested(5000)}}` });
    expectTooDeep(deep, 'input.a.a.a');

    // The body is level 1 and `input` level 2: an `input` of MAX - 1 nested objects reaches level MAX.
    const atLimit = await t.api.post(`/v1/workflows/${workflow.id}/run`, undefined, { ...keyed(), raw: `{"input":${nested(MAX_JSON_DEPTH - 1)}}` });
    expect(atLimit.status, atLimit.text.slice(0, 300)).toBe(200);
    expect(atLimit.body.data.status).toBe('completed');

    const pastLimit = await t.api.post(`/v1/workflows/${workflow.id}/run`, undefined, { ...keyed(), raw: `{"input":${nested(MAX_JSON_DEPTH)}}` });
    expectTooDeep(pastLimit, 'input');
    expect(pastLimit.body.error.details.issues[0].path).toBe(`input.${aPath(MAX_JSON_DEPTH - 1)}`);

    // Arrays count as levels like objects.
    const arrays = await t.api.post(`/v1/workflows/${workflow.id}/run`, undefined, { ...keyed(), raw: `{"input":{"list":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}}` });
    expectTooDeep(arrays, 'input.list.0.0');
  });

  it('a signed webhook delivery, checked after its signature', async () => {
    const steps = [
      { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'webhook' } },
      { id: 'done', step_type: 'end', config: { output: { ok: true } } },
    ];
    const created = await t.api.post('/v1/workflows', { name: 'Deep hook', steps }, { headers: bearer(tenant.apiKey) });
    expect(created.status, created.text).toBe(201);
    const deployed = await t.api.post(`/v1/workflows/${created.body.data.workflow.id}/deploy`, undefined, { headers: bearer(tenant.apiKey) });
    expect(deployed.status, deployed.text).toBe(200);
    const url = new URL(deployed.body.data.webhook_url as string);
    const secret = deployed.body.data.webhook_secret as string;
    const body = `{"payload":${nested(5000)}}`;
    const now = new Date();
    const id = 'msg_deep_1';
    const res = await t.api.post(url.pathname, undefined, {
      raw: body,
      contentType: 'application/json',
      headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, now, body) },
    });
    expectTooDeep(res, 'payload.a.a');
  });

  it('JSON nested within the limit that merely looks deep passes (brackets inside strings do not count)', async () => {
    const res = await t.api.post('/v1/evals/datasets', { name: 'Brackets', cases: [{ input: { text: '{'.repeat(5000) + '['.repeat(5000) } }] }, { headers: bearer(tenant.apiKey) });
    expect(res.status, res.text.slice(0, 300)).toBe(201);
  });
});

describe('values stored before the limit', () => {
  it('GET /v1/project still answers them; planning that export is the same clear 400, not a 500', async () => {
    const created = await t.api.post('/v1/evals/datasets', { name: 'Old deep data', cases: [{ input: { text: 'placeholder' } }] }, { headers: bearer(tenant.apiKey) });
    expect(created.status, created.text).toBe(201);
    await t.sql('update eval_cases set input = $1::jsonb where dataset_id = $2', [`{"old":${nested(2000)}}`, created.body.data.dataset.id]);

    const exported = await t.api.get('/v1/project', { headers: bearer(tenant.apiKey) });
    expect(exported.status, exported.text.slice(0, 300)).toBe(200);
    const dataset = exported.body.data.project.eval_datasets.find((d: { key: string }) => d.key === 'Old deep data');
    expect(JSON.stringify(dataset.cases[0].input)).toBe(`{"old":${nested(2000)}}`);

    const plan = await t.api.post('/v1/project/plan', { project: exported.body.data.project }, { headers: bearer(tenant.apiKey) });
    expectTooDeep(plan, 'project.eval_datasets.');
    expect(plan.body.error.details.issues[0].path).toMatch(/^project\.eval_datasets\.\d+\.cases\.0\.input\.old\.a\.a/);
  });
});
