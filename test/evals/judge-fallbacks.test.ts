// An eval suite's fallback chain for its judge (`fallback_models`): validated, shown, kept by each run
// as it started, carried by deploys as code, and followed by the judge's calls, before the tenant's
// chain; and a run's model override, which measures that model alone. The judge's model answers 503
// on its own provider (`judges`, so its breaker is not the intent's); the fallbacks live on `backup`.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { schemaNameOf, startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let primary: FakeLlm;
let judges: FakeLlm;
let backup: FakeLlm;
let t: TestServer;
let tenant: SignedUpTenant;

const key = () => ({ headers: bearer(tenant.apiKey) });
const INTENT = 'resume-analysis';
const JUDGE = 'judges/judge-main';
const isJudge = (request: FakeRequest) => schemaNameOf(request) === 'eval_judge';
const verdict = { content: { score: 5, dimension_scores: { correctness: 5, completeness: 5, relevance: 5, safety: 5 }, reasoning: 'fine' } };

beforeAll(async () => {
  [primary, judges, backup] = await Promise.all([startFakeLlm(), startFakeLlm(), startFakeLlm()]);
  t = await startTestServer({
    OPENAI_BASE_URL: primary.url,
    OPENAI_API_KEY: 'sk-test',
    DEFAULT_MODEL: 'gpt-4o-mini',
    EVAL_JUDGE_MODEL: JUDGE,
    LLM_PROVIDERS: JSON.stringify([{ name: 'judges', baseUrl: judges.url }, { name: 'backup', baseUrl: backup.url }]),
    LLM_MAX_RETRIES: '0',
    // Each case tries once: a judge with no fallback left errors its case at once.
    PROVIDER_PATIENCE_MS: '0',
    // Breakers stay closed: every failure here is scripted on purpose.
    LLM_BREAKER_MIN_CALLS: '20',
  });
  tenant = await signupTenant(t.api, { companyName: 'Judge fallbacks' });
  // The tenant's own chain: what a suite without one falls back on.
  const set = await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: ['backup/tenant-backup'] }, { headers: adminHeaders });
  expect(set.status, set.text).toBe(200);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([primary?.close(), judges?.close(), backup?.close()]);
});
beforeEach(() => {
  primary.reset();
  judges.reset();
  backup.reset();
  // The judge's own model is down; the intent answers on the primary as the fake's schema sample.
  judges.script(() => ({ status: 503, retry_after: null }));
  backup.script((request) => (isJudge(request) ? verdict : undefined));
});

let named = 0;
async function newSuite(extra: Record<string, unknown>) {
  const dataset = await t.api.post('/v1/evals/datasets', {
    name: `Judge set ${++named}`,
    cases: [{ input: { user_id: 'u1', resume_text: 'Ten years of Go.' } }, { input: { user_id: 'u2', resume_text: 'Five years of SQL.' } }],
  }, key());
  expect(dataset.status, dataset.text).toBe(201);
  return t.api.post('/v1/evals/suites', { name: `Judge suite ${named}`, domain_key: 'hiring', intent_key: INTENT, dataset_id: dataset.body.data.dataset.id, ...extra }, key());
}

async function runSuite(suiteId: string) {
  const started = await t.api.post(`/v1/evals/suites/${suiteId}/run`, {}, key());
  expect(started.status, started.text).toBe(202);
  return waitFor(async () => {
    const run = (await t.api.get(`/v1/evals/runs/${started.body.data.run.id}`, key())).body.data.run;
    return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : null;
  }, 'the eval run to end', 30_000);
}

const judgeModelsOn = (fake: FakeLlm) => fake.chatRequests().filter(isJudge).map((r) => r.body.model);

describe('a suite\'s fallback_models (its judge\'s chain)', () => {
  it('is validated like every chain: a bad list is 400 INVALID_INPUT naming the field', async () => {
    for (const bad of [['a', 'a'], ['a', 'b', 'c', 'd'], ['  '], ['x'.repeat(201)], 'backup/judge-backup', [7]]) {
      const res = await newSuite({ fallback_models: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
      expect(res.body.error.details.issues[0].path).toMatch(/^fallback_models/);
    }
    const created = await newSuite({});
    expect(created.status, created.text).toBe(201);
    const patched = await t.api.patch(`/v1/evals/suites/${created.body.data.suite.id}`, { fallback_models: ['a', 'a'] }, key());
    expect(patched.status).toBe(400);
    expect(patched.body.error.code).toBe('INVALID_INPUT');
  });

  it('is shown, trimmed and changed (null by default, [] kept apart from null)', async () => {
    const created = await newSuite({ fallback_models: [' backup/judge-backup '] });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.suite.id;
    expect(created.body.data.suite.fallback_models).toEqual(['backup/judge-backup']);
    expect((await t.api.get(`/v1/evals/suites/${id}`, key())).body.data.suite.fallback_models).toEqual(['backup/judge-backup']);
    // A patch that does not name it leaves it.
    expect((await t.api.patch(`/v1/evals/suites/${id}`, { judge_rubric: 'Be strict' }, key())).body.data.suite.fallback_models).toEqual(['backup/judge-backup']);
    expect((await t.api.patch(`/v1/evals/suites/${id}`, { fallback_models: [] }, key())).body.data.suite.fallback_models).toEqual([]);
    expect((await t.api.patch(`/v1/evals/suites/${id}`, { fallback_models: null }, key())).body.data.suite.fallback_models).toBeNull();
    expect((await newSuite({})).body.data.suite.fallback_models).toBeNull();
  });

  it('serves the judge when its model fails, before the tenant\'s chain', async () => {
    const suite = await newSuite({ fallback_models: ['backup/judge-backup'] });
    const run = await runSuite(suite.body.data.suite.id);
    expect(run.status, JSON.stringify(run)).toBe('completed');
    expect(run.cases_passed).toBe(2);
    expect(run.judge_model).toBe(JUDGE);
    expect(run.judge_fallback_models).toEqual(['backup/judge-backup']);
    expect(judgeModelsOn(judges)).toEqual(['judge-main', 'judge-main']);
    expect(judgeModelsOn(backup)).toEqual(['judge-backup', 'judge-backup']);
  });

  it('without one, the judge follows the tenant\'s chain', async () => {
    const suite = await newSuite({});
    const run = await runSuite(suite.body.data.suite.id);
    expect(run.status, JSON.stringify(run)).toBe('completed');
    expect(run.cases_passed).toBe(2);
    expect(run.judge_fallback_models).toBeNull();
    expect(judgeModelsOn(backup)).toEqual(['tenant-backup', 'tenant-backup']);
  });

  it('[] never falls back, whatever the tenant\'s chain: the judge\'s failure errors each case', async () => {
    const suite = await newSuite({ fallback_models: [] });
    const run = await runSuite(suite.body.data.suite.id);
    expect(run.status, JSON.stringify(run)).toBe('completed');
    expect(run.cases_errored).toBe(2);
    expect(run.judge_fallback_models).toEqual([]);
    expect(judgeModelsOn(backup)).toEqual([]);
    const results = (await t.api.get(`/v1/evals/runs/${run.id}/results`, key())).body.data.results;
    expect(results.map((r: { error: string }) => r.error)).toEqual([expect.stringMatching(/^JUDGE_FAILED/), expect.stringMatching(/^JUDGE_FAILED/)]);
  });

  it('a run keeps the chain it started with (a later suite edit does not change it)', async () => {
    const suite = await newSuite({ fallback_models: ['backup/judge-backup'] });
    const id = suite.body.data.suite.id;
    const run = await runSuite(id);
    await t.api.patch(`/v1/evals/suites/${id}`, { fallback_models: [] }, key());
    expect((await t.api.get(`/v1/evals/runs/${run.id}`, key())).body.data.run.judge_fallback_models).toEqual(['backup/judge-backup']);
  });
});

describe('a model override (an evaluation comparing models)', () => {
  it('measures that model alone: the intent\'s fallbacks do not serve it', async () => {
    const domain = await t.api.post('/dashboard/custom-domains', { domain_key: 'ops', display_name: 'Ops' }, { headers: bearer(tenant.token) });
    expect(domain.status, domain.text).toBe(201);
    const intent = await t.api.post('/dashboard/custom-domains/ops/intents', {
      intent_key: 'summary', display_name: 'Summary', prompt_template: 'Summarise {{input.text}}',
      execution_config: { model: 'gpt-4o-mini', fallback_models: ['backup/fake-model'] },
    }, { headers: bearer(tenant.token) });
    expect(intent.status, intent.text).toBe(201);
    const dataset = await t.api.post('/v1/evals/datasets', { name: 'Summaries', cases: [{ input: { user_id: 'u', text: 'a long report' } }] }, key());
    const suite = await t.api.post('/v1/evals/suites', {
      name: 'Summary quality', domain_key: 'ops', intent_key: 'summary', dataset_id: dataset.body.data.dataset.id, fallback_models: ['backup/judge-backup'],
    }, key());
    expect(suite.status, suite.text).toBe(201);
    const id = suite.body.data.suite.id;
    primary.script(() => ({ status: 503, retry_after: null }));
    const isIntent = (request: FakeRequest) => !isJudge(request);

    // As the intent runs for callers: its model fails, its fallback serves.
    const routed = await runSuite(id);
    expect(routed.cases_passed, JSON.stringify(routed)).toBe(1);
    expect(backup.chatRequests().filter(isIntent).map((r) => r.body.model)).toEqual(['fake-model']);

    // On the model asked for: its failure is the case's, and no fallback is called.
    backup.reset();
    backup.script((request) => (isJudge(request) ? verdict : undefined));
    const started = await t.api.post(`/v1/evals/suites/${id}/run`, { model: 'gpt-4o-mini' }, key());
    expect(started.status, started.text).toBe(202);
    const overridden = await waitFor(async () => {
      const run = (await t.api.get(`/v1/evals/runs/${started.body.data.run.id}`, key())).body.data.run;
      return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : null;
    }, 'the overridden run to end', 30_000);
    expect(overridden).toMatchObject({ status: 'completed', model_override: 'gpt-4o-mini', cases_errored: 1, cases_passed: 0 });
    expect(backup.chatRequests()).toEqual([]);
  });
});

describe('deploys as code', () => {
  const project = (fallbacks: unknown) => ({
    eval_datasets: [{ key: 'Deployed cases', cases: [{ input: { user_id: 'u3', resume_text: 'Three years of Rust.' } }] }],
    eval_suites: [{ key: 'Deployed suite', domain: 'hiring', intent: INTENT, dataset: 'Deployed cases', fallback_models: fallbacks }],
  });

  it('refuse a bad chain, then plan, apply and export a suite\'s chain, and a gate\'s run judges with it', async () => {
    const bad = await t.api.post('/v1/deployments', { project: project(['x', 'x']) }, key());
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_INPUT');
    expect(JSON.stringify(bad.body.error.details.issues)).toContain('fallback_models');

    const plan = await t.api.post('/v1/project/plan', { project: project(['backup/judge-backup']) }, key());
    expect(plan.status, plan.text).toBe(200);
    const deployed = await t.api.post('/v1/deployments', { project: project(['backup/judge-backup']) }, key());
    expect(deployed.status, deployed.text).toBe(201);
    const exported = (await t.api.get('/v1/project', key())).body.data.project;
    expect(exported.eval_suites.find((s: { key: string }) => s.key === 'Deployed suite').fallback_models).toEqual(['backup/judge-backup']);

    // A change of the chain alone is a change the plan shows and an apply writes.
    const changed = await t.api.post('/v1/project/plan', { project: project([]) }, key());
    expect(changed.body.data.plan.changes).toEqual([expect.objectContaining({ kind: 'eval_suite', key: 'Deployed suite', action: 'update' })]);
    expect((await t.api.post('/v1/deployments', { project: project([]) }, key())).status).toBe(201);
    expect((await t.api.get('/v1/project', key())).body.data.project.eval_suites.find((s: { key: string }) => s.key === 'Deployed suite').fallback_models).toEqual([]);

    // The live suite gates as it is live: its judge's chain ([]) is the gate run's.
    const gated = await t.api.post('/v1/deployments', { project: project(['backup/judge-backup']), gate: ['Deployed suite'] }, key());
    expect(gated.status, gated.text).toBe(201);
    const runId = gated.body.data.deployment.gate[0].run_id;
    expect((await t.api.get(`/v1/evals/runs/${runId}`, key())).body.data.run.judge_fallback_models).toEqual([]);
  });
});
