// Tool kinds beyond the basic loop: MCP servers (a real SDK server), the SSRF-safe http_get,
// send_email into the outbox, per-end-user memory and preferences, and session retention.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enforceRetention } from '../../server/maintenance/enforce-retention.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let mcp: TestMcpServer;
let web: http.Server;
let webUrl: string;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const toolResults = (req: FakeRequest) => (req.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);

async function createAgent(s: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/agents', { name: 'Tools', goal: 'Use tools', ...body }, key(s));
  expect(res.status, res.text).toBe(201);
  expect((await t.api.post(`/v1/agents/${body.agent_key}/deploy`, undefined, key(s))).status).toBe(200);
  return res.body.data.agent;
}
const run = (s: SignedUpTenant, agentKey: string, body: Record<string, unknown>) => t.api.post(`/v1/agents/${agentKey}/run`, body, key(s));

beforeAll(async () => {
  fake = await startFakeLlm();
  mcp = await startMcpServer({ requireHeader: ['authorization', 'Bearer mcp-secret-token'] });
  web = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`hello from ${req.url}`);
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  // Loopback is private: only this test's MCP server is allowed, by host and port-less address.
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Tools A' });
  b = await signupTenant(t.api, { companyName: 'Tools B' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await mcp?.close();
  await new Promise((resolve) => web?.close(resolve));
});
afterEach(() => fake.reset());

describe('MCP tools', () => {
  it('offers the server\'s tools (filtered), calls them with the stored header, returns errors to the model', async () => {
    const agent = await createAgent(a, {
      agent_key: 'mcp-user',
      tools_config: { mcp_servers: [{ name: 'calc', url: mcp.url, headers: { authorization: 'Bearer mcp-secret-token' }, allowed_tools: ['add', 'fail'] }] },
    });
    expect(agent.tools_config.mcp_servers[0].headers).toEqual({ authorization: '***' });
    fake.script([
      { tool_calls: [{ id: 'a1', name: 'calc__add', arguments: { a: 2, b: 3 } }, { id: 'a2', name: 'calc__fail', arguments: {} }] },
      'Two plus three is five.',
    ]);
    const res = await run(a, 'mcp-user', { input: { message: 'add 2 and 3' } });
    expect(res.body.data).toMatchObject({ status: 'completed', output: 'Two plus three is five.' });
    const offered = fake.chatRequests()[0].body.tools.map((x: any) => x.function.name).sort();
    expect(offered).toEqual(['calc__add', 'calc__fail']);
    const [sum, failed] = toolResults(fake.chatRequests()[1]);
    expect(sum).toBe('5');
    expect(failed).toMatch(/^ERROR: tool failed on purpose/);
    expect(mcp.calls.map((c) => c.name)).toEqual(expect.arrayContaining(['add', 'fail']));
    const detail = await t.api.get(`/v1/agents/mcp-user/runs/${res.body.data.run_id}`, key(a));
    expect(detail.body.data.run.trace.filter((s: any) => s.type === 'tool').map((s: any) => s.name).sort()).toEqual(['calc__add', 'calc__fail']);
  });

  it('parallel tool calls of one step run concurrently (each starts before the other ends)', async () => {
    await createAgent(a, {
      agent_key: 'mcp-parallel',
      tools_config: { mcp_servers: [{ name: 'calc', url: mcp.url, headers: { authorization: 'Bearer mcp-secret-token' }, allowed_tools: ['slow'] }] },
    });
    fake.script([{ tool_calls: [{ id: 's1', name: 'calc__slow', arguments: { ms: 300 } }, { id: 's2', name: 'calc__slow', arguments: { ms: 300 } }] }, 'Both done.']);
    const res = await run(a, 'mcp-parallel', { input: { message: 'two slow things' } });
    expect(res.body.data.status).toBe('completed');
    const steps = await t.sql<{ started_at: Date; completed_at: Date }>(
      `select started_at, completed_at from run_steps where run_id = $1 and type = 'tool' order by index`,
      [res.body.data.run_id],
    );
    expect(steps).toHaveLength(2);
    expect(steps[0].started_at.getTime()).toBeLessThan(steps[1].completed_at.getTime());
    expect(steps[1].started_at.getTime()).toBeLessThan(steps[0].completed_at.getTime());
  });

  it('a tool that does not answer in time gives the model a timeout error; the run goes on', async () => {
    await createAgent(a, {
      agent_key: 'mcp-timeout',
      tools_config: { mcp_servers: [{ name: 'calc', url: mcp.url, headers: { authorization: 'Bearer mcp-secret-token' }, allowed_tools: ['slow'] }] },
      behavior_config: { execution: { tool_timeout_ms: 200 } },
    });
    fake.script([{ tool_calls: [{ name: 'calc__slow', arguments: { ms: 2000 } }] }, 'It took too long.']);
    const res = await run(a, 'mcp-timeout', { input: { message: 'slow please' } });
    expect(res.body.data).toMatchObject({ status: 'completed', output: 'It took too long.' });
    expect(toolResults(fake.chatRequests()[1])[0]).toMatch(/^ERROR: .*(timed out|within 200 ms)/);
  });

  it('a server that cannot be reached is left out and noted in the trace; the run goes on', async () => {
    await createAgent(a, { agent_key: 'mcp-down', tools_config: { mcp_servers: [{ name: 'gone', url: 'http://127.0.0.1:9/mcp' }] } });
    fake.script(['Answered without tools.']);
    const res = await run(a, 'mcp-down', { input: { message: 'hi' } });
    expect(res.body.data.status).toBe('completed');
    const detail = await t.api.get(`/v1/agents/mcp-down/runs/${res.body.data.run_id}`, key(a));
    expect(detail.body.data.run.trace[0]).toMatchObject({ type: 'tool', name: 'mcp:gone', error: expect.stringMatching(/not offered/) });
  });

  it('a private MCP address that is not allowed is refused by the outbound client', async () => {
    await createAgent(a, { agent_key: 'mcp-private', tools_config: { mcp_servers: [{ name: 'internal', url: 'http://10.0.0.1/mcp' }] } });
    fake.script(['fine']);
    const res = await run(a, 'mcp-private', { input: { message: 'hi' } });
    const detail = await t.api.get(`/v1/agents/mcp-private/runs/${res.body.data.run_id}`, key(a));
    expect(detail.body.data.run.trace[0].error).toMatch(/not offered/);
    expect(fake.chatRequests()[0].body.tools).toBeUndefined();
  });
});

describe('workflow tools', () => {
  it('runs a deployed workflow of workflow_ids as a tool, synchronously', async () => {
    const created = await t.api.post('/v1/workflows', {
      name: 'Quote',
      steps: [
        { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
        { id: 'done', step_type: 'end', config: { output: { quote: 'Price for {{trigger.item}}: 42' } } },
      ],
    }, key(a));
    const wf = created.body.data.workflow;
    expect((await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key(a))).status).toBe(200);
    await createAgent(a, { agent_key: 'quoter', workflow_ids: [wf.workflow_key] });
    fake.script([{ tool_calls: [{ name: `workflow__${wf.workflow_key}`, arguments: { item: 'desk' } }] }, 'It costs 42.']);
    const res = await run(a, 'quoter', { input: { message: 'price of a desk?' } });
    expect(res.body.data).toMatchObject({ status: 'completed', output: 'It costs 42.' });
    expect(JSON.parse(toolResults(fake.chatRequests()[1])[0])).toMatchObject({ status: 'completed', output: { quote: 'Price for desk: 42' } });
    const runs = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs`, key(a));
    expect(runs.body.data.runs[0]).toMatchObject({ triggered_by: 'agent', status: 'completed' });
  });
});

describe('platform tools', () => {
  it('http_get fetches through the SSRF-safe client; metadata addresses are refused', async () => {
    await createAgent(a, { agent_key: 'fetcher', tools_config: { enabled_platform_tools: ['http_get'] } });
    fake.script([
      { tool_calls: [{ id: 'h1', name: 'http_get', arguments: { url: `${webUrl}/page` } }, { id: 'h2', name: 'http_get', arguments: { url: 'http://169.254.169.254/latest/meta-data' } }] },
      'ok',
    ]);
    await run(a, 'fetcher', { input: { message: 'fetch' } });
    const [page, metadata] = toolResults(fake.chatRequests()[1]);
    expect(JSON.parse(page)).toMatchObject({ status: 200, text: 'hello from /page' });
    expect(metadata).toMatch(/^ERROR: /);
  });

  it('send_email writes only to the configured notify address', async () => {
    // A trial tenant mails only its own users with a verified address; a paid plan writes to any.
    const paid = await signupTenant(t.api, { companyName: 'Tools Mail' });
    expect((await t.api.patch(`/admin/tenants/${paid.tenantId}`, { billingPlan: 'starter' }, { headers: adminHeaders })).status).toBe(200);
    const bad = await t.api.post('/v1/agents', { agent_key: 'mailer-bad', name: 'M', goal: 'G', tools_config: { enabled_platform_tools: ['send_email'] } }, key(paid));
    expect(bad.status).toBe(400);
    await createAgent(paid, { agent_key: 'mailer', tools_config: { enabled_platform_tools: ['send_email'], notify_email: 'team@example.com', notify_label: 'Careers bot' } });
    fake.script([{ tool_calls: [{ name: 'send_email', arguments: { subject: 'Lead', body: 'A candidate wants a call', to: 'attacker@example.com' } }] }, 'Sent.']);
    await run(paid, 'mailer', { input: { message: 'notify the team' } });
    const mails = await t.sql<{ to_address: string; subject: string }>(`select to_address, subject from outbox_messages where kind = 'agent_notification'`);
    expect(mails).toEqual([{ to_address: 'team@example.com', subject: '[Careers bot] Lead' }]);
  });
});

describe('memory per end user', () => {
  it('remember / recall keep facts per end user, never across users or tenants', async () => {
    await createAgent(a, { agent_key: 'memo', memory_config: { persistent_memory: true } });
    fake.script([{ tool_calls: [{ name: 'remember', arguments: { key: 'city', value: 'Lisbon' } }] }, 'Noted.']);
    await run(a, 'memo', { input: { message: 'I live in Lisbon', user_id: 'u-1' } });

    fake.reset();
    fake.script([{ tool_calls: [{ name: 'recall', arguments: {} }] }, 'You live in Lisbon.']);
    await run(a, 'memo', { input: { message: 'Where do I live?', user_id: 'u-1' } });
    expect(JSON.parse(toolResults(fake.chatRequests()[1])[0])).toEqual({ facts: { city: 'Lisbon' } });

    fake.reset();
    fake.script([{ tool_calls: [{ name: 'recall', arguments: {} }] }, 'I do not know.']);
    await run(a, 'memo', { input: { message: 'Where do I live?', user_id: 'u-2' } });
    expect(JSON.parse(toolResults(fake.chatRequests()[1])[0])).toEqual({ facts: {} });

    // Tenant B with the same agent key and user id sees nothing of tenant A.
    await createAgent(b, { agent_key: 'memo', memory_config: { persistent_memory: true } });
    fake.reset();
    fake.script([{ tool_calls: [{ name: 'recall', arguments: {} }] }, 'Nothing.']);
    await run(b, 'memo', { input: { message: 'Where do I live?', user_id: 'u-1' } });
    expect(JSON.parse(toolResults(fake.chatRequests()[1])[0])).toEqual({ facts: {} });

    // Without a user id there is no one to remember for: the tools are not offered.
    fake.reset();
    fake.script(['hi']);
    await run(a, 'memo', { input: { message: 'hello' } });
    expect(fake.chatRequests()[0].body.tools).toBeUndefined();
  });

  it('user preferences from input.preferences are readable through get_user_preferences', async () => {
    await createAgent(a, { agent_key: 'prefs', memory_config: { user_preferences: true } });
    fake.script(['Noted your preferences.']);
    await run(a, 'prefs', { input: { message: 'hello', user_id: 'u-7', preferences: { language: 'pt', tone: 'formal' } } });
    fake.script([{ tool_calls: [{ name: 'get_user_preferences', arguments: {} }] }, 'Olá.']);
    await run(a, 'prefs', { input: { message: 'hello again', user_id: 'u-7' } });
    expect(JSON.parse(toolResults(fake.chatRequests()[2])[0])).toEqual({ preferences: { language: 'pt', tone: 'formal' } });
  });

  it('a session belongs to one end user', async () => {
    await createAgent(a, { agent_key: 'owned' });
    fake.script(['one']);
    const first = await run(a, 'owned', { input: { message: 'hi', user_id: 'alice' } });
    const other = await run(a, 'owned', { input: { message: 'hi', user_id: 'mallory' }, session_id: first.body.data.session_id });
    expect(other.status).toBe(404);
  });
});

describe('retention', () => {
  it('sessions idle longer than memory_config.retention_days are pruned with their transcript', async () => {
    await createAgent(a, { agent_key: 'short-lived', memory_config: { retention_days: 1 } });
    fake.script(['one', 'two']);
    const old = await run(a, 'short-lived', { input: { message: 'old' } });
    const fresh = await run(a, 'short-lived', { input: { message: 'fresh' } });
    await t.sql(`update agent_sessions set last_activity_at = now() - interval '2 days' where id = $1`, [old.body.data.session_id]);
    const report = await enforceRetention(t.server.deps, { pauseMs: 0 });
    expect(report.deleted.agent_sessions).toBeGreaterThanOrEqual(1);
    const left = await t.sql<{ id: string }>(`select id::text from agent_sessions where agent_id = (select id from agents where agent_key = 'short-lived' and tenant_id = $1)`, [a.tenantId]);
    expect(left.map((r) => r.id)).toEqual([fresh.body.data.session_id]);
    const messages = await t.sql(`select 1 from agent_messages where session_id = $1`, [old.body.data.session_id]);
    expect(messages).toHaveLength(0);
    const transcript = await t.api.get(`/v1/agents/short-lived/sessions/${old.body.data.session_id}/transcript`, key(a));
    expect(transcript.status).toBe(404);
  });
});
