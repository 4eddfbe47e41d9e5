import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordUsage, type UsageEventInput } from '../../server/usage/usage.service.js';
import { bearer } from '../support/client.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const admin = { headers: adminHeaders };
const ZERO_TOTALS = { requests: 0, tokens: 0, costUsd: '0.000000' };

/** Records usage the way features do: a fresh EntityManager fork on the real database. */
const record = (input: UsageEventInput) => recordUsage(t.server.deps.orm.em.fork(), input);

const adminTenant = async (tenantId: string) => {
  const res = await t.api.get(`/admin/tenants/${tenantId}`, admin);
  expect(res.status).toBe(200);
  return res.body.data;
};
const counters = async (tenantId: string) => {
  const { requestsThisMonth, tokensThisMonth, costThisMonth } = await adminTenant(tenantId);
  return { requestsThisMonth, tokensThisMonth, costThisMonth };
};
const dashboardUsage = async (tenant: SignedUpTenant, query = '') => {
  const res = await t.api.get(`/dashboard/usage${query}`, { headers: bearer(tenant.token) });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};
const stats = async () => (await t.api.get('/admin/stats', admin)).body.data;
const eventDay = async (tenantId: string) =>
  (await t.sql<{ day: string }>(`select distinct to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day from usage_events where tenant_id = $1`, [tenantId])).map((r) => r.day);

describe('recordUsage moves the counters and the reports', () => {
  let a: SignedUpTenant;
  let b: SignedUpTenant;

  beforeAll(async () => {
    a = await signupTenant(t.api, { companyName: 'Tenant A' });
    b = await signupTenant(t.api, { companyName: 'Tenant B' });
    const base = { tenantId: a.tenantId, kind: 'intent_run', domain: 'hiring', model: 'fake-model' };
    await record({ ...base, intent: 'resume-analysis', promptTokens: 1000, completionTokens: 234, costUsd: 0.001234, latencyMs: 800 });
    await record({ ...base, intent: 'job-match', promptTokens: 500, completionTokens: 100, costUsd: 0.0005, latencyMs: 300 });
    await record({ ...base, intent: 'resume-analysis', promptTokens: 10, completionTokens: 5, costUsd: 0.000001, latencyMs: 10 });
  });

  it('stores one usage event per call with every field', async () => {
    const rows = await t.sql(
      `select kind, domain, intent, model, prompt_tokens, completion_tokens, total_tokens, cost_usd::text as cost, latency_ms, status
         from usage_events where tenant_id = $1 order by prompt_tokens desc`,
      [a.tenantId],
    );
    expect(rows).toEqual([
      { kind: 'intent_run', domain: 'hiring', intent: 'resume-analysis', model: 'fake-model', prompt_tokens: 1000, completion_tokens: 234, total_tokens: 1234, cost: '0.001234', latency_ms: 800, status: 'ok' },
      { kind: 'intent_run', domain: 'hiring', intent: 'job-match', model: 'fake-model', prompt_tokens: 500, completion_tokens: 100, total_tokens: 600, cost: '0.000500', latency_ms: 300, status: 'ok' },
      { kind: 'intent_run', domain: 'hiring', intent: 'resume-analysis', model: 'fake-model', prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cost: '0.000001', latency_ms: 10, status: 'ok' },
    ]);
  });

  it('the tenant shows this month\'s requests, tokens (string) and cost (6 decimals)', async () => {
    expect(await counters(a.tenantId)).toEqual({ requestsThisMonth: 3, tokensThisMonth: '1849', costThisMonth: '0.001735' });
    const listed = (await t.api.get('/admin/tenants?limit=100', admin)).body.data.tenants.find((x: { id: string }) => x.id === a.tenantId);
    expect(listed).toMatchObject({ requestsThisMonth: 3, tokensThisMonth: '1849', costThisMonth: '0.001735' });
  });

  it('/dashboard/usage reports totals, days, domains and intents', async () => {
    const [day] = await eventDay(a.tenantId);
    const usage = await dashboardUsage(a);
    const now = new Date();
    expect(usage).toEqual({
      from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      to: expect.any(String),
      totals: { requests: 3, tokens: 1849, costUsd: '0.001735' },
      days: [{ date: day, requests: 3, tokens: 1849, costUsd: '0.001735' }],
      domains: [{ domain: 'hiring', requests: 3, tokens: 1849, costUsd: '0.001735' }],
      intents: [
        { domain: 'hiring', intent: 'resume-analysis', requests: 2, tokens: 1249, costUsd: '0.001235' },
        { domain: 'hiring', intent: 'job-match', requests: 1, tokens: 600, costUsd: '0.000500' },
      ],
    });
  });

  it('the admin usage report for the tenant is the same report', async () => {
    const query = '?from=2000-01-01&to=2100-01-01';
    const own = await dashboardUsage(a, query);
    const res = await t.api.get(`/admin/usage${query}&tenantId=${a.tenantId}`, admin);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ tenantId: a.tenantId, ...own });
  });

  it('tenant B sees zeros everywhere', async () => {
    expect(await counters(b.tenantId)).toEqual({ requestsThisMonth: 0, tokensThisMonth: '0', costThisMonth: '0.000000' });
    const usage = await dashboardUsage(b, '?from=2000-01-01&to=2100-01-01');
    expect(usage).toMatchObject({ totals: ZERO_TOTALS, days: [], domains: [], intents: [] });
    const report = await t.api.get(`/admin/usage?tenantId=${b.tenantId}`, admin);
    expect(report.body.data).toMatchObject({ tenantId: b.tenantId, totals: ZERO_TOTALS, days: [], domains: [], intents: [] });
  });

  it('the range filters events: from is inclusive, to exclusive', async () => {
    const [event] = await t.sql<{ id: string }>(`select id from usage_events where tenant_id = $1 and intent = 'job-match'`, [a.tenantId]);
    const moved = await signupTenant(t.api);
    // Move a copy of one event to a fixed past instant, for a separate tenant.
    await t.sql(
      `insert into usage_events (tenant_id, kind, domain, intent, prompt_tokens, completion_tokens, total_tokens, cost_usd, latency_ms, status, created_at)
       select $2, kind, domain, intent, prompt_tokens, completion_tokens, total_tokens, cost_usd, latency_ms, status, '2024-03-10T12:00:00Z' from usage_events where id = $1`,
      [event.id, moved.tenantId],
    );
    const inRange = await dashboardUsage(moved, '?from=2024-03-10T12:00:00Z&to=2024-03-11');
    expect(inRange.totals).toEqual({ requests: 1, tokens: 600, costUsd: '0.000500' });
    expect(inRange.days).toEqual([{ date: '2024-03-10', requests: 1, tokens: 600, costUsd: '0.000500' }]);
    expect((await dashboardUsage(moved, '?from=2024-03-01&to=2024-03-10T12:00:00Z')).totals).toEqual(ZERO_TOTALS);
    // This month's default range does not include it; neither do the monthly counters.
    expect((await dashboardUsage(moved)).totals).toEqual(ZERO_TOTALS);
    expect((await counters(moved.tenantId)).requestsThisMonth).toBe(0);
  });
});

describe('counting rules', () => {
  it('20 concurrent recordUsage calls (each on its own fork) sum exactly', async () => {
    const c = await signupTenant(t.api);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        record({ tenantId: c.tenantId, kind: 'intent_run', domain: 'hiring', intent: 'career-coach', promptTokens: i + 1, completionTokens: 1000, costUsd: 0.000123 }),
      ),
    );
    // prompt tokens 1..20 = 210, completion 20 * 1000
    expect(await counters(c.tenantId)).toEqual({ requestsThisMonth: 20, tokensThisMonth: '20210', costThisMonth: '0.002460' });
    expect(await t.sql('select count(*)::int as n, sum(total_tokens)::int as tokens from usage_events where tenant_id = $1', [c.tenantId])).toEqual([{ n: 20, tokens: 20210 }]);
    expect((await dashboardUsage(c)).totals).toEqual({ requests: 20, tokens: 20210, costUsd: '0.002460' });
  });

  it('20 concurrent recordUsage calls sharing one EntityManager sum exactly', async () => {
    const c = await signupTenant(t.api);
    const em = t.server.deps.orm.em.fork();
    await Promise.all(Array.from({ length: 20 }, () => recordUsage(em, { tenantId: c.tenantId, kind: 'agent_step', promptTokens: 7, completionTokens: 3, costUsd: 0.00001 })));
    expect(await counters(c.tenantId)).toEqual({ requestsThisMonth: 20, tokensThisMonth: '200', costThisMonth: '0.000200' });
  });

  it('countsAsRequest false adds tokens and cost but no request', async () => {
    const d = await signupTenant(t.api);
    await record({ tenantId: d.tenantId, kind: 'intent_run', domain: 'hiring', intent: 'job-match', promptTokens: 100, completionTokens: 50, costUsd: 0.0001 });
    await record({ tenantId: d.tenantId, kind: 'embedding', countsAsRequest: false, promptTokens: 300, costUsd: 0.00003 });
    expect(await counters(d.tenantId)).toEqual({ requestsThisMonth: 1, tokensThisMonth: '450', costThisMonth: '0.000130' });
    const usage = await dashboardUsage(d);
    expect(usage.totals.requests).toBe(1);
    expect(usage.totals.tokens).toBe(450);
    expect(usage.totals.costUsd).toBe('0.000130');
  });

  it('a range whose start is after its end is 400 naming `from`', async () => {
    const z = await signupTenant(t.api);
    const res = await t.api.get('/dashboard/usage?from=2026-05-02&to=2026-05-01', { headers: bearer(z.token) });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_INPUT');
    expect(res.body.error.details.issues[0].path).toBe('from');
  });

  it('an event with no tokens or cost still counts as a request', async () => {
    const e = await signupTenant(t.api);
    await record({ tenantId: e.tenantId, kind: 'workflow_run' });
    expect(await counters(e.tenantId)).toEqual({ requestsThisMonth: 1, tokensThisMonth: '0', costThisMonth: '0.000000' });
  });

  it('large counters keep every digit', async () => {
    const f = await signupTenant(t.api);
    await record({ tenantId: f.tenantId, kind: 'intent_run', promptTokens: 1, costUsd: 0.000001 });
    const month = new Date().toISOString().slice(0, 7);
    await t.sql(`update usage_counters set requests = 2147483647, tokens = 9007199254740993, cost_usd = 9999999999.999999 where tenant_id = $1 and month = $2`, [f.tenantId, month]);
    expect(await counters(f.tenantId)).toEqual({ requestsThisMonth: 2147483647, tokensThisMonth: '9007199254740993', costThisMonth: '9999999999.999999' });
  });
});

describe('/admin/stats', () => {
  it('sums this month\'s counters and counts runs by kind', async () => {
    const before = await stats();
    const g = await signupTenant(t.api);
    const h = await signupTenant(t.api);
    await record({ tenantId: g.tenantId, kind: 'stats_intent', promptTokens: 10, completionTokens: 5, costUsd: 0.25 });
    await record({ tenantId: g.tenantId, kind: 'stats_intent', promptTokens: 20, costUsd: 0.5 });
    await record({ tenantId: h.tenantId, kind: 'stats_intent', completionTokens: 1 });
    await record({ tenantId: h.tenantId, kind: 'stats_embedding', countsAsRequest: false, promptTokens: 1000, costUsd: 0.125 });
    const after = await stats();
    expect(after.runsByKind).toEqual({ ...before.runsByKind, stats_intent: 3, stats_embedding: 1 });
    expect(after.requestsThisMonth).toBe(before.requestsThisMonth + 3);
    expect(BigInt(after.tokensThisMonth) - BigInt(before.tokensThisMonth)).toBe(1036n);
    expect(after.costThisMonth).toMatch(/^\d+\.\d{6}$/);
    expect(Math.round((Number(after.costThisMonth) - Number(before.costThisMonth)) * 1e6)).toBe(875_000);
    expect(after.tenants).toBe(before.tenants + 2);
  });

  it('runsByKind and the monthly totals agree with the counters in UTC, whatever the database time zone', async () => {
    // An event one hour before the UTC month started: last month, in UTC.
    const i = await signupTenant(t.api);
    await t.sql(
      `insert into usage_events (tenant_id, kind, total_tokens, cost_usd, created_at)
       values ($1, 'tz_probe', 0, 0, date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' - interval '1 hour')`,
      [i.tenantId],
    );
    // A database whose sessions run 14 hours ahead of UTC, where that instant is already this month.
    const [{ db }] = await t.sql<{ db: string }>('select current_database() as db');
    await t.sql(`alter database ${db} set timezone = 'Pacific/Kiritimati'`);
    const ahead = await startTestServer({}, { databaseUrl: t.databaseUrl });
    try {
      const [{ tz }] = await ahead.server.deps.orm.em.fork().execute<{ tz: string }[]>("select current_setting('TimeZone') as tz");
      expect(tz).toBe('Pacific/Kiritimati');
      const res = await ahead.api.get('/admin/stats', admin);
      expect(res.status).toBe(200);
      expect(res.body.data.runsByKind.tz_probe).toBeUndefined();
    } finally {
      await ahead.close();
      await t.sql(`alter database ${db} reset timezone`);
    }
  });
});
