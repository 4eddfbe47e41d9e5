// Deploys as code over HTTP: export a tenant's resources as a project, deploy it to an empty tenant
// (promotion) and export the same project back; plans; idempotency (no new intent version); secrets
// never leave the server; prune; a failing evaluation gate keeps the live intent, a passing one
// publishes it; bad projects are clear 400s; another tenant's deployment is a 404.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { buildDeploySource, MCP_SECRET as SECRET, must, scriptJudge } from '../support/deploy-source.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const dash = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
let judgeScore = 5;

const exportOf = async (s: SignedUpTenant) => (await must(t.api.get('/v1/project', key(s)), 200)).project;
const planOf = async (s: SignedUpTenant, project: unknown, prune = false) => (await must(t.api.post('/v1/project/plan', { project, prune }, key(s)), 200)).plan;
const intentVersions = async (s: SignedUpTenant, d: string, i: string) =>
  (await must(t.api.get(`/dashboard/custom-domains/${d}/intents/${i}/versions`, dash(s)), 200)).versions.length;

/** Replaces every `${AGENT_...}` reference with the secret value, as `liya apply` does from the environment. */
const withSecret = (project: unknown) => JSON.parse(JSON.stringify(project).replaceAll('${AGENT_SUPPORT_BOT_MCP_CRM_AUTHORIZATION}', SECRET));

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Deploy source' });
  b = await signupTenant(t.api, { companyName: 'Deploy target' });

  await buildDeploySource(t, a);
});
beforeEach(() => {
  fake.reset();
  judgeScore = 5;
  scriptJudge(fake, () => judgeScore);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('export', () => {
  it('writes every kind by key, ids as keys, secrets as references; twice the same', async () => {
    const project = await exportOf(a);
    expect(JSON.stringify(project)).not.toContain('mcp-secret-value');
    expect(project.domains).toEqual([{ key: 'support', display_name: 'Support', description: null, is_active: true, sort_order: 0 }]);
    expect(project.intents[0]).toMatchObject({ domain: 'support', key: 'triage', retrieval_config: { enabled: true, collections: ['handbook'], top_k: 3 } });
    expect(project.prompts[0].versions).toEqual([{ template: 'Triage this: {{message}}', note: null }, { template: 'Triage v2:\n{{message}}\n', note: 'two lines' }]);
    expect(project.collections[0]).toMatchObject({ key: 'handbook', domain_keys: ['hiring', 'support'] });
    expect(project.workflows[0]).toMatchObject({ key: 'echo-flow', is_active: true, steps: [{ id: 'start' }, { id: 'shape' }, { id: 'done' }] });
    expect(project.agents[0]).toMatchObject({
      key: 'support-bot', status: 'active', intents: ['support/triage', 'hiring/resume-analysis'], workflows: ['echo-flow'],
      tools_config: { mcp_servers: [{ name: 'crm', headers: { Authorization: '${AGENT_SUPPORT_BOT_MCP_CRM_AUTHORIZATION}' } }] },
    });
    expect(project.eval_suites[0]).toMatchObject({ key: 'Triage quality', dataset: 'Triage cases', domain: 'support', intent: 'triage' });
    expect(project.eval_datasets[0].cases).toHaveLength(2);
    expect(JSON.stringify(await exportOf(a))).toBe(JSON.stringify(project));
    // The source plans its own export as no change.
    expect((await planOf(a, project)).changes).toEqual([]);
  });
});

describe('promotion to an empty tenant', () => {
  it('refuses a secret reference with nothing stored, then deploys; the export round-trips and a second deploy changes nothing', async () => {
    const project = await exportOf(a);
    const missing = await t.api.post('/v1/deployments', { project }, key(b));
    expect(missing.status, missing.text).toBe(400);
    expect(missing.body.error.details.issues[0]).toMatchObject({ path: 'project.agents.0.tools_config.mcp_servers.0.headers.Authorization', code: 'missing_secret' });
    expect((await exportOf(b)).domains).toEqual([]);

    const plan = await planOf(b, withSecret(project));
    expect(plan.summary).toMatchObject({ create: 8, update: 0, delete: 0, unchanged: 1 });
    expect(JSON.stringify(plan)).not.toContain('mcp-secret-value');
    const created = await must(t.api.post('/v1/deployments', { project: withSecret(project) }, key(b)), 201);
    expect(created.deployment).toMatchObject({ status: 'deployed', progress: 100, error: null });
    expect(JSON.stringify(created)).not.toContain('mcp-secret-value');

    expect(JSON.stringify(await exportOf(b))).toBe(JSON.stringify(project));
    // Without secret values (references only) the export is nothing to do: answered, not stored.
    const again = await must(t.api.post('/v1/deployments', { project }, key(b)), 201);
    expect(again.deployment).toMatchObject({ id: null, status: 'unchanged' });
    expect(await intentVersions(b, 'support', 'triage')).toBe(1);

    // A plan never compares a secret value with the stored one: it lists where a value is given,
    // the same for the right value and a wrong guess.
    const right = await planOf(b, withSecret(project));
    expect(right.changes).toEqual([]);
    expect(right.secrets).toEqual([{ kind: 'agent', key: 'support-bot', path: 'tools_config.mcp_servers.0.headers.Authorization' }]);
    const guessed = JSON.parse(JSON.stringify(project).replaceAll('${AGENT_SUPPORT_BOT_MCP_CRM_AUTHORIZATION}', 'Bearer wrong-guess'));
    expect(await planOf(b, guessed)).toEqual(right);
    expect(JSON.stringify(right)).not.toContain('wrong-guess');

    // The apply writes a value only where it differs (the same answer either way): the right value
    // changes nothing, another one updates the agent.
    const agentUpdates = async () => (await must(t.api.get('/dashboard/audit-log?action=agent.update&pageSize=100', dash(b)), 200)).pagination.total;
    const before = await agentUpdates();
    const same = await must(t.api.post('/v1/deployments', { project: withSecret(project) }, key(b)), 201);
    expect(same.deployment.status).toBe('deployed');
    expect(await agentUpdates()).toBe(before);
    const other = await must(t.api.post('/v1/deployments', { project: guessed }, key(b)), 201);
    expect(other.deployment).toMatchObject({ status: same.deployment.status, plan: { changes: [], secrets: right.secrets } });
    expect(await agentUpdates()).toBe(before + 1);
    expect(await intentVersions(b, 'support', 'triage')).toBe(1);
  });
});

describe('plans', () => {
  it('field-level diffs; untracked resources deleted only with prune', async () => {
    const project = await exportOf(a);
    project.intents[0].prompt_template = 'Classify carefully: {{message}}';
    project.workflows = [];
    const plan = await planOf(a, project);
    expect(plan.changes).toEqual([
      { kind: 'intent', key: 'support/triage', action: 'update', fields: [{ path: 'prompt_template', change: 'changed', before: 'Classify: {{message}}', after: 'Classify carefully: {{message}}' }] },
    ]);
    expect(plan.untracked).toEqual([{ kind: 'workflow', key: 'echo-flow' }]);
    const pruned = await planOf(a, project, true);
    expect(pruned.changes.map((c: { action: string; kind: string }) => `${c.action} ${c.kind}`)).toEqual(['update intent', 'delete workflow']);
  });

  it('plan_digest deploys exactly the plan reviewed: a server changed since is 409 DEPLOYMENT_STALE and nothing is done', async () => {
    const c = await signupTenant(t.api, { companyName: 'Deploy stale' });
    const project = { domains: [{ key: 'sales', display_name: 'Sales' }] };
    const reviewed = await planOf(c, project);
    expect(reviewed.digest).toMatch(/^[0-9a-f]{64}$/);
    expect((await planOf(c, project)).digest).toBe(reviewed.digest);
    // Someone creates the domain by hand in between: the plan is no longer a create.
    await must(t.api.post('/dashboard/custom-domains', { domain_key: 'sales', display_name: 'Sales team' }, dash(c)), 201);
    const stale = await t.api.post('/v1/deployments', { project, plan_digest: reviewed.digest }, key(c));
    expect(stale.status, stale.text).toBe(409);
    expect(stale.body.error.code).toBe('DEPLOYMENT_STALE');
    expect(stale.body.error.details.plan.changes[0]).toMatchObject({ kind: 'domain', key: 'sales', action: 'update' });
    expect((await exportOf(c)).domains[0].display_name).toBe('Sales team');
    const fresh = await planOf(c, project);
    expect((await must(t.api.post('/v1/deployments', { project, plan_digest: fresh.digest }, key(c)), 201)).deployment.status).toBe('deployed');
    expect((await t.api.post('/v1/deployments', { project, plan_digest: 'nope' }, key(c))).status).toBe(400);
  });

  it('a duplicate key, an unknown field and a rewritten prompt version are 400s naming the place', async () => {
    const project = await exportOf(a);
    const dup = await t.api.post('/v1/project/plan', { project: { ...project, domains: [...project.domains, project.domains[0]] } }, key(a));
    expect(dup.status).toBe(400);
    expect(dup.body.error.details.issues[0]).toMatchObject({ path: 'project.domains.1.key', code: 'duplicate_key' });
    const unknown = await t.api.post('/v1/project/plan', { project: { ...project, domains: [{ ...project.domains[0], colour: 'red' }] } }, key(a));
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body.error.details)).toContain('colour');
    const rewritten = structuredClone(project);
    rewritten.prompts[0].versions[0].template = 'history rewritten';
    const history = await t.api.post('/v1/project/plan', { project: rewritten }, key(a));
    expect(history.status).toBe(400);
    expect(history.body.error.details.issues[0]).toMatchObject({ path: 'project.prompts.0.versions.0', code: 'immutable_version' });
    const notJson = await t.api.post('/v1/project/plan', { project: 'yes' }, key(a));
    expect(notJson.status).toBe(400);
  });
});

describe('updates and prune', () => {
  it('changes every kind in place, mints a webhook URL, then prunes what the project no longer names', async () => {
    const c = await signupTenant(t.api, { companyName: 'Deploy updates' });
    const project = withSecret(await exportOf(a));
    await must(t.api.post('/v1/deployments', { project }, key(c)), 201);

    // A workflow made by hand: its generated step ids are stable ids, exported as they are.
    await must(
      t.api.post('/v1/workflows', { name: 'Hand made', steps: [{ step_type: 'trigger' }, { step_type: 'end', config: { output: 'x' } }] }, key(c)),
      201,
    );
    await must(t.api.post('/v1/workflows/hand-made/deploy', {}, key(c)), 200);
    const handMade = (await exportOf(c)).workflows.find((w: { key: string }) => w.key === 'hand-made');
    expect(handMade.steps.map((s: { id: string }) => s.id)).toEqual([expect.stringMatching(/^s_[0-9a-f]+$/), expect.stringMatching(/^s_[0-9a-f]+$/)]);
    expect(handMade.steps[0].on_success).toBeNull();

    const next = withSecret(await exportOf(c));
    next.domains[0].display_name = 'Support desk';
    next.collections[0].domain_keys = ['support'];
    next.collections[0].tags = ['policies'];
    next.prompts[0].versions.push({ template: 'Triage v3: {{message}}', note: null });
    next.workflows.push({
      key: 'inbound', name: 'Inbound', description: null, is_active: false, max_concurrent_runs: 5,
      steps: [{ id: 'hook', step_type: 'trigger', name: null, action_id: null, config: { trigger_subtype: 'webhook' }, position_x: null, position_y: null, guidance: null, on_success: null, on_failure: null },
        { id: 'done', step_type: 'end', name: null, action_id: null, config: {}, position_x: null, position_y: null, guidance: null, on_success: null, on_failure: null }],
    });
    next.agents[0].status = 'inactive';
    next.eval_datasets[0].cases = [{ input: { message: 'only case' }, message: null, expected_output: 'billing', notes: 'one' }];
    next.guardrails = [{ key: 'tenant', config: { blocked_terms: ['forbidden'] } }];
    const deployed = await must(t.api.post('/v1/deployments', { project: next }, key(c)), 201);
    expect(deployed.deployment.status).toBe('deployed');
    expect(deployed.deployment.minted).toEqual([{ workflow_key: 'inbound', webhook_url: expect.stringContaining('/webhooks/workflows/') }]);
    const after = await exportOf(c);
    expect(after.domains[0].display_name).toBe('Support desk');
    expect(after.collections[0]).toMatchObject({ domain_keys: ['support'], tags: ['policies'] });
    expect(after.prompts[0].versions).toHaveLength(3);
    expect(after.workflows.find((w: { key: string }) => w.key === 'inbound')).toMatchObject({ is_active: false, max_concurrent_runs: 5 });
    expect(after.agents[0].status).toBe('inactive');
    expect(after.eval_datasets[0].cases).toEqual([{ input: { message: 'only case' }, message: null, expected_output: 'billing', notes: 'one' }]);
    expect(after.guardrails[0].config).toMatchObject({ blocked_terms: ['forbidden'] });
    expect((await planOf(c, next)).changes).toEqual([]);

    // Prune: what the project no longer names goes, dependants first.
    const smaller = { ...next, workflows: next.workflows.filter((w: { key: string }) => w.key === 'echo-flow'), eval_suites: [], eval_datasets: [] };
    const pruned = await must(t.api.post('/v1/deployments', { project: smaller, prune: true }, key(c)), 201);
    expect(pruned.deployment.plan.changes.map((x: { action: string; kind: string; key: string }) => `${x.action} ${x.kind} ${x.key}`)).toEqual([
      'delete eval_suite Triage quality', 'delete eval_dataset Triage cases', 'delete workflow hand-made', 'delete workflow inbound',
    ]);
    const left = await exportOf(c);
    expect(left.workflows.map((w: { key: string }) => w.key)).toEqual(['echo-flow']);
    expect(left.eval_suites).toEqual([]);
  });

  it('a refused change rolls the whole deployment back', async () => {
    const c = await signupTenant(t.api, { companyName: 'Deploy rollback' });
    const project = withSecret(await exportOf(a));
    // The suite evaluates an intent that exists nowhere: the last change fails, so none may stay.
    project.eval_suites[0].intent = 'missing';
    const refused = await t.api.post('/v1/deployments', { project }, key(c));
    expect(refused.status, refused.text).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(refused.body.error.details).toMatchObject({ kind: 'eval_suite', key: 'Triage quality', action: 'create' });
    const empty = await exportOf(c);
    expect([empty.domains, empty.prompts, empty.collections, empty.intents, empty.workflows, empty.agents, empty.eval_datasets]).toEqual([[], [], [], [], [], [], []]);
  });
});

describe('an evaluation gate', () => {
  const gated = async (owner: SignedUpTenant, project: unknown) => {
    const created = await must(t.api.post('/v1/deployments', { project, gate: ['Triage quality'] }, key(owner)), 201);
    expect(created.deployment.status).toBe('gating');
    const id = created.deployment.id as string;
    await waitFor(async () => {
      const d = (await must(t.api.get(`/v1/deployments/${id}`, key(owner)), 200)).deployment;
      return d.gate.every((g: { passed: boolean | null }) => g.passed !== null) ? d : null;
    }, 'the gate to end', 30_000);
    return id;
  };

  it('failing: nothing is published, the live intent stays; passing: publishes the draft', async () => {
    const project = withSecret(await exportOf(b));
    project.intents[0].prompt_template = 'Classify v2: {{message}}';

    judgeScore = 2;
    const failing = await gated(b, project);
    const refused = await t.api.post(`/v1/deployments/${failing}/publish`, { project }, key(b));
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.code).toBe('GATE_FAILED');
    expect(refused.body.error.details.gate[0]).toMatchObject({ suite: 'Triage quality', status: 'completed', cases_total: 2, cases_passed: 0, passed: false });
    expect((await exportOf(b)).intents[0].prompt_template).toBe('Classify: {{message}}');
    expect(await intentVersions(b, 'support', 'triage')).toBe(1);
    expect((await must(t.api.get(`/v1/deployments/${failing}`, key(b)), 200)).deployment.status).toBe('gate_failed');
    // The gate ran the draft: the intent calls carried the new prompt.
    expect(fake.requests.some((r) => JSON.stringify(r.body).includes('Classify v2'))).toBe(true);

    judgeScore = 5;
    const passing = await gated(b, project);
    // Two publishes at once: one applies it, the other answers it deployed or 409; never twice.
    const both = await Promise.all([1, 2].map(() => t.api.post(`/v1/deployments/${passing}/publish`, { project }, key(b))));
    expect(both.map((r) => r.status).sort(), both.map((r) => r.text).join('\n')).toEqual(expect.arrayContaining([200]));
    for (const r of both) expect([200, 409]).toContain(r.status);
    const published = (await must(t.api.get(`/v1/deployments/${passing}`, key(b)), 200));
    expect(published.deployment).toMatchObject({ status: 'deployed', gate: [{ suite: 'Triage quality', passed: true, pass_rate: 1 }] });
    expect((await exportOf(b)).intents[0].prompt_template).toBe('Classify v2: {{message}}');
    expect(await intentVersions(b, 'support', 'triage')).toBe(2);
  });

  it('another tenant\'s deployment is 404; an unknown gate suite is 400', async () => {
    const project = withSecret(await exportOf(b));
    project.domains[0].display_name = 'Support desk';
    const created = await must(t.api.post('/v1/deployments', { project, gate: ['Triage quality'] }, key(b)), 201);
    expect((await t.api.get(`/v1/deployments/${created.deployment.id}`, key(a))).status).toBe(404);
    expect((await t.api.post(`/v1/deployments/${created.deployment.id}/publish`, { project }, key(a))).status).toBe(404);
    expect((await t.api.get('/v1/deployments/not-an-id', key(b))).status).toBe(404);
    const unknown = await t.api.post('/v1/deployments', { project, gate: ['No such suite'] }, key(b));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.issues[0]).toMatchObject({ path: 'gate.0' });
  });
});
