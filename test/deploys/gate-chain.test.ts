// A deployment gate over a fallback chain (`gate_models: "chain"`): the gate suite runs once per
// model of the gated intent's chain (its model, then each fallback, each alone as the run's
// model_override), and the gate passes only when every model passes. The chain is the intent's
// own, else the tenant's, else the platform's. One provider serves every model; the script answers
// by `request.body.model`, so one fallback answers badly and the gate fails naming it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { promptOf, schemaNameOf, startFakeLlm, type FakeAnswer, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const BAD_MODEL = 'sloppy-model';

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: 'sk-test',
    DEFAULT_MODEL: 'gpt-4o-mini',
    LLM_FALLBACK_MODELS: JSON.stringify(['platform-model']),
    LLM_MAX_RETRIES: '0',
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.reset();
  // The intent tags an overdue invoice "billing", except on the sloppy model; the judge (the
  // platform's default model) scores a "billing" answer 5 and anything else 1.
  fake.script((request: FakeRequest): FakeAnswer | undefined => {
    if (schemaNameOf(request) === 'eval_judge') {
      const score = promptOf(request).includes('"billing"') ? 5 : 1;
      return { content: { score, dimension_scores: { correctness: score, completeness: 5, relevance: 5, safety: 5 }, reasoning: 'checked the tag' } };
    }
    return promptOf(request).includes('Tag invoice') ? { content: { tag: request.body.model === BAD_MODEL ? 'sales' : 'billing' } } : undefined;
  });
});

const project = (executionConfig: Record<string, unknown>) => ({
  domains: [{ key: 'ops', display_name: 'Ops' }],
  intents: [{
    domain: 'ops', key: 'tag', display_name: 'Tag', prompt_template: 'Tag {{input.text}}',
    output_schema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
    execution_config: executionConfig,
  }],
  eval_datasets: [{ key: 'Tag cases', cases: [{ input: { text: 'invoice overdue' } }, { input: { text: 'invoice overdue again' } }] }],
  eval_suites: [{ key: 'Tag quality', domain: 'ops', intent: 'tag', dataset: 'Tag cases' }],
});

interface GateRow { suite: string; model: string | null; passed: boolean | null; pass_rate: number | null; run_id: string }

async function gate(owner: SignedUpTenant, body: Record<string, unknown>) {
  const created = await t.api.post('/v1/deployments', { gate: ['Tag quality'], ...body }, key(owner));
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.deployment.id as string;
  const ended = await waitFor(async () => {
    const d = (await t.api.get(`/v1/deployments/${id}`, key(owner))).body.data.deployment;
    return d.gate.every((g: GateRow) => g.passed !== null) ? d : null;
  }, 'the gate to end', 30_000);
  return { id, gate: ended.gate as GateRow[] };
}

const modelsCalled = () => fake.chatRequests().filter((r) => schemaNameOf(r) !== 'eval_judge' && promptOf(r).includes('Tag invoice')).map((r) => r.body.model);

describe('gate_models: "chain"', () => {
  it('runs the suite on every model of the intent\'s chain and fails naming the model that missed', async () => {
    const tenant = await signupTenant(t.api, { companyName: 'Gate chain intent' });
    const body = { project: project({ model: 'gpt-4o-mini', fallback_models: ['fake-model', BAD_MODEL] }), gate_models: 'chain' };
    const { id, gate: rows } = await gate(tenant, body);
    expect(rows.map((g) => ({ suite: g.suite, model: g.model, pass_rate: g.pass_rate, passed: g.passed }))).toEqual([
      { suite: 'Tag quality', model: 'gpt-4o-mini', pass_rate: 1, passed: true },
      { suite: 'Tag quality', model: 'fake-model', pass_rate: 1, passed: true },
      { suite: 'Tag quality', model: BAD_MODEL, pass_rate: 0, passed: false },
    ]);
    // Each run called its one model alone, never another model of the chain.
    expect(modelsCalled().sort()).toEqual(['fake-model', 'fake-model', 'gpt-4o-mini', 'gpt-4o-mini', BAD_MODEL, BAD_MODEL].sort());
    const runs = await Promise.all(rows.map(async (g) => (await t.api.get(`/v1/evals/runs/${g.run_id}`, key(tenant))).body.data.run));
    expect(runs.map((r) => r.model_override)).toEqual(['gpt-4o-mini', 'fake-model', BAD_MODEL]);

    const refused = await t.api.post(`/v1/deployments/${id}/publish`, body, key(tenant));
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.code).toBe('GATE_FAILED');
    expect(refused.body.error.message).toContain(`Tag quality (${BAD_MODEL})`);
    expect(refused.body.error.message).not.toContain('fake-model');
    // Nothing went live.
    expect((await t.api.get('/v1/project', key(tenant))).body.data.project.intents).toEqual([]);
  });

  it('takes the tenant\'s chain for an intent that names none, and publishes when every model passes', async () => {
    const tenant = await signupTenant(t.api, { companyName: 'Gate chain tenant' });
    expect((await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: ['fake-model'] }, { headers: adminHeaders })).status).toBe(200);
    const body = { project: project({}), gate_models: 'chain' };
    const { id, gate: rows } = await gate(tenant, body);
    expect(rows.map((g) => [g.model, g.passed])).toEqual([['gpt-4o-mini', true], ['fake-model', true]]);
    const published = await t.api.post(`/v1/deployments/${id}/publish`, body, key(tenant));
    expect(published.status, published.text).toBe(200);
    expect(published.body.data.deployment.status).toBe('deployed');
  });

  it('takes the platform\'s chain when neither the intent nor the tenant names one; [] on the intent is no fallback', async () => {
    const tenant = await signupTenant(t.api, { companyName: 'Gate chain platform' });
    const platform = await gate(tenant, { project: project({}), gate_models: 'chain' });
    expect(platform.gate.map((g) => g.model)).toEqual(['gpt-4o-mini', 'platform-model']);
    const none = await gate(tenant, { project: project({ fallback_models: [] }), gate_models: 'chain' });
    expect(none.gate.map((g) => g.model)).toEqual(['gpt-4o-mini']);
  });

  it('without it the gate runs once, as the intent\'s route serves it; another value is 400', async () => {
    const tenant = await signupTenant(t.api, { companyName: 'Gate primary' });
    const { gate: rows } = await gate(tenant, { project: project({ fallback_models: [BAD_MODEL] }) });
    expect(rows).toEqual([expect.objectContaining({ suite: 'Tag quality', model: null, passed: true })]);
    expect(modelsCalled()).toEqual(['gpt-4o-mini', 'gpt-4o-mini']);
    const bad = await t.api.post('/v1/deployments', { project: project({}), gate: ['Tag quality'], gate_models: 'all' }, key(tenant));
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_INPUT');
    expect(bad.body.error.details.issues[0].path).toBe('gate_models');
  });
});
