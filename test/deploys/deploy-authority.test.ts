// What a key may do with deploys as code, probed as an attacker would: secrets only where secrets
// go (and never confirmed by a plan), the deploy policy the tenant's owners set (environments,
// required gates, a gate a project cannot weaken), and deployments that are bounded (nothing stored
// for nothing, a list, retention, one in flight per tenant, a publish cut off by a crash, rate limits).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pruneDeployments } from '../../server/deploys/deployments.service.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { buildDeploySource, MCP_SECRET, must, scriptJudge } from '../support/deploy-source.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let echo: Server;
let echoUrl: string;
const received: { url: string; headers: IncomingHttpHeaders }[] = [];
let judgeScore = 5;

const key = (k: string) => ({ headers: bearer(k) });
const dash = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
const exportOf = async (k: string) => (await must(t.api.get('/v1/project', key(k)), 200)).project;
const planOf = async (k: string, project: unknown, prune = false) => (await must(t.api.post('/v1/project/plan', { project, prune }, key(k)), 200)).plan;
const withMcpSecret = (project: unknown) => JSON.parse(JSON.stringify(project).replaceAll('${AGENT_SUPPORT_BOT_MCP_CRM_AUTHORIZATION}', MCP_SECRET));

async function environmentKey(s: SignedUpTenant, name: string): Promise<string> {
  const envs = (await must(t.api.get('/dashboard/environments', dash(s)), 200)).environments as { id: string; name: string }[];
  const env = envs.find((e) => e.name === name)!;
  return (await must(t.api.post(`/dashboard/environments/${env.id}/api-key/rotate`, {}, dash(s)), 200)).apiKey;
}

async function namedKey(s: SignedUpTenant, body: Record<string, unknown>): Promise<string> {
  return (await must(t.api.post('/dashboard/api-keys', body, dash(s)), 201)).apiKey;
}

beforeAll(async () => {
  fake = await startFakeLlm();
  echo = createServer((req, res) => {
    received.push({ url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
});
beforeEach(() => {
  fake.reset();
  judgeScore = 5;
  scriptJudge(fake, () => judgeScore);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await new Promise((resolve) => echo?.close(resolve));
});

describe('secrets only where secrets go', () => {
  it('a ${NAME} reference outside a secret path is refused at its place, and nothing is stored', async () => {
    const s = await signupTenant(t.api);
    const project = { domains: [{ key: 'leaky', display_name: 'Leaky', description: '${LIYA_API_KEY}' }] };
    for (const res of [await t.api.post('/v1/project/plan', { project }, key(s.apiKey)), await t.api.post('/v1/deployments', { project }, key(s.apiKey))]) {
      const error = expectError(res, 400, 'INVALID_INPUT');
      expect(error.details.issues).toEqual([expect.objectContaining({ path: 'project.domains.0.description', code: 'misplaced_secret_reference' })]);
    }
    expect((await exportOf(s.apiKey)).domains).toEqual([]);
  });

  it('http_request header values and URL credentials are stored encrypted, read masked, exported as references, never in a plan or a deployment, and sent only to the step\'s URL', async () => {
    const s = await signupTenant(t.api);
    const workflow = (url: string, headers: Record<string, string>) => ({
      key: 'notify',
      name: 'Notify',
      steps: [
        { id: 'start', step_type: 'trigger' },
        { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url, headers, body: { hello: 'world' } } },
        { id: 'done', step_type: 'end', config: { output: '{{steps.call.output.status}}' } },
      ],
    });
    const project = { workflows: [workflow(`${echoUrl}/hook?token=url-secret-1&page=2`, { Authorization: 'Bearer header-secret-1', 'X-Plain': 'hello' })] };
    const plan = await planOf(s.apiKey, project);
    expect(plan.secrets).toEqual([
      { kind: 'workflow', key: 'notify', path: 'steps.1.config.url' },
      { kind: 'workflow', key: 'notify', path: 'steps.1.config.headers.Authorization' },
      { kind: 'workflow', key: 'notify', path: 'steps.1.config.headers.X-Plain' },
    ]);
    const created = await must(t.api.post('/v1/deployments', { project }, key(s.apiKey)), 201);
    const stored = await must(t.api.get(`/v1/deployments/${created.deployment.id}`, key(s.apiKey)), 200);
    for (const shown of [plan, created, stored]) {
      expect(JSON.stringify(shown)).not.toContain('header-secret-1');
      expect(JSON.stringify(shown)).not.toContain('url-secret-1');
    }

    // Read back masked; exported as references (the URL masked).
    const live = (await must(t.api.get('/v1/workflows/notify', key(s.apiKey)), 200)).workflow;
    expect(live.steps[1].config).toEqual({ method: 'POST', url: `${echoUrl}/hook?token=***&page=2`, headers: { Authorization: '***', 'X-Plain': '***' }, body: { hello: 'world' } });
    const exported = await exportOf(s.apiKey);
    expect(exported.workflows[0].steps[1].config).toMatchObject({
      url: `${echoUrl}/hook?token=***&page=2`,
      headers: { Authorization: '${WORKFLOW_NOTIFY_CALL_HEADER_AUTHORIZATION}', 'X-Plain': '${WORKFLOW_NOTIFY_CALL_HEADER_X_PLAIN}' },
    });
    // At rest, neither in the workflow nor in its versions.
    const rows = await t.sql<{ text: string }>(
      `select w.live_steps::text || v.steps::text as text from workflows w join workflow_versions v on v.workflow_id = w.id where w.workflow_key = 'notify' and w.tenant_id = $1`,
      [s.tenantId],
    );
    expect(rows[0].text).not.toContain('header-secret-1');
    expect(rows[0].text).not.toContain('url-secret-1');

    // The step sends them, to its own URL only; the run's trace shows them masked.
    received.length = 0;
    const run = await must(t.api.post('/v1/workflows/notify/run', { input: {} }, key(s.apiKey)), 200);
    expect(run.status).toBe('completed');
    expect(received).toEqual([expect.objectContaining({ url: '/hook?token=url-secret-1&page=2', headers: expect.objectContaining({ authorization: 'Bearer header-secret-1', 'x-plain': 'hello' }) })]);
    const detail = await must(t.api.get(`/v1/workflows/notify/runs/${run.run_id}`, key(s.apiKey)), 200);
    expect(JSON.stringify(detail)).not.toContain('header-secret-1');
    expect(JSON.stringify(detail)).not.toContain('url-secret-1');

    // The export applies as it is: nothing to do, the stored values kept.
    const again = await planOf(s.apiKey, exported);
    expect(again).toMatchObject({ changes: [], secrets: [] });
    // A new value by reference, filled in as liya apply does: written, and sent.
    const rotated = JSON.parse(JSON.stringify(exported).replace('${WORKFLOW_NOTIFY_CALL_HEADER_AUTHORIZATION}', 'Bearer header-secret-2'));
    await must(t.api.post('/v1/deployments', { project: rotated }, key(s.apiKey)), 201);
    received.length = 0;
    await must(t.api.post('/v1/workflows/notify/run', { input: {} }, key(s.apiKey)), 200);
    expect(received[0].headers).toMatchObject({ authorization: 'Bearer header-secret-2', 'x-plain': 'hello' });
    expect(received[0].url).toBe('/hook?token=url-secret-1&page=2');

    // The masked values sent back through the API keep the stored ones; pointed at another address, they are not sent there.
    const steps = (await must(t.api.get('/v1/workflows/notify', key(s.apiKey)), 200)).workflow.steps;
    await must(t.api.patch('/v1/workflows/notify', { steps: steps.map((x: { id: string }) => x) }, key(s.apiKey)), 200);
    received.length = 0;
    await must(t.api.post('/v1/workflows/notify/run', { input: {} }, key(s.apiKey)), 200);
    expect(received[0].headers.authorization).toBe('Bearer header-secret-2');
    const moved = steps.map((x: { id: string; config: Record<string, unknown> }) => (x.id === 'call' ? { ...x, config: { ...x.config, url: `${echoUrl.replace('127.0.0.1', 'localhost')}/elsewhere` } } : x));
    await must(t.api.patch('/v1/workflows/notify', { steps: moved }, key(s.apiKey)), 200);
    received.length = 0;
    await must(t.api.post('/v1/workflows/notify/run', { input: {} }, key(s.apiKey)), 200);
    expect(received[0].url).toBe('/elsewhere');
    expect(received[0].headers.authorization).toBeUndefined();
  });

  it('a reference with nothing stored, or a masked URL with nothing stored, is a missing secret', async () => {
    const s = await signupTenant(t.api);
    const project = {
      workflows: [{
        key: 'hook', name: 'Hook',
        steps: [
          { id: 'start', step_type: 'trigger' },
          { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${echoUrl}/x?api_key=***`, headers: { Authorization: '${HOOK_TOKEN}' } } },
        ],
      }],
    };
    const missing = expectError(await t.api.post('/v1/deployments', { project }, key(s.apiKey)), 400, 'INVALID_INPUT');
    expect(missing.details.issues.map((i: { path: string; code: string }) => `${i.path} ${i.code}`)).toEqual([
      'project.workflows.0.steps.1.config.url missing_secret',
      'project.workflows.0.steps.1.config.headers.Authorization missing_secret',
    ]);
  });
});

describe('the deploy policy', () => {
  it('by default only production keys deploy and prune; a read-only key plans but cannot deploy; the owner widens or tightens it', async () => {
    const s = await signupTenant(t.api);
    const project = { domains: [{ key: 'sales', display_name: 'Sales' }] };
    const development = await environmentKey(s, 'development');
    const refused = expectError(await t.api.post('/v1/deployments', { project }, key(development)), 403, 'DEPLOY_NOT_ALLOWED');
    expect(refused.details).toEqual({ environment: 'development', allowed: ['production'] });
    expectError(await t.api.post('/v1/deployments', { project, prune: true }, key(development)), 403, 'DEPLOY_NOT_ALLOWED');
    // Planning is reading: allowed.
    expect((await planOf(development, project)).summary.create).toBe(1);

    const readOnly = await namedKey(s, { name: 'reader', preset: 'read-only' });
    expect((await planOf(readOnly, project)).summary.create).toBe(1);
    expectError(await t.api.post('/v1/deployments', { project }, key(readOnly)), 403, 'PERMISSION_DENIED');

    // A deploy key deploys, but prunes only with project:prune.
    const deployer = await namedKey(s, { name: 'ci', preset: 'deploy' });
    const noPrune = expectError(await t.api.post('/v1/deployments', { project, prune: true }, key(deployer)), 403, 'PERMISSION_DENIED');
    expect(noPrune.details.required).toBe('project:prune');
    expect((await must(t.api.post('/v1/deployments', { project }, key(deployer)), 201)).deployment.status).toBe('deployed');
    expect((await exportOf(s.apiKey)).domains.map((d: { key: string }) => d.key)).toEqual(['sales']);

    // Only owners and admins change it.
    const dev = await must(t.api.post('/dashboard/users', { email: `dev-${Date.now()}@example.com`, role: 'developer', password: 'correct horse battery' }, dash(s)), 201);
    const devLogin = await must(t.api.post('/auth/login', { email: dev.user.email, password: 'correct horse battery' }), 200);
    expectError(await t.api.patch('/dashboard/deploy-policy', { deploy_environments: ['development'] }, { headers: bearer(devLogin.token) }), 403, 'FORBIDDEN');
    const widened = await must(t.api.patch('/dashboard/deploy-policy', { deploy_environments: ['production', 'development'] }, dash(s)), 200);
    expect(widened.policy).toMatchObject({ deploy_environments: ['production', 'development'], prune_environments: ['production'], required_gates: [], min_pass_rate: null });
    expect((await must(t.api.get('/v1/deploy-policy', key(development)), 200)).policy.deploy_environments).toEqual(['production', 'development']);
    const more = { domains: [...project.domains, { key: 'ops', display_name: 'Ops' }] };
    expect((await must(t.api.post('/v1/deployments', { project: more }, key(development)), 201)).deployment.status).toBe('deployed');
    expectError(await t.api.post('/v1/deployments', { project, prune: true }, key(development)), 403, 'DEPLOY_NOT_ALLOWED');
    // Tightened: production may not deploy either.
    await must(t.api.patch('/dashboard/deploy-policy', { deploy_environments: [] }, dash(s)), 200);
    expectError(await t.api.post('/v1/deployments', { project: more }, key(s.apiKey)), 403, 'DEPLOY_NOT_ALLOWED');
    const audit = await must(t.api.get('/dashboard/audit-log?action=deploy_policy.updated', dash(s)), 200);
    expect(audit.entries).toHaveLength(2);
  });

  it('required gates run on every deployment, at the policy\'s pass rate, and a project cannot lower its own suite\'s threshold to pass', async () => {
    const s = await signupTenant(t.api);
    await buildDeploySource(t, s);
    await must(t.api.patch('/dashboard/deploy-policy', { required_gates: ['Triage quality'], min_pass_rate: 1 }, dash(s)), 200);
    const deployer = await namedKey(s, { name: 'ci', preset: 'deploy' });
    const project = withMcpSecret(await exportOf(s.apiKey));
    project.intents[0].prompt_template = 'Classify v2: {{message}}';
    // The project weakens the suite it is gated by, and asks for a lower pass rate, without a gate.
    project.eval_suites[0].pass_threshold = 1;
    judgeScore = 2;
    const created = await must(t.api.post('/v1/deployments', { project, min_pass_rate: 0 }, key(deployer)), 201);
    expect(created.deployment).toMatchObject({ status: 'gating', min_pass_rate: 1, gate: [{ suite: 'Triage quality' }] });
    const id = created.deployment.id;
    await waitFor(async () => {
      const d = (await must(t.api.get(`/v1/deployments/${id}`, key(deployer)), 200)).deployment;
      return d.gate.every((g: { passed: boolean | null }) => g.passed !== null) ? d : null;
    }, 'the gate to end', 30_000);
    const refused = expectError(await t.api.post(`/v1/deployments/${id}/publish`, { project }, key(deployer)), 409, 'GATE_FAILED');
    expect(refused.details.gate[0]).toMatchObject({ suite: 'Triage quality', cases_passed: 0, passed: false });
    const live = await exportOf(s.apiKey);
    expect(live.eval_suites[0].pass_threshold).toBe(4);
    expect(live.intents[0].prompt_template).toBe('Classify: {{message}}');
    // Secret values alone change no definition: written without a gate.
    const secretsOnly = await must(t.api.post('/v1/deployments', { project: withMcpSecret(live) }, key(deployer)), 201);
    expect(secretsOnly.deployment).toMatchObject({ status: 'deployed', gate: [], plan: { changes: [], secrets: [expect.objectContaining({ kind: 'agent' })] } });
  });
});

describe('deployments are bounded', () => {
  it('a deployment that changes nothing is not stored; the list shows the rest newest first; retention keeps the newest', async () => {
    const s = await signupTenant(t.api);
    const list = async () => must(t.api.get('/v1/deployments?pageSize=100', key(s.apiKey)), 200);
    for (let i = 0; i < 3; i++) {
      const nothing = await must(t.api.post('/v1/deployments', { project: {} }, key(s.apiKey)), 201);
      expect(nothing.deployment).toMatchObject({ id: null, status: 'unchanged' });
    }
    expect((await list()).pagination.total).toBe(0);
    const first = await must(t.api.post('/v1/deployments', { project: { domains: [{ key: 'one', display_name: 'One' }] } }, key(s.apiKey)), 201);
    const second = await must(t.api.post('/v1/deployments', { project: { domains: [{ key: 'one', display_name: 'One' }, { key: 'two', display_name: 'Two' }] } }, key(s.apiKey)), 201);
    const listed = await list();
    expect(listed.deployments.map((d: { id: string }) => d.id)).toEqual([second.deployment.id, first.deployment.id]);
    expect(listed.deployments[0]).toMatchObject({ status: 'deployed', summary: { create: 1, update: 0, delete: 0, unchanged: 1 }, secrets: 0, created_by: expect.stringMatching(/^api-key:production \(svc_/) });
    expect(JSON.stringify(await must(t.api.get(`/v1/deployments/${first.deployment.id}`, key(s.apiKey)), 200))).not.toContain('"project"');

    // 110 more, one of them 100 days old: retention keeps the newest 100 and nothing past 90 days.
    await t.sql(
      `insert into deployments (tenant_id, status, plan, prune, min_pass_rate, base_digest, gate, minted, created_at)
       select tenant_id, status, plan, prune, min_pass_rate, base_digest, gate, minted, now() - (n || ' minutes')::interval
         from deployments, generate_series(1, 110) n where id = $1`,
      [first.deployment.id],
    );
    await t.sql(`update deployments set created_at = now() - interval '100 days' where id = $1`, [second.deployment.id]);
    await pruneDeployments(t.server.deps.orm.em.fork());
    const kept = await list();
    expect(kept.pagination.total).toBe(100);
    expect(kept.deployments.some((d: { id: string }) => d.id === second.deployment.id)).toBe(false);
  });

  it('one deployment in flight per tenant: while another process holds the tenant, 409; when that process dies, nothing of it stays and the publish goes on', async () => {
    const s = await signupTenant(t.api);
    await buildDeploySource(t, s);
    const project = withMcpSecret(await exportOf(s.apiKey));
    project.intents[0].prompt_template = 'Classify v3: {{message}}';
    const created = await must(t.api.post('/v1/deployments', { project, gate: ['Triage quality'] }, key(s.apiKey)), 201);
    const id = created.deployment.id;
    await waitFor(async () => {
      const d = (await must(t.api.get(`/v1/deployments/${id}`, key(s.apiKey)), 200)).deployment;
      return d.gate.every((g: { passed: boolean | null }) => g.passed !== null) ? d : null;
    }, 'the gate to end', 30_000);

    // Another process is publishing for this tenant: it holds the tenant's deploy lock.
    const other = new pg.Client({ connectionString: t.databaseUrl });
    await other.connect();
    other.on('error', () => undefined);
    await other.query('begin');
    await other.query('select pg_advisory_xact_lock(7311402, hashtext($1))', [s.tenantId]);
    const busy = expectError(await t.api.post(`/v1/deployments/${id}/publish`, { project }, key(s.apiKey)), 409, 'DEPLOYMENT_IN_PROGRESS');
    expect(busy.details.retryable).toBe(true);
    expectError(await t.api.post('/v1/deployments', { project: { domains: [] } , prune: false }, key(s.apiKey)), 409, 'DEPLOYMENT_IN_PROGRESS');
    expect((await must(t.api.get(`/v1/deployments/${id}`, key(s.apiKey)), 200)).deployment.status).toBe('gating');

    // That process is killed mid-publish: its transaction and its lock end with it.
    const { rows } = await other.query<{ pid: number }>('select pg_backend_pid() as pid');
    await t.sql('select pg_terminate_backend($1)', [rows[0].pid]);
    const published = await waitFor(async () => {
      const res = await t.api.post(`/v1/deployments/${id}/publish`, { project }, key(s.apiKey));
      return res.status === 200 ? res.body.data : null;
    }, 'the publish to go through', 10_000);
    expect(published.deployment.status).toBe('deployed');
    expect((await exportOf(s.apiKey)).intents[0].prompt_template).toBe('Classify v3: {{message}}');

    // A deployment an earlier release left `publishing` (its process died) publishes again.
    project.intents[0].prompt_template = 'Classify v4: {{message}}';
    const stuck = await must(t.api.post('/v1/deployments', { project, gate: ['Triage quality'] }, key(s.apiKey)), 201);
    await waitFor(async () => {
      const d = (await must(t.api.get(`/v1/deployments/${stuck.deployment.id}`, key(s.apiKey)), 200)).deployment;
      return d.gate.every((g: { passed: boolean | null }) => g.passed !== null) ? d : null;
    }, 'the gate to end', 30_000);
    await t.sql(`update deployments set status = 'publishing' where id = $1`, [stuck.deployment.id]);
    expect((await must(t.api.post(`/v1/deployments/${stuck.deployment.id}/publish`, { project }, key(s.apiKey)), 200)).deployment.status).toBe('deployed');
  });

  it('plans are rate limited per tenant; another tenant is not', async () => {
    const s = await signupTenant(t.api);
    const other = await signupTenant(t.api);
    const project = { domains: [{ key: 'x', display_name: 'X' }] };
    let limited = null;
    for (let i = 0; i < 70 && !limited; i++) {
      const res = await t.api.post('/v1/project/plan', { project }, key(s.apiKey));
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(200);
    }
    expect(limited).not.toBeNull();
    const error = expectError(limited!, 429, 'RATE_LIMITED');
    expect(error.details.limit_per_minute).toBe(60);
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await t.api.post('/v1/project/plan', { project }, key(other.apiKey))).status).toBe(200);
  });
});
