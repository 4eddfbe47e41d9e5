// History must never slow the hot path. One tenant ("heavy") gets millions of history rows (usage
// events, intent sessions and their messages, agent sessions, runs and messages, workflow runs and
// their steps, audit entries), cloned from rows its own real calls wrote and spread over the last
// year; another tenant ("light") keeps a handful. Two Liya processes run side by side, one on an
// empty database and one on the grown database (after VACUUM ANALYZE, as autovacuum would have
// done); each has the same two tenants with a full page of each list and a usage event a day for
// the last month (so both answer the same number of rows), and each call goes to both in turn, one
// request at a time, so the machine's drift falls on both alike. The hot paths, for both tenants:
// an intent run, a webhook accept, a run list's first page and a deep page (a cursor in the middle
// of the history), one run, the usage report for this month, the audit log, the session list, /admin/stats, and a control that reads no history. Target: each p50 on the
// grown database within 10% of the same path's p50 on the empty one. The yardstick in the same run
// is the same server, same calls, with no history: the fastest honest way to answer them.
//
// Then retention: the heavy tenant's history is given a short retention, so the next retention
// job has about a million rows to delete; while it runs, /health/live and another tenant's list
// are read one request at a time, and PostgreSQL's lock table is sampled every 10 ms for any
// request waiting on a lock. Targets: /health/live under 250 ms, no lock wait over 100 ms. Last,
// the disk: the history tables' size after retention (and autovacuum, or a plain VACUUM if it has
// not come yet), then as many new rows as the retention deleted, written by real traffic-shaped
// inserts, and the size again: it should not grow by more than the new rows' share of the space
// retention freed.
//
// Liya runs as users run it: `liya start` in its own process, default log level and pool, the
// fake model provider in a worker thread. CPU per request is the Liya process's (from /proc).
// Figures are printed and written to results/growth.json; targets are reported PASS/MISS, never
// asserted.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { ensureDatabase } from '../../db/orm.js';
import { waitFor } from '../support/wait-for.js';
import { startFakeLlmThread } from './fake-llm-thread.js';
import {
  benchDatabase, callJson, type Cleanup, deployBenchWorkflow, fmt, latencyFigures, processCpuUs, sourceHash, startLiyaProcess, table, tenantIdOf, withDatabase,
} from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'growth.json');
const DATABASE = 'liya_bench_growth';
const ADMIN_SECRET = 'bench-admin-secret-0123456789abcdef';
const FLAT_TARGET = 0.10;
const LIVE_TARGET_MS = 250;
const LOCK_TARGET_MS = 100;

export interface GrowthSettings {
  /** History rows given to the heavy tenant (all tables together). */
  rows: number;
  /** Timed calls per path and phase (after a warm-up of a tenth as many). */
  samples: number;
  /** Whether to run the retention and disk phases. */
  retention: boolean;
}

interface Tenant {
  url: string;
  name: string;
  apiKey: string;
  token: string;
  tenantId: string;
  workflowId: string;
  webhookPath: string;
  webhook: Webhook;
  agentKey: string;
  runId: string;
}

async function signUp(url: string, companyName: string): Promise<{ apiKey: string; token: string }> {
  const res = await callJson(url, 'POST', '/auth/signup', {}, { companyName, email: `${companyName.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@example.com`, password: 'bench-password-123' });
  if (res.status !== 201) throw new Error(`signup: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return { apiKey: res.body.data.apiKey, token: res.body.data.token };
}

let unique = 0;
const nextId = () => `${process.pid}-${Date.now()}-${unique++}`;

function signed(t: Tenant) {
  const id = `msg_growth_${nextId()}`;
  const body = JSON.stringify({ candidate: `c-${id}`, score: unique % 100 });
  const at = new Date();
  return {
    body,
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': t.webhook.sign(id, at, body) },
  };
}

/** One hot path: a request to send, and the status that means it worked. */
interface HotPath {
  name: string;
  request(t: Tenant): { method: string; path: string; headers: Record<string, string>; body?: string };
  status: number;
}

const key = (t: Tenant) => ({ authorization: `Bearer ${t.apiKey}` });
const jwt = (t: Tenant) => ({ authorization: `Bearer ${t.token}` });

function hotPaths(deepCursor: Map<string, string>): HotPath[] {
  return [
    {
      name: 'intent run (uncached)', status: 200,
      request: (t) => ({
        method: 'POST', path: '/v1/run', headers: { ...key(t), 'content-type': 'application/json' },
        body: JSON.stringify({ domain: 'hiring', intent: 'career-path', input: { user_id: `user-${unique % 50}`, current_role: `Engineer ${nextId()}` } }),
      }),
    },
    { name: 'webhook accept', status: 202, request: (t) => ({ method: 'POST', path: t.webhookPath, ...signed(t) }) },
    { name: 'workflow runs, first page', status: 200, request: (t) => ({ method: 'GET', path: `/v1/workflows/${t.workflowId}/runs?pageSize=20`, headers: key(t) }) },
    {
      name: 'workflow runs, deep page (cursor)', status: 200,
      request: (t) => ({ method: 'GET', path: `/v1/workflows/${t.workflowId}/runs?pageSize=20&cursor=${encodeURIComponent(deepCursor.get(t.tenantId) ?? '')}`, headers: key(t) }),
    },
    { name: 'agent runs, first page', status: 200, request: (t) => ({ method: 'GET', path: `/v1/agents/${t.agentKey}/runs?pageSize=20`, headers: key(t) }) },
    { name: 'one workflow run', status: 200, request: (t) => ({ method: 'GET', path: `/v1/workflows/runs/${t.runId}`, headers: key(t) }) },
    { name: 'usage, this month', status: 200, request: (t) => ({ method: 'GET', path: '/dashboard/usage', headers: jwt(t) }) },
    { name: 'audit log', status: 200, request: (t) => ({ method: 'GET', path: '/dashboard/audit-log', headers: jwt(t) }) },
    { name: 'sessions', status: 200, request: (t) => ({ method: 'GET', path: '/dashboard/sessions', headers: jwt(t) }) },
    { name: '/admin/stats', status: 200, request: () => ({ method: 'GET', path: '/admin/stats', headers: { 'x-admin-secret': ADMIN_SECRET } }) },
    // The control: a read that touches no history. What it gains or loses between the phases is the
    // machine's drift (PostgreSQL's background writes, the other vCPU), not history.
    { name: 'control: workflows list (no history)', status: 200, request: (t) => ({ method: 'GET', path: '/v1/workflows', headers: key(t) }) },
  ];
}

async function timeCall(url: string, call: ReturnType<HotPath['request']>, expected: number, label: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}${call.path}`, { method: call.method, headers: call.headers, ...(call.body === undefined ? {} : { body: call.body }) });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== expected) throw new Error(`${label}: ${call.method} ${call.path} answered HTTP ${res.status} (expected ${expected}): ${text.slice(0, 400)}`);
  return ms;
}

interface PathFigures { p50Ms: number; p95Ms: number; cpuUsPerCall: number }

/** One server under test: its URL, its process and its tenants (heavy first, light second). */
interface Side { url: string; pid: number; tenants: Tenant[] }

/**
 * Every hot path for every tenant, on both servers: the same call to the empty one and to the grown
 * one in turn, one call at a time, so whatever the machine does meanwhile (the other vCPU,
 * PostgreSQL's background writes) falls on both alike. p50/p95 and each process's CPU per call.
 */
async function measurePaired(empty: Side, grown: Side, paths: HotPath[], samples: number) {
  const rows: { tenant: string; path: string; empty: PathFigures; grown: PathFigures }[] = [];
  for (const p of paths) {
    const roles = p.name === '/admin/stats' ? [0] : [0, 1];
    for (const role of roles) {
      const sides = [empty, grown].map((side) => ({ side, t: side.tenants[role], times: [] as number[] }));
      const label = `${sides[0].t.name} ${p.name}`;
      for (let i = 0; i < Math.max(5, Math.floor(samples / 10)); i++) for (const x of sides) await timeCall(x.side.url, p.request(x.t), p.status, label);
      const cpu0 = sides.map((x) => processCpuUs(x.side.pid));
      for (let i = 0; i < samples; i++) {
        // Alternate which goes first, so neither always follows the other.
        const order = i % 2 === 0 ? sides : [sides[1], sides[0]];
        for (const x of order) x.times.push(await timeCall(x.side.url, p.request(x.t), p.status, label));
      }
      const figures = sides.map((x, k) => {
        const f = latencyFigures(x.times);
        return { p50Ms: f.p50Ms, p95Ms: f.p95Ms, cpuUsPerCall: (processCpuUs(x.side.pid) - cpu0[k]) / samples };
      });
      rows.push({ tenant: p.name === '/admin/stats' ? 'platform' : sides[0].t.name, path: p.name, empty: figures[0], grown: figures[1] });
    }
  }
  return rows;
}

/** A tenant with a deployed webhook workflow, a deployed agent, and a few real runs of each kind. */
async function prepareTenant(url: string, name: string, db: pg.Client): Promise<Tenant> {
  const { apiKey, token } = await signUp(url, name);
  const tenantId = await tenantIdOf(db, apiKey);
  const deployed = await deployBenchWorkflow(url, apiKey, `${name} intake`, [
    { id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } },
    { id: 'shape', step_type: 'action', action_id: 'transform', config: { output: { candidate: '{{trigger.candidate}}', score: '{{trigger.score}}' } } },
    { id: 'done', step_type: 'end', config: { output: { ok: true } } },
  ]);
  const agentKey = 'growth-helper';
  const created = await callJson(url, 'POST', '/v1/agents', { authorization: `Bearer ${apiKey}` }, { agent_key: agentKey, name: 'Helper', goal: 'Help candidates', memory_config: { retention_days: 3650 } });
  if (created.status !== 201) throw new Error(`agent: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  const agentDeployed = await callJson(url, 'POST', `/v1/agents/${agentKey}/deploy`, { authorization: `Bearer ${apiKey}` });
  if (agentDeployed.status !== 200) throw new Error(`agent deploy: HTTP ${agentDeployed.status} ${JSON.stringify(agentDeployed.body)}`);
  const t: Tenant = {
    url, name, apiKey, token, tenantId, workflowId: deployed.workflow.id, webhookPath: new URL(deployed.webhook_url).pathname,
    webhook: new Webhook(deployed.webhook_secret), agentKey, runId: '',
  };
  for (let i = 0; i < 3; i++) {
    const ran = await callJson(url, 'POST', `/v1/agents/${agentKey}/run`, { authorization: `Bearer ${apiKey}` }, { input: { message: `Hello ${i}` }, user_id: `user-${i}` });
    if (ran.status !== 200) throw new Error(`agent run: HTTP ${ran.status} ${JSON.stringify(ran.body)}`);
  }
  const call = signed(t);
  const accepted = await fetch(`${url}${t.webhookPath}`, { method: 'POST', headers: call.headers, body: call.body });
  const acceptedBody = (await accepted.json()) as { data?: { run_id?: string } };
  if (accepted.status !== 202 || !acceptedBody.data?.run_id) throw new Error(`webhook: HTTP ${accepted.status} ${JSON.stringify(acceptedBody)}`);
  t.runId = acceptedBody.data.run_id;
  await waitFor(async () => {
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from run_steps where run_id = $1`, [t.runId]);
    return rows[0].n >= 3;
  }, 'the first webhook run to finish', 30_000);
  const intent = await callJson(url, 'POST', '/v1/run', { authorization: `Bearer ${apiKey}` }, { domain: 'hiring', intent: 'career-path', input: { user_id: 'user-0', current_role: 'Nurse' } });
  if (intent.status !== 200) throw new Error(`intent run: HTTP ${intent.status} ${JSON.stringify(intent.body)}`);
  return t;
}

// ----------------------------------------------------------------------------------- seeding

interface CloneSpec {
  table: string;
  /** Picks the template row (one of the tenant's real rows). */
  template: string;
  /** Column -> SQL expression over `g` (1..n, 1 newest) and `src` (the template row). */
  set: Record<string, string>;
}

/** Spread over the last 365 days: row g of n is (g / n) of a year old, newest first. */
const spreadOverYear = (n: number) => `now() - ((g::float8 / ${n}) * 365 * 86400 - 60) * interval '1 second'`;

async function columnsOf(db: pg.Client, tableName: string): Promise<string[]> {
  const { rows } = await db.query<{ column_name: string }>(
    `select column_name from information_schema.columns where table_schema = 'public' and table_name = $1 and is_generated = 'NEVER' order by ordinal_position`,
    [tableName],
  );
  return rows.map((r) => r.column_name);
}

/** Inserts n copies of the template row in batches of 50,000 rows (one statement each). */
async function cloneRows(db: pg.Client, spec: CloneSpec, tenantId: string, n: number) {
  const columns = await columnsOf(db, spec.table);
  const list = columns.map((c) => `"${c}"`).join(', ');
  const values = columns.map((c) => spec.set[c] ?? `src."${c}"`).join(', ');
  for (let from = 1; from <= n; from += 50_000) {
    const to = Math.min(n, from + 49_999);
    await db.query(
      `insert into ${spec.table} (${list})
       select ${values} from (select * from ${spec.table} where tenant_id = $1 and ${spec.template} limit 1) src, generate_series(${from}, ${to}) g`,
      [tenantId],
    );
  }
}

/**
 * Gives the tenant about `total` history rows over the last year. Partitioned tables get their
 * past months first (a server running for a year created each month's partition in its time).
 */
async function growHistory(db: pg.Client, t: Tenant, total: number, tag = 'grow', yearsOld = 1) {
  const n = (share: number) => Math.max(1, Math.round(total * share));
  const uuid = (prefix: string, expr = 'g') => `md5('${t.tenantId}/${tag}/${prefix}/' || (${expr})::text)::uuid`;
  const ageOf = (n: number) => (yearsOld ? spreadOverYear(n) : 'now()');
  const sessions = n(0.05);
  const agentSessions = n(0.02);
  const workflowRuns = n(0.08);
  const plan: { spec: CloneSpec; rows: number }[] = [
    { rows: n(0.3), spec: { table: 'usage_events', template: "kind is not null", set: { id: 'gen_random_uuid()', created_at: ageOf(n(0.3)) } } },
    { rows: sessions, spec: { table: 'sessions', template: 'true', set: { id: uuid('s'), user_id: `'user-' || (g % 5000)`, created_at: ageOf(sessions), last_activity_at: ageOf(sessions) } } },
    { rows: n(0.2), spec: { table: 'session_messages', template: 'true', set: { id: 'gen_random_uuid()', session_id: uuid('s', `1 + ((g - 1) / 4) % ${sessions}`), created_at: ageOf(n(0.2)) } } },
    { rows: agentSessions, spec: { table: 'agent_sessions', template: 'true', set: { id: uuid('as'), user_id: `'user-' || (g % 5000)`, created_at: ageOf(agentSessions), last_activity_at: ageOf(agentSessions) } } },
    { rows: n(0.1), spec: { table: 'agent_runs', template: 'true', set: { id: 'gen_random_uuid()', session_id: uuid('as', `1 + ((g - 1) / 5) % ${agentSessions}`), started_at: ageOf(n(0.1)), completed_at: ageOf(n(0.1)) } } },
    { rows: n(0.05), spec: { table: 'agent_messages', template: 'true', set: { id: 'gen_random_uuid()', session_id: uuid('as', `1 + ((g - 1) / 3) % ${agentSessions}`), run_id: 'null', created_at: ageOf(n(0.05)) } } },
    {
      rows: workflowRuns,
      spec: {
        table: 'workflow_runs', template: `status = 'completed'`,
        set: { id: uuid('wr'), conversation_id: uuid('wc'), started_at: ageOf(workflowRuns), updated_at: ageOf(workflowRuns), completed_at: ageOf(workflowRuns) },
      },
    },
    {
      rows: workflowRuns * 2,
      spec: { table: 'run_steps', template: `run_kind = 'workflow'`, set: { id: 'gen_random_uuid()', run_id: uuid('wr', `1 + ((g - 1) / 2) % ${workflowRuns}`), index: `(g - 1) % 2 + 100`, started_at: ageOf(workflowRuns * 2), completed_at: ageOf(workflowRuns * 2) } },
    },
    { rows: n(0.04), spec: { table: 'audit_log', template: 'true', set: { id: 'gen_random_uuid()', created_at: ageOf(n(0.04)) } } },
  ];
  for (const { spec, rows } of plan) {
    const started = performance.now();
    await cloneRows(db, spec, t.tenantId, rows);
    console.log(`  ${spec.table}: ${rows.toLocaleString('en')} rows in ${fmt((performance.now() - started) / 1000)} s`);
  }
  return plan.reduce((sum, p) => sum + p.rows, 0);
}

/**
 * What every tenant has before the measured phases: a full page of each list (25 audit entries, 25
 * agent runs) and a usage event on each of the last 31 days, so both phases answer the same number
 * of rows (a first page of 20, a month of daily usage rows): what changes between them is only how
 * much history lies behind.
 */
async function seedOnePage(db: pg.Client, t: Tenant) {
  await cloneRows(db, { table: 'audit_log', template: 'true', set: { id: 'gen_random_uuid()', created_at: `now() - g * interval '1 minute'` } }, t.tenantId, 25);
  await cloneRows(db, { table: 'agent_runs', template: 'true', set: { id: 'gen_random_uuid()', started_at: `now() - g * interval '1 minute'`, completed_at: `now() - g * interval '1 minute'` } }, t.tenantId, 25);
  await cloneRows(db, { table: 'usage_events', template: 'kind is not null', set: { id: 'gen_random_uuid()', created_at: `now() - (g - 1) * interval '1 day'` } }, t.tenantId, 31);
}

/** Monthly partitions for the last 13 months of every partitioned history table (idempotent). */
async function ensurePastPartitions(db: pg.Client) {
  const { rows } = await db.query<{ parent: string }>(`select c.relname as parent from pg_partitioned_table p join pg_class c on c.oid = p.partrelid join pg_namespace ns on ns.oid = c.relnamespace where ns.nspname = 'public'`);
  for (const { parent } of rows) {
    for (let back = 13; back >= 0; back--) {
      const { rows: range } = await db.query<{ from: string; to: string; suffix: string }>(
        `select to_char(m, 'YYYY-MM-DD') as from, to_char(m + interval '1 month', 'YYYY-MM-DD') as to, to_char(m, 'YYYY_MM') as suffix
           from (select date_trunc('month', now() at time zone 'UTC') - make_interval(months => $1) as m) s`,
        [back],
      );
      const { from, to, suffix } = range[0];
      const name = `${parent}_p${suffix}`;
      const exists = await db.query(`select 1 from pg_class where relname = $1`, [name]);
      if (exists.rowCount) continue;
      await db.query(`create table ${name} (like ${parent} including defaults including constraints)`);
      await db.query(`alter table ${parent} attach partition ${name} for values from ('${from} 00:00:00+00') to ('${to} 00:00:00+00')`);
    }
  }
  return rows.map((r) => r.parent);
}

/**
 * A cursor half-way through the tenant's workflow runs (at most 200,000 rows deep), reached the way
 * a client would: following next_cursor with pages of 100. The empty database's is its last page.
 */
async function deepCursorOf(url: string, t: Tenant, db: pg.Client): Promise<string> {
  const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from workflow_runs where tenant_id = $1 and workflow_id = $2`, [t.tenantId, t.workflowId]);
  const first = await callJson(url, 'GET', `/v1/workflows/${t.workflowId}/runs?pageSize=100`, key(t));
  const cursor: string | null = first.body?.data?.pagination?.next_cursor ?? null;
  if (first.status !== 200) throw new Error(`run list: HTTP ${first.status} ${JSON.stringify(first.body)}`);
  return cursor ? cursorAtDepth(url, t, Math.min(200_000, Math.floor(rows[0].n / 2)), cursor) : '';
}

/** Follows next_cursor pages of 100 until `depth` rows are behind (bounded: deep pages cost the same as the first). */
async function cursorAtDepth(url: string, t: Tenant, depth: number, start: string): Promise<string> {
  let cursor = start;
  for (let seen = 100; seen < depth; seen += 100) {
    const page = await callJson(url, 'GET', `/v1/workflows/${t.workflowId}/runs?pageSize=100&cursor=${encodeURIComponent(cursor)}`, key(t));
    const next = page.body?.data?.pagination?.next_cursor;
    if (page.status !== 200 || !next) break;
    cursor = next;
  }
  return cursor;
}

/** A Liya process on its own database with the two tenants, each with one page of history. */
async function startSide(adminUrl: string, database: string, fakeUrl: string, cleanup: Cleanup) {
  await ensureDatabase(adminUrl, database);
  const databaseUrl = withDatabase(adminUrl, database);
  const liya = await startLiyaProcess(databaseUrl, cleanup, { OPENAI_BASE_URL: fakeUrl, OPENAI_API_KEY: 'sk-bench-growth', ADMIN_SECRET });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add(`bench database client (${database})`, () => db.end());
  const heavy = await prepareTenant(liya.url, 'Heavy', db);
  // The heavy tenant is on the plan that keeps history longest (a year and more), so none of its
  // seeded year is due before the retention phase asks for less.
  const upgraded = await callJson(liya.url, 'PATCH', `/admin/tenants/${heavy.tenantId}`, { 'x-admin-secret': ADMIN_SECRET }, { billingPlan: 'enterprise' });
  if (upgraded.status !== 200) throw new Error(`plan change: HTTP ${upgraded.status} ${JSON.stringify(upgraded.body)}`);
  const light = await prepareTenant(liya.url, 'Light', db);
  await ensurePastPartitions(db);
  for (const t of [heavy, light]) await seedOnePage(db, t);
  return { side: { url: liya.url, pid: liya.child.pid!, tenants: [heavy, light] } as Side, db, databaseUrl };
}

export async function runGrowthBench(adminUrl: string, cleanup: Cleanup, settings: GrowthSettings) {
  const serverSource = await sourceHash();
  const fake = await startFakeLlmThread();
  cleanup.add('fake provider', () => fake.close());
  console.log('starting two liya processes, one on an empty database and one to grow (defaults; the fake provider in a worker thread) ...');
  const empty = await startSide(adminUrl, `${DATABASE}_empty`, fake.url, cleanup);
  const grown = await startSide(adminUrl, DATABASE, fake.url, cleanup);
  const [heavy, light] = grown.side.tenants;
  const db = grown.db;

  console.log(`growing the heavy tenant's history to about ${settings.rows.toLocaleString('en')} rows ...`);
  const partitioned = await ensurePastPartitions(db);
  const seedStarted = performance.now();
  const seeded = await growHistory(db, heavy, settings.rows);
  // A database that has lived a year has been vacuumed and analysed by autovacuum; right after a
  // bulk load it has not, and autovacuum would be working through it while we measure.
  for (const side of [empty, grown]) {
    await side.db.query('vacuum (analyze)');
    // The bulk load's dirty pages written out now, not by the checkpointer while we measure.
    await side.db.query('checkpoint');
  }
  await waitFor(async () => {
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker'`);
    return rows[0].n === 0;
  }, 'autovacuum to be idle', 600_000);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const { rows: sizeRows } = await db.query<{ bytes: string }>(`select pg_database_size(current_database())::text as bytes`);
  console.log(`seeded ${seeded.toLocaleString('en')} rows in ${fmt(seedSeconds)} s; database ${fmt(Number(sizeRows[0].bytes) / 1024 ** 3, 2)} GiB`);

  const cursors = new Map<string, string>();
  for (const side of [empty, grown]) for (const t of side.side.tenants) cursors.set(t.tenantId, await deepCursorOf(t.url, t, side.db));
  const paths = hotPaths(cursors);
  console.log(`timing ${paths.length} hot paths x 2 tenants, ${settings.samples} calls each on the empty and the grown server in turn ...`);
  const measured = await measurePaired(empty.side, grown.side, paths, settings.samples);
  const rows = measured.map((r) => {
    const ratio = r.grown.p50Ms / r.empty.p50Ms;
    return { ...r, ratio, pass: ratio <= 1 + FLAT_TARGET };
  });
  console.log('');
  console.log(table(
    ['tenant', 'hot path', 'empty p50 ms', 'grown p50 ms', 'grown/empty', 'empty p95', 'grown p95', 'CPU µs/call empty', 'grown', 'within 10%'],
    rows.map((r) => [r.tenant, r.path, fmt(r.empty.p50Ms, 2), fmt(r.grown.p50Ms, 2), fmt(r.ratio, 2), fmt(r.empty.p95Ms, 2), fmt(r.grown.p95Ms, 2), fmt(r.empty.cpuUsPerCall, 0), fmt(r.grown.cpuUsPerCall, 0), r.pass ? 'PASS' : 'MISS']),
  ));
  const flatPass = rows.every((r) => r.pass);
  console.log(`target: every hot path's p50 within ${FLAT_TARGET * 100}% from empty to ${seeded.toLocaleString('en')} rows: ${flatPass ? 'PASS' : 'MISS'}`);

  const retention = settings.retention ? await runRetentionPhase(grown.side.url, grown.databaseUrl, db, heavy, light) : null;

  const results = {
    measured_at: new Date().toISOString(),
    server_source: serverSource,
    database: benchDatabase(),
    settings,
    seeded_rows: seeded,
    seed_seconds: seedSeconds,
    database_bytes_grown: Number(sizeRows[0].bytes),
    partitioned_tables: partitioned,
    paths: rows,
    target: { p50_within: FLAT_TARGET, pass: flatPass },
    retention,
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  return results;
}

// --------------------------------------------------------------------------------- retention

/** The history tables' total size in bytes (partitions included). */
async function historyBytes(db: pg.Client): Promise<number> {
  const { rows } = await db.query<{ bytes: string }>(
    `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::text as bytes from pg_class c join pg_namespace ns on ns.oid = c.relnamespace
      where ns.nspname = 'public' and c.relkind = 'r'
        and (c.relname in ('usage_events', 'session_messages', 'sessions', 'agent_sessions', 'agent_runs', 'agent_messages', 'workflow_runs', 'run_steps', 'audit_log')
             or c.relname ~ '^(usage_events|session_messages)_p')`,
  );
  return Number(rows[0].bytes);
}

const HEAVY_RETENTION_DAYS = { usage_events: 292, sessions: 292, agent_sessions: 292, workflow_runs: 292 };

/** Reads `path` one request at a time until `stop()`; latencies in ms. */
async function readLoop(url: string, path: string, headers: Record<string, string>, stop: () => boolean) {
  const latencies: number[] = [];
  let failures = 0;
  while (!stop()) {
    const started = performance.now();
    const res = await fetch(`${url}${path}`, { headers });
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
    if (res.status !== 200) failures++;
  }
  return { ...latencyFigures(latencies), failures };
}

/** The longest any backend has waited for a lock, sampled every 10 ms until `stop()`. */
async function sampleLockWaits(databaseUrl: string, stop: () => boolean) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let maxMs = 0;
  let samples = 0;
  const waiting: Record<string, number> = {};
  try {
    while (!stop()) {
      const { rows } = await client.query<{ ms: number | null; query: string | null }>(
        `select extract(epoch from clock_timestamp() - l.waitstart) * 1000 as ms, a.query from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where not l.granted and l.waitstart is not null order by l.waitstart limit 1`,
      );
      samples++;
      const ms = rows[0]?.ms ?? 0;
      if (ms > maxMs) maxMs = ms;
      if (rows[0]?.query) waiting[rows[0].query.slice(0, 80)] = Math.max(waiting[rows[0].query.slice(0, 80)] ?? 0, ms);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await client.end();
  }
  return { samples, maxMs, waiting };
}

async function expiredRows(db: pg.Client, t: Tenant) {
  const { rows } = await db.query<{ n: number }>(
    `select ((select count(*) from usage_events where tenant_id = $1 and created_at < now() - interval '292 days')
           + (select count(*) from sessions where tenant_id = $1 and last_activity_at < now() - interval '292 days')
           + (select count(*) from workflow_runs where tenant_id = $1 and completed_at < now() - interval '292 days')
           + (select count(*) from agent_sessions where tenant_id = $1 and last_activity_at < now() - interval '292 days'))::int as n`,
    [t.tenantId],
  );
  return rows[0].n;
}

async function runRetentionPhase(url: string, databaseUrl: string, db: pg.Client, heavy: Tenant, light: Tenant) {
  const before = await historyBytes(db);
  const { rows: countRows } = await db.query<{ n: number }>(
    `select ((select count(*) from usage_events) + (select count(*) from session_messages) + (select count(*) from sessions) + (select count(*) from agent_sessions)
           + (select count(*) from agent_runs) + (select count(*) from agent_messages) + (select count(*) from workflow_runs) + (select count(*) from run_steps))::int as n`,
  );
  const expired = await expiredRows(db, heavy);
  const set = await callJson(url, 'PATCH', '/dashboard/retention', jwt(heavy), HEAVY_RETENTION_DAYS);
  if (set.status !== 200) throw new Error(`retention setting: HTTP ${set.status} ${JSON.stringify(set.body)}`);
  console.log(`retention: the heavy tenant keeps ${JSON.stringify(HEAVY_RETENTION_DAYS)} days; ${expired.toLocaleString('en')} runs, sessions and events (with their children) are past it`);

  let done = false;
  const live = readLoop(url, '/health/live', {}, () => done);
  const list = readLoop(url, `/v1/workflows/${light.workflowId}/runs?pageSize=20`, key(light), () => done);
  const locks = sampleLockWaits(databaseUrl, () => done);
  const started = performance.now();
  const { rows: startRows } = await db.query<{ at: Date }>('select now() as at');
  // The scheduled job, queued now instead of at its minute of the hour.
  await db.query(`select graphile_worker.add_job('enforce_retention', '{}'::json)`);
  await waitFor(async () => {
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'enforce_retention'`);
    return rows[0].n === 0;
  }, 'the retention job to finish', 3_600_000);
  const seconds = (performance.now() - started) / 1000;
  done = true;
  const [liveFigures, listFigures, lockFigures] = await Promise.all([live, list, locks]);
  const left = await expiredRows(db, heavy);
  const { rows: afterRows } = await db.query<{ n: number }>(
    `select ((select count(*) from usage_events) + (select count(*) from session_messages) + (select count(*) from sessions) + (select count(*) from agent_sessions)
           + (select count(*) from agent_runs) + (select count(*) from agent_messages) + (select count(*) from workflow_runs) + (select count(*) from run_steps))::int as n`,
  );
  const deleted = countRows[0].n - afterRows[0].n;
  const livePass = liveFigures.maxMs < LIVE_TARGET_MS;
  const lockPass = lockFigures.maxMs < LOCK_TARGET_MS;
  console.log('');
  console.log(table(
    ['while retention ran', 'calls', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'failed'],
    [
      ['GET /health/live', liveFigures.reads, fmt(liveFigures.p50Ms, 2), fmt(liveFigures.p95Ms, 2), fmt(liveFigures.p99Ms, 2), fmt(liveFigures.maxMs, 2), liveFigures.failures],
      ["another tenant's run list", listFigures.reads, fmt(listFigures.p50Ms, 2), fmt(listFigures.p95Ms, 2), fmt(listFigures.p99Ms, 2), fmt(listFigures.maxMs, 2), listFigures.failures],
    ],
  ));
  console.log(`retention deleted ${deleted.toLocaleString('en')} rows in ${fmt(seconds)} s (${fmt(deleted / seconds, 0)} rows/s); ${left} expired rows left`);
  console.log(`longest lock wait seen: ${fmt(lockFigures.maxMs, 1)} ms over ${lockFigures.samples} samples${Object.keys(lockFigures.waiting).length ? ` (${JSON.stringify(lockFigures.waiting)})` : ''}`);
  console.log(`targets: /health/live under ${LIVE_TARGET_MS} ms: ${livePass ? 'PASS' : 'MISS'}; no lock wait over ${LOCK_TARGET_MS} ms: ${lockPass ? 'PASS' : 'MISS'}`);

  // Disk: once the freed space is reusable (autovacuum, or a plain VACUUM standing in for it when
  // it has not come within two minutes), as many new rows as were deleted take no more room than
  // the history had before retention.
  const afterDelete = await historyBytes(db);
  const vacuumed = await waitFor(async () => {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_user_tables where relname in ('workflow_runs', 'run_steps', 'sessions', 'agent_runs') and coalesce(last_autovacuum, 'epoch') < $1`,
      [startRows[0].at],
    );
    return rows[0].n === 0;
  }, 'autovacuum after retention', 120_000).then(() => 'autovacuum', async () => {
    await db.query('vacuum');
    return 'VACUUM (autovacuum had not come within 2 minutes)';
  });
  const refillStarted = performance.now();
  const refilled = await growHistory(db, heavy, deleted, 'refill', 0);
  const afterRefill = await historyBytes(db);
  const growth = afterRefill - before;
  console.log(
    `history tables: ${fmt(before / 1024 ** 2, 0)} MiB before retention, ${fmt(afterDelete / 1024 ** 2, 0)} MiB after (space kept for reuse), ` +
      `${fmt(afterRefill / 1024 ** 2, 0)} MiB after ${refilled.toLocaleString('en')} new rows (${fmt((performance.now() - refillStarted) / 1000)} s; freed space made reusable by ${vacuumed}): ` +
      `${growth <= 0 ? 'no growth' : `grew ${fmt(growth / 1024 ** 2, 0)} MiB (${fmt((100 * growth) / before, 1)}%)`}`,
  );
  return {
    heavy_retention_days: HEAVY_RETENTION_DAYS,
    expired_before: expired,
    deleted_rows: deleted,
    seconds,
    expired_left: left,
    health_live: liveFigures,
    other_tenant_list: listFigures,
    lock_waits: lockFigures,
    disk: { before_bytes: before, after_retention_bytes: afterDelete, after_refill_bytes: afterRefill, refilled_rows: refilled, reuse_by: vacuumed, growth_bytes: growth },
    targets: { health_live_max_ms: LIVE_TARGET_MS, lock_wait_max_ms: LOCK_TARGET_MS, live_pass: livePass, lock_pass: lockPass },
  };
}
