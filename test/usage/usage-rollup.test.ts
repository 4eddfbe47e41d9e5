// Usage reports read whole UTC days from the daily rollup (kept by a trigger on usage_events) and
// only partial edge days from raw events. Every report here is compared with the aggregation of
// the raw events themselves, over history written straight into the database on past days, real
// intent runs today, and writers racing each other; then the detail is deleted and the totals stay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordUsage, writeUsageEvents, type UsageEventInput } from '../../server/usage/usage.service.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;

const admin = { headers: adminHeaders };
const ENV = '7b6f3d2e-0c1a-4d5e-9f80-1a2b3c4d5e6f';

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Rollup A' });
  b = await signupTenant(t.api, { companyName: 'Rollup B' });
  await seedHistory();
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** A small deterministic generator, so the history is varied but the same on every run. */
function generator(seed: number) {
  let s = seed;
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

// Events over 2024-05-27 .. 2024-06-04 (across a month end) at every kind of instant: midnight,
// the last microsecond of a day, and many in between; several kinds, domains (and none), intents
// (and none), models, environments, requests and non-requests; in one statement per tenant, so
// the trigger groups one statement's events over many days.
async function seedHistory() {
  const pick = generator(20241128);
  const choose = <T>(items: T[]) => items[Math.floor(pick() * items.length)];
  for (const tenant of [a, b]) {
    const rows: unknown[][] = [];
    const start = Date.UTC(2024, 4, 27);
    for (let i = 0; i < 400; i++) {
      const at = new Date(start + Math.floor(pick() * 9 * 86_400_000)).toISOString();
      const prompt = Math.floor(pick() * 2000);
      const completion = Math.floor(pick() * 500);
      rows.push([
        tenant.tenantId, choose([null, ENV]), choose(['intent_run', 'intent_run', 'agent_step', 'embedding', 'eval_judge']),
        choose(['hiring', 'hiring', 'support', null]), choose(['resume-analysis', 'job-match', 'cover-letter', null]), choose(['gpt-4o-mini', 'gpt-4o', null]),
        prompt, completion, prompt + completion, (pick() / 100).toFixed(6), Math.floor(pick() * 3000), pick() < 0.8, at,
      ]);
    }
    // Edges: exactly midnight, the last microsecond of a day, and exactly on instants the ranges below start or end at.
    for (const at of ['2024-05-29T00:00:00Z', '2024-05-29T23:59:59.999999Z', '2024-05-30T12:00:00Z', '2024-06-01T00:00:00Z', '2024-06-02T07:15:00Z']) {
      rows.push([tenant.tenantId, null, 'intent_run', 'hiring', 'job-match', 'gpt-4o', 10, 5, 15, '0.000015', 100, true, at]);
    }
    const values = rows.map((_, r) => `(${Array.from({ length: 13 }, (_, c) => `$${r * 13 + c + 1}`).join(', ')})`).join(', ');
    await t.sql(
      `insert into usage_events (tenant_id, environment_id, kind, domain, intent, model, prompt_tokens, completion_tokens, total_tokens, cost_usd,
                                 latency_ms, counts_as_request, created_at) values ${values}`,
      rows.flat(),
    );
  }
}

type Totals = { requests: number; tokens: number; costUsd: string };
interface Report {
  totals: Totals;
  days: ({ date: string } & Totals)[];
  domains: ({ domain: string | null } & Totals)[];
  intents: ({ domain: string | null; intent: string | null } & Totals)[];
}

/** The report as aggregating every raw event in [from, to) gives it (the statements reports ran before the rollup). */
async function rawReport(tenantId: string | null, from: string, to: string): Promise<Report> {
  const where = `created_at >= $1 and created_at < $2 ${tenantId ? 'and tenant_id = $3' : ''}`;
  const params = tenantId ? [from, to, tenantId] : [from, to];
  const sums = `count(*) filter (where counts_as_request)::int as requests, coalesce(sum(total_tokens), 0)::int as tokens, round(coalesce(sum(cost_usd), 0), 6)::text as "costUsd"`;
  const [totals] = await t.sql<Totals>(`select ${sums} from usage_events where ${where}`, params);
  const days = await t.sql<{ date: string } & Totals>(
    `select to_char(date_trunc('day', created_at at time zone 'UTC'), 'YYYY-MM-DD') as date, ${sums} from usage_events where ${where} group by 1 order by 1`,
    params,
  );
  const domains = await t.sql<{ domain: string | null } & Totals>(
    `select domain, ${sums} from usage_events where ${where} group by domain order by count(*) desc, domain`,
    params,
  );
  const intents = await t.sql<{ domain: string | null; intent: string | null } & Totals>(
    `select domain, intent, ${sums} from usage_events where ${where} and intent is not null group by domain, intent order by count(*) desc, domain, intent`,
    params,
  );
  return { totals, days, domains, intents };
}

const dashboardUsage = async (tenant: SignedUpTenant, query: string) => {
  const res = await t.api.get(`/dashboard/usage${query}`, { headers: bearer(tenant.token) });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};
const adminUsage = async (query: string) => {
  const res = await t.api.get(`/admin/usage${query}`, admin);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};
const reportOf = ({ totals, days, domains, intents }: Report) => ({ totals, days, domains, intents });

/** How usage_daily has the tenant's events, and how regrouping the events themselves gives them. */
async function rollupAndRegrouped(tenantId: string) {
  const cols = `kind, domain, intent, model, environment_id::text as environment_id`;
  const rollup = await t.sql(
    `select to_char(day, 'YYYY-MM-DD') as day, ${cols}, requests::int, events::int, prompt_tokens::int, completion_tokens::int, total_tokens::int,
            cost_usd::text, latency_ms::int
       from usage_daily where tenant_id = $1 order by 1, 2, 3, 4, 5, 6`,
    [tenantId],
  );
  const regrouped = await t.sql(
    `select to_char((created_at at time zone 'UTC')::date, 'YYYY-MM-DD') as day, ${cols}, (count(*) filter (where counts_as_request))::int as requests,
            count(*)::int as events, sum(prompt_tokens)::int as prompt_tokens, sum(completion_tokens)::int as completion_tokens,
            sum(total_tokens)::int as total_tokens, round(sum(cost_usd), 6)::text as cost_usd, sum(latency_ms)::int as latency_ms
       from usage_events where tenant_id = $1 group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`,
    [tenantId],
  );
  return { rollup, regrouped };
}

// [from, to) pairs: whole days, a partial day at either edge or both, one partial day, two adjacent
// partial days, an empty range, edges exactly on events (from inclusive, to exclusive), a range
// ending in the future, and a range over all time.
const RANGES: [string, string][] = [
  ['2024-05-28T00:00:00.000Z', '2024-06-04T00:00:00.000Z'],
  ['2024-05-28T13:30:00.000Z', '2024-06-02T07:15:00.000Z'],
  ['2024-05-29T00:00:00.000Z', '2024-06-01T00:00:00.000Z'],
  ['2024-05-30T05:00:00.000Z', '2024-05-30T18:00:00.000Z'],
  ['2024-05-30T05:00:00.000Z', '2024-05-31T03:00:00.000Z'],
  ['2024-05-30T12:00:00.000Z', '2024-06-01T00:00:00.000Z'],
  ['2024-05-30T05:00:00.000Z', '2024-05-30T05:00:00.000Z'],
  ['2024-05-27T00:00:00.001Z', '2024-06-04T23:59:59.999Z'],
  ['2000-01-01T00:00:00.000Z', '2100-01-01T00:00:00.000Z'],
];

describe('reports read the rollup and equal the raw aggregation', () => {
  it('the rollup holds exactly what regrouping the events gives, for every dimension', async () => {
    for (const tenant of [a, b]) {
      const { rollup, regrouped } = await rollupAndRegrouped(tenant.tenantId);
      expect(rollup.length).toBeGreaterThan(100);
      expect(rollup).toEqual(regrouped);
    }
  });

  it('the dashboard report equals the raw aggregation over whole days, partial edges, empty and open ranges', async () => {
    for (const [from, to] of RANGES) {
      const report = await dashboardUsage(a, `?from=${from}&to=${to}`);
      expect(report.from).toBe(from);
      expect(report.to).toBe(to);
      expect(reportOf(report), `${from} .. ${to}`).toEqual(await rawReport(a.tenantId, from, to));
    }
    expect((await dashboardUsage(a, `?from=${RANGES[0][0]}&to=${RANGES[0][1]}`)).days.map((d: { date: string }) => d.date)).toEqual([
      '2024-05-28', '2024-05-29', '2024-05-30', '2024-05-31', '2024-06-01', '2024-06-02', '2024-06-03',
    ]);
  });

  it('the admin report, for one tenant and for the whole platform, equals the raw aggregation', async () => {
    for (const [from, to] of RANGES) {
      const one = await adminUsage(`?tenantId=${b.tenantId}&from=${from}&to=${to}`);
      expect(reportOf(one), `${from} .. ${to}`).toEqual(await rawReport(b.tenantId, from, to));
      const all = await adminUsage(`?from=${from}&to=${to}`);
      expect(all.tenantId).toBeNull();
      expect(reportOf(all), `platform ${from} .. ${to}`).toEqual(await rawReport(null, from, to));
    }
  });

  it('dates without a time are UTC midnights', async () => {
    const report = await dashboardUsage(a, '?from=2024-05-29&to=2024-06-02');
    expect(reportOf(report)).toEqual(await rawReport(a.tenantId, '2024-05-29T00:00:00Z', '2024-06-02T00:00:00Z'));
  });
});

describe('every writer moves the rollup in its own transaction', () => {
  it('real intent runs (one statement with the session and messages) and recorded usage racing them for the same tenant sum exactly', async () => {
    const runs = Array.from({ length: 8 }, (_, i) =>
      t.api.post(i % 2 ? '/v1/hiring/career-coach' : '/v1/hiring/answer-feedback', { input: { user_id: `u-${i}`, message: `Question number ${i}` } }, { headers: bearer(a.apiKey) }),
    );
    // Several events per transaction in opposite orders, on the rows the runs write too.
    const models = ['gpt-4o-mini', 'gpt-4o', 'other-model'];
    const batches = Array.from({ length: 8 }, (_, i) => {
      const order = i % 2 ? [...models].reverse() : models;
      const events: UsageEventInput[] = order.map((model, k) => ({
        tenantId: a.tenantId, kind: 'intent_run', domain: 'hiring', intent: 'career-coach', model, promptTokens: 10 + k, completionTokens: i, costUsd: 0.000101, latencyMs: 7,
      }));
      return t.server.deps.orm.em.fork().transactional((tx) => writeUsageEvents(tx, events));
    });
    const answers = await Promise.all(runs);
    await Promise.all(batches);
    for (const res of answers) expect(res.status, res.text).toBe(200);

    const { rollup, regrouped } = await rollupAndRegrouped(a.tenantId);
    expect(rollup).toEqual(regrouped);
    // This month so far: whole days from the rollup only, equal to the raw events.
    const report = await dashboardUsage(a, '');
    expect(reportOf(report)).toEqual(await rawReport(a.tenantId, report.from, report.to));
    expect(report.intents.find((r: { intent: string }) => r.intent === 'career-coach').requests).toBe(4 + 8 * 3);
  });

  it('an event recorded on its own moves its day at once', async () => {
    const c = await signupTenant(t.api);
    await recordUsage(t.server.deps.orm.em.fork(), { tenantId: c.tenantId, kind: 'intent_run', domain: 'hiring', intent: 'job-match', promptTokens: 3, completionTokens: 4, costUsd: 0.5 });
    const [row] = await t.sql(`select requests::int, events::int, total_tokens::int, cost_usd::text from usage_daily where tenant_id = $1`, [c.tenantId]);
    expect(row).toEqual({ requests: 1, events: 1, total_tokens: 7, cost_usd: '0.500000' });
  });
});

describe('the totals outlive the detail', () => {
  it('whole-day reports stay equal after the raw events are deleted; partial edges count what is left', async () => {
    const [from, to] = RANGES[0];
    const before = await dashboardUsage(a, `?from=${from}&to=${to}`);
    const platformBefore = await adminUsage(`?from=${from}&to=${to}`);
    expect(before.totals.requests).toBeGreaterThan(0);
    // What retention does: delete old events, and nothing else.
    await t.sql(`delete from usage_events where tenant_id = $1 and created_at < $2`, [a.tenantId, to]);
    expect(await t.sql(`select 1 from usage_events where tenant_id = $1 and created_at < $2`, [a.tenantId, to])).toEqual([]);

    expect(await dashboardUsage(a, `?from=${from}&to=${to}`)).toEqual(before);
    expect(await adminUsage(`?tenantId=${a.tenantId}&from=${from}&to=${to}`)).toEqual({ tenantId: a.tenantId, ...before });
    expect(await adminUsage(`?from=${from}&to=${to}`)).toEqual(platformBefore);
    // A range with partial days: the whole days inside it are all still there.
    const [partFrom, partTo] = RANGES[1];
    const partial = await dashboardUsage(a, `?from=${partFrom}&to=${partTo}`);
    const whole = await dashboardUsage(a, '?from=2024-05-29&to=2024-06-02');
    expect(partial.totals).toEqual(whole.totals);
    expect(partial.days).toEqual(whole.days);
  });

  it('/admin/stats counts this month\'s events by kind from the rollup, also after the events are deleted', async () => {
    const c = await signupTenant(t.api);
    const before = (await t.api.get('/admin/stats', admin)).body.data;
    // The first instant of this UTC month counts; the microsecond before it does not.
    await t.sql(
      `insert into usage_events (tenant_id, kind, total_tokens, cost_usd, created_at)
       values ($1, 'rollup_probe', 0, 0, date_trunc('month', now() at time zone 'UTC') at time zone 'UTC'),
              ($1, 'rollup_probe', 0, 0, date_trunc('month', now() at time zone 'UTC') at time zone 'UTC'),
              ($1, 'rollup_probe', 0, 0, date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' - interval '1 microsecond')`,
      [c.tenantId],
    );
    const after = (await t.api.get('/admin/stats', admin)).body.data;
    expect(after.runsByKind).toEqual({ ...before.runsByKind, rollup_probe: 2 });
    await t.sql(`delete from usage_events where tenant_id = $1`, [c.tenantId]);
    expect((await t.api.get('/admin/stats', admin)).body.data.runsByKind).toEqual(after.runsByKind);
  });

  it('deleting a tenant removes its rollup rows with it', async () => {
    const c = await signupTenant(t.api);
    await recordUsage(t.server.deps.orm.em.fork(), { tenantId: c.tenantId, kind: 'intent_run' });
    expect(await t.sql(`select 1 from usage_daily where tenant_id = $1`, [c.tenantId])).toHaveLength(1);
    await t.sql(`delete from tenants where id = $1`, [c.tenantId]);
    expect(await t.sql(`select 1 from usage_daily where tenant_id = $1`, [c.tenantId])).toEqual([]);
  });
});
