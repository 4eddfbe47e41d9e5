// History lists page by cursor (keyset) beside the specification's page/pageSize: walking a list by
// next_cursor answers every row exactly once, in order (ties in the sort key included), with the
// list's filters; a cursor the list did not issue and an offset page deeper than 10,000 rows are
// 400s; `total` is exact on small lists and a lower bound past 10,000.
// History rows are written straight into the database (many rows, and rows that share a timestamp
// to the microsecond, which the API alone would not produce quickly): the lists read them as they
// read rows written by runs.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;
let agentId: string;
let otherAgentId: string;
let workflowKey: string;
let workflowId: string;
let evalRunId: string;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const jwt = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
type Auth = { headers: Record<string, string> };

interface Walk {
  ids: string[];
  pages: { pagination: Record<string, unknown>; count: number }[];
}

/** Follows next_cursor from the first page to the last; every page must be a 200. */
async function walk(path: string, auth: Auth, items: string, idOf: (row: any) => string, pageSize: number): Promise<Walk> {
  const sep = path.includes('?') ? '&' : '?';
  const result: Walk = { ids: [], pages: [] };
  let cursor: string | null = null;
  for (let i = 0; i < 500; i++) {
    const res: ApiResponse = await t.api.get(`${path}${sep}pageSize=${pageSize}${cursor ? `&cursor=${cursor}` : ''}`, auth);
    expect(res.status, res.text).toBe(200);
    const rows = res.body.data[items] as unknown[];
    result.ids.push(...rows.map(idOf));
    result.pages.push({ pagination: res.body.data.pagination, count: rows.length });
    cursor = res.body.data.pagination.next_cursor;
    if (cursor === null) return result;
  }
  throw new Error(`${path}: the walk did not end`);
}

/** The walk answered exactly `expected`, in order, each page full but the last, with the list's total. */
function expectWalk(walked: Walk, expected: string[], pageSize: number) {
  expect(new Set(walked.ids).size).toBe(walked.ids.length);
  expect(walked.ids).toEqual(expected);
  expect(walked.pages.length).toBe(Math.max(1, Math.ceil(expected.length / pageSize)));
  for (const [i, page] of walked.pages.entries()) {
    expect(page.pagination).toEqual({
      total: expected.length, limit: pageSize, offset: 0, total_is_exact: true,
      next_cursor: i === walked.pages.length - 1 ? null : expect.any(String),
    });
    if (i < walked.pages.length - 1) expect(page.count).toBe(pageSize);
  }
}

const ids = async (text: string, params: unknown[]) => (await t.sql<{ id: string }>(text, params)).map((r) => r.id);

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Pager A' });
  b = await signupTenant(t.api, { companyName: 'Pager B' });
  for (const s of [a, b]) {
    const plan = await t.api.patch(`/admin/tenants/${s.tenantId}`, { billingPlan: 'pro' }, { headers: adminHeaders });
    expect(plan.status, plan.text).toBe(200);
  }
  const created = await t.api.post('/v1/agents', { agent_key: 'pager', name: 'Pager', goal: 'Answer' }, key(a));
  expect(created.status, created.text).toBe(201);
  agentId = created.body.data.agent.id;
  const other = await t.api.post('/v1/agents', { agent_key: 'pager', name: 'Pager', goal: 'Answer' }, key(b));
  expect(other.status, other.text).toBe(201);
  otherAgentId = other.body.data.agent.id;
  const sibling = await t.api.post('/v1/agents', { agent_key: 'sibling', name: 'Sibling', goal: 'Answer' }, key(a));
  expect(sibling.status, sibling.text).toBe(201);

  // Agent sessions and runs: 47 runs of `pager` over 5 sessions, three runs to each timestamp (ties
  // broken by id), every fifth failed; runs of another agent and of another tenant's agent besides.
  await t.sql(
    `insert into agent_sessions (id, tenant_id, agent_id, status, turns, last_activity_at, created_at)
     select gen_random_uuid(), $1, $2, 'active', 0, timestamptz '2026-03-01' + (g / 2) * interval '1.000001 second', now() from generate_series(1, 9) g`,
    [a.tenantId, agentId],
  );
  await t.sql(
    `insert into agent_sessions (id, tenant_id, agent_id, status, turns, last_activity_at, created_at) select gen_random_uuid(), $1, id, 'active', 0, now(), now() from agents where id = $2 or (tenant_id = $1 and agent_key = 'sibling')`,
    [a.tenantId, otherAgentId],
  );
  await t.sql(`update agent_sessions set tenant_id = $1 where agent_id = $2`, [b.tenantId, otherAgentId]);
  await t.sql(
    `insert into agent_runs (id, tenant_id, agent_id, session_id, user_id, status, input, output, model, steps, total_tokens, total_cost, total_latency_ms, started_at, completed_at)
     select gen_random_uuid(), s.tenant_id, s.agent_id, s.id, null, case when g % 5 = 0 then 'failed' else 'completed' end, '{}', 'ok', 'gpt-4o-mini', 1, 0, 0, 0,
            timestamptz '2026-01-01' + (g / 3) * interval '1.000001 second', now()
       from generate_series(1, 47) g
       cross join lateral (select * from agent_sessions where agent_id = $1 order by id offset g % 5 limit 1) s`,
    [agentId],
  );
  await t.sql(
    `insert into agent_runs (id, tenant_id, agent_id, session_id, status, input, started_at)
     select gen_random_uuid(), s.tenant_id, s.agent_id, s.id, 'completed', '{}', now() from agent_sessions s where s.agent_id <> $1`,
    [agentId],
  );

  // Workflow runs: 31 of one workflow, every third waiting.
  const workflow = await createWorkflow(t.api, a.apiKey, 'Pager flow', [MANUAL_TRIGGER], { deploy: false });
  workflowKey = workflow.workflow_key;
  workflowId = workflow.id;
  await t.sql(
    `insert into workflow_runs (id, tenant_id, workflow_id, scope, conversation_id, status, triggered_by, input, started_at, updated_at)
     select gen_random_uuid(), $1, $2, 'live', gen_random_uuid(), case when g % 3 = 0 then 'waiting' else 'completed' end, 'api', '{}',
            timestamptz '2026-02-01' + (g / 2) * interval '1 millisecond', now()
       from generate_series(1, 31) g`,
    [a.tenantId, workflowId],
  );

  // Intent sessions over two domains and two statuses; audit entries of two actions.
  await t.sql(
    `insert into sessions (id, tenant_id, user_id, domain, status, last_activity_at, created_at)
     select gen_random_uuid(), $1, 'user-' || g, case when g % 4 = 0 then 'support' else 'hiring' end, case when g % 3 = 0 then 'expired' else 'active' end,
            timestamptz '2026-04-01' + (g / 2) * interval '1.000001 second', now()
       from generate_series(1, 26) g`,
    [a.tenantId],
  );
  await t.sql(
    `insert into audit_log (id, tenant_id, actor_type, actor_name, action, target_type, created_at)
     select gen_random_uuid(), $1, 'user', 'someone@example.com', case when g % 2 = 0 then 'pager.even' else 'pager.odd' end, 'thing',
            timestamptz '2026-05-01' + (g / 3) * interval '1 second'
       from generate_series(1, 23) g`,
    [a.tenantId],
  );

  // Evaluation runs (external output, no suite) and one run's results; ingestion jobs; deployments.
  await t.sql(
    `insert into eval_runs (id, tenant_id, execution_mode, triggered_by, status, started_at, updated_at)
     select gen_random_uuid(), $1, 'external_output', 'api', 'completed', timestamptz '2026-06-01' + (g / 2) * interval '1 second', now()
       from generate_series(1, 13) g`,
    [a.tenantId],
  );
  [{ id: evalRunId }] = await t.sql<{ id: string }>(`select id::text from eval_runs where tenant_id = $1 order by started_at desc, id desc limit 1`, [a.tenantId]);
  await t.sql(
    `insert into eval_results (tenant_id, run_id, position, status, input, created_at)
     select $1, $2, g * 2, 'pending', '{}', now() from generate_series(0, 16) g`,
    [a.tenantId, evalRunId],
  );
  await t.sql(
    `insert into ingestion_jobs (id, tenant_id, name, status, options, created_by, created_at)
     select gen_random_uuid(), $1, 'doc-' || g, case when g % 2 = 0 then 'failed' else 'completed' end, '{}', 'owner', timestamptz '2026-07-01' + (g / 2) * interval '1 second'
       from generate_series(1, 15) g`,
    [a.tenantId],
  );
  await t.sql(
    `insert into deployments (id, tenant_id, status, plan, prune, min_pass_rate, base_digest, gate, minted, created_at)
     select gen_random_uuid(), $1, 'deployed', '{"summary": {"create": 1, "update": 0, "delete": 0, "unchanged": 0}, "changes": []}', false, 0.9, 'digest', '[]', '[]',
            timestamptz '2026-08-01' + (g / 2) * interval '1 second'
       from generate_series(1, 9) g`,
    [a.tenantId],
  );
});

afterAll(async () => {
  await t?.close();
});

describe('walking a list by next_cursor', () => {
  it('agent runs: every run of the agent exactly once, newest first, ties by id', async () => {
    const expected = await ids(`select id::text as id from agent_runs where tenant_id = $1 and agent_id = $2 order by started_at desc, id desc`, [a.tenantId, agentId]);
    expect(expected.length).toBe(47);
    for (const pageSize of [1, 7, 47, 100]) {
      expectWalk(await walk('/v1/agents/pager/runs', key(a), 'runs', (r) => r.run_id, pageSize), expected, pageSize);
    }
  });

  it('agent runs with filters: status, session, both', async () => {
    const failed = await ids(`select id::text as id from agent_runs where agent_id = $1 and status = 'failed' order by started_at desc, id desc`, [agentId]);
    expect(failed.length).toBe(9);
    expectWalk(await walk('/v1/agents/pager/runs?status=failed', key(a), 'runs', (r) => r.run_id, 2), failed, 2);
    const [{ id: sessionId }] = await t.sql<{ id: string }>(`select session_id::text as id from agent_runs where agent_id = $1 group by session_id order by count(*) desc limit 1`, [agentId]);
    const ofSession = await ids(`select id::text as id from agent_runs where session_id = $1 order by started_at desc, id desc`, [sessionId]);
    expectWalk(await walk(`/v1/agents/pager/runs?session_id=${sessionId}`, key(a), 'runs', (r) => r.run_id, 3), ofSession, 3);
    const completedOfSession = await ids(`select id::text as id from agent_runs where session_id = $1 and status = 'completed' order by started_at desc, id desc`, [sessionId]);
    expectWalk(await walk(`/v1/agents/pager/runs?session_id=${sessionId}&status=completed`, key(a), 'runs', (r) => r.run_id, 2), completedOfSession, 2);
  });

  it('agent sessions: latest activity first', async () => {
    const expected = await ids(`select id::text as id from agent_sessions where agent_id = $1 order by last_activity_at desc, id desc`, [agentId]);
    expectWalk(await walk('/v1/agents/pager/sessions', key(a), 'sessions', (r) => r.session_id, 4), expected, 4);
  });

  it('another tenant\'s list of the same agent key shows only its own rows', async () => {
    const res = await t.api.get('/v1/agents/pager/runs', key(b));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.runs.length).toBe(1);
    expect(res.body.data.pagination).toEqual({ total: 1, limit: 20, offset: 0, total_is_exact: true, next_cursor: null });
  });

  it('workflow runs, with and without the status filter', async () => {
    const all = await ids(`select id::text as id from workflow_runs where workflow_id = $1 order by started_at desc, id desc`, [workflowId]);
    expect(all.length).toBe(31);
    expectWalk(await walk(`/v1/workflows/${workflowKey}/runs`, key(a), 'runs', (r) => r.run_id, 5), all, 5);
    const waiting = await ids(`select id::text as id from workflow_runs where workflow_id = $1 and status = 'waiting' order by started_at desc, id desc`, [workflowId]);
    expect(waiting.length).toBe(10);
    expectWalk(await walk(`/v1/workflows/${workflowId}/runs?status=waiting`, key(a), 'runs', (r) => r.run_id, 3), waiting, 3);
  });

  it('dashboard sessions, with status and domain filters', async () => {
    const order = 'order by last_activity_at desc, id desc';
    const all = await ids(`select id::text as id from sessions where tenant_id = $1 ${order}`, [a.tenantId]);
    expectWalk(await walk('/dashboard/sessions', jwt(a), 'sessions', (r) => r.sessionId, 6), all, 6);
    const expired = await ids(`select id::text as id from sessions where tenant_id = $1 and status = 'expired' ${order}`, [a.tenantId]);
    expectWalk(await walk('/dashboard/sessions?status=expired', jwt(a), 'sessions', (r) => r.sessionId, 3), expired, 3);
    const support = await ids(`select id::text as id from sessions where tenant_id = $1 and domain = 'support' ${order}`, [a.tenantId]);
    expectWalk(await walk('/dashboard/sessions?domain=support', jwt(a), 'sessions', (r) => r.sessionId, 2), support, 2);
    const both = await ids(`select id::text as id from sessions where tenant_id = $1 and domain = 'hiring' and status = 'active' ${order}`, [a.tenantId]);
    expectWalk(await walk('/dashboard/sessions?domain=hiring&status=active', jwt(a), 'sessions', (r) => r.sessionId, 4), both, 4);
    expect((await t.api.get('/dashboard/sessions', jwt(b))).body.data.sessions).toEqual([]);
  });

  it('the audit log, with the action filter', async () => {
    const odd = await ids(`select id::text as id from audit_log where tenant_id = $1 and action = 'pager.odd' order by created_at desc, id desc`, [a.tenantId]);
    expect(odd.length).toBe(12);
    expectWalk(await walk('/dashboard/audit-log?action=pager.odd', jwt(a), 'entries', (r) => r.id, 5), odd, 5);
    const all = await ids(`select id::text as id from audit_log where tenant_id = $1 order by created_at desc, id desc`, [a.tenantId]);
    expectWalk(await walk('/dashboard/audit-log', jwt(a), 'entries', (r) => r.id, 8), all, 8);
  });

  it('evaluation runs, and a run\'s results in position order', async () => {
    const runs = await ids(`select id::text as id from eval_runs where tenant_id = $1 order by started_at desc, id desc`, [a.tenantId]);
    expectWalk(await walk('/v1/evals/runs', key(a), 'runs', (r) => r.id, 4), runs, 4);
    const results = await ids(`select id::text as id from eval_results where run_id = $1 order by position`, [evalRunId]);
    expect(results.length).toBe(17);
    expectWalk(await walk(`/v1/evals/runs/${evalRunId}/results`, key(a), 'results', (r) => r.id, 5), results, 5);
  });

  it('ingestion jobs (with the status filter) and deployments', async () => {
    const failed = await ids(`select id::text as id from ingestion_jobs where tenant_id = $1 and status = 'failed' order by created_at desc, id desc`, [a.tenantId]);
    expectWalk(await walk('/dashboard/ingestion-jobs?status=failed', jwt(a), 'jobs', (r) => r.id, 3), failed, 3);
    const deployments = await ids(`select id::text as id from deployments where tenant_id = $1 order by created_at desc, id desc`, [a.tenantId]);
    expectWalk(await walk('/v1/deployments', key(a), 'deployments', (r) => r.id, 2), deployments, 2);
  });

  it('offset pages and cursor pages agree; a cursor overrides page; an empty cursor is none', async () => {
    const first = await t.api.get('/v1/agents/pager/runs?pageSize=10', key(a));
    const second = await t.api.get('/v1/agents/pager/runs?page=2&pageSize=10', key(a));
    expect(second.body.data.pagination).toEqual({ total: 47, limit: 10, offset: 10, total_is_exact: true, next_cursor: expect.any(String) });
    const byCursor = await t.api.get(`/v1/agents/pager/runs?pageSize=10&page=4&cursor=${first.body.data.pagination.next_cursor}`, key(a));
    expect(byCursor.status, byCursor.text).toBe(200);
    expect(byCursor.body.data.runs).toEqual(second.body.data.runs);
    expect(byCursor.body.data.pagination).toEqual({ ...second.body.data.pagination, offset: 0 });
    const last = await t.api.get('/v1/agents/pager/runs?page=5&pageSize=10', key(a));
    expect(last.body.data.runs.length).toBe(7);
    expect(last.body.data.pagination).toEqual({ total: 47, limit: 10, offset: 40, total_is_exact: true, next_cursor: null });
    const empty = await t.api.get('/v1/agents/pager/runs?pageSize=10&cursor=', key(a));
    expect(empty.body.data).toEqual(first.body.data);
  });
});

describe('bad cursors and deep offsets', () => {
  const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

  it('a cursor the list did not issue is 400 INVALID_INPUT naming `cursor`, never a 500', async () => {
    const workflowCursor = (await t.api.get(`/v1/workflows/${workflowKey}/runs?pageSize=1`, key(a))).body.data.pagination.next_cursor as string;
    const runsCursor = (await t.api.get('/v1/agents/pager/runs?pageSize=1', key(a))).body.data.pagination.next_cursor as string;
    const id = randomUUID();
    const bad = [
      'not a cursor!', '%%%', b64('hello'), b64({ a: 1 }), b64([]), b64(['agent_runs', '2026-01-01T00:00:00.000000Z']),
      b64(['agent_runs', '2026-01-01T00:00:00.000000Z', 'not-a-uuid']), b64(['agent_runs', 'yesterday', id]), b64(['agent_runs', '2026-02-30T00:00:00.000000Z', id]),
      b64(['agent_runs', '2026-01-01T00:00:00Z', id]), b64(['agent_runs', 1, id]), b64(['agent_runs', '0000-01-01T00:00:00.000000Z', id]),
      workflowCursor, runsCursor.slice(0, -4),
    ];
    for (const cursor of bad) {
      const res = await t.api.get(`/v1/agents/pager/runs?cursor=${encodeURIComponent(cursor)}`, key(a));
      const error = expectError(res, 400, 'INVALID_INPUT');
      expect(error.details.issues.map((i: { path: string }) => i.path), cursor).toEqual(['cursor']);
    }
    expect(expectError(await t.api.get(`/v1/agents/pager/runs?cursor=${workflowCursor}`, key(a)), 400, 'INVALID_INPUT').message).toMatch(/another list/);
    // A position list checks its own kind of key: a time where a position belongs, an int4 overflow.
    for (const cursor of [runsCursor, b64(['eval_results', '99999999999', id]), b64(['eval_results', '-1', id])]) {
      expectError(await t.api.get(`/v1/evals/runs/${evalRunId}/results?cursor=${cursor}`, key(a)), 400, 'INVALID_INPUT');
    }
    expectError(await t.api.get(`/dashboard/audit-log?cursor=${'a'.repeat(401)}`, jwt(a)), 400, 'INVALID_INPUT');
  });

  it('an offset page reaching past row 10,000 is 400 INVALID_INPUT pointing to cursor', async () => {
    expect((await t.api.get('/v1/agents/pager/runs?page=500&pageSize=20', key(a))).status).toBe(200);
    expect((await t.api.get('/v1/agents/pager/runs?page=100&pageSize=100', key(a))).status).toBe(200);
    for (const query of ['page=501&pageSize=20', 'page=101&pageSize=100', 'page=1000000', 'page=101&pageSize=500']) {
      const error = expectError(await t.api.get(`/v1/agents/pager/runs?${query}`, key(a)), 400, 'INVALID_INPUT');
      expect(error.message, query).toMatch(/cursor/);
      expect(error.details.issues.map((i: { path: string }) => i.path)).toEqual(['page']);
    }
    expectError(await t.api.get('/dashboard/audit-log?page=10001&pageSize=1', jwt(a)), 400, 'INVALID_INPUT');
    expectError(await t.api.get(`/v1/evals/runs/${evalRunId}/results?page=200&pageSize=60`, key(a)), 400, 'INVALID_INPUT');
  });
});

describe('a total counted only past the page', () => {
  beforeAll(async () => {
    await t.sql(
      `insert into audit_log (id, tenant_id, actor_type, actor_name, action, target_type, created_at)
       select gen_random_uuid(), $1, 'user', 'bulk@example.com', 'bulk.write', 'thing', timestamptz '2025-01-01' + (g / 4) * interval '1 second'
         from generate_series(1, 10050) g`,
      [b.tenantId],
    );
  });

  it('counts 100 rows past the page and no further: total is then "at least", total_is_exact false; a cursor still walks every row', async () => {
    const first = await t.api.get('/dashboard/audit-log?action=bulk.write', jwt(b));
    expect(first.status, first.text).toBe(200);
    // 20 rows on the page + 100 past it, and one more that says "more".
    expect(first.body.data.pagination).toEqual({ total: 121, limit: 20, offset: 0, total_is_exact: false, next_cursor: expect.any(String) });
    // The deepest offset page reaches within 100 rows of the end: its total is exact.
    const deepest = await t.api.get('/dashboard/audit-log?action=bulk.write&page=100&pageSize=100', jwt(b));
    expect(deepest.body.data.entries.length).toBe(100);
    expect(deepest.body.data.pagination).toMatchObject({ offset: 9_900, total: 10_050, total_is_exact: true });

    const walked = await walk('/dashboard/audit-log?action=bulk.write', jwt(b), 'entries', (r) => r.id, 100);
    expect(walked.ids.length).toBe(10_050);
    expect(new Set(walked.ids).size).toBe(10_050);
    const expected = await ids(`select id::text as id from audit_log where tenant_id = $1 and action = 'bulk.write' order by created_at desc, id desc`, [b.tenantId]);
    expect(walked.ids).toEqual(expected);
    // A page by cursor counts from the list's start, up to 100 rows past a page at offset 0.
    expect(walked.pages.at(-1)!.pagination).toEqual({ total: 201, limit: 100, offset: 0, total_is_exact: false, next_cursor: null });
    expect(walked.pages.at(-1)!.count).toBe(50);
  });
});
