// Where fallback chains are set: the tenant (admin API), an intent's execution_config, an agent's
// fallback_models, and deploys as code, whose gate can run a suite once per model of a chain.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { promptOf, startFakeLlm, type FakeAnswer, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let primary: FakeLlm;
let backup: FakeLlm;
let t: TestServer;

beforeAll(async () => {
  [primary, backup] = await Promise.all([startFakeLlm(), startFakeLlm()]);
  t = await startTestServer({
    OPENAI_BASE_URL: primary.url,
    OPENAI_API_KEY: 'sk-platform',
    DEFAULT_MODEL: 'gpt-4o-mini',
    LLM_PROVIDERS: JSON.stringify([{ name: 'backup', baseUrl: backup.url }]),
    LLM_MAX_RETRIES: '0',
    // Breakers stay closed: every test here sees the primary fail on purpose.
    LLM_BREAKER_MIN_CALLS: '20',
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([primary?.close(), backup?.close()]);
});
afterEach(() => {
  primary.reset();
  backup.reset();
});

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const dash = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
const primaryDown = () => primary.script((request: FakeRequest) => (request.path === '/v1/chat/completions' ? { status: 503, retry_after: null } : undefined));

let runs = 0;
const runCareerPath = (s: SignedUpTenant) => t.api.post('/v1/hiring/career-path', { input: { user_id: 'u', current_role: `Analyst ${++runs}` } }, key(s));

describe('the tenant\'s chain (admin API)', () => {
  it('is set, shown and validated beside defaultModel, and serves when the primary fails', async () => {
    const tenant = await signupTenant(t.api);
    for (const bad of [['a', 'a'], ['a', 'b', 'c', 'd'], [''], [42], 'backup/fake-model']) {
      const res = await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: bad }, { headers: adminHeaders });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
      expect(res.body.error.details.issues[0].path).toMatch(/^modelFallbacks/);
    }
    const set = await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: ['backup/fake-model'] }, { headers: adminHeaders });
    expect(set.status, set.text).toBe(200);
    expect(set.body.data.modelFallbacks).toEqual(['backup/fake-model']);
    expect((await t.api.get(`/admin/tenants/${tenant.tenantId}`, { headers: adminHeaders })).body.data.modelFallbacks).toEqual(['backup/fake-model']);

    primaryDown();
    const res = await runCareerPath(tenant);
    expect(res.status, res.text).toBe(200);
    expect(res.body.metadata.model_used).toBe('fake-model');
    expect(backup.chatRequests()).toHaveLength(1);

    // null: back to the platform's chain (none here): the failure reaches the caller.
    await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: null }, { headers: adminHeaders });
    const failed = await runCareerPath(tenant);
    expect(failed.status, failed.text).toBe(502);
    expect(failed.body.error.details).toMatchObject({ reason: 'server_error', status: 503 });
  });
});

describe('an intent\'s chain (execution_config.fallback_models)', () => {
  it('is validated, kept in the version, and wins over the tenant\'s', async () => {
    const tenant = await signupTenant(t.api);
    await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: ['backup/other-model'] }, { headers: adminHeaders });
    expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'ops', display_name: 'Ops' }, dash(tenant))).status).toBe(201);
    const bad = await t.api.post('/dashboard/custom-domains/ops/intents', {
      intent_key: 'summary', display_name: 'Summary', prompt_template: 'Summarise {{input.text}}', execution_config: { fallback_models: ['x', 'x'] },
    }, dash(tenant));
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues[0].path).toMatch(/^execution_config\.fallback_models/);
    const created = await t.api.post('/dashboard/custom-domains/ops/intents', {
      intent_key: 'summary', display_name: 'Summary', prompt_template: 'Summarise {{input.text}}', execution_config: { model: 'gpt-4o-mini', fallback_models: ['backup/fake-model'] },
    }, dash(tenant));
    expect(created.status, created.text).toBe(201);

    primaryDown();
    const res = await t.api.post('/v1/domains/ops/intents/summary/run', { input: { user_id: 'u', text: 'a long report' } }, key(tenant));
    expect(res.status, res.text).toBe(200);
    expect(res.body.metadata.model_used).toBe('fake-model');
    expect(backup.chatRequests().map((r) => r.body.model)).toEqual(['fake-model']);
  });
});

describe('an agent\'s chain (fallback_models)', () => {
  it('is validated, shown, and serves the run when the agent\'s model fails', async () => {
    const tenant = await signupTenant(t.api);
    const bad = await t.api.post('/v1/agents', { agent_key: 'helper', name: 'Helper', goal: 'Help', fallback_models: 'backup/fake-model' }, key(tenant));
    expect(bad.status).toBe(400);
    const created = await t.api.post('/v1/agents', { agent_key: 'helper', name: 'Helper', goal: 'Help', fallback_models: ['backup/fake-model'] }, key(tenant));
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.agent.fallback_models).toEqual(['backup/fake-model']);
    expect((await t.api.post('/v1/agents/helper/deploy', undefined, key(tenant))).status).toBe(200);

    primaryDown();
    const run = await t.api.post('/v1/agents/helper/run', { input: { message: 'hello' } }, key(tenant));
    expect(run.status, run.text).toBe(200);
    expect(run.body.data.status, run.text).toBe('completed');
    expect(backup.chatRequests()).toHaveLength(1);
    const updated = await t.api.patch('/v1/agents/helper', { fallback_models: [] }, key(tenant));
    expect(updated.body.data.agent.fallback_models).toEqual([]);
  });
});

describe('deploys as code', () => {
  it('carry an agent\'s and an intent\'s chain, and a gate over the chain runs the suite once per model, failing on the fallback that answers badly', async () => {
    const tenant = await signupTenant(t.api);
    const project = {
      domains: [{ key: 'ops', display_name: 'Ops' }],
      intents: [{
        domain: 'ops', key: 'tag', display_name: 'Tag', prompt_template: 'Tag {{input.text}}',
        output_schema: { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'] },
        execution_config: { model: 'gpt-4o-mini', fallback_models: ['backup/fake-model'] },
      }],
      agents: [{ key: 'tagger', name: 'Tagger', goal: 'Tag things', fallback_models: ['backup/fake-model'] }],
      eval_datasets: [{ key: 'Tag cases', cases: [{ input: { text: 'invoice overdue' } }] }],
      eval_suites: [{ key: 'Tag quality', domain: 'ops', intent: 'tag', dataset: 'Tag cases' }],
    };
    // Both providers answer the intent; the fallback answers it wrongly, and the judge (the
    // platform's model, on the primary) sees it.
    const isJudge = (request: FakeRequest) => request.body?.response_format?.json_schema?.name === 'eval_judge';
    const score = (request: FakeRequest) => (promptOf(request).includes('billing') ? 5 : 1);
    const answer = (tag: string) => (request: FakeRequest): FakeAnswer | undefined => {
      if (request.path !== '/v1/chat/completions') return undefined;
      if (isJudge(request)) return { content: { score: score(request), dimension_scores: { correctness: score(request), completeness: 5, relevance: 5, safety: 5 }, reasoning: 'ok' } };
      return promptOf(request).includes('Tag invoice') ? { content: { tag } } : undefined;
    };
    primary.script(answer('billing'));
    backup.script(answer('sales'));

    const bad = await t.api.post('/v1/deployments', { project, gate: ['Tag quality'], gate_models: 'everything' }, key(tenant));
    expect(bad.status).toBe(400);
    const created = await t.api.post('/v1/deployments', { project, gate: ['Tag quality'], gate_models: 'chain' }, key(tenant));
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.deployment.id;
    expect(created.body.data.deployment.gate.map((g: { suite: string; model: string }) => [g.suite, g.model])).toEqual([['Tag quality', 'gpt-4o-mini'], ['Tag quality', 'backup/fake-model']]);
    const ended = await waitFor(async () => {
      const d = (await t.api.get(`/v1/deployments/${id}`, key(tenant))).body.data.deployment;
      return d.gate.every((g: { passed: boolean | null }) => g.passed !== null) ? d : null;
    }, 'the gate to end', 30_000);
    expect(ended.gate).toEqual([
      expect.objectContaining({ model: 'gpt-4o-mini', passed: true }),
      expect.objectContaining({ model: 'backup/fake-model', passed: false }),
    ]);
    // Each run called its own model alone.
    expect(primary.chatRequests().filter((r) => promptOf(r).includes('Tag invoice')).every((r) => r.body.model === 'gpt-4o-mini')).toBe(true);
    expect(backup.chatRequests().filter((r) => promptOf(r).includes('Tag invoice')).map((r) => r.body.model)).toEqual(['fake-model']);
    const refused = await t.api.post(`/v1/deployments/${id}/publish`, { project }, key(tenant));
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('GATE_FAILED');

    // Without the gate the chains deploy and export as written.
    const deployed = await t.api.post('/v1/deployments', { project }, key(tenant));
    expect(deployed.status, deployed.text).toBe(201);
    const exported = (await t.api.get('/v1/project', key(tenant))).body.data.project;
    expect(exported.intents[0].execution_config).toMatchObject({ fallback_models: ['backup/fake-model'] });
    expect(exported.agents[0].fallback_models).toEqual(['backup/fake-model']);
  });
});
