// Erasing one end user by the user_id the API was called with: everything the tenant's API stored
// of them (intent sessions, cached answers, agent conversations and memory, workflow runs and the
// runs they started, saved values, eval cases and results, audit details) goes or is anonymised;
// then a scan of every table of the database finds neither their id nor their text. Another user
// of the tenant, and the same user_id in another tenant, keep everything.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiya } from '../support/cli.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { promptOf, sampleFromSchema, schemaNameOf, startFakeLlm, type FakeAnswer, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { ADMIN_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let configDir: string;

const tag = () => randomBytes(4).toString('hex');
// The person erased (an e-mail, as tenants often send), their text in tenant A and in tenant B,
// and another end user of tenant A.
const X = `candidate-${tag()}@example.com`;
const X_TEXT = `MARKXA${tag()}`;
const X_TEXT_B = `MARKXB${tag()}`;
const Y = `other-${tag()}@example.com`;
const Y_TEXT = `MARKYA${tag()}`;
const MARKER = /MARK[A-Z]{2}[0-9a-f]{8}/;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const markerIn = (req: FakeRequest) => promptOf(req).match(MARKER)?.[0] ?? 'nobody';
const lastMessage = (req: FakeRequest) => (req.body.messages as { role: string; content: string | null }[]).at(-1)!;

let noteWorkflowKey = '';

/** Answers that quote what they were given, as models do: the answers hold the person's text too. */
function scriptModel() {
  fake.script((req): FakeAnswer | undefined => {
    const schemaName = schemaNameOf(req);
    if (schemaName === 'eval_judge') {
      return { content: { score: 4, dimension_scores: { correctness: 4, completeness: 4, relevance: 4, safety: 5 }, reasoning: `Judged ${markerIn(req)}` } };
    }
    if (schemaName) {
      const sample = sampleFromSchema(req.body.response_format.json_schema.schema) as object;
      return { content: { ...sample, summary: `Profile of ${markerIn(req)}` } };
    }
    // The agent with the workflow tool calls it once with the person's text, then answers.
    const last = lastMessage(req);
    if (req.body.tools && last.role === 'user' && String(last.content).includes('please note')) {
      return { tool_calls: [{ id: 'n1', name: `workflow__${noteWorkflowKey}`, arguments: { note: markerIn(req) } }] };
    }
    return undefined;
  });
}

async function createAgent(s: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/agents', { name: `Agent ${body.agent_key}`, goal: 'Help candidates', ...body }, key(s));
  expect(res.status, res.text).toBe(201);
  const deployed = await t.api.post(`/v1/agents/${body.agent_key}/deploy`, undefined, key(s));
  expect(deployed.status, deployed.text).toBe(200);
}

async function runIntent(s: SignedUpTenant, userId: string, text: string) {
  const res = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: userId, resume_text: `Resume of ${text}: ten years of Go and PostgreSQL.` } }, key(s));
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function runAgent(s: SignedUpTenant, agentKey: string, input: Record<string, unknown>) {
  const res = await t.api.post(`/v1/agents/${agentKey}/run`, { input }, key(s));
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.status).toBe('completed');
  return res.body.data;
}

let screenWorkflowId = '';

async function runScreening(s: SignedUpTenant, userId: string, text: string, idempotencyKey?: string) {
  const headers = { ...bearer(s.apiKey), ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) };
  const res = await t.api.post(`/v1/workflows/${screenWorkflowId}/run`, { input: { user_id: userId, resume: `Resume of ${text}` } }, { headers });
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.status).toBe('completed');
  return res.body.data;
}

const erase = (s: SignedUpTenant, userId: unknown) => t.api.post('/v1/erasures', { user_id: userId }, key(s));

/** Every table of the database (the job queue's too), with whether it has a tenant_id column. */
async function everyTable() {
  return t.sql<{ schema: string; name: string; has_tenant: boolean }>(
    `select c.table_schema as schema, c.table_name as name,
            exists (select 1 from information_schema.columns k where k.table_schema = c.table_schema and k.table_name = c.table_name and k.column_name = 'tenant_id') as has_tenant
       from information_schema.tables c
      where c.table_schema in ('public', 'graphile_worker', 'graphile_worker_private') and c.table_type = 'BASE TABLE'
      order by 1, 2`,
  );
}

/** `table: rows` of every table with a row whose text holds `needle` (rows of `exceptTenant` aside). */
async function rowsHolding(needle: string, exceptTenant?: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const table of await everyTable()) {
    const name = `"${table.schema}"."${table.name}"`;
    const other = exceptTenant && table.has_tenant ? ` and x.tenant_id is distinct from '${exceptTenant}'` : '';
    const [{ n }] = await t.sql<{ n: number }>(`select count(*)::int as n from ${name} x where strpos(x::text, $1) > 0${other}`, [needle]);
    if (n > 0) found[`${table.schema}.${table.name}`] = n;
  }
  return found;
}

const countOf = async (text: string, params: unknown[]) => (await t.sql<{ n: number }>(text, params))[0].n;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Erasure A' });
  // A paying plan mails anyone (a trial mails only its own users): the screening workflow mails the candidate.
  expect((await t.api.patch(`/admin/tenants/${a.tenantId}`, { billingPlan: 'pro' }, { headers: adminHeaders })).status).toBe(200);
  b = await signupTenant(t.api, { companyName: 'Erasure B' });
  configDir = await mkdtemp(path.join(os.tmpdir(), 'liya-erasure-'));
  scriptModel();
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

describe('erasing one end user', () => {
  let receipt: any;

  beforeAll(async () => {
    // Intent runs: X twice with the same input (the second answered from the cache), Y once; X in tenant B.
    const first = await runIntent(a, X, X_TEXT);
    expect(first.metadata.cached).toBe(false);
    expect((await runIntent(a, X, X_TEXT)).metadata.cached).toBe(true);
    await runIntent(a, Y, Y_TEXT);
    await runIntent(b, X, X_TEXT_B);

    // An agent that keeps preferences and has a workflow tool; the workflow it runs gets the text without a user_id.
    const note = await createWorkflow(t.api, a.apiKey, 'Note', [MANUAL_TRIGGER, { id: 'keep', step_type: 'action', action_id: 'transform', config: { output: { note: '{{trigger.note}}' } } }]);
    noteWorkflowKey = note.workflow_key;
    await createAgent(a, { agent_key: 'helper', workflow_ids: [note.id], memory_config: { user_preferences: true } });
    await createAgent(a, { agent_key: 'plain' });
    const helped = await runAgent(a, 'helper', { message: `please note ${X_TEXT}`, user_id: X, preferences: { language: 'pt' } });
    expect(helped.steps).toBe(2);
    await runAgent(a, 'helper', { message: `hello from ${Y_TEXT}`, user_id: Y, preferences: { language: 'de' } });

    // A workflow whose input names the user: it saves values under their id and asks an agent (a session of the workflow's own).
    screenWorkflowId = (await createWorkflow(t.api, a.apiKey, 'Screen', [
      MANUAL_TRIGGER,
      { id: 'save', step_type: 'action', action_id: 'set_state', config: { key: 'cand:{{trigger.user_id}}', value: '{{trigger.resume}}' } },
      { id: 'seen', step_type: 'action', action_id: 'set_state', config: { key: 'seen:{{trigger.user_id}}', value: true } },
      { id: 'mail', step_type: 'action', action_id: 'send_email', config: { to: '{{trigger.user_id}}', subject: 'Your application', body: 'We read {{trigger.resume}}' } },
      { id: 'ask', step_type: 'ai_agent', config: { agent_key: 'plain', message: 'Summarise {{trigger.resume}}' } },
      { id: 'out', step_type: 'end', config: { output: { answer: '{{steps.ask.output.output}}' } } },
    ])).id;
    const screened = await runScreening(a, X, X_TEXT, `screen-${tag()}`);
    expect(JSON.stringify(screened.output)).toContain(X_TEXT);
    await runScreening(a, Y, Y_TEXT);
    // Removing a saved value is audited with its key, which names the user.
    const removed = await t.api.delete(`/v1/workflows/${screenWorkflowId}/state/${encodeURIComponent(`seen:${X}`)}`, key(a));
    expect(removed.status, removed.text).toBe(200);

    // Eval cases built from production inputs, and an external run scoring answers to them.
    const dataset = await t.api.post('/v1/evals/datasets', {
      name: `From production ${tag()}`,
      cases: [{ input: { user_id: X, resume_text: `Resume of ${X_TEXT}` } }, { input: { user_id: Y, resume_text: `Resume of ${Y_TEXT}` } }],
    }, key(a));
    expect(dataset.status, dataset.text).toBe(201);
    const external = await t.api.post('/v1/evals/runs', {
      cases: [
        { input: { user_id: X, resume_text: `Resume of ${X_TEXT}` }, response: `A fine profile: ${X_TEXT}` },
        { input: { user_id: Y, resume_text: `Resume of ${Y_TEXT}` }, response: `A fine profile: ${Y_TEXT}` },
      ],
    }, key(a));
    expect(external.status, external.text).toBe(202);
    const runId = external.body.data.run.id;
    await waitFor(async () => (await t.api.get(`/v1/evals/runs/${runId}`, key(a))).body.data.run.status === 'completed', 'the external eval run to complete', 30_000);

    expect(await rowsHolding(X_TEXT)).not.toEqual({});
    const res = await erase(a, X);
    expect(res.status, res.text).toBe(200);
    receipt = res.body.data;
  });

  it('answers a receipt that counts what went, holding neither the id nor the text', () => {
    expect(receipt).toEqual({
      erasure_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      subject: `sha256:${createHash('sha256').update(`${a.tenantId}:${X}`).digest('hex')}`,
      requested_at: expect.any(String),
      completed_at: expect.any(String),
      deleted: {
        sessions: 2,
        session_messages: 4,
        intent_cache: 1,
        // X's conversation with the helper, and the session the workflow's ai_agent step started.
        agent_sessions: 2,
        agent_runs: 2,
        agent_messages: 4,
        agent_user_memory: 1,
        // X's screening run, and the run the helper's workflow tool started.
        workflow_runs: 2,
        workflow_approvals: 0,
        idempotency_keys: 1,
        run_steps: expect.any(Number),
        workflow_state: 1,
        // The dataset's case and the external run's inline case.
        eval_cases: 2,
        // No sampling rule in this tenant (test/evals/online-evals.test.ts erases queued samples).
        online_eval_samples: 0,
        outbox_messages: 1,
        // No subscription records events in this tenant (test/events/event-delivery.test.ts erases one).
        events: 0,
      },
      anonymised: { eval_results: 1, audit_log: 1 },
    });
    expect(receipt.deleted.run_steps).toBeGreaterThanOrEqual(6);
    expect(Date.parse(receipt.completed_at)).toBeGreaterThanOrEqual(Date.parse(receipt.requested_at));
    expect(JSON.stringify(receipt)).not.toContain(X);
    expect(JSON.stringify(receipt)).not.toContain(X_TEXT);
  });

  it('leaves no row in any table holding the id (outside tenant B) or the text', async () => {
    expect(await rowsHolding(X_TEXT)).toEqual({});
    expect(await rowsHolding(X, b.tenantId)).toEqual({});
  });

  it('keeps the tenant\'s other end user', async () => {
    expect(await countOf('select count(*)::int as n from sessions where tenant_id = $1 and user_id = $2', [a.tenantId, Y])).toBe(1);
    expect(await countOf('select count(*)::int as n from agent_sessions where tenant_id = $1 and user_id = $2', [a.tenantId, Y])).toBe(1);
    expect(await countOf('select count(*)::int as n from agent_user_memory where tenant_id = $1 and user_id = $2', [a.tenantId, Y])).toBe(1);
    expect(await countOf(`select count(*)::int as n from workflow_runs where tenant_id = $1 and input->>'user_id' = $2`, [a.tenantId, Y])).toBe(1);
    expect(await countOf(`select count(*)::int as n from workflow_state where tenant_id = $1 and key = $2`, [a.tenantId, `cand:${Y}`])).toBe(1);
    expect(await countOf(`select count(*)::int as n from eval_cases where tenant_id = $1 and input->>'user_id' = $2`, [a.tenantId, Y])).toBe(2);
    expect(await countOf(`select count(*)::int as n from eval_results where tenant_id = $1 and input->>'user_id' = $2 and output is not null`, [a.tenantId, Y])).toBe(1);
    expect(await countOf('select count(*)::int as n from intent_cache where tenant_id = $1', [a.tenantId])).toBe(1);
    expect(await countOf('select count(*)::int as n from outbox_messages where tenant_id = $1 and to_address = $2', [a.tenantId, Y])).toBe(1);
    expect(Object.keys(await rowsHolding(Y_TEXT)).length).toBeGreaterThan(3);
  });

  it('keeps the same user_id in another tenant', async () => {
    expect(await countOf('select count(*)::int as n from sessions where tenant_id = $1 and user_id = $2', [b.tenantId, X])).toBe(1);
    expect(await rowsHolding(X_TEXT_B)).toMatchObject({ 'public.session_messages': 2 });
  });

  it('keeps the scores of anonymised eval results, and the usage', async () => {
    const [result] = await t.sql<{ input: unknown; output: unknown; judge_reasoning: string | null; score: number | null; status: string }>(
      `select input, output, judge_reasoning, score, status from eval_results where tenant_id = $1 and input = '{}'::jsonb`,
      [a.tenantId],
    );
    expect(result).toMatchObject({ input: {}, output: null, judge_reasoning: null, score: 4, status: 'scored' });
    expect(await countOf(`select count(*)::int as n from usage_events where tenant_id = $1 and kind = 'intent_run'`, [a.tenantId])).toBe(3);
  });

  it('records the receipt in the tenant\'s audit log, without the person', async () => {
    const res = await t.api.get('/dashboard/audit-log?action=data.erase', { headers: bearer(a.token) });
    expect(res.status, res.text).toBe(200);
    const [entry] = res.body.data.entries;
    expect(entry).toMatchObject({ action: 'data.erase', target_type: 'person', target_id: receipt.subject, actor_type: 'api_key' });
    expect(entry.details).toMatchObject({ erasure_id: receipt.erasure_id, deleted: receipt.deleted, anonymised: receipt.anonymised });
    const state = (await t.api.get('/dashboard/audit-log?action=workflow.state.delete', { headers: bearer(a.token) })).body.data.entries[0];
    expect(state.details.key).toBe('[erased]');
  });

  it('a second erasure of the same person finds nothing: a receipt of zeros', async () => {
    const res = await erase(a, X);
    expect(res.status, res.text).toBe(200);
    expect(Object.values(res.body.data.deleted).every((n) => n === 0)).toBe(true);
    expect(res.body.data.anonymised).toEqual({ eval_results: 0, audit_log: 0 });
    expect(res.body.data.subject).toBe(receipt.subject);
    expect(res.body.data.erasure_id).not.toBe(receipt.erasure_id);
  });
});

describe('who may erase, and what they must send', () => {
  it('the user_id must be a string of 1 to 200 characters', async () => {
    for (const bad of [undefined, '', 'x'.repeat(201), 42, null, ['a']]) {
      const error = expectError(await erase(a, bad), 400, 'INVALID_INPUT');
      expect(error.details.issues[0].path).toContain('user_id');
    }
    expect((await erase(a, 'u'.repeat(200))).status).toBe(200);
  });

  it('an API key needs data:erase: a read-only or run-only key is refused, the full preset may', async () => {
    for (const preset of ['read-only', 'run-only']) {
      const created = await t.api.post('/dashboard/api-keys', { name: `erase-${preset}`, preset }, { headers: bearer(a.token) });
      expect(created.status, created.text).toBe(201);
      const error = expectError(await t.api.post('/v1/erasures', { user_id: 'someone' }, { headers: bearer(created.body.data.apiKey) }), 403, 'PERMISSION_DENIED');
      expect(error.details.required).toBe('data:erase');
    }
    const full = await t.api.post('/dashboard/api-keys', { name: 'erase-full', preset: 'full' }, { headers: bearer(a.token) });
    expect((await t.api.post('/v1/erasures', { user_id: 'someone' }, { headers: bearer(full.body.data.apiKey) })).status).toBe(200);
    expectError(await t.api.post('/v1/erasures', { user_id: 'someone' }), 401, 'MISSING_API_KEY');
  });

  it('the dashboard: owners and admins erase, developers may not', async () => {
    const user = `dash-${tag()}@example.com`;
    await runIntent(a, user, `dashboard ${tag()}`);
    const email = uniqueEmail('dev');
    expect((await t.api.post('/dashboard/users', { email, role: 'developer', password: 'developer password 1' }, { headers: bearer(a.token) })).status).toBe(201);
    const developer = (await t.api.post('/auth/login', { email, password: 'developer password 1' })).body.data.token;
    expectError(await t.api.post('/dashboard/erasures', { user_id: user }, { headers: bearer(developer) }), 403, 'FORBIDDEN');
    const res = await t.api.post('/dashboard/erasures', { user_id: user }, { headers: bearer(a.token) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.deleted).toMatchObject({ sessions: 1, session_messages: 2 });
    const [entry] = (await t.api.get('/dashboard/audit-log?action=data.erase', { headers: bearer(a.token) })).body.data.entries;
    expect(entry).toMatchObject({ target_id: res.body.data.subject, actor_type: 'user' });
  });

  it('the admin API erases in the tenant named; an unknown tenant is 404, no secret 401', async () => {
    const user = `admin-${tag()}`;
    await runIntent(b, user, `admin ${tag()}`);
    await runIntent(a, user, `admin ${tag()}`);
    const res = await t.api.post(`/admin/tenants/${b.tenantId}/erasures`, { user_id: user }, { headers: adminHeaders });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.deleted.sessions).toBe(1);
    // Only tenant B's: tenant A's session of the same user_id stays.
    expect(await countOf('select count(*)::int as n from sessions where user_id = $1', [user])).toBe(1);
    expectError(await t.api.post(`/admin/tenants/00000000-0000-4000-8000-000000000000/erasures`, { user_id: user }, { headers: adminHeaders }), 404, 'NOT_FOUND');
    expectError(await t.api.post('/admin/tenants/not-a-tenant/erasures', { user_id: user }, { headers: adminHeaders }), 404, 'NOT_FOUND');
    expect((await t.api.post(`/admin/tenants/${b.tenantId}/erasures`, { user_id: user })).status).toBe(401);
  });

  it('refuses while a run of the person is executing, and erases it once it ended', async () => {
    const user = `busy-${tag()}`;
    fake.setLatency(1500);
    const running = t.api.post('/v1/agents/plain/run', { input: { message: 'take your time', user_id: user } }, key(a));
    await waitFor(
      () => countOf(`select count(*)::int as n from agent_runs where tenant_id = $1 and user_id = $2 and status = 'running'`, [a.tenantId, user]),
      'the agent run to start',
    );
    const error = expectError(await erase(a, user), 409, 'ERASURE_RUNS_IN_FLIGHT');
    expect(error.details).toEqual({ running: { agent_runs: 1, workflow_runs: 0 } });
    fake.setLatency(0);
    expect((await running).body.data.status).toBe('completed');
    const res = await erase(a, user);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.deleted).toMatchObject({ agent_sessions: 1, agent_runs: 1, agent_messages: 2 });
  });
});

describe('liya tenants erase-user', () => {
  const liya = (args: string[]) => runLiya(args, { env: { LIYA_URL: t.url, LIYA_ADMIN_SECRET: ADMIN_SECRET, LIYA_CONFIG_DIR: configDir, LIYA_PASSWORD: undefined } });

  it('erases one end user of a tenant and prints the receipt', async () => {
    const user = `cli-${tag()}@example.com`;
    await runIntent(a, user, `cli ${tag()}`);
    const shown = await liya(['tenants', 'erase-user', a.tenantId, user]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`Erased the end user from tenant ${a.tenantId}`);
    expect(shown.stdout).toMatch(/Deleted sessions\s+1/);
    expect(shown.stdout).toContain(`sha256:${createHash('sha256').update(`${a.tenantId}:${user}`).digest('hex')}`);
    const again = await liya(['tenants', 'erase-user', a.tenantId, user, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ deleted: { sessions: 0 }, anonymised: { eval_results: 0 } });
    const unknown = await liya(['tenants', 'erase-user', '00000000-0000-4000-8000-000000000000', user]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('NOT_FOUND');
  });
});
