// usage_events and session_messages are monthly partitions of created_at: the migration turns the
// tables into them (with their rows), the retention job makes months ahead and drops months no
// tenant may keep any more, and the hot writers and readers work on them as before.
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { applyMigrations, ensureDatabase, openOrm } from '../../db/orm.js';
import { enforceRetention } from '../../server/maintenance/enforce-retention.js';
import { bearer } from '../support/client.js';
import { signupTenant } from '../support/fixtures.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { startTestServer, type TestServer } from '../support/server.js';

const PARTITION_MIGRATION = 'Migration20261128140000_partition_history';
const DAY_MS = 24 * 3600 * 1000;

/** `<table>_pYYYY_MM` of the UTC month `offset` months from now. */
function monthName(table: string, offset: number, from = new Date()) {
  const d = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + offset, 1));
  return `${table}_p${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

async function partitionsOf(query: (text: string, params?: unknown[]) => Promise<{ name: string }[]>, table: string) {
  const rows = await query(`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = $1::regclass order by 1`, [table]);
  return rows.map((r) => r.name);
}

describe('the history migrations', () => {
  const adminUrl = inject('pgAdminUrl');
  const database = `liya_pm_${randomBytes(6).toString('hex')}`;
  let client: pg.Client;
  let url: string;

  beforeAll(async () => {
    await ensureDatabase(adminUrl, database);
    const u = new URL(adminUrl);
    u.pathname = `/${database}`;
    url = u.toString();
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  });

  it('keep every row of a database migrated before them, each in its month, with the indexes and keys; orphaned steps go', async () => {
    const names = readdirSync(new URL('../../db/migrations/', import.meta.url)).filter((f) => f.endsWith('.ts')).map((f) => f.replace(/\.ts$/, '')).sort();
    const before = names[names.indexOf(PARTITION_MIGRATION) - 1];
    const orm = await openOrm({ url, poolMax: 2, quiet: true });
    try {
      await orm.migrator.up({ to: before });
      const tenant = (await client.query(`insert into tenants (id, name, type, plan, is_active, enabled_domains, created_at, updated_at)
        values (gen_random_uuid(), 'Old', 'trial', 'pro', true, '["hiring"]', now(), now()) returning id`)).rows[0].id as string;
      const session = (await client.query(`insert into sessions (id, tenant_id, user_id, domain, status, message_count, tokens_used, cost_usd, last_activity_at, created_at)
        values (gen_random_uuid(), $1, 'u-1', 'hiring', 'active', 2, 0, 0, now(), now() - interval '200 days') returning id`, [tenant])).rows[0].id as string;
      // A row every 10 days over 14 months, and messages over 7.
      await client.query(`insert into usage_events (tenant_id, kind, domain, created_at) select $1, 'intent_run', 'hiring', now() - make_interval(days => g) from generate_series(0, 420, 10) g`, [tenant]);
      await client.query(`insert into session_messages (tenant_id, session_id, role, content, created_at) select $1, $2, 'user', '{"text":"hi"}', now() - make_interval(days => g) from generate_series(0, 210, 10) g`, [tenant, session]);
      const events = (await client.query(`select id, created_at from usage_events order by id`)).rows;
      // Steps whose runs were deleted before their runs' delete trigger existed.
      for (const kind of ['workflow', 'agent', 'eval']) {
        await client.query(`insert into run_steps (tenant_id, run_kind, run_id, index, type, name, status, started_at, completed_at)
          values ($1, $2, gen_random_uuid(), 0, 'llm', 'orphan', 'completed', now(), now())`, [tenant, kind]);
      }

      await applyMigrations(orm);

      expect((await client.query(`select 1 from run_steps`)).rows).toEqual([]);

      expect((await client.query(`select id, created_at from usage_events order by id`)).rows).toEqual(events);
      expect(Number((await client.query(`select count(*) from session_messages`)).rows[0].count)).toBe(22);
      const kinds = (await client.query(`select relname, relkind from pg_class where relname in ('usage_events', 'session_messages') order by 1`)).rows;
      expect(kinds).toEqual([{ relname: 'session_messages', relkind: 'p' }, { relname: 'usage_events', relkind: 'p' }]);
      const query = async (text: string, params?: unknown[]) => (await client.query(text, params)).rows;
      const usageParts = await partitionsOf(query, 'usage_events');
      // Every month holding a row (the oldest is 14 months back), this one and three ahead.
      for (let offset = -13; offset <= 3; offset++) expect(usageParts).toContain(monthName('usage_events', offset));
      expect(usageParts).toContain('usage_events_default');
      expect(usageParts).not.toContain(monthName('usage_events', 4));
      expect(await partitionsOf(query, 'session_messages')).toContain(monthName('session_messages', -6));
      expect(Number((await client.query(`select count(*) from usage_events_default`)).rows[0].count)).toBe(0);
      expect(Number((await client.query(`select count(*) from session_messages_default`)).rows[0].count)).toBe(0);
      // Each row sits in its own month's partition.
      const misplaced = await client.query(`select e.created_at, c.relname from usage_events e join pg_class c on c.oid = e.tableoid
        where c.relname <> 'usage_events_p' || to_char(e.created_at at time zone 'UTC', 'YYYY_MM')`);
      expect(misplaced.rows).toEqual([]);
      const keys = (await client.query(`select conname, pg_get_constraintdef(oid) as def from pg_constraint where conrelid in ('usage_events'::regclass, 'session_messages'::regclass) order by 1`)).rows;
      expect(keys).toEqual(expect.arrayContaining([
        { conname: 'session_messages_pkey', def: 'PRIMARY KEY (id, created_at)' },
        { conname: 'usage_events_pkey', def: 'PRIMARY KEY (id, created_at)' },
        expect.objectContaining({ conname: 'session_messages_session_id_foreign', def: expect.stringContaining('REFERENCES sessions(id) ON DELETE CASCADE') }),
        expect.objectContaining({ conname: 'usage_events_tenant_id_foreign', def: expect.stringContaining('REFERENCES tenants(id) ON DELETE CASCADE') }),
      ]));
      const indexes = (await client.query(`select indexname from pg_indexes where tablename in ('usage_events', 'session_messages') order by 1`)).rows.map((r) => r.indexname);
      expect(indexes).toEqual(expect.arrayContaining(['session_messages_session_id_created_at_index', 'usage_events_tenant_id_created_at_index']));
      // A session's delete still takes its messages; a tenant's its events.
      await client.query(`delete from sessions where id = $1`, [session]);
      expect(Number((await client.query(`select count(*) from session_messages`)).rows[0].count)).toBe(0);
      await client.query(`delete from tenants where id = $1`, [tenant]);
      expect(Number((await client.query(`select count(*) from usage_events`)).rows[0].count)).toBe(0);
    } finally {
      await orm.close(true);
    }
  });
});

describe('partitions in service', () => {
  let t: TestServer;
  let fake: FakeLlm;

  beforeAll(async () => {
    fake = await startFakeLlm();
    t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test' });
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('a fresh database has this month, three ahead and an empty default, and runs are written and read through them', async () => {
    const parts = await partitionsOf(t.sql as never, 'usage_events');
    expect(parts).toEqual(expect.arrayContaining([0, 1, 2, 3].map((m) => monthName('usage_events', m)).concat('usage_events_default')));
    const a = await signupTenant(t.api);
    const run = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: 'u-1', resume_text: 'Backend engineer, ten years of Go and PostgreSQL.' } }, { headers: bearer(a.apiKey) });
    expect(run.status, run.text).toBe(200);
    const events = await t.sql<{ relname: string }>(`select c.relname from usage_events e join pg_class c on c.oid = e.tableoid where e.tenant_id = $1`, [a.tenantId]);
    expect(events.length).toBeGreaterThan(0);
    expect(new Set(events.map((e) => e.relname))).toEqual(new Set([monthName('usage_events', 0)]));
    const messages = await t.sql<{ relname: string }>(`select c.relname from session_messages m join pg_class c on c.oid = m.tableoid where m.session_id = $1`, [run.body.data.session_id]);
    expect(messages).toHaveLength(2);
    expect(new Set(messages.map((m) => m.relname))).toEqual(new Set([monthName('session_messages', 0)]));
    const detail = await t.api.get(`/dashboard/sessions/${run.body.data.session_id}`, { headers: bearer(a.token) });
    expect(detail.status, detail.text).toBe(200);
    expect(detail.body.data.messages).toHaveLength(2);
    expect(await t.sql(`select 1 from usage_events_default union all select 1 from session_messages_default`)).toEqual([]);
  });

  it('the retention job makes missing months (moving rows the default partition caught) and drops months past every retention', async () => {
    const a = await signupTenant(t.api);
    const ahead = monthName('usage_events', 3);
    const old = new Date(Date.now() - 900 * DAY_MS);
    const oldName = monthName('usage_events', 0, old);
    const oldFrom = new Date(Date.UTC(old.getUTCFullYear(), old.getUTCMonth(), 1));
    const oldTo = new Date(Date.UTC(old.getUTCFullYear(), old.getUTCMonth() + 1, 1));
    // A month far older than any plan keeps, with a row; a month within reach, with a row.
    await t.sql(`create table "${oldName}" partition of usage_events for values from ('${oldFrom.toISOString()}') to ('${oldTo.toISOString()}')`);
    await t.sql(`insert into usage_events (tenant_id, kind, created_at) values ($1, 'intent_run', $2)`, [a.tenantId, new Date(oldFrom.getTime() + DAY_MS)]);
    // The month three ahead went missing: a row for it lands in the default partition.
    await t.sql(`drop table "${ahead}"`);
    const aheadAt = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 3, 2));
    await t.sql(`insert into usage_events (tenant_id, kind, created_at) values ($1, 'intent_run', $2)`, [a.tenantId, aheadAt]);
    expect(await t.sql(`select 1 from usage_events_default`)).toHaveLength(1);

    const report = await enforceRetention(t.server.deps, { pauseMs: 0 });
    expect(report.partitions.created).toContain(ahead);
    expect(report.partitions.dropped).toContain(oldName);
    expect(report.partitions.deferred).toEqual([]);
    const parts = await partitionsOf(t.sql as never, 'usage_events');
    expect(parts).toContain(ahead);
    expect(parts).not.toContain(oldName);
    expect(await t.sql(`select 1 from pg_class where relname = $1`, [oldName])).toEqual([]);
    expect(await t.sql(`select 1 from usage_events_default`)).toEqual([]);
    const moved = await t.sql<{ relname: string }>(`select c.relname from usage_events e join pg_class c on c.oid = e.tableoid where e.created_at = $1`, [aheadAt]);
    expect(moved).toEqual([{ relname: ahead }]);
    // Idempotent: nothing more to make or drop.
    const again = await enforceRetention(t.server.deps, { pauseMs: 0 });
    expect(again.partitions).toEqual({ created: [], dropped: [], deferred: [] });
  });

  it('a partition change that waits for a lock longer than the lock timeout is left for the next run', async () => {
    const ahead = monthName('session_messages', 3);
    await t.sql(`drop table "${ahead}"`);
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      // A long transaction holding the parent: ATTACH would wait for it.
      await holder.query('begin');
      await holder.query('lock table session_messages in access exclusive mode');
      const report = await enforceRetention(t.server.deps, { pauseMs: 0, lockTimeoutMs: 50 });
      expect(report.partitions.deferred).toContain(ahead);
      await holder.query('rollback');
    } finally {
      await holder.end();
    }
    const report = await enforceRetention(t.server.deps, { pauseMs: 0 });
    expect(report.partitions.created).toEqual([ahead]);
  });
});
