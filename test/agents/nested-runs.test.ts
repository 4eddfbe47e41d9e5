// Agents run workflows (their workflow tools) and workflows run agents (ai_agent steps). A tree of
// such runs is bounded by the tenant's plan (trial: nested 3 deep, 25 runs below one request),
// draws from the cost budget of the run at its root, and stops when the run above gives up on it
// (a tool call's time limit cancels the workflow it started).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLAN_LIMITS } from '../../server/tenants/plan-limits.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring, expectAnsweredDuring } from '../support/health-watch.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let bWorkflow: string;
let slow: http.Server;
let slowUrl: string;
const closedEarly: string[] = [];

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const lastMessage = (req: FakeRequest) => (req.body.messages as { role: string; content: string | null }[]).at(-1)!;
const toolResults = (req: FakeRequest) => (req.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);

async function createAgent(s: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/agents', { name: `Agent ${body.agent_key}`, goal: 'Delegate', ...body }, key(s));
  expect(res.status, res.text).toBe(201);
  expect((await t.api.post(`/v1/agents/${body.agent_key}/deploy`, undefined, key(s))).status).toBe(200);
}

const count = async (table: 'agent_runs' | 'workflow_runs', tenant: SignedUpTenant) =>
  (await t.sql<{ n: number }>(`select count(*)::int as n from ${table} where tenant_id = $1`, [tenant.tenantId]))[0].n;

/**
 * Runs `abuse` while another thread probes /health/live and tenant B runs a workflow; asserts both
 * stay fine. A tree of runs is only a few model calls, quick on a fast machine, so the first model
 * answer is held until two probes have been answered: the tree's span then covers them anywhere.
 */
async function underWatch<T>(label: string, abuse: () => Promise<T>): Promise<T> {
  const watched = await answeredDuring(
    t.url,
    (watch) => {
      fake.holdNext(watch.answered(2));
      return Promise.all([abuse(), t.api.post(`/v1/workflows/${bWorkflow}/run`, { input: { n: 1 } }, key(b))]);
    },
    10,
  );
  const [result, other] = watched.result;
  console.log(`[nested runs] ${label}: ${watched.answeredDuring} /health/live answers while it ran`);
  expect(other.body.data.status).toBe('completed');
  expectAnsweredDuring(watched);
  return result;
}

beforeAll(async () => {
  fake = await startFakeLlm();
  slow = http.createServer((req, res) => {
    const timer = setTimeout(() => res.end('{"late":true}'), 10_000);
    res.on('close', () => {
      clearTimeout(timer);
      if (!res.writableEnded) closedEarly.push(req.url ?? '');
    });
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Nested A' });
  b = await signupTenant(t.api, { companyName: 'Nested B' });
  bWorkflow = (await createWorkflow(t.api, b.apiKey, 'Other tenant', [MANUAL_TRIGGER, { id: 'echo', step_type: 'action', action_id: 'transform', config: { output: { n: '{{trigger.n}}' } } }])).id;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  slow?.closeAllConnections();
  await new Promise((resolve) => slow?.close(resolve));
});
afterEach(() => fake.reset());

describe('agent <-> workflow recursion', () => {
  it('an agent whose workflow runs the same agent stops at the plan\'s nesting depth', async () => {
    // W runs agent X; X's tool is W. Every first answer of an X run calls W (12 such answers at most).
    const w = await createWorkflow(t.api, a.apiKey, 'Recurse', [
      MANUAL_TRIGGER,
      { id: 'ask', step_type: 'ai_agent', config: { agent_key: 'x', message: '{{trigger.message}}' } },
      { id: 'out', step_type: 'end', config: { output: { answer: '{{steps.ask.output.output}}' } } },
    ]);
    await createAgent(a, { agent_key: 'x', workflow_ids: [w.id] });
    let toolCalls = 0;
    fake.script((req) => {
      if (lastMessage(req).role === 'user' && toolCalls < 12) {
        toolCalls++;
        return { tool_calls: [{ id: `c${toolCalls}`, name: `workflow__${w.workflow_key}`, arguments: { message: 'deeper' } }] };
      }
      return 'done';
    });
    const before = { agents: await count('agent_runs', a), workflows: await count('workflow_runs', a) };
    const res = await underWatch('recursion', () => t.api.post('/v1/agents/x/run', { input: { message: 'go' } }, key(a)));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status).toBe('completed');
    const depth = DEFAULT_PLAN_LIMITS.trial.nesting_depth;
    // X (1) -> W (2) -> X (3) -> W refused: two agent runs and one workflow run from the request.
    expect(depth).toBe(3);
    expect((await count('agent_runs', a)) - before.agents).toBe(2);
    expect((await count('workflow_runs', a)) - before.workflows).toBe(1);
    const refused = fake.chatRequests().flatMap(toolResults).find((r) => r.startsWith('ERROR'));
    expect(refused).toMatch(/nested 3 deep/);
    console.log(`[nested runs] recursion: agent runs ${(await count('agent_runs', a)) - before.agents}, workflow runs ${(await count('workflow_runs', a)) - before.workflows}`);
  });

  it('parallel tool calls over levels share one count of the runs below the request', async () => {
    const w = await createWorkflow(t.api, a.apiKey, 'Fan out', [
      MANUAL_TRIGGER,
      { id: 'ask', step_type: 'ai_agent', config: { agent_key: 'fan', message: '{{trigger.message}}' } },
    ]);
    await createAgent(a, { agent_key: 'fan', workflow_ids: [w.id] });
    fake.script((req) =>
      lastMessage(req).role === 'user'
        ? { tool_calls: [1, 2, 3].map((i) => ({ id: `p${i}`, name: `workflow__${w.workflow_key}`, arguments: { message: `branch ${i}` } })) }
        : 'done',
    );
    const before = { agents: await count('agent_runs', a), workflows: await count('workflow_runs', a) };
    const res = await underWatch('fan-out', () => t.api.post('/v1/agents/fan/run', { input: { message: 'go' } }, key(a)));
    expect(res.body.data.status).toBe('completed');
    // The root's 3 calls start 3 workflows, each runs the agent (depth 3), whose calls are refused.
    expect((await count('workflow_runs', a)) - before.workflows).toBe(3);
    expect((await count('agent_runs', a)) - before.agents).toBe(4);
  });
});

describe('what nested runs inherit', () => {
  it('an agent run inside a workflow started by a capped agent draws from that agent\'s budget', async () => {
    const w = await createWorkflow(t.api, a.apiKey, 'Spend', [
      MANUAL_TRIGGER,
      { id: 'ask', step_type: 'ai_agent', config: { agent_key: 'spender', message: 'spend' } },
    ]);
    await createAgent(a, { agent_key: 'spender' });
    await createAgent(a, { agent_key: 'capped', workflow_ids: [w.id], behavior_config: { max_cost_usd: 0.001 } });
    // The capped agent's first answer costs more than its whole budget (10,000 output tokens).
    fake.script((req) => {
      const system = String((req.body.messages as { content: string }[])[0].content);
      if (system.includes('Agent capped') && lastMessage(req).role === 'user') {
        return { tool_calls: [{ id: 's1', name: `workflow__${w.workflow_key}`, arguments: {} }], usage: { prompt_tokens: 10, completion_tokens: 10_000 } };
      }
      return 'spent';
    });
    // A capped budget counts prompt tokens: the tokenizer loads on its first use (a one-time cost, not the abuse measured here).
    await createAgent(a, { agent_key: 'warm', behavior_config: { max_cost_usd: 1 } });
    expect((await t.api.post('/v1/agents/warm/run', { input: { message: 'hi' } }, key(a))).body.data.status).toBe('completed');
    const res = await underWatch('shared budget', () => t.api.post('/v1/agents/capped/run', { input: { message: 'go' } }, key(a)));
    expect(res.body.data.status).toBe('budget_exhausted');
    const [inner] = await t.sql<{ status: string }>(
      `select r.status from agent_runs r join agents g on g.id = r.agent_id where g.agent_key = 'spender' and r.tenant_id = $1 order by r.started_at desc limit 1`,
      [a.tenantId],
    );
    expect(inner.status).toBe('budget_exhausted');
  });

  it('a tool call that times out cancels the workflow run it started', async () => {
    const w = await createWorkflow(t.api, a.apiKey, 'Slow', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${slowUrl}/slow-tool`, timeout_ms: 60_000 } },
    ]);
    await createAgent(a, { agent_key: 'impatient', workflow_ids: [w.id], behavior_config: { execution: { tool_timeout_ms: 500 } } });
    fake.script((req) => (lastMessage(req).role === 'user' ? { tool_calls: [{ id: 't1', name: `workflow__${w.workflow_key}`, arguments: {} }] } : 'gave up'));
    const res = await underWatch('tool timeout', () => t.api.post('/v1/agents/impatient/run', { input: { message: 'go' } }, key(a)));
    expect(res.body.data.status).toBe('completed');
    const run = await waitFor(async () => {
      const [row] = await t.sql<{ status: string; error: Record<string, unknown> | null }>('select status, error from workflow_runs where workflow_id = $1', [w.id]);
      return row && row.status !== 'running' ? row : null;
    }, 'the workflow run to stop', 3_000);
    expect(run.status).toBe('cancelled');
    expect(run.error).toMatchObject({ code: 'RUN_CANCELLED', step_id: 'call' });
    expect(closedEarly).toContain('/slow-tool');
  });
});
