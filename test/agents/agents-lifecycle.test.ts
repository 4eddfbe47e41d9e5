// The Agents API around the run loop: create, read, list, update, deploy, delete, reference and
// config validation, MCP header masking, run refusals (400/403/404/409) and the run/session reads
// (pagination, filters, another agent's or tenant's ids). The run loop itself is test/agents/agent-run.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

let t: TestServer;
let fake: FakeLlm;
let mcp: TestMcpServer;
let a: SignedUpTenant;
let other: SignedUpTenant;
/** Tenant `other`'s custom intent (id and `domain/key`) and custom domain: foreign to tenant a. */
let foreign: { intentId: string; intentRef: string; domainKey: string; agentKey: string; runId: string; sessionId: string };
/** Tenant a's own custom intent and domain. */
let own: { intentId: string; intentRef: string; domainKey: string };

const MCP_SECRET = 'Bearer s3cr3t-plaintext-token-4711';
const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const jwt = (s: SignedUpTenant) => ({ headers: bearer(s.token) });

const issuesOf = (res: ApiResponse) => expectError(res, 400, 'INVALID_INPUT').details.issues as { path: string; message: string; code?: string }[];
const pathsOf = (res: ApiResponse) => issuesOf(res).map((i) => i.path);

async function createAgent(s: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/agents', { name: 'Helper', goal: 'Help candidates', ...body }, key(s));
  expect(res.status, res.text).toBe(201);
  return res.body.data.agent;
}
async function deploy(s: SignedUpTenant, agentKey: string) {
  const res = await t.api.post(`/v1/agents/${agentKey}/deploy`, undefined, key(s));
  expect(res.status, res.text).toBe(200);
  return res.body.data.agent;
}
async function getAgent(s: SignedUpTenant, agentKey: string) {
  const res = await t.api.get(`/v1/agents/${agentKey}`, key(s));
  expect(res.status, res.text).toBe(200);
  return res.body.data.agent;
}
const run = (s: SignedUpTenant, agentKey: string, body: unknown) => t.api.post(`/v1/agents/${agentKey}/run`, body, key(s));
const runStream = (s: SignedUpTenant, agentKey: string, body: unknown) => t.api.post(`/v1/agents/${agentKey}/run/stream`, body, key(s));
async function runOk(s: SignedUpTenant, agentKey: string, body: Record<string, unknown> = { input: { message: 'Hello' } }) {
  const res = await run(s, agentKey, body);
  expect(res.status, res.text).toBe(200);
  return res.body.data as { run_id: string; session_id: string; status: string };
}
async function auditEntries(s: SignedUpTenant, action: string) {
  const res = await t.api.get(`/dashboard/audit-log?action=${encodeURIComponent(action)}&pageSize=100`, jwt(s));
  expect(res.status, res.text).toBe(200);
  return res.body.data.entries as { action: string; actor: string; target_type: string; target_id: string | null; details: Record<string, unknown> }[];
}
const rawToolsConfig = async (s: SignedUpTenant, agentKey: string) => {
  const [row] = await t.sql<{ tools_config: string | null }>('select tools_config::text as tools_config from agents where tenant_id = $1 and agent_key = $2', [s.tenantId, agentKey]);
  return row.tools_config;
};
const storedHeaders = async (s: SignedUpTenant, agentKey: string, server: string) =>
  (JSON.parse((await rawToolsConfig(s, agentKey))!).mcp_servers as { name: string; headers?: Record<string, string> }[]).find((x) => x.name === server)?.headers;

async function setPlan(s: SignedUpTenant, plan: string) {
  const res = await t.api.patch(`/admin/tenants/${s.tenantId}`, { billingPlan: plan }, { headers: adminHeaders });
  expect(res.status, res.text).toBe(200);
}

beforeAll(async () => {
  fake = await startFakeLlm();
  mcp = await startMcpServer({ requireHeader: ['authorization', MCP_SECRET] });
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
  });
  a = await signupTenant(t.api, { companyName: 'Lifecycle A' });
  other = await signupTenant(t.api, { companyName: 'Lifecycle Other' });

  // Tenant a: a custom domain with one intent.
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'a-support', display_name: 'A support' }, jwt(a))).status).toBe(201);
  const ownIntent = await t.api.post('/dashboard/custom-domains/a-support/intents', { intent_key: 'triage', display_name: 'Triage', prompt_template: 'Triage {{message}}' }, jwt(a));
  expect(ownIntent.status, ownIntent.text).toBe(201);
  own = { intentId: ownIntent.body.data.intent.id, intentRef: 'a-support/triage', domainKey: 'a-support' };

  // Tenant other: its own domain, intent, and an agent with one run (so it has a run and a session).
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'other-secret', display_name: 'Other' }, jwt(other))).status).toBe(201);
  const otherIntent = await t.api.post('/dashboard/custom-domains/other-secret/intents', { intent_key: 'hidden', display_name: 'Hidden', prompt_template: 'P' }, jwt(other));
  expect(otherIntent.status, otherIntent.text).toBe(201);
  await createAgent(other, { agent_key: 'other-agent' });
  await deploy(other, 'other-agent');
  const otherRun = await runOk(other, 'other-agent');
  foreign = { intentId: otherIntent.body.data.intent.id, intentRef: 'other-secret/hidden', domainKey: 'other-secret', agentKey: 'other-agent', runId: otherRun.run_id, sessionId: otherRun.session_id };
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await mcp?.close();
});
afterEach(() => fake.reset());

describe('create', () => {
  it('answers 201 with every Agent field, status draft; the row and an agent.create audit entry exist', async () => {
    const res = await t.api.post('/v1/agents', { agent_key: 'full-shape', name: 'Recruiter', goal: 'Screen candidates', description: 'Screens', system_instructions: 'Be brief.', model: 'gpt-4o', temperature: 0.7 }, key(a));
    expect(res.status, res.text).toBe(201);
    const agent = res.body.data.agent;
    expect(res.body).toEqual({ success: true, data: { agent: expect.any(Object) } });
    expect(agent).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      tenant_id: a.tenantId,
      agent_key: 'full-shape',
      name: 'Recruiter',
      description: 'Screens',
      goal: 'Screen candidates',
      system_instructions: 'Be brief.',
      model: 'gpt-4o',
      fallback_models: null,
      temperature: 0.7,
      status: 'draft',
      intent_ids: [],
      workflow_ids: [],
      action_ids: [],
      knowledge_domain_keys: [],
      tools_config: null,
      memory_config: null,
      behavior_config: null,
      guardrail_policy_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(new Date(agent.created_at).toISOString()).toBe(agent.created_at);
    expect(new Date(agent.updated_at).toISOString()).toBe(agent.updated_at);
    expect(await t.sql('select status, agent_key from agents where id = $1 and tenant_id = $2', [agent.id, a.tenantId])).toEqual([{ status: 'draft', agent_key: 'full-shape' }]);
    expect((await auditEntries(a, 'agent.create')).filter((e) => e.target_id === 'full-shape')).toEqual([
      expect.objectContaining({ action: 'agent.create', target_type: 'agent', target_id: 'full-shape' }),
    ]);
    // A draft is readable but not listed.
    expect((await getAgent(a, 'full-shape')).status).toBe('draft');
  });

  it('stores minimal agents with empty lists and null settings; config objects are kept as sent', async () => {
    const minimal = await createAgent(a, { agent_key: 'minimal' });
    expect(minimal).toMatchObject({ description: null, system_instructions: null, model: null, temperature: null, intent_ids: [], tools_config: null, memory_config: null, behavior_config: null });
    const configured = await createAgent(a, {
      agent_key: 'configured',
      action_ids: ['crm:create-lead', 'ats/v2.move_stage'],
      tools_config: { enabled_platform_tools: ['current_time', 'ask_user'], permission_policy: { deny: ['http_get'] }, service_locations: ['Berlin'] },
      memory_config: { conversation_memory: { enabled: true, max_tokens: 500 }, retention_days: 7 },
      behavior_config: { planning: true, execution: { parallel_tool_calls: false }, termination: { stop_on_tools: ['ask_user'] }, max_steps: 4 },
    });
    expect(configured).toMatchObject({
      action_ids: ['crm:create-lead', 'ats/v2.move_stage'],
      tools_config: { enabled_platform_tools: ['current_time', 'ask_user'], permission_policy: { deny: ['http_get'] }, service_locations: ['Berlin'] },
      memory_config: { conversation_memory: { enabled: true, max_tokens: 500 }, retention_days: 7 },
      behavior_config: { planning: true, execution: { parallel_tool_calls: false }, termination: { stop_on_tools: ['ask_user'] }, max_steps: 4 },
    });
    expect(await getAgent(a, 'configured')).toMatchObject({ action_ids: configured.action_ids, tools_config: configured.tools_config, memory_config: configured.memory_config, behavior_config: configured.behavior_config });
  });

  it('409 AGENT_KEY_TAKEN for a key the tenant already has; nothing else is written; another tenant may use the key', async () => {
    const first = await createAgent(a, { agent_key: 'dup-key', name: 'First' });
    const again = await t.api.post('/v1/agents', { agent_key: 'dup-key', name: 'Second', goal: 'G' }, key(a));
    const err = expectError(again, 409, 'AGENT_KEY_TAKEN');
    expect(err.details).toEqual({ agent_key: 'dup-key' });
    expect(await getAgent(a, 'dup-key')).toMatchObject({ id: first.id, name: 'First' });
    expect(await t.sql('select count(*)::int as n from agents where tenant_id = $1 and agent_key = $2', [a.tenantId, 'dup-key'])).toEqual([{ n: 1 }]);
    expect((await auditEntries(a, 'agent.create')).filter((e) => e.target_id === 'dup-key')).toHaveLength(1);
    // Keys are per tenant.
    const elsewhere = await createAgent(other, { agent_key: 'dup-key', name: 'Other tenant' });
    expect(elsewhere.id).not.toBe(first.id);
    expect(elsewhere.tenant_id).toBe(other.tenantId);
  });

  it('concurrent creates of one key: exactly one 201, the rest 409 AGENT_KEY_TAKEN', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => t.api.post('/v1/agents', { agent_key: 'raced-key', name: `Racer ${i}`, goal: 'G' }, key(a))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    for (const res of results.filter((r) => r.status === 409)) expectError(res, 409, 'AGENT_KEY_TAKEN');
    expect(await t.sql('select count(*)::int as n from agents where tenant_id = $1 and agent_key = $2', [a.tenantId, 'raced-key'])).toEqual([{ n: 1 }]);
    expect((await auditEntries(a, 'agent.create')).filter((e) => e.target_id === 'raced-key')).toHaveLength(1);
  });

  it('validates agent_key, name and goal', async () => {
    const post = (body: Record<string, unknown>) => t.api.post('/v1/agents', body, key(a));
    expect(pathsOf(await post({ agent_key: 'Upper-Case', name: 'N', goal: 'G' }))).toContain('agent_key');
    expect(pathsOf(await post({ agent_key: 'has space', name: 'N', goal: 'G' }))).toContain('agent_key');
    expect(pathsOf(await post({ agent_key: 'slash/key', name: 'N', goal: 'G' }))).toContain('agent_key');
    expect(pathsOf(await post({ agent_key: '', name: 'N', goal: 'G' }))).toContain('agent_key');
    expect(pathsOf(await post({ agent_key: 'k'.repeat(101), name: 'N', goal: 'G' }))).toContain('agent_key');
    expect(pathsOf(await post({ name: 'N', goal: 'G' }))).toContain('agent_key');
    expect(pathsOf(await post({ agent_key: 'no-name', goal: 'G' }))).toContain('name');
    expect(pathsOf(await post({ agent_key: 'blank-name', name: '   ', goal: 'G' }))).toContain('name');
    expect(pathsOf(await post({ agent_key: 'no-goal', name: 'N' }))).toContain('goal');
    expect(pathsOf(await post({ agent_key: 'num-name', name: 5, goal: 'G' }))).toContain('name');
    expectError(await t.api.post('/v1/agents', undefined, { ...key(a), raw: '{not json', contentType: 'application/json' }), 400, 'INVALID_JSON');
    expectError(await t.api.post('/v1/agents', undefined, { ...key(a), raw: '[1,2]', contentType: 'application/json' }), 400, 'INVALID_INPUT');
    const created = await t.sql('select agent_key from agents where tenant_id = $1 and agent_key = any($2)', [a.tenantId, ['no-name', 'blank-name', 'no-goal', 'num-name']]);
    expect(created).toEqual([]);
  });

  it('temperature: 0 to 2 inclusive, null allowed; out of range and wrong types are 400 (never coerced)', async () => {
    expect((await createAgent(a, { agent_key: 'temp-zero', temperature: 0 })).temperature).toBe(0);
    expect((await createAgent(a, { agent_key: 'temp-two', temperature: 2 })).temperature).toBe(2);
    expect((await createAgent(a, { agent_key: 'temp-null', temperature: null })).temperature).toBeNull();
    for (const temperature of [2.01, -0.1, 100, '1', '0.5', true, [1], { v: 1 }]) {
      const res = await t.api.post('/v1/agents', { agent_key: 'temp-bad', name: 'N', goal: 'G', temperature }, key(a));
      expect(pathsOf(res), JSON.stringify(temperature)).toEqual(['temperature']);
    }
    expectError(await t.api.get('/v1/agents/temp-bad', key(a)), 404, 'NOT_FOUND');
  });

  it('config objects are typed: wrong types and out-of-range values are 400', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ tools_config: { enabled_platform_tools: ['teleport'] } }, 'tools_config'],
      [{ tools_config: { mcp_servers: [{ name: 'crm', url: 'ftp://mcp.example.com' }] } }, 'tools_config'],
      [{ tools_config: { mcp_servers: [{ name: 'crm', url: 'https://a.example.com' }, { name: 'crm', url: 'https://b.example.com' }] } }, 'tools_config'],
      [{ tools_config: { mcp_servers: [{ name: 'crm', url: 'https://a.example.com', headers: { 'Bad Header': 'x' } }] } }, 'tools_config'],
      [{ tools_config: { notify_email: 'not-an-email' } }, 'tools_config'],
      [{ tools_config: 'current_time' }, 'tools_config'],
      [{ memory_config: { persistent_memory: 'true' } }, 'memory_config'],
      [{ memory_config: { retention_days: 0 } }, 'memory_config'],
      [{ behavior_config: { max_steps: '5' } }, 'behavior_config'],
      [{ behavior_config: { max_steps: 0 } }, 'behavior_config'],
      [{ behavior_config: { max_steps: 51 } }, 'behavior_config'],
      [{ behavior_config: { max_steps: 2.5 } }, 'behavior_config'],
      [{ behavior_config: { max_cost_usd: -1 } }, 'behavior_config'],
      [{ behavior_config: { execution: { parallel_tool_calls: 'no' } } }, 'behavior_config'],
      [{ behavior_config: { planning: 1 } }, 'behavior_config'],
      [{ behavior_config: { planning: ['step'] } }, 'behavior_config'],
      [{ behavior_config: { planning: 'p'.repeat(2001) } }, 'behavior_config'],
      [{ intent_ids: 'hiring/resume-analysis' }, 'intent_ids'],
      [{ knowledge_domain_keys: [''] }, 'knowledge_domain_keys'],
    ];
    for (const [body, field] of cases) {
      const res = await t.api.post('/v1/agents', { agent_key: 'strict-config', name: 'N', goal: 'G', ...body }, key(a));
      const paths = pathsOf(res);
      expect(paths.length, JSON.stringify(body)).toBeGreaterThan(0);
      expect(paths.every((p) => p === field || p.startsWith(`${field}.`)), `${JSON.stringify(body)} -> ${paths}`).toBe(true);
    }
    expectError(await t.api.get('/v1/agents/strict-config', key(a)), 404, 'NOT_FOUND');
  });

  it('unknown keys inside tools_config, memory_config and behavior_config are dropped at every depth, on create and update', async () => {
    const res = await t.api.post('/v1/agents', {
      agent_key: 'loose-config', name: 'N', goal: 'G', surprise_top: 1,
      tools_config: {
        enabled_platform_tools: ['current_time'], surprise: true,
        permission_policy: { deny: ['http_get'], maybe: ['y'] },
        mcp_servers: [{ name: 'crm', url: 'https://mcp.example.com', extra: 1 }],
      },
      memory_config: { retention_days: 7, remember_everything: true, conversation_memory: { enabled: true, size: 3 } },
      behavior_config: { max_steps: 4, unknown: 1, execution: { parallel_tool_calls: false, retries: 3 }, termination: { stop_on_tools: ['current_time'], stop_on: ['x'] } },
    }, key(a));
    expect(res.status, res.text).toBe(201);
    const known = {
      tools_config: { enabled_platform_tools: ['current_time'], permission_policy: { deny: ['http_get'] }, mcp_servers: [{ name: 'crm', url: 'https://mcp.example.com' }] },
      memory_config: { retention_days: 7, conversation_memory: { enabled: true } },
      behavior_config: { max_steps: 4, execution: { parallel_tool_calls: false }, termination: { stop_on_tools: ['current_time'] } },
    };
    expect(res.body.data.agent).toMatchObject(known);
    expect(res.body.data.agent.surprise_top).toBeUndefined();
    const [row] = await t.sql<{ tools_config: unknown; memory_config: unknown; behavior_config: unknown }>(
      'select tools_config, memory_config, behavior_config from agents where tenant_id = $1 and agent_key = $2', [a.tenantId, 'loose-config'],
    );
    expect(row).toEqual(known);

    const patched = await t.api.patch('/v1/agents/loose-config', { behavior_config: { max_steps: 2, later_feature: { on: true }, execution: { tool_timeout_ms: 500, retries: 1 } } }, key(a));
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.agent.behavior_config).toEqual({ max_steps: 2, execution: { tool_timeout_ms: 500 } });
    const [after] = await t.sql<{ behavior_config: unknown }>('select behavior_config from agents where tenant_id = $1 and agent_key = $2', [a.tenantId, 'loose-config']);
    expect(after.behavior_config).toEqual({ max_steps: 2, execution: { tool_timeout_ms: 500 } });
  });

  it('behavior_config.planning as text is stored as sent and turns planning on with the text as the instruction; blank text is off', async () => {
    const instruction = '  List the tools you will call, in order, then call them.  ';
    const created = await createAgent(a, { agent_key: 'planner-text', behavior_config: { planning: instruction } });
    expect(created.behavior_config).toEqual({ planning: instruction });
    expect((await getAgent(a, 'planner-text')).effective_runtime_config.planning).toEqual({ value: instruction, source: 'agent' });
    await createAgent(a, { agent_key: 'planner-blank', behavior_config: { planning: '   ' } });
    expect((await getAgent(a, 'planner-blank')).effective_runtime_config.planning).toEqual({ value: false, source: 'agent' });
    await createAgent(a, { agent_key: 'planner-bool', behavior_config: { planning: true } });
    expect((await getAgent(a, 'planner-bool')).effective_runtime_config.planning).toEqual({ value: true, source: 'agent' });

    const systemPromptOf = async (agentKey: string) => {
      await deploy(a, agentKey);
      fake.reset();
      await runOk(a, agentKey);
      const [first] = fake.chatRequests();
      expect(first.body.messages[0].role).toBe('system');
      return first.body.messages[0].content as string;
    };
    const text = await systemPromptOf('planner-text');
    expect(text).toContain('Before you act, state a short plan. How to plan: List the tools you will call, in order, then call them.');
    expect(text).not.toContain('in one or two sentences');
    expect(await systemPromptOf('planner-bool')).toContain('Before you act, state a short plan in one or two sentences.');
    expect(await systemPromptOf('planner-blank')).not.toContain('short plan');
  });

  it('tool settings must fit together: send_email needs notify_email; remember/recall need persistent_memory', async () => {
    const post = (agent_key: string, body: Record<string, unknown>) => t.api.post('/v1/agents', { agent_key, name: 'N', goal: 'G', ...body }, key(a));
    const mail = issuesOf(await post('mailer-bad', { tools_config: { enabled_platform_tools: ['send_email'] } }));
    expect(mail).toEqual([expect.objectContaining({ path: 'tools_config.notify_email' })]);
    expect((await post('mailer-ok', { tools_config: { enabled_platform_tools: ['send_email'], notify_email: 'hr@example.com' } })).status).toBe(201);

    for (const tool of ['remember', 'recall']) {
      const issues = issuesOf(await post(`memory-bad-${tool}`, { tools_config: { enabled_platform_tools: [tool] } }));
      expect(issues).toEqual([expect.objectContaining({ path: 'tools_config.enabled_platform_tools', message: expect.stringMatching(/persistent_memory/) })]);
      expect(pathsOf(await post(`memory-off-${tool}`, { tools_config: { enabled_platform_tools: [tool] }, memory_config: { persistent_memory: false } }))).toEqual(['tools_config.enabled_platform_tools']);
    }
    const ok = await post('memory-ok', { tools_config: { enabled_platform_tools: ['remember', 'recall'] }, memory_config: { persistent_memory: true } });
    expect(ok.status, ok.text).toBe(201);
    expect(await t.sql('select agent_key from agents where tenant_id = $1 and agent_key like $2', [a.tenantId, 'memory-%'])).toEqual([{ agent_key: 'memory-ok' }]);
  });
});

describe('references', () => {
  it('accepts the tenant\'s own custom intent (by id and by domain/key), built-in hiring intents, hiring and own custom domains', async () => {
    const agent = await createAgent(a, {
      agent_key: 'refs-ok',
      intent_ids: [own.intentId, own.intentRef, 'hiring/resume-analysis'],
      knowledge_domain_keys: ['hiring', own.domainKey],
      action_ids: ['crm:lead', 'a_b-c.d/e'],
    });
    expect(agent).toMatchObject({
      intent_ids: [own.intentId, own.intentRef, 'hiring/resume-analysis'],
      knowledge_domain_keys: ['hiring', own.domainKey],
      action_ids: ['crm:lead', 'a_b-c.d/e'],
      workflow_ids: [],
    });
  });

  it('unknown or another tenant\'s intents are a 400 naming them', async () => {
    const missing = randomUUID();
    for (const ref of [foreign.intentId, foreign.intentRef, missing, 'hiring/does-not-exist', 'not an id', 'nodomain']) {
      const issues = issuesOf(await t.api.post('/v1/agents', { agent_key: 'refs-intent', name: 'N', goal: 'G', intent_ids: ['hiring/resume-analysis', ref] }, key(a)));
      expect(issues, ref).toEqual([expect.objectContaining({ path: 'intent_ids' })]);
      expect(issues[0].message, ref).toContain(ref);
      expect(issues[0].message, ref).not.toContain('hiring/resume-analysis');
    }
    // Tenant other's own intent is fine for tenant other.
    expect((await createAgent(other, { agent_key: 'refs-own-other', intent_ids: [foreign.intentId, foreign.intentRef] })).intent_ids).toEqual([foreign.intentId, foreign.intentRef]);
    expectError(await t.api.get('/v1/agents/refs-intent', key(a)), 404, 'NOT_FOUND');
  });

  it('unknown or another tenant\'s knowledge domain keys are a 400 naming them', async () => {
    for (const domain of [foreign.domainKey, 'no-such-domain']) {
      const issues = issuesOf(await t.api.post('/v1/agents', { agent_key: 'refs-domain', name: 'N', goal: 'G', knowledge_domain_keys: ['hiring', domain] }, key(a)));
      expect(issues).toEqual([expect.objectContaining({ path: 'knowledge_domain_keys' })]);
      expect(issues[0].message).toContain(domain);
    }
  });

  it('workflow ids and keys the tenant does not have are unknown', async () => {
    const issues = issuesOf(await t.api.post('/v1/agents', { agent_key: 'refs-workflow', name: 'N', goal: 'G', workflow_ids: ['wf-onboarding', randomUUID()] }, key(a)));
    expect(issues).toEqual([expect.objectContaining({ path: 'workflow_ids' })]);
    expect(issues[0].message).toContain('wf-onboarding');
  });

  it('action ids with invalid characters are a 400 at their index', async () => {
    expect(pathsOf(await t.api.post('/v1/agents', { agent_key: 'refs-action', name: 'N', goal: 'G', action_ids: ['fine:one', 'bad id!', 'ok', 'ü-nicode'] }, key(a))).sort()).toEqual(['action_ids.1', 'action_ids.3']);
  });

  it('one 400 lists every problem at once, and nothing is stored', async () => {
    const res = await t.api.post('/v1/agents', {
      agent_key: 'refs-all', name: 'N', goal: 'G',
      intent_ids: [foreign.intentId], workflow_ids: ['wf'], knowledge_domain_keys: [foreign.domainKey], action_ids: ['no spaces'],
      tools_config: { enabled_platform_tools: ['send_email', 'recall'] },
    }, key(a));
    expect(pathsOf(res).sort()).toEqual(['action_ids.0', 'intent_ids', 'knowledge_domain_keys', 'tools_config.enabled_platform_tools', 'tools_config.notify_email', 'workflow_ids']);
    expectError(await t.api.get('/v1/agents/refs-all', key(a)), 404, 'NOT_FOUND');
  });

  it('PATCH checks references the same way and leaves the agent unchanged on a 400', async () => {
    await createAgent(a, { agent_key: 'refs-patch', intent_ids: ['hiring/resume-analysis'] });
    for (const body of [
      { intent_ids: [foreign.intentId] },
      { intent_ids: [foreign.intentRef] },
      { knowledge_domain_keys: [foreign.domainKey] },
      { workflow_ids: ['wf-1'] },
      { action_ids: ['a b'] },
    ]) {
      const res = await t.api.patch('/v1/agents/refs-patch', { name: 'Changed', ...body }, key(a));
      expect(pathsOf(res).length, JSON.stringify(body)).toBe(1);
    }
    expect(await getAgent(a, 'refs-patch')).toMatchObject({ name: 'Helper', intent_ids: ['hiring/resume-analysis'], knowledge_domain_keys: [], workflow_ids: [], action_ids: [] });
    const ok = await t.api.patch('/v1/agents/refs-patch', { intent_ids: [own.intentRef], knowledge_domain_keys: [own.domainKey] }, key(a));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.agent).toMatchObject({ intent_ids: [own.intentRef], knowledge_domain_keys: [own.domainKey] });
  });

  it('PATCH checks tool settings against what the agent will have after the update', async () => {
    await createAgent(a, { agent_key: 'memory-patch', tools_config: { enabled_platform_tools: ['remember'] }, memory_config: { persistent_memory: true } });
    expect(pathsOf(await t.api.patch('/v1/agents/memory-patch', { memory_config: { persistent_memory: false } }, key(a)))).toEqual(['tools_config.enabled_platform_tools']);
    expect(pathsOf(await t.api.patch('/v1/agents/memory-patch', { memory_config: null }, key(a)))).toEqual(['tools_config.enabled_platform_tools']);
    expect(pathsOf(await t.api.patch('/v1/agents/memory-patch', { tools_config: { enabled_platform_tools: ['remember', 'send_email'] } }, key(a)))).toEqual(['tools_config.notify_email']);
    expect((await getAgent(a, 'memory-patch')).memory_config).toEqual({ persistent_memory: true });
    // Dropping the tool and the memory together is fine.
    const res = await t.api.patch('/v1/agents/memory-patch', { tools_config: { enabled_platform_tools: ['current_time'] }, memory_config: null }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.agent).toMatchObject({ tools_config: { enabled_platform_tools: ['current_time'] }, memory_config: null });
  });
});

describe('read and list', () => {
  it('GET one agent: the Agent fields plus effective_runtime_config with platform and provider defaults', async () => {
    const created = await createAgent(a, { agent_key: 'defaults' });
    const agent = await getAgent(a, 'defaults');
    const { effective_runtime_config: effective, ...fields } = agent;
    expect(fields).toEqual(created);
    expect(effective).toEqual({
      model: { value: 'gpt-4o-mini', source: 'platform_default' },
      fallback_models: { value: [], source: 'platform_default' },
      temperature: { value: null, source: 'provider_default' },
      max_steps: { value: 10, source: 'platform_default' },
      max_output_tokens: { value: 2048, source: 'platform_default' },
      max_cost_usd: { value: null, source: 'platform_default' },
      parallel_tool_calls: { value: true, source: 'platform_default' },
      tool_timeout_ms: { value: 30_000, source: 'platform_default' },
      planning: { value: false, source: 'platform_default' },
      fallback: { value: expect.any(String), source: 'platform_default' },
      stop_on_tools: { value: [], source: 'platform_default' },
      conversation_memory: { value: true, source: 'platform_default' },
      conversation_memory_max_tokens: { value: 4000, source: 'platform_default' },
      user_preferences: { value: false, source: 'platform_default' },
      persistent_memory: { value: false, source: 'platform_default' },
      retention_days: { value: 30, source: 'platform_default' },
      enabled_platform_tools: { value: [], source: 'platform_default' },
    });
    expect(effective.fallback.value.length).toBeGreaterThan(0);
  });

  it('values the agent sets (falsy ones included) have source agent', async () => {
    await createAgent(a, {
      agent_key: 'all-set',
      model: 'gpt-4o',
      fallback_models: [],
      temperature: 0,
      tools_config: { enabled_platform_tools: ['current_time', 'remember'] },
      memory_config: { conversation_memory: { enabled: false, max_tokens: 1000 }, user_preferences: true, persistent_memory: true, retention_days: 7 },
      behavior_config: {
        planning: false, execution: { parallel_tool_calls: false, tool_timeout_ms: 5000 }, fallback: 'Busy.', termination: { stop_on_tools: ['current_time'] },
        max_steps: 3, max_output_tokens: 256, max_cost_usd: 0,
      },
    });
    const effective = (await getAgent(a, 'all-set')).effective_runtime_config;
    expect(effective).toEqual({
      model: { value: 'gpt-4o', source: 'agent' },
      fallback_models: { value: [], source: 'agent' },
      temperature: { value: 0, source: 'agent' },
      max_steps: { value: 3, source: 'agent' },
      max_output_tokens: { value: 256, source: 'agent' },
      max_cost_usd: { value: 0, source: 'agent' },
      parallel_tool_calls: { value: false, source: 'agent' },
      tool_timeout_ms: { value: 5000, source: 'agent' },
      planning: { value: false, source: 'agent' },
      fallback: { value: 'Busy.', source: 'agent' },
      stop_on_tools: { value: ['current_time'], source: 'agent' },
      conversation_memory: { value: false, source: 'agent' },
      conversation_memory_max_tokens: { value: 1000, source: 'agent' },
      user_preferences: { value: true, source: 'agent' },
      persistent_memory: { value: true, source: 'agent' },
      retention_days: { value: 7, source: 'agent' },
      enabled_platform_tools: { value: ['current_time', 'remember'], source: 'agent' },
    });
    // conversation_memory as a plain boolean.
    await createAgent(a, { agent_key: 'memory-bool', memory_config: { conversation_memory: false } });
    const bool = (await getAgent(a, 'memory-bool')).effective_runtime_config;
    expect(bool.conversation_memory).toEqual({ value: false, source: 'agent' });
    expect(bool.conversation_memory_max_tokens).toEqual({ value: 4000, source: 'platform_default' });
  });

  it('clearing a setting by PATCH returns it to its default source', async () => {
    await createAgent(a, { agent_key: 'cleared', model: 'gpt-4o', fallback_models: ['gpt-4o-mini'], temperature: 1.2, behavior_config: { max_steps: 4 } });
    expect((await getAgent(a, 'cleared')).effective_runtime_config.fallback_models).toEqual({ value: ['gpt-4o-mini'], source: 'agent' });
    const res = await t.api.patch('/v1/agents/cleared', { model: null, fallback_models: null, temperature: null, behavior_config: null }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.agent).toMatchObject({ model: null, fallback_models: null, temperature: null, behavior_config: null });
    const effective = (await getAgent(a, 'cleared')).effective_runtime_config;
    expect(effective.model).toEqual({ value: 'gpt-4o-mini', source: 'platform_default' });
    expect(effective.fallback_models).toEqual({ value: [], source: 'platform_default' });
    expect(effective.temperature).toEqual({ value: null, source: 'provider_default' });
    expect(effective.max_steps).toEqual({ value: 10, source: 'platform_default' });
  });

  it('an agent without its own chain shows the tenant\'s, as a default', async () => {
    const tenant = await signupTenant(t.api, { companyName: 'Agent chains' });
    const set = await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { modelFallbacks: ['backup/gpt-4o'] }, { headers: adminHeaders });
    expect(set.status, set.text).toBe(200);
    await createAgent(tenant, { agent_key: 'inherits' });
    expect((await getAgent(tenant, 'inherits')).effective_runtime_config.fallback_models).toEqual({ value: ['backup/gpt-4o'], source: 'platform_default' });
    const bad = await t.api.patch('/v1/agents/inherits', { fallback_models: ['gpt-4o', 'gpt-4o'] }, key(tenant));
    expectError(bad, 400, 'INVALID_INPUT');
    expect(bad.body.error.details.issues[0].path).toMatch(/^fallback_models/);
  });

  it('only the single read carries effective_runtime_config', async () => {
    const created = await createAgent(a, { agent_key: 'no-effective' });
    expect(created.effective_runtime_config).toBeUndefined();
    const patched = await t.api.patch('/v1/agents/no-effective', { name: 'Renamed' }, key(a));
    expect(patched.body.data.agent.effective_runtime_config).toBeUndefined();
    expect((await deploy(a, 'no-effective')).effective_runtime_config).toBeUndefined();
  });

  it('unknown agent keys are 404 NOT_FOUND on every agent route', async () => {
    const k = 'never-created';
    expectError(await t.api.get(`/v1/agents/${k}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.patch(`/v1/agents/${k}`, { name: 'X' }, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.delete(`/v1/agents/${k}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.post(`/v1/agents/${k}/deploy`, undefined, key(a)), 404, 'NOT_FOUND');
    expectError(await run(a, k, { input: { message: 'hi' } }), 404, 'NOT_FOUND');
    expectError(await runStream(a, k, { input: { message: 'hi' } }), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/${k}/runs`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/${k}/runs/${randomUUID()}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/${k}/sessions`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/${k}/sessions/${randomUUID()}/transcript`, key(a)), 404, 'NOT_FOUND');
    // Another tenant's agent key is just as unknown.
    expectError(await t.api.get(`/v1/agents/${foreign.agentKey}`, key(a)), 404, 'NOT_FOUND');
    expectError(await run(a, foreign.agentKey, { input: { message: 'hi' } }), 404, 'NOT_FOUND');
  });

  it('requires an API key: no key or a dashboard token is 401', async () => {
    expectError(await t.api.get('/v1/agents'), 401, 'MISSING_API_KEY');
    const jwtOnAgents = await t.api.get('/v1/agents', jwt(a));
    expect(jwtOnAgents.status).toBe(401);
    expectError(jwtOnAgents, 401, jwtOnAgents.body.error.code);
    expect((await t.api.post('/v1/agents', { agent_key: 'no-auth', name: 'N', goal: 'G' })).status).toBe(401);
    expect((await t.api.post('/v1/agents/defaults/run/stream', { input: { message: 'hi' } })).status).toBe(401);
  });

  it('the list shows active agents only, by key, with run endpoint and input schema', async () => {
    const fresh = await signupTenant(t.api, { companyName: 'List tenant' });
    expect((await t.api.get('/v1/agents', key(fresh))).body).toEqual({ success: true, data: { agents: [], total: 0 } });
    await createAgent(fresh, { agent_key: 'zeta', name: 'Zeta', goal: 'Z goal', description: 'Last by key' });
    await createAgent(fresh, { agent_key: 'alpha', name: 'Alpha', goal: 'A goal' });
    await createAgent(fresh, { agent_key: 'draft-one' });
    await createAgent(fresh, { agent_key: 'removed' });
    await createAgent(fresh, { agent_key: 'paused' });
    for (const k of ['zeta', 'alpha', 'removed', 'paused']) await deploy(fresh, k);
    expect((await t.api.delete('/v1/agents/removed', key(fresh))).status).toBe(200);
    expect((await t.api.patch('/v1/agents/paused', { status: 'inactive' }, key(fresh))).status).toBe(200);

    const res = await t.api.get('/v1/agents', key(fresh));
    expect(res.status, res.text).toBe(200);
    const inputSchema = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };
    expect(res.body).toEqual({
      success: true,
      data: {
        agents: [
          { agent: 'alpha', displayName: 'Alpha', description: null, goal: 'A goal', status: 'active', endpoint: '/v1/agents/alpha/run', method: 'POST', inputSchema },
          { agent: 'zeta', displayName: 'Zeta', description: 'Last by key', goal: 'Z goal', status: 'active', endpoint: '/v1/agents/zeta/run', method: 'POST', inputSchema },
        ],
        total: 2,
      },
    });
    // Another tenant's agents never show.
    const listed = (await t.api.get('/v1/agents', key(a))).body.data.agents.map((x: { agent: string }) => x.agent);
    expect(listed).not.toContain('alpha');
    expect(listed).not.toContain('zeta');
  });
});

describe('update', () => {
  it('changes only the fields sent, bumps updated_at and audits agent.update with the fields', async () => {
    const created = await createAgent(a, { agent_key: 'patchable', description: 'Old', system_instructions: 'Old rules', temperature: 0.5 });
    const res = await t.api.patch('/v1/agents/patchable', { name: 'New name', description: null, goal: 'New goal' }, key(a));
    expect(res.status, res.text).toBe(200);
    const agent = res.body.data.agent;
    expect(agent).toEqual({ ...created, name: 'New name', description: null, goal: 'New goal', updated_at: expect.any(String) });
    expect(new Date(agent.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(created.updated_at).getTime());
    expect(agent.created_at).toBe(created.created_at);
    const { effective_runtime_config: _e, ...read } = await getAgent(a, 'patchable');
    expect(read).toEqual(agent);
    const audit = (await auditEntries(a, 'agent.update')).filter((e) => e.target_id === 'patchable');
    expect(audit).toHaveLength(1);
    expect((audit[0].details.fields as string[]).sort()).toEqual(['description', 'goal', 'name']);
  });

  it('an empty PATCH changes nothing and audits nothing', async () => {
    const created = await createAgent(a, { agent_key: 'patch-empty' });
    const res = await t.api.patch('/v1/agents/patch-empty', {}, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.agent).toEqual(created);
    const noBody = await t.api.patch('/v1/agents/patch-empty', undefined, key(a));
    expect(noBody.status, noBody.text).toBe(200);
    expect((await auditEntries(a, 'agent.update')).filter((e) => e.target_id === 'patch-empty')).toEqual([]);
  });

  it('validates fields like create does', async () => {
    await createAgent(a, { agent_key: 'patch-validate', temperature: 1 });
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { temperature: '1' }, key(a)))).toEqual(['temperature']);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { temperature: 3 }, key(a)))).toEqual(['temperature']);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { name: '' }, key(a)))).toEqual(['name']);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { goal: null }, key(a)))).toEqual(['goal']);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { status: 'paused' }, key(a)))).toEqual(['status']);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { status: 'error' }, key(a)))).toEqual(['status']);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { behavior_config: { max_steps: 99 } }, key(a)))[0]).toMatch(/^behavior_config/);
    expect(pathsOf(await t.api.patch('/v1/agents/patch-validate', { tools_config: { enabled_platform_tools: ['teleport'] } }, key(a)))[0]).toMatch(/^tools_config/);
    expect(await getAgent(a, 'patch-validate')).toMatchObject({ temperature: 1, name: 'Helper', status: 'draft', behavior_config: null, tools_config: null });
  });

  it('status active is 409 DEPLOY_REQUIRED and nothing of the PATCH is applied', async () => {
    await createAgent(a, { agent_key: 'needs-deploy' });
    const err = expectError(await t.api.patch('/v1/agents/needs-deploy', { status: 'active', name: 'Sneaky' }, key(a)), 409, 'DEPLOY_REQUIRED');
    expect(err.details).toMatchObject({ agent_key: 'needs-deploy' });
    expect(await getAgent(a, 'needs-deploy')).toMatchObject({ status: 'draft', name: 'Helper' });
    expectError(await run(a, 'needs-deploy', { input: { message: 'hi' } }), 409, 'AGENT_NOT_ACTIVE');
    expect((await auditEntries(a, 'agent.update')).filter((e) => e.target_id === 'needs-deploy')).toEqual([]);
  });

  it('status draft and inactive are allowed; either takes an active agent off the list and stops runs', async () => {
    await createAgent(a, { agent_key: 'status-flip' });
    await deploy(a, 'status-flip');
    await runOk(a, 'status-flip');
    for (const status of ['draft', 'inactive'] as const) {
      const res = await t.api.patch('/v1/agents/status-flip', { status }, key(a));
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.agent.status).toBe(status);
      const listed = (await t.api.get('/v1/agents', key(a))).body.data.agents.map((x: { agent: string }) => x.agent);
      expect(listed).not.toContain('status-flip');
      const refused = expectError(await run(a, 'status-flip', { input: { message: 'hi' } }), 409, 'AGENT_NOT_ACTIVE');
      expect(refused.details).toMatchObject({ agent_key: 'status-flip', status });
      expect((await deploy(a, 'status-flip')).status).toBe('active');
      expect((await t.api.get('/v1/agents', key(a))).body.data.agents.map((x: { agent: string }) => x.agent)).toContain('status-flip');
    }
  });

  it('agent_key never changes: in the body it is ignored, and a path key always wins', async () => {
    const created = await createAgent(a, { agent_key: 'immutable' });
    await createAgent(a, { agent_key: 'bystander', name: 'Bystander' });
    const res = await t.api.patch('/v1/agents/immutable', { agent_key: 'renamed', name: 'Still me' }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.agent).toMatchObject({ id: created.id, agent_key: 'immutable', name: 'Still me' });
    expectError(await t.api.get('/v1/agents/renamed', key(a)), 404, 'NOT_FOUND');
    expect(await t.sql('select agent_key from agents where id = $1', [created.id])).toEqual([{ agent_key: 'immutable' }]);
    // The path parameter's name in the body does not redirect the update to another agent.
    const sneaky = await t.api.patch('/v1/agents/immutable', { agentKey: 'bystander', name: 'Hijacked' }, key(a));
    expect(sneaky.status, sneaky.text).toBe(200);
    expect(sneaky.body.data.agent).toMatchObject({ agent_key: 'immutable', name: 'Hijacked' });
    expect((await getAgent(a, 'bystander')).name).toBe('Bystander');
  });

  it('another tenant cannot update, deploy or delete the agent (404), and it stays as it was', async () => {
    const created = await createAgent(a, { agent_key: 'guarded-agent' });
    expectError(await t.api.patch('/v1/agents/guarded-agent', { name: 'Mine now' }, key(other)), 404, 'NOT_FOUND');
    expectError(await t.api.post('/v1/agents/guarded-agent/deploy', undefined, key(other)), 404, 'NOT_FOUND');
    expectError(await t.api.delete('/v1/agents/guarded-agent', key(other)), 404, 'NOT_FOUND');
    const { effective_runtime_config: _e, ...after } = await getAgent(a, 'guarded-agent');
    expect(after).toEqual(created);
  });
});

describe('deploy and delete', () => {
  it('deploy: draft -> active, audited as agent.deploy; deploying again changes nothing and audits nothing', async () => {
    const created = await createAgent(a, { agent_key: 'deployable' });
    const res = await t.api.post('/v1/agents/deployable/deploy', undefined, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ success: true, data: { agent: { ...created, status: 'active', updated_at: expect.any(String) } } });
    const deployed = res.body.data.agent;
    const entries = (await auditEntries(a, 'agent.deploy')).filter((e) => e.target_id === 'deployable');
    expect(entries).toEqual([expect.objectContaining({ action: 'agent.deploy', target_type: 'agent', target_id: 'deployable', actor: expect.stringMatching(/^api-key:/), details: { from: 'draft' } })]);
    const [{ deployed_at: deployedAt }] = await t.sql<{ deployed_at: Date }>('select deployed_at from agents where id = $1', [created.id]);
    expect(deployedAt).not.toBeNull();

    const again = await t.api.post('/v1/agents/deployable/deploy', {}, key(a));
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.agent).toEqual(deployed);
    expect((await auditEntries(a, 'agent.deploy')).filter((e) => e.target_id === 'deployable')).toHaveLength(1);
    expect(await t.sql('select deployed_at from agents where id = $1', [created.id])).toEqual([{ deployed_at: deployedAt }]);
    expect((await runOk(a, 'deployable')).status).toBe('completed');
  });

  it('concurrent deploys of a draft: all 200 active, audited once', async () => {
    await createAgent(a, { agent_key: 'raced-deploy' });
    const results = await Promise.all(Array.from({ length: 6 }, () => t.api.post('/v1/agents/raced-deploy/deploy', undefined, key(a))));
    expect(results.map((r) => [r.status, r.body?.data?.agent?.status])).toEqual(Array.from({ length: 6 }, () => [200, 'active']));
    expect((await auditEntries(a, 'agent.deploy')).filter((e) => e.target_id === 'raced-deploy')).toHaveLength(1);
  });

  it('concurrent deletes of an active agent: all 200 inactive, audited once', async () => {
    await createAgent(a, { agent_key: 'raced-delete' });
    await deploy(a, 'raced-delete');
    const results = await Promise.all(Array.from({ length: 6 }, () => t.api.delete('/v1/agents/raced-delete', key(a))));
    expect(results.map((r) => [r.status, r.body?.data?.agent?.status])).toEqual(Array.from({ length: 6 }, () => [200, 'inactive']));
    expect((await auditEntries(a, 'agent.delete')).filter((e) => e.target_id === 'raced-delete')).toHaveLength(1);
  });

  it('delete is soft: inactive, off the list, runs refused with 409, history readable; deploy re-activates', async () => {
    await createAgent(a, { agent_key: 'deletable' });
    await deploy(a, 'deletable');
    const before = await runOk(a, 'deletable');

    const del = await t.api.delete('/v1/agents/deletable', key(a));
    expect(del.status, del.text).toBe(200);
    expect(del.body.data.agent).toMatchObject({ agent_key: 'deletable', status: 'inactive' });
    expect((await auditEntries(a, 'agent.delete')).filter((e) => e.target_id === 'deletable')).toHaveLength(1);
    expect((await getAgent(a, 'deletable')).status).toBe('inactive');
    expect((await t.api.get('/v1/agents', key(a))).body.data.agents.map((x: { agent: string }) => x.agent)).not.toContain('deletable');
    const refused = expectError(await run(a, 'deletable', { input: { message: 'hi' } }), 409, 'AGENT_NOT_ACTIVE');
    expect(refused.details).toMatchObject({ agent_key: 'deletable', status: 'inactive' });
    expectError(await run(a, 'deletable', { input: { message: 'hi' }, session_id: before.session_id }), 409, 'AGENT_NOT_ACTIVE');
    expectError(await runStream(a, 'deletable', { input: { message: 'hi' } }), 409, 'AGENT_NOT_ACTIVE');
    expect(fake.chatRequests()).toHaveLength(1);

    // Runs, sessions and transcripts stay readable.
    const runs = await t.api.get('/v1/agents/deletable/runs', key(a));
    expect(runs.status, runs.text).toBe(200);
    expect(runs.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual([before.run_id]);
    expect((await t.api.get(`/v1/agents/deletable/runs/${before.run_id}`, key(a))).status).toBe(200);
    expect((await t.api.get('/v1/agents/deletable/sessions', key(a))).body.data.sessions).toHaveLength(1);
    expect((await t.api.get(`/v1/agents/deletable/sessions/${before.session_id}/transcript`, key(a))).body.data.turns).toHaveLength(2);

    // Deleting again is harmless and not audited again.
    const twice = await t.api.delete('/v1/agents/deletable', key(a));
    expect(twice.status, twice.text).toBe(200);
    expect(twice.body.data.agent.status).toBe('inactive');
    expect((await auditEntries(a, 'agent.delete')).filter((e) => e.target_id === 'deletable')).toHaveLength(1);

    // Deploy again: active, listed, runnable, and the old session continues.
    expect((await deploy(a, 'deletable')).status).toBe('active');
    expect((await auditEntries(a, 'agent.deploy')).filter((e) => e.target_id === 'deletable').map((e) => e.details)).toEqual([{ from: 'inactive' }, { from: 'draft' }]);
    expect((await t.api.get('/v1/agents', key(a))).body.data.agents.map((x: { agent: string }) => x.agent)).toContain('deletable');
    const after = await runOk(a, 'deletable', { input: { message: 'Back again' }, session_id: before.session_id });
    expect(after).toMatchObject({ status: 'completed', session_id: before.session_id });
  });
});

describe('plans', () => {
  it('free plan: create and deploy of a draft are 403 FEATURE_NOT_ENABLED; runs of an already active agent too', async () => {
    const f = await signupTenant(t.api, { companyName: 'Free tenant' });
    await createAgent(f, { agent_key: 'was-active' });
    await deploy(f, 'was-active');
    await createAgent(f, { agent_key: 'was-draft' });
    await setPlan(f, 'free');

    const created = expectError(await t.api.post('/v1/agents', { agent_key: 'on-free', name: 'N', goal: 'G' }, key(f)), 403, 'FEATURE_NOT_ENABLED');
    expect(created.details).toMatchObject({ feature: 'agents', plan: 'free' });
    expect(await t.sql('select agent_key from agents where tenant_id = $1 order by agent_key', [f.tenantId])).toEqual([{ agent_key: 'was-active' }, { agent_key: 'was-draft' }]);
    expectError(await t.api.post('/v1/agents/was-draft/deploy', undefined, key(f)), 403, 'FEATURE_NOT_ENABLED');
    expect((await getAgent(f, 'was-draft')).status).toBe('draft');

    const ran = expectError(await run(f, 'was-active', { input: { message: 'hi' } }), 403, 'FEATURE_NOT_ENABLED');
    expect(ran.details).toMatchObject({ feature: 'agents', plan: 'free' });
    expectError(await runStream(f, 'was-active', { input: { message: 'hi' } }), 403, 'FEATURE_NOT_ENABLED');
    expect(fake.chatRequests()).toHaveLength(0);
    expect(await t.sql('select count(*)::int as n from agent_runs where tenant_id = $1', [f.tenantId])).toEqual([{ n: 0 }]);

    // Back on a paid plan, everything works again.
    await setPlan(f, 'starter');
    expect((await t.api.post('/v1/agents', { agent_key: 'on-starter', name: 'N', goal: 'G' }, key(f))).status).toBe(201);
    expect((await runOk(f, 'was-active')).status).toBe('completed');
  });
});

describe('MCP server headers', () => {
  it('are stored encrypted, shown as ***, and *** sent back keeps the stored value', async () => {
    const created = await createAgent(a, {
      agent_key: 'mcp-masked',
      tools_config: { mcp_servers: [{ name: 'crm', url: mcp.url, headers: { Authorization: MCP_SECRET, 'X-Team': 'team-blue-plain' }, allowed_tools: ['add'] }] },
    });
    expect(created.tools_config).toEqual({ mcp_servers: [{ name: 'crm', url: mcp.url, headers: { Authorization: '***', 'X-Team': '***' }, allowed_tools: ['add'] }] });
    expect((await getAgent(a, 'mcp-masked')).tools_config).toEqual(created.tools_config);
    const raw = (await rawToolsConfig(a, 'mcp-masked'))!;
    expect(raw).not.toContain('s3cr3t-plaintext-token');
    expect(raw).not.toContain('team-blue-plain');
    const stored = (await storedHeaders(a, 'mcp-masked', 'crm'))!;
    expect(Object.keys(stored).sort()).toEqual(['Authorization', 'X-Team']);
    expect(stored.Authorization).not.toBe('***');

    // *** keeps Authorization as stored; a new X-Team value is encrypted too; an unrelated PATCH keeps both.
    const patched = await t.api.patch('/v1/agents/mcp-masked', {
      tools_config: { mcp_servers: [{ name: 'crm', url: mcp.url, headers: { Authorization: '***', 'X-Team': 'team-red-plain' }, allowed_tools: ['add'] }] },
    }, key(a));
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.agent.tools_config.mcp_servers[0].headers).toEqual({ Authorization: '***', 'X-Team': '***' });
    const afterPatch = (await storedHeaders(a, 'mcp-masked', 'crm'))!;
    expect(afterPatch.Authorization).toBe(stored.Authorization);
    expect(afterPatch['X-Team']).not.toBe(stored['X-Team']);
    expect(await rawToolsConfig(a, 'mcp-masked')).not.toContain('team-red-plain');
    expect((await t.api.patch('/v1/agents/mcp-masked', { name: 'Renamed' }, key(a))).status).toBe(200);
    expect(await storedHeaders(a, 'mcp-masked', 'crm')).toEqual(afterPatch);
    // Neither the audit log nor the dashboard's view of it carries a header value.
    const audit = JSON.stringify(await t.sql('select details from audit_log where tenant_id = $1', [a.tenantId]));
    expect(audit).not.toContain('s3cr3t-plaintext-token');
    expect(audit).not.toContain('team-red-plain');

    // The kept value still works: the MCP server (which requires it) lists its tools to the run.
    await deploy(a, 'mcp-masked');
    fake.script(['No tools needed.']);
    expect((await runOk(a, 'mcp-masked')).status).toBe('completed');
    const offered = (fake.chatRequests()[0].body.tools ?? []).map((x: { function: { name: string } }) => x.function.name);
    expect(offered).toEqual(['crm__add']);
  });

  it('*** for a header that was never stored keeps nothing; leaving a header out removes it', async () => {
    await createAgent(a, { agent_key: 'mcp-partial', tools_config: { mcp_servers: [{ name: 'docs', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer keep-me-secret' } }] } });
    const res = await t.api.patch('/v1/agents/mcp-partial', {
      tools_config: { mcp_servers: [{ name: 'docs', url: 'https://mcp.example.com/mcp', headers: { Authorization: '***', 'X-Never-Stored': '***' } }] },
    }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.agent.tools_config.mcp_servers[0].headers).toEqual({ Authorization: '***' });
    const kept = (await storedHeaders(a, 'mcp-partial', 'docs'))!;
    expect(Object.keys(kept)).toEqual(['Authorization']);
    expect(kept.Authorization).not.toBe('***');

    // *** under a server name that had no such header (the server was renamed) keeps nothing.
    const renamed = await t.api.patch('/v1/agents/mcp-partial', {
      tools_config: { mcp_servers: [{ name: 'docs2', url: 'https://mcp.example.com/mcp', headers: { Authorization: '***' } }] },
    }, key(a));
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data.agent.tools_config.mcp_servers[0].headers).toEqual({});

    const dropped = await t.api.patch('/v1/agents/mcp-partial', { tools_config: { mcp_servers: [{ name: 'docs', url: 'https://mcp.example.com/mcp' }] } }, key(a));
    expect(dropped.status, dropped.text).toBe(200);
    expect(dropped.body.data.agent.tools_config.mcp_servers[0].headers).toBeUndefined();
    expect(await rawToolsConfig(a, 'mcp-partial')).not.toContain('keep-me-secret');
  });

  it('another tenant\'s masked value never resolves to this tenant\'s secret', async () => {
    await createAgent(a, { agent_key: 'mcp-mine', tools_config: { mcp_servers: [{ name: 'crm', url: 'https://mcp.example.com', headers: { Authorization: 'Bearer tenant-a-only' } }] } });
    const theirs = await createAgent(other, { agent_key: 'mcp-mine', tools_config: { mcp_servers: [{ name: 'crm', url: 'https://mcp.example.com', headers: { Authorization: '***' } }] } });
    expect(theirs.tools_config.mcp_servers[0].headers).toEqual({});
    expect(await storedHeaders(other, 'mcp-mine', 'crm')).toEqual({});
  });
});

describe('run refusals', () => {
  it('a draft agent is 409 AGENT_NOT_ACTIVE, on the JSON and the stream route, with no run written', async () => {
    await createAgent(a, { agent_key: 'still-draft' });
    const err = expectError(await run(a, 'still-draft', { input: { message: 'hi' } }), 409, 'AGENT_NOT_ACTIVE');
    expect(err.details).toEqual({ agent_key: 'still-draft', status: 'draft' });
    expectError(await runStream(a, 'still-draft', { input: { message: 'hi' } }), 409, 'AGENT_NOT_ACTIVE');
    expect(fake.chatRequests()).toHaveLength(0);
    expect(await t.sql('select count(*)::int as n from agent_runs r join agents g on g.id = r.agent_id where g.agent_key = $1 and g.tenant_id = $2', ['still-draft', a.tenantId])).toEqual([{ n: 0 }]);
  });

  it('invalid bodies are 400 INVALID_INPUT with the issues, on the JSON and the stream route', async () => {
    await createAgent(a, { agent_key: 'validator' });
    await deploy(a, 'validator');
    const cases: [unknown, string][] = [
      [{}, 'input'],
      [{ input: {} }, 'input.message'],
      [{ input: { message: '' } }, 'input.message'],
      [{ input: { message: '   \n\t ' } }, 'input.message'],
      [{ input: { message: 42 } }, 'input.message'],
      [{ input: { message: null } }, 'input.message'],
      [{ input: 'hello' }, 'input'],
      [{ input: { message: 'hi', user_id: '' } }, 'input.user_id'],
      [{ input: { message: 'hi', user_id: 7 } }, 'input.user_id'],
      [{ input: { message: 'hi', preferences: 'dark' } }, 'input.preferences'],
      [{ input: { message: 'hi' }, session_id: 123 }, 'session_id'],
      [{ input: { message: 'hi' }, session_id: 'x'.repeat(65) }, 'session_id'],
      [{ input: { message: 'x'.repeat(100_001) } }, 'input.message'],
    ];
    for (const [body, path] of cases) {
      for (const send of [run, runStream]) {
        const issues = issuesOf(await send(a, 'validator', body));
        expect(issues.map((i) => i.path), `${send === run ? 'run' : 'stream'} ${JSON.stringify(body).slice(0, 80)}`).toContain(path);
        expect(issues.every((i) => typeof i.message === 'string' && i.message.length > 0)).toBe(true);
      }
    }
    for (const send of [run, runStream]) {
      const notObject = await t.api.post(`/v1/agents/validator/${send === run ? 'run' : 'run/stream'}`, undefined, { ...key(a), raw: '["hi"]', contentType: 'application/json' });
      expectError(notObject, 400, 'INVALID_INPUT');
    }
    expect(fake.chatRequests()).toHaveLength(0);
    expect(await t.sql('select count(*)::int as n from agent_runs r join agents g on g.id = r.agent_id where g.agent_key = $1 and g.tenant_id = $2', ['validator', a.tenantId])).toEqual([{ n: 0 }]);
    // Extra input properties are allowed and kept with the run.
    const okRun = await runOk(a, 'validator', { input: { message: 'hi', channel: 'web' } });
    const detail = await t.api.get(`/v1/agents/validator/runs/${okRun.run_id}`, key(a));
    expect(detail.body.data.run.input).toMatchObject({ message: 'hi', channel: 'web' });
  });

  it('a session_id that is unknown, malformed, another agent\'s, another tenant\'s or another user\'s is 404', async () => {
    await createAgent(a, { agent_key: 'sess-one' });
    await createAgent(a, { agent_key: 'sess-two' });
    await deploy(a, 'sess-one');
    await deploy(a, 'sess-two');
    const first = await runOk(a, 'sess-one', { input: { message: 'hi', user_id: 'user-1' } });
    const before = fake.chatRequests().length;
    for (const sessionId of [randomUUID(), 'not-a-session', first.session_id, foreign.sessionId]) {
      const agentKey = sessionId === first.session_id ? 'sess-two' : 'sess-one';
      expectError(await run(a, agentKey, { input: { message: 'continue' }, session_id: sessionId }), 404, 'NOT_FOUND');
      expectError(await runStream(a, agentKey, { input: { message: 'continue' }, session_id: sessionId }), 404, 'NOT_FOUND');
    }
    expectError(await run(a, 'sess-one', { input: { message: 'I am someone else', user_id: 'user-2' }, session_id: first.session_id }), 404, 'NOT_FOUND');
    expect(fake.chatRequests()).toHaveLength(before);
    // The right agent and user continue it.
    expect((await runOk(a, 'sess-one', { input: { message: 'again', user_id: 'user-1' }, session_id: first.session_id })).session_id).toBe(first.session_id);
    expect(await t.sql('select count(*)::int as n from agent_runs where session_id = $1', [first.session_id])).toEqual([{ n: 2 }]);
  });
});

describe('runs and sessions', () => {
  let paged: { run_id: string; session_id: string; status: string }[] = [];

  beforeAll(async () => {
    await createAgent(a, { agent_key: 'pager', behavior_config: { fallback: 'Try later.' } });
    await deploy(a, 'pager');
    paged = [];
    for (let i = 0; i < 3; i++) paged.push(await runOk(a, 'pager', { input: { message: `question ${i}` } }));
    fake.fail(1, 500);
    paged.push(await runOk(a, 'pager', { input: { message: 'this one fails' } }));
    fake.reset();
    expect(paged.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'failed']);
  });

  it('lists runs newest first with page and pageSize', async () => {
    const newestFirst = [...paged].reverse().map((r) => r.run_id);
    const all = await t.api.get('/v1/agents/pager/runs', key(a));
    expect(all.status, all.text).toBe(200);
    expect(all.body.data.pagination).toEqual({ total: 4, limit: 20, offset: 0, total_is_exact: true, next_cursor: null });
    expect(all.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual(newestFirst);
    expect(all.body.data.runs[0]).toEqual({
      run_id: paged[3].run_id, session_id: paged[3].session_id, status: 'failed', output: 'Try later.', steps: expect.any(Number), total_cost: expect.any(Number),
      total_latency_ms: expect.any(Number), user_id: null, model: 'gpt-4o-mini', error: expect.objectContaining({ code: 'LLM_PROVIDER_ERROR' }),
      started_at: expect.any(String), completed_at: expect.any(String),
    });

    const page1 = await t.api.get('/v1/agents/pager/runs?page=1&pageSize=3', key(a));
    expect(page1.body.data.pagination).toEqual({ total: 4, limit: 3, offset: 0, total_is_exact: true, next_cursor: expect.any(String) });
    expect(page1.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual(newestFirst.slice(0, 3));
    const page2 = await t.api.get('/v1/agents/pager/runs?page=2&pageSize=3', key(a));
    expect(page2.body.data.pagination).toEqual({ total: 4, limit: 3, offset: 3, total_is_exact: true, next_cursor: null });
    expect(page2.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual(newestFirst.slice(3));
    const beyond = await t.api.get('/v1/agents/pager/runs?page=5&pageSize=3', key(a));
    expect(beyond.body.data).toEqual({ runs: [], pagination: { total: 4, limit: 3, offset: 12, total_is_exact: true, next_cursor: null } });
    expect((await t.api.get('/v1/agents/pager/runs?pageSize=500', key(a))).body.data.pagination.limit).toBe(100);
  });

  it('filters runs by status and by session', async () => {
    const completed = await t.api.get('/v1/agents/pager/runs?status=completed', key(a));
    expect(completed.body.data.pagination.total).toBe(3);
    expect(completed.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual(paged.slice(0, 3).reverse().map((r) => r.run_id));
    expect(completed.body.data.runs.every((r: { status: string; error: unknown }) => r.status === 'completed' && r.error === null)).toBe(true);
    const failed = await t.api.get('/v1/agents/pager/runs?status=failed', key(a));
    expect(failed.body.data.pagination.total).toBe(1);
    expect(failed.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual([paged[3].run_id]);
    const none = await t.api.get('/v1/agents/pager/runs?status=needs_input', key(a));
    expect(none.body.data).toEqual({ runs: [], pagination: { total: 0, limit: 20, offset: 0, total_is_exact: true, next_cursor: null } });
    const failedPage2 = await t.api.get('/v1/agents/pager/runs?status=completed&page=2&pageSize=2', key(a));
    expect(failedPage2.body.data.pagination).toEqual({ total: 3, limit: 2, offset: 2, total_is_exact: true, next_cursor: null });
    expect(failedPage2.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual([paged[0].run_id]);

    const bySession = await t.api.get(`/v1/agents/pager/runs?session_id=${paged[1].session_id}`, key(a));
    expect(bySession.body.data.runs.map((r: { run_id: string }) => r.run_id)).toEqual([paged[1].run_id]);
    expect(bySession.body.data.pagination.total).toBe(1);
    // Another tenant's session, an unknown one and a malformed one match nothing.
    for (const sessionId of [foreign.sessionId, randomUUID(), 'not-a-uuid']) {
      const res = await t.api.get(`/v1/agents/pager/runs?session_id=${sessionId}`, key(a));
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.runs).toEqual([]);
      expect(res.body.data.pagination.total).toBe(0);
    }
  });

  it('rejects invalid query values with 400', async () => {
    expect(pathsOf(await t.api.get('/v1/agents/pager/runs?status=done', key(a)))).toEqual(['status']);
    expect(pathsOf(await t.api.get('/v1/agents/pager/runs?page=0', key(a)))).toEqual(['page']);
    expect(pathsOf(await t.api.get('/v1/agents/pager/runs?pageSize=abc', key(a)))).toEqual(['pageSize']);
    expect(pathsOf(await t.api.get('/v1/agents/pager/sessions?page=-1', key(a)))).toEqual(['page']);
  });

  it('run detail: the run with its trace; another agent\'s or tenant\'s run id is 404', async () => {
    const detail = await t.api.get(`/v1/agents/pager/runs/${paged[0].run_id}`, key(a));
    expect(detail.status, detail.text).toBe(200);
    expect(detail.body.data.run).toMatchObject({ run_id: paged[0].run_id, agent_key: 'pager', status: 'completed', input: { message: 'question 0' }, error: null });
    expect(detail.body.data.run.trace).toEqual([expect.objectContaining({ index: 0, type: 'llm', error: null })]);

    await createAgent(a, { agent_key: 'pager-sibling' });
    expectError(await t.api.get(`/v1/agents/pager-sibling/runs/${paged[0].run_id}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/pager/runs/${foreign.runId}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/pager/runs/${randomUUID()}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get('/v1/agents/pager/runs/not-a-run', key(a)), 404, 'NOT_FOUND');
    // Tenant other cannot read tenant a's run through its own agent or through a's key.
    expectError(await t.api.get(`/v1/agents/${foreign.agentKey}/runs/${paged[0].run_id}`, key(other)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/pager/runs/${paged[0].run_id}`, key(other)), 404, 'NOT_FOUND');
  });

  it('sessions: one row per conversation, latest activity first, paginated', async () => {
    const res = await t.api.get('/v1/agents/pager/sessions', key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.pagination).toEqual({ total: 4, limit: 20, offset: 0, total_is_exact: true, next_cursor: null });
    expect(res.body.data.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([...paged].reverse().map((r) => r.session_id));
    expect(res.body.data.sessions[0]).toEqual({
      session_id: paged[3].session_id, user_id: null, turns: 1, status: 'active', last_activity_at: expect.any(String), created_at: expect.any(String),
    });
    const page2 = await t.api.get('/v1/agents/pager/sessions?page=2&pageSize=3', key(a));
    expect(page2.body.data.pagination).toEqual({ total: 4, limit: 3, offset: 3, total_is_exact: true, next_cursor: null });
    expect(page2.body.data.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([paged[0].session_id]);
    // Other agents' sessions never show.
    expect((await t.api.get('/v1/agents/pager-sibling-2/sessions', key(a))).status).toBe(404);
    await createAgent(a, { agent_key: 'pager-sibling-2' });
    expect((await t.api.get('/v1/agents/pager-sibling-2/sessions', key(a))).body.data).toEqual({ sessions: [], pagination: { total: 0, limit: 20, offset: 0, total_is_exact: true, next_cursor: null } });
  });

  it('sessions: a page past the end still reports the total', async () => {
    const beyond = await t.api.get('/v1/agents/pager/sessions?page=3&pageSize=3', key(a));
    expect(beyond.status, beyond.text).toBe(200);
    expect(beyond.body.data).toEqual({ sessions: [], pagination: { total: 4, limit: 3, offset: 6, total_is_exact: true, next_cursor: null } });
  });

  it('transcript: the session\'s turns; another agent\'s or tenant\'s session id is 404', async () => {
    const tr = await t.api.get(`/v1/agents/pager/sessions/${paged[3].session_id}/transcript`, key(a));
    expect(tr.status, tr.text).toBe(200);
    expect(tr.body.data).toEqual({
      session_id: paged[3].session_id,
      turns: [
        { role: 'user', content: 'this one fails', run_id: paged[3].run_id, created_at: expect.any(String) },
        ...(tr.body.data.turns.length > 1 ? [expect.objectContaining({ role: 'assistant', run_id: paged[3].run_id })] : []),
      ],
    });
    await createAgent(a, { agent_key: 'pager-sibling-3' });
    expectError(await t.api.get(`/v1/agents/pager-sibling-3/sessions/${paged[0].session_id}/transcript`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/pager/sessions/${foreign.sessionId}/transcript`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/pager/sessions/${randomUUID()}/transcript`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get('/v1/agents/pager/sessions/nope/transcript', key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/v1/agents/${foreign.agentKey}/sessions/${paged[0].session_id}/transcript`, key(other)), 404, 'NOT_FOUND');
  });
});
