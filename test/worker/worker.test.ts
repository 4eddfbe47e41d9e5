import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { signupTenant } from '../support/fixtures.js';
import { waitFor } from '../support/wait-for.js';

describe('in-process job runner', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('reports the engine ready', async () => {
    const res = await t.api.get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { status: 'ready', engine: true, db: true } });
  });

  it('runs the prune_expired maintenance task: expired rows go, live rows stay', async () => {
    const owner = await signupTenant(t.api);
    await t.sql(`update email_tokens set expires_at = now() - interval '1 hour' where user_id = $1`, [owner.userId]);
    const live = await t.api.post('/auth/password-reset/request', { email: owner.email });
    expect(live.status).toBe(200);
    await t.sql(`insert into login_attempts (id, email, succeeded, created_at) values (gen_random_uuid(), 'old@example.com', false, now() - interval '2 days'), (gen_random_uuid(), 'new@example.com', false, now())`);
    const before = await t.sql<{ kind: string }>('select kind from email_tokens where user_id = $1 order by kind', [owner.userId]);
    expect(before.map((r) => r.kind)).toEqual(['password_reset', 'verify_email']);

    await t.sql(
      `insert into sessions (id, tenant_id, user_id, domain, status, message_count, tokens_used, cost_usd, last_activity_at, created_at) values
       ('11111111-1111-4111-8111-111111111111', $1, 'idle-user', 'hiring', 'active', 0, 0, 0, now() - interval '3 days', now() - interval '3 days'),
       ('22222222-2222-4222-8222-222222222222', $1, 'busy-user', 'hiring', 'active', 0, 0, 0, now(), now())`,
      [owner.tenantId],
    );
    await t.sql(`insert into intent_cache (cache_key, tenant_id, output, model, expires_at, created_at) values ('old', $1, '{}', 'm', now() - interval '1 minute', now()), ('new', $1, '{}', 'm', now() + interval '1 hour', now())`, [owner.tenantId]);
    await t.sql(
      `insert into idempotency_keys (tenant_id, scope, key, request_hash, created_at) values ($1, 'test', 'old-key', 'h', now() - interval '25 hours'), ($1, 'test', 'new-key', 'h', now() - interval '23 hours')`,
      [owner.tenantId],
    );
    await t.sql(`select graphile_worker.add_job('prune_expired', '{}'::json)`);
    await waitFor(async () => (await t.sql(`select 1 from graphile_worker.jobs where task_identifier = 'prune_expired'`)).length === 0, 'the job to finish');

    const after = await t.sql<{ kind: string }>('select kind from email_tokens where user_id = $1', [owner.userId]);
    expect(after.map((r) => r.kind)).toEqual(['password_reset']);
    const attempts = await t.sql<{ email: string }>(`select email from login_attempts where email in ('old@example.com', 'new@example.com')`);
    expect(attempts.map((r) => r.email)).toEqual(['new@example.com']);
    const sessions = await t.sql<{ user_id: string; status: string }>(`select user_id, status from sessions where tenant_id = $1 order by user_id`, [owner.tenantId]);
    expect(sessions).toEqual([{ user_id: 'busy-user', status: 'active' }, { user_id: 'idle-user', status: 'expired' }]);
    expect((await t.sql<{ cache_key: string }>('select cache_key from intent_cache')).map((r) => r.cache_key)).toEqual(['new']);
    expect((await t.sql<{ key: string }>('select key from idempotency_keys where tenant_id = $1', [owner.tenantId])).map((r) => r.key)).toEqual(['new-key']);
  });

  it('records a heartbeat for its workers', async () => {
    const beats = await t.sql<{ worker_id: string }>('select worker_id from worker_heartbeats where last_seen_at > now() - interval \'1 minute\'');
    expect(beats.length).toBeGreaterThanOrEqual(1);
  });
});

describe('recovery after a crash', () => {
  it('releases job locks held by dead workers at start, so their jobs run again', async () => {
    const databaseUrl = await createTestDatabase();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(`select graphile_worker.add_job('prune_expired', '{}'::json)`);
      // As if a process was killed mid-job: the job stays locked by a worker that no longer exists.
      await client.query(`update graphile_worker._private_jobs set locked_by = 'worker-killed-9', locked_at = now()`);
      const locked = await client.query(`select locked_by from graphile_worker.jobs`);
      expect(locked.rows).toEqual([{ locked_by: 'worker-killed-9' }]);
    } finally {
      await client.end();
    }
    const t = await startTestServer({}, { databaseUrl });
    try {
      await waitFor(async () => (await t.sql('select 1 from graphile_worker.jobs')).length === 0, 'the stale job to run');
    } finally {
      await t.close();
    }
  });

  it('does not steal locks of workers that are alive', async () => {
    const databaseUrl = await createTestDatabase();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(`select graphile_worker.add_job('prune_expired', '{}'::json)`);
      await client.query(`update graphile_worker._private_jobs set locked_by = 'worker-alive', locked_at = now()`);
      await client.query(`insert into worker_heartbeats (worker_id, started_at, last_seen_at) values ('worker-alive', now(), now())`);
    } finally {
      await client.end();
    }
    const t = await startTestServer({}, { databaseUrl });
    try {
      const rows = await t.sql<{ locked_by: string }>('select locked_by from graphile_worker.jobs');
      expect(rows).toEqual([{ locked_by: 'worker-alive' }]);
    } finally {
      await t.close();
    }
  });
});

describe('WORKER=0', () => {
  it('runs no job runner but still reports the job schema ready', async () => {
    const t = await startTestServer({ WORKER: '0', HEARTBEAT_MS: '200' });
    try {
      const res = await t.api.get('/health/ready');
      expect(res.body.data).toEqual({ status: 'ready', engine: true, db: true });
      await t.sql(`select graphile_worker.add_job('prune_expired', '{}'::json)`);
      // The process beats on (three more beats: a runner would have beaten and taken the job by
      // then), yet no runner beats and the job was never attempted.
      const beats = new Set<string>();
      await waitFor(async () => {
        const [row] = await t.sql<{ seen: string }>(`select max(last_seen_at)::text as seen from worker_heartbeats where worker_id like 'process:%'`);
        beats.add(row.seen);
        return beats.size > 3;
      }, 'three more beats of the process');
      expect(await t.sql(`select 1 from worker_heartbeats where worker_id not like 'process:%'`)).toHaveLength(0);
      expect(await t.sql('select attempts from graphile_worker.jobs')).toEqual([{ attempts: 0 }]);
    } finally {
      await t.close();
    }
  });
});
