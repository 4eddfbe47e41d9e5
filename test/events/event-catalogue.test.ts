// Every type of the event catalogue, made to happen for real through the API, received by a
// subscriber and checked against the JSON Schema the catalogue documents (GET /v1/event-types, the
// same schemas as the OpenAPI document's `webhooks`). The opt-in type reaches only the subscription
// that names it; a filter keeps what carries its value.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { promptOf, schemaNameOf, startFakeLlm, type FakeAnswer, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { startEventReceiver, verifyDelivery, type EventReceiver, type ReceivedDelivery } from '../support/event-receiver.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;
let receiver: EventReceiver;
let a: SignedUpTenant;
let secret: string;
const validators = new Map<string, ValidateFunction>();
/** Types seen by the test, each checked against its schema. */
const checked = new Set<string>();
let tagAnswer = 'billing';
let providerDown = false;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const jwt = (s: SignedUpTenant) => ({ headers: bearer(s.token) });

beforeAll(async () => {
  receiver = await startEventReceiver();
  fake = await startFakeLlm();
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: 'sk-test',
    DEFAULT_MODEL: 'gpt-4o-mini',
    LLM_MAX_RETRIES: '0',
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    // The breaker test opens the platform's breaker and waits for a probe to close it.
    LLM_BREAKER_COOLDOWN_MS: '300',
  });
  // The intent tags an invoice as the test says; the judge scores "billing" 5 and anything else 1.
  fake.script((request: FakeRequest): FakeAnswer | undefined => {
    if (providerDown) return { status: 401, error: { message: 'key revoked' } };
    if (schemaNameOf(request) === 'eval_judge') {
      const score = promptOf(request).includes('"billing"') ? 5 : 1;
      return { content: { score, dimension_scores: { correctness: score, completeness: 5, relevance: 5, safety: 5 }, reasoning: 'checked the tag' } };
    }
    return promptOf(request).includes('Tag invoice') ? { content: { tag: tagAnswer } } : undefined;
  });
  a = await signupTenant(t.api, { companyName: 'Catalogue A' });
  const catalogue = await t.api.get('/v1/event-types', key(a));
  expect(catalogue.status, catalogue.text).toBe(200);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  for (const type of catalogue.body.data.types as { type: string; schema: object }[]) validators.set(type.type, ajv.compile(type.schema));
  const all = await t.api.post('/v1/event-subscriptions', { url: `${receiver.url}/all` }, key(a));
  expect(all.status, all.text).toBe(201);
  secret = all.body.data.secret;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await receiver?.close();
});

/** Waits for a delivery to `path` of `type` that `match` accepts, and checks it against the type's schema and signature. */
async function expectEvent(type: string, match: (data: Record<string, any>) => boolean = () => true, path = '/all', withSecret = secret): Promise<ReceivedDelivery> {
  const delivery = await waitFor(() => receiver.received.find((r) => r.path === path && r.json.type === type && match(r.json.data)), `${type} delivered to ${path}`, 30_000);
  const validate = validators.get(type);
  expect(validate, `${type} is in the catalogue`).toBeDefined();
  expect(validate!(delivery.json), `${type}: ${JSON.stringify(validate!.errors)}`).toBe(true);
  expect(verifyDelivery(delivery, withSecret)).toBeTruthy();
  expect(delivery.json.tenant_id).toBe(a.tenantId);
  checked.add(type);
  return delivery;
}

describe('every event type, delivered and valid against its documented schema', () => {
  it('key.created and key.revoked', async () => {
    const created = await t.api.post('/dashboard/api-keys', { name: 'catalogue-key', preset: 'read-only' }, jwt(a));
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.key.id;
    const made = await expectEvent('key.created', (d) => d.key_id === id);
    expect(made.json.data).toMatchObject({ name: 'catalogue-key', environment: 'production', permissions: expect.arrayContaining(['events:read']) });
    expect(made.body).not.toContain(created.body.data.apiKey);
    expect((await t.api.delete(`/dashboard/api-keys/${id}`, jwt(a))).status).toBe(200);
    expect((await expectEvent('key.revoked', (d) => d.key_id === id)).json.data.revoked_at).toEqual(expect.any(String));
  });

  it('workflow.run.started, .completed and .failed', async () => {
    const ok = await createWorkflow(t.api, a.apiKey, 'Fine', [MANUAL_TRIGGER, { id: 'echo', step_type: 'action', action_id: 'transform', config: { output: { n: 1 } } }]);
    const run = (await t.api.post(`/v1/workflows/${ok.id}/run`, { input: {} }, key(a))).body.data;
    await expectEvent('workflow.run.started', (d) => d.run_id === run.run_id);
    expect((await expectEvent('workflow.run.completed', (d) => d.run_id === run.run_id)).json.data).toMatchObject({ status: 'completed', workflow_key: ok.workflow_key });
    const bad = await createWorkflow(t.api, a.apiKey, 'Blocked', [MANUAL_TRIGGER, { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: 'http://10.255.255.1/x' } }]);
    const failed = (await t.api.post(`/v1/workflows/${bad.id}/run`, { input: {} }, key(a))).body.data;
    expect(failed.status).toBe('failed');
    expect((await expectEvent('workflow.run.failed', (d) => d.run_id === failed.run_id)).json.data.error).toEqual({ code: expect.any(String), message: expect.any(String) });
  });

  it('approval.requested and approval.decided (a rejection ends the run as completed, status rejected)', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Approve', [MANUAL_TRIGGER, { id: 'ask', step_type: 'approval', config: { message: 'Ship it?' } }]);
    const run = (await t.api.post(`/v1/workflows/${wf.id}/run`, { input: {} }, key(a))).body.data;
    expect((await expectEvent('approval.requested', (d) => d.run_id === run.run_id)).json.data).toMatchObject({ approval_id: run.approval_id, message: 'Ship it?', step_id: 'ask' });
    expect((await t.api.post(`/v1/workflows/approvals/${run.approval_id}/decision`, { decision: 'reject', comment: 'not yet' }, key(a))).status).toBe(200);
    expect((await expectEvent('approval.decided', (d) => d.run_id === run.run_id)).json.data).toMatchObject({ decision: 'rejected', comment: 'not yet' });
    expect((await expectEvent('workflow.run.completed', (d) => d.run_id === run.run_id)).json.data.status).toBe('rejected');
  });

  it('workflow.run.waiting (a callback) and workflow.run.cancelled', async () => {
    const wf = await createWorkflow(t.api, a.apiKey, 'Wait', [MANUAL_TRIGGER, { id: 'wait', step_type: 'action', action_id: 'wait_for_callback', config: { timeout_seconds: 600 } }]);
    const run = (await t.api.post(`/v1/workflows/${wf.id}/run`, { input: {} }, key(a))).body.data;
    expect(run.status).toBe('waiting');
    expect((await expectEvent('workflow.run.waiting', (d) => d.run_id === run.run_id)).json.data).toMatchObject({ wait: 'callback', step_id: 'wait', callback_seq: expect.any(Number) });
    expect((await t.api.post(`/v1/workflows/${wf.id}/runs/${run.run_id}/cancel`, {}, key(a))).status).toBe(200);
    await expectEvent('workflow.run.cancelled', (d) => d.run_id === run.run_id);
  });

  it('agent.run.started, .completed, .failed and budget.exhausted', async () => {
    for (const [agentKey, extra] of [['helper', {}], ['capped', { behavior_config: { max_cost_usd: 0.000001 } }]] as const) {
      expect((await t.api.post('/v1/agents', { agent_key: agentKey, name: `Agent ${agentKey === 'capped' ? 'Capped' : 'Helper'}`, goal: 'Help', ...extra }, key(a))).status).toBe(201);
      expect((await t.api.post(`/v1/agents/${agentKey}/deploy`, undefined, key(a))).status).toBe(200);
    }
    const ok = (await t.api.post('/v1/agents/helper/run', { input: { message: 'hi' } }, key(a))).body.data;
    await expectEvent('agent.run.started', (d) => d.run_id === ok.run_id);
    expect((await expectEvent('agent.run.completed', (d) => d.run_id === ok.run_id)).json.data).toMatchObject({ agent_key: 'helper', status: 'completed' });
    // Even its first call could pass the budget: the run stops before it.
    const capped = await t.api.post('/v1/agents/capped/run', { input: { message: 'spend' } }, key(a));
    const runId = capped.body.data.run_id;
    const failed = await expectEvent('agent.run.failed', (d) => d.run_id === runId);
    expect(failed.json.data.status, capped.text).toBe('budget_exhausted');
    expect((await expectEvent('budget.exhausted', (d) => d.run_id === runId)).json.data).toMatchObject({ run_kind: 'agent', agent_key: 'capped', max_cost_usd: 0.000001 });
  });

  const project = {
    domains: [{ key: 'ops', display_name: 'Ops' }],
    intents: [{ domain: 'ops', key: 'tag', display_name: 'Tag', prompt_template: 'Tag {{input.text}}', output_schema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] } }],
    eval_datasets: [{ key: 'Tag cases', cases: [{ input: { text: 'invoice overdue' } }] }],
    eval_suites: [{ key: 'Tag quality', domain: 'ops', intent: 'tag', dataset: 'Tag cases' }],
  };

  async function gatedDeployment() {
    const created = await t.api.post('/v1/deployments', { project, gate: ['Tag quality'] }, key(a));
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.deployment.id as string;
    await waitFor(async () => {
      const d = (await t.api.get(`/v1/deployments/${id}`, key(a))).body.data.deployment;
      return d.gate.every((g: { passed: boolean | null }) => g.passed !== null) ? d : null;
    }, 'the gate to end', 30_000);
    return { id, publish: () => t.api.post(`/v1/deployments/${id}/publish`, { project }, key(a)) };
  }

  it('eval.run.completed, eval.gate.failed and deployment.failed; then eval.gate.passed and deployment.published', async () => {
    tagAnswer = 'sales';
    const failing = await gatedDeployment();
    expect((await failing.publish()).body.error.code).toBe('GATE_FAILED');
    expect((await expectEvent('eval.gate.failed', (d) => d.deployment_id === failing.id)).json.data.status).toBe('gate_failed');
    expect((await expectEvent('deployment.failed', (d) => d.deployment_id === failing.id)).json.data.error.code).toBe('GATE_FAILED');
    const run = await expectEvent('eval.run.completed');
    expect(run.json.data).toMatchObject({ status: 'completed', cases_total: 1, domain: 'ops', intent: 'tag' });
    tagAnswer = 'billing';
    const passing = await gatedDeployment();
    expect((await passing.publish()).status).toBe(200);
    expect((await expectEvent('eval.gate.passed', (d) => d.deployment_id === passing.id)).json.data.gate).toHaveLength(1);
    expect((await expectEvent('deployment.published', (d) => d.deployment_id === passing.id)).json.data.status).toBe('deployed');
  });

  it('eval.run.failed (the provider refuses the key)', async () => {
    const suites = await t.api.get('/v1/evals/suites', key(a));
    const suite = (suites.body.data.suites as { id: string; name: string }[]).find((s) => s.name === 'Tag quality')!;
    providerDown = true;
    try {
      const started = await t.api.post(`/v1/evals/suites/${suite.id}/run`, {}, key(a));
      expect(started.status, started.text).toBe(202);
      const failed = await expectEvent('eval.run.failed', (d) => d.run_id === started.body.data.run.id);
      expect(failed.json.data.error.code).toBe('LLM_PROVIDER_ERROR');
    } finally {
      providerDown = false;
    }
  });

  it('eval.monitor.fired and eval.monitor.resolved (an online rule on the deployed tag intent)', async () => {
    const suites = await t.api.get('/v1/evals/suites', key(a));
    const suite = (suites.body.data.suites as { id: string; name: string }[]).find((s) => s.name === 'Tag quality')!;
    const rule = await t.api.post('/v1/evals/online', { name: 'Live tags', suite_id: suite.id, sample_rate: 1, filter: { watch: true } }, key(a));
    expect(rule.status, rule.text).toBe(201);
    const monitor = await t.api.post('/v1/evals/monitors', { name: 'Tags went wrong', rule_id: rule.body.data.rule.id, metric: 'mean_score', threshold: 3, window_samples: 20, min_samples: 20 }, key(a));
    expect(monitor.status, monitor.text).toBe(201);
    const id = monitor.body.data.monitor.id;
    const tagRuns = async (answer: string) => {
      tagAnswer = answer;
      for (let i = 0; i < 20; i++) {
        const res = await t.api.post('/v1/run', { domain: 'ops', intent: 'tag', input: { user_id: `watch-${i}`, text: `invoice ${answer} ${i}` }, metadata: { watch: true } }, key(a));
        expect(res.status, res.text).toBe(200);
      }
    };
    // The judge scores "sales" 1: the window's mean drops far below 3.
    await tagRuns('sales');
    expect((await expectEvent('eval.monitor.fired', (d) => d.monitor_id === id)).json.data).toMatchObject({ metric: 'mean_score', direction: 'below', threshold: 3, samples: 20, value: 1 });
    await tagRuns('billing');
    // Judged after each slice of the window: the last 20 may still hold a "sales" sample or two when
    // the bound first clears the threshold, so the value is anywhere above it, not 5.
    const resolved = (await expectEvent('eval.monitor.resolved', (d) => d.monitor_id === id)).json.data;
    expect(resolved).toMatchObject({ metric: 'mean_score', direction: 'below', threshold: 3, samples: 20 });
    expect(resolved.bound).toBeGreaterThanOrEqual(3);
    expect(resolved.value).toBeGreaterThan(resolved.bound);
    tagAnswer = 'billing';
  });

  it('ingestion.completed and ingestion.failed', async () => {
    const upload = async (name: string, text: string) => {
      const res = await t.api.post('/dashboard/documents', { name, content_base64: Buffer.from(text).toString('base64') }, jwt(a));
      expect(res.status, res.text).toBe(202);
      return res.body.data.jobId as string;
    };
    const good = await upload('notes.txt', 'Refunds are paid within 14 days of a return.');
    expect((await expectEvent('ingestion.completed', (d) => d.job_id === good)).json.data.name).toBe('notes.txt');
    const corrupt = await upload('corrupt.pdf', '%PDF-1.7\ncorrupt body');
    expect((await expectEvent('ingestion.failed', (d) => d.job_id === corrupt)).json.data.error).toMatchObject({ code: 'INGESTION_FAILED' });
  });

  it('intent.run.completed reaches only a subscription that names it, filtered by domain', async () => {
    const optIn = await t.api.post('/v1/event-subscriptions', { url: `${receiver.url}/intents`, event_types: ['intent.run.completed'], filter: { domain: 'hiring' } }, key(a));
    expect(optIn.status, optIn.text).toBe(201);
    const run = await t.api.post('/v1/run', { domain: 'hiring', intent: 'job-match', input: { user_id: 'cand-1', resume_text: 'Engineer, 8 years of Node.js.', job_description: 'Staff engineer, Node.js.' } }, key(a));
    expect(run.status, run.text).toBe(200);
    const other = await t.api.post('/v1/run', { domain: 'ops', intent: 'tag', input: { user_id: 'cand-1', text: 'invoice' } }, key(a));
    expect(other.status, other.text).toBe(200);
    const event = await expectEvent('intent.run.completed', (d) => d.intent === 'job-match', '/intents', optIn.body.data.secret);
    expect(event.json.data).toMatchObject({ domain: 'hiring', session_id: expect.any(String), cached: false });
    // A later event to the same receiver shows the earlier ones were all in: the ops run was filtered out.
    await t.api.post(`/v1/event-subscriptions/${optIn.body.data.subscription.id}/test`, undefined, key(a));
    await waitFor(() => receiver.received.find((r) => r.path === '/intents' && r.json.type === 'event.test'), 'the test event');
    expect(receiver.received.filter((r) => r.path === '/intents' && r.json.type === 'intent.run.completed').map((r) => r.json.data.intent)).toEqual(['job-match']);
    // The subscription to every type does not get the opt-in one.
    expect(receiver.received.some((r) => r.path === '/all' && r.json.type === 'intent.run.completed')).toBe(false);
    await expectEvent('event.test', () => true, '/intents', optIn.body.data.secret);
  });

  it('quota.warning at 80% and quota.exhausted at 100%, once each', async () => {
    const q = await signupTenant(t.api, { companyName: 'Catalogue quota' });
    expect((await t.api.patch(`/admin/tenants/${q.tenantId}`, { monthlyRequestQuota: 5 }, { headers: adminHeaders })).status).toBe(200);
    const sub = await t.api.post('/v1/event-subscriptions', { url: `${receiver.url}/quota`, event_types: ['quota.warning', 'quota.exhausted'] }, key(q));
    const input = { user_id: 'u', resume_text: 'Engineer.', job_description: 'Engineer.' };
    for (let i = 0; i < 5; i++) expect((await t.api.post('/v1/run', { domain: 'hiring', intent: 'job-match', input }, key(q))).status).toBe(200);
    expect((await t.api.post('/v1/run', { domain: 'hiring', intent: 'job-match', input }, key(q))).status).toBe(429);
    const received = () => receiver.received.filter((r) => r.path === '/quota');
    await waitFor(() => received().length >= 2, 'both quota events');
    const ajvCheck = (type: string) => {
      const d = received().find((r) => r.json.type === type)!;
      expect(validators.get(type)!(d.json), JSON.stringify(validators.get(type)!.errors)).toBe(true);
      expect(verifyDelivery(d, sub.body.data.secret)).toBeTruthy();
      checked.add(type);
      return d.json.data;
    };
    expect(ajvCheck('quota.warning')).toMatchObject({ quota: 'requests', limit: 5, used: 4, percent: 80 });
    expect(ajvCheck('quota.exhausted')).toMatchObject({ quota: 'requests', limit: 5, used: 5, percent: 100 });
    expect(received()).toHaveLength(2);
    // Tokens, moved by an agent run's step writes (another writer of the counter).
    const tokens = await signupTenant(t.api, { companyName: 'Catalogue token quota' });
    expect((await t.api.patch(`/admin/tenants/${tokens.tenantId}`, { monthlyTokenQuota: 1 }, { headers: adminHeaders })).status).toBe(200);
    expect((await t.api.post('/v1/event-subscriptions', { url: `${receiver.url}/tokens`, event_types: ['quota.exhausted'] }, key(tokens))).status).toBe(201);
    expect((await t.api.post('/v1/agents', { agent_key: 'spender', name: 'Spender', goal: 'Answer' }, key(tokens))).status).toBe(201);
    expect((await t.api.post('/v1/agents/spender/deploy', undefined, key(tokens))).status).toBe(200);
    expect((await t.api.post('/v1/agents/spender/run', { input: { message: 'hi' } }, key(tokens))).body.data.status).toBe('completed');
    const exhausted = await waitFor(() => receiver.received.find((r) => r.path === '/tokens'), 'the token quota event');
    expect(exhausted.json.data).toMatchObject({ quota: 'tokens', limit: 1, percent: 100 });
  });

  it('provider.breaker.opened and provider.breaker.closed (the platform\'s provider failing, then answering again)', async () => {
    const input = { user_id: 'u', resume_text: 'Engineer.', job_description: 'Engineer.' };
    const run = () => t.api.post('/v1/run', { domain: 'hiring', intent: 'job-match', input }, key(a));
    fake.fail(20, 503);
    await waitFor(async () => (await run(), receiver.received.some((r) => r.path === '/all' && r.json.type === 'provider.breaker.opened')), 'the breaker to open');
    fake.reset();
    fake.script(null);
    const opened = await expectEvent('provider.breaker.opened');
    expect(opened.json.data).toMatchObject({ provider: 'openai', credential: 'platform', open_until: expect.any(String) });
    // After the cool-down a call is the probe; it succeeds and the breaker closes.
    await waitFor(async () => (await run()).status === 200, 'a run served again');
    expect((await expectEvent('provider.breaker.closed')).json.data).toEqual({ provider: 'openai', credential: 'platform' });
  });

  it('covers the whole catalogue', () => {
    expect([...checked].sort()).toEqual([...validators.keys()].sort());
  });
});
