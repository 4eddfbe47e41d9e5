import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer } from '../support/client.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

let t: TestServer;
let tenant: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer();
  tenant = await signupTenant(t.api);
});
afterAll(() => t?.close());

const get = (headers?: Record<string, string>) => t.api.get('/v1/collections', { headers });
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const wellFormedUnknownKey = () => `svc_${randomBytes(32).toString('base64url')}`;

/** Records the SQL the server runs, through the ORM and the hot-path pool (pass-through spies). */
function spyOnServerSql() {
  const connection = t.server.deps.orm.em.getConnection();
  const sql = t.server.deps.sql;
  const originalExecute = connection.execute;
  const originalQuery = sql.query;
  const statements: string[] = [];
  connection.execute = function (this: unknown, ...args: unknown[]) {
    statements.push(String(args[0]));
    return (originalExecute as (...a: unknown[]) => unknown).apply(connection, args);
  } as typeof originalExecute;
  sql.query = function (this: unknown, ...args: unknown[]) {
    statements.push(String(args[0]));
    return (originalQuery as (...a: unknown[]) => unknown).apply(sql, args);
  } as typeof originalQuery;
  return {
    statements,
    restore: () => {
      connection.execute = originalExecute;
      sql.query = originalQuery;
    },
  };
}

describe('where the key is read from', () => {
  it('Authorization: Bearer and x-api-key both work', async () => {
    expect((await get(bearer(tenant.apiKey))).status).toBe(200);
    expect((await get({ 'x-api-key': tenant.apiKey })).status).toBe(200);
  });

  it('the Bearer scheme is case-insensitive and surrounding spaces are ignored', async () => {
    for (const authorization of [`bearer ${tenant.apiKey}`, `BEARER ${tenant.apiKey}`, `Bearer   ${tenant.apiKey}`, `  Bearer ${tenant.apiKey}  `]) {
      const res = await get({ authorization });
      expect(res.status, authorization).toBe(200);
      expect(res.body).toEqual({ success: true, data: { collections: [] } });
    }
    expect((await get({ 'x-api-key': `  ${tenant.apiKey} ` })).status).toBe(200);
  });

  it('x-api-key wins over an Authorization header carrying something else (a gateway\'s token)', async () => {
    const res = await get({ authorization: `Bearer ${tenant.token}`, 'x-api-key': tenant.apiKey });
    expect(res.status).toBe(200);
    expect((await get({ authorization: `Bearer ${tenant.apiKey}`, 'x-api-key': 'svc_short' })).body.error.code).toBe('INVALID_API_KEY_FORMAT');
  });

  it('the development key works as well as the production key', async () => {
    const envs = await t.api.get('/dashboard/environments', { headers: bearer(tenant.token) });
    expect(envs.body.data.environments.map((e: { name: string }) => e.name).sort()).toEqual(['development', 'production']);
    const created = await t.api.post('/dashboard/environments', { name: 'qa' }, { headers: bearer(tenant.token) });
    expect(created.status).toBe(201);
    expect((await get(bearer(created.body.data.apiKey))).status).toBe(200);
  });
});

describe('API key errors', () => {
  it('no key is 401 MISSING_API_KEY', async () => {
    expectError(await get(), 401, 'MISSING_API_KEY');
    expectError(await get({ authorization: '' }), 401, 'MISSING_API_KEY');
    expectError(await get({ 'x-api-key': '' }), 401, 'MISSING_API_KEY');
  });

  it('a malformed key is 401 INVALID_API_KEY_FORMAT', async () => {
    const body = tenant.apiKey.slice(4);
    const malformed = [
      'svc_short',
      `sk_${body}`,
      `SVC_${body}`,
      `svc_${body}x`,
      `svc_${body.slice(0, -1)}`,
      `svc_${body.slice(0, -1)}+`,
      `svc_${body.slice(0, -1)}=`,
      body,
      'Bearer',
      'svc_',
      `${tenant.apiKey} ${tenant.apiKey}`,
      'x'.repeat(5000),
    ];
    for (const key of malformed) {
      expectError(await get(bearer(key)), 401, 'INVALID_API_KEY_FORMAT');
      expectError(await get({ 'x-api-key': key }), 401, 'INVALID_API_KEY_FORMAT');
    }
    // Another scheme, or the key without a scheme but with junk, is malformed too.
    expectError(await get({ authorization: `Basic ${Buffer.from(`user:${tenant.apiKey}`).toString('base64')}` }), 401, 'INVALID_API_KEY_FORMAT');
  });

  it('a dashboard JWT sent to /v1 is 401 INVALID_API_KEY_FORMAT', async () => {
    expectError(await get(bearer(tenant.token)), 401, 'INVALID_API_KEY_FORMAT');
    expectError(await get({ 'x-api-key': tenant.token }), 401, 'INVALID_API_KEY_FORMAT');
  });

  it('a malformed key never reaches the database; a well-formed one is looked up once', async () => {
    const spy = spyOnServerSql();
    try {
      expectError(await get(bearer('svc_short')), 401, 'INVALID_API_KEY_FORMAT');
      expectError(await get(bearer(tenant.token)), 401, 'INVALID_API_KEY_FORMAT');
      expect(spy.statements.filter((s) => s.includes('api_keys'))).toEqual([]);
      expectError(await get(bearer(wellFormedUnknownKey())), 401, 'INVALID_API_KEY');
      expect(spy.statements.filter((s) => s.includes('key_hash'))).toHaveLength(1);
    } finally {
      spy.restore();
    }
  });

  it('a well-formed key nobody issued is 401 INVALID_API_KEY', async () => {
    expectError(await get(bearer(wellFormedUnknownKey())), 401, 'INVALID_API_KEY');
    expectError(await get({ 'x-api-key': wellFormedUnknownKey() }), 401, 'INVALID_API_KEY');
    // A key's hash is not a key.
    const hashLike = `svc_${Buffer.from(sha256(tenant.apiKey), 'hex').toString('base64url')}`;
    expectError(await get(bearer(hashLike)), 401, 'INVALID_API_KEY');
  });

  it('a rotated key is 401 API_KEY_REVOKED; the new one works', async () => {
    const owner = await signupTenant(t.api);
    const rotated = await t.api.post('/dashboard/api-key/rotate', undefined, { headers: bearer(owner.token) });
    expect(rotated.status).toBe(200);
    expectError(await get(bearer(owner.apiKey)), 401, 'API_KEY_REVOKED');
    expectError(await get({ 'x-api-key': owner.apiKey }), 401, 'API_KEY_REVOKED');
    expect((await get(bearer(rotated.body.data.apiKey))).status).toBe(200);
  });

  it('rotating one environment revokes only that environment\'s key', async () => {
    const owner = await signupTenant(t.api);
    const envs = (await t.api.get('/dashboard/environments', { headers: bearer(owner.token) })).body.data.environments;
    const dev = envs.find((e: { name: string }) => e.name === 'development');
    const [{ key_preview: devPreview }] = await t.sql<{ key_preview: string }>('select key_preview from api_keys where environment_id = $1 and revoked_at is null', [dev.id]);
    const rotated = await t.api.post(`/dashboard/environments/${dev.id}/api-key/rotate`, undefined, { headers: bearer(owner.token) });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.apiKeyPreview).not.toBe(devPreview);
    expect((await get(bearer(owner.apiKey))).status).toBe(200);
    expect((await get(bearer(rotated.body.data.apiKey))).status).toBe(200);
  });

  it('revoked keys are 401 API_KEY_REVOKED', async () => {
    const owner = await signupTenant(t.api);
    expect((await t.api.delete(`/admin/tenants/${owner.tenantId}/api-key`, { headers: adminHeaders })).status).toBe(200);
    expectError(await get(bearer(owner.apiKey)), 401, 'API_KEY_REVOKED');
  });

  it('a deactivated tenant\'s key is 403 ACCOUNT_INACTIVE; a revoked key of it stays 401 API_KEY_REVOKED', async () => {
    const owner = await signupTenant(t.api);
    const rotated = await t.api.post('/dashboard/api-key/rotate', undefined, { headers: bearer(owner.token) });
    const res = await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: false }, { headers: adminHeaders });
    expect(res.status).toBe(200);
    expectError(await get(bearer(rotated.body.data.apiKey)), 403, 'ACCOUNT_INACTIVE');
    expectError(await get({ 'x-api-key': rotated.body.data.apiKey }), 403, 'ACCOUNT_INACTIVE');
    expectError(await get(bearer(owner.apiKey)), 401, 'API_KEY_REVOKED');
  });
});

describe('key storage', () => {
  it('no table holds a plaintext key; api_keys holds its SHA-256 and a preview', async () => {
    const owner = await signupTenant(t.api);
    const issued: string[] = [tenant.apiKey, owner.apiKey];
    const env = await t.api.post('/dashboard/environments', { name: 'staging' }, { headers: bearer(owner.token) });
    issued.push(env.body.data.apiKey);
    const envRotation = await t.api.post(`/dashboard/environments/${env.body.data.environment.id}/api-key/rotate`, undefined, { headers: bearer(owner.token) });
    issued.push(envRotation.body.data.apiKey);
    const created = await t.api.post('/admin/tenants', { tenantName: 'Scanned' }, { headers: adminHeaders });
    issued.push(created.body.data.apiKey);
    const adminRotation = await t.api.post(`/admin/tenants/${created.body.data.tenant.id}/api-key/rotate`, undefined, { headers: adminHeaders });
    issued.push(adminRotation.body.data.apiKey);
    for (const key of issued) expect(key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    // Use them, so last-use bookkeeping has run too.
    for (const key of issued.slice(-1)) expect((await get(bearer(key))).status).toBe(200);

    const columns = await t.sql<{ table_name: string; column_name: string }>(
      `select c.table_name, c.column_name from information_schema.columns c
         join information_schema.tables tb on tb.table_schema = c.table_schema and tb.table_name = c.table_name and tb.table_type = 'BASE TABLE'
        where c.table_schema = 'public' and c.data_type in ('text', 'character varying', 'character', 'jsonb', 'json')
        order by c.table_name, c.column_name`,
    );
    const tables = new Set(columns.map((c) => c.table_name));
    for (const table of ['api_keys', 'audit_log', 'outbox_messages', 'tenants', 'users', 'environments']) expect(tables.has(table), table).toBe(true);
    for (const { table_name, column_name } of columns) {
      for (const key of issued) {
        // The secret part alone must not appear either (for example without its prefix).
        const rows = await t.sql<{ n: number }>(
          `select count(*)::int as n from "${table_name}" where strpos("${column_name}"::text, $1) > 0 or strpos("${column_name}"::text, $2) > 0`,
          [key, key.slice(4)],
        );
        expect(rows[0].n, `${table_name}.${column_name}`).toBe(0);
      }
    }

    const [stored] = await t.sql<{ key_hash: string; key_preview: string }>(
      `select k.key_hash, k.key_preview from api_keys k join environments e on e.id = k.environment_id
        where k.tenant_id = $1 and e.name = 'production' and k.revoked_at is null`,
      [owner.tenantId],
    );
    expect(stored.key_hash).toBe(sha256(owner.apiKey));
    expect(stored.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.key_preview).toBe(`${owner.apiKey.slice(0, 12)}...${owner.apiKey.slice(-4)}`);
    // Every issued key is stored as exactly one hash.
    for (const key of issued) {
      expect(await t.sql('select count(*)::int as n from api_keys where key_hash = $1', [sha256(key)])).toEqual([{ n: 1 }]);
    }
  });

  it('no response after the one that issued it shows the key', async () => {
    const owner = await signupTenant(t.api);
    const headers = bearer(owner.token);
    const responses = [
      await t.api.get('/auth/me', { headers }),
      await t.api.get('/dashboard/account', { headers }),
      await t.api.get('/dashboard/environments', { headers }),
      await t.api.get('/dashboard/audit-log', { headers }),
      await t.api.post('/auth/login', { email: owner.email, password: owner.password }),
      await t.api.get(`/admin/tenants/${owner.tenantId}`, { headers: adminHeaders }),
      await t.api.get('/admin/tenants?limit=100', { headers: adminHeaders }),
    ];
    for (const res of responses) {
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(owner.apiKey);
      expect(res.text).not.toContain(owner.apiKey.slice(4));
    }
  });
});

describe('apiKeyLastUsedAt', () => {
  const lastUsed = async (key: string) => {
    const [row] = await t.sql<{ last_used_at: Date | null }>('select last_used_at from api_keys where key_hash = $1', [sha256(key)]);
    return row.last_used_at;
  };

  it('is null until the key is used, then set on the key, the tenant and the environment', async () => {
    const owner = await signupTenant(t.api);
    expect(await lastUsed(owner.apiKey)).toBeNull();
    const before = await t.api.get(`/admin/tenants/${owner.tenantId}`, { headers: adminHeaders });
    expect(before.body.data.apiKeyLastUsedAt).toBeNull();
    // Failed attempts are not uses.
    await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: false }, { headers: adminHeaders });
    expectError(await get(bearer(owner.apiKey)), 403, 'ACCOUNT_INACTIVE');
    await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: true }, { headers: adminHeaders });
    expect(await lastUsed(owner.apiKey)).toBeNull();

    const start = Date.now();
    expect((await get(bearer(owner.apiKey))).status).toBe(200);
    // The touch is written beside the request, not inside it: wait until it lands.
    await vi.waitFor(async () => expect(await lastUsed(owner.apiKey)).not.toBeNull(), { timeout: 10_000, interval: 20 });
    const stamp = (await lastUsed(owner.apiKey))!;
    expect(stamp.getTime()).toBeGreaterThanOrEqual(start - 5_000);

    const after = await t.api.get(`/admin/tenants/${owner.tenantId}`, { headers: adminHeaders });
    expect(after.body.data.apiKeyLastUsedAt).toBe(stamp.toISOString());
    const envs = await t.api.get('/dashboard/environments', { headers: bearer(owner.token) });
    const byName = Object.fromEntries(envs.body.data.environments.map((e: { name: string; apiKeyLastUsedAt: string | null }) => [e.name, e.apiKeyLastUsedAt]));
    expect(byName).toEqual({ production: stamp.toISOString(), development: null });
  });

  it('a burst of 20 requests writes last_used_at once (coalesced to once a minute)', async () => {
    // Count every change of last_used_at with a trigger on this file's own database.
    await t.sql(`create table if not exists test_key_touches (key_id uuid not null, at timestamptz not null default clock_timestamp())`);
    await t.sql(`create or replace function test_log_key_touch() returns trigger language plpgsql as $$
      begin
        if new.last_used_at is distinct from old.last_used_at then insert into test_key_touches (key_id) values (new.id); end if;
        return new;
      end $$`);
    await t.sql(`drop trigger if exists test_key_touch on api_keys`);
    await t.sql(`create trigger test_key_touch after update on api_keys for each row execute function test_log_key_touch()`);
    const touches = async (keyId: string) => (await t.sql<{ n: number }>('select count(*)::int as n from test_key_touches where key_id = $1', [keyId]))[0].n;

    const owner = await signupTenant(t.api);
    const [{ id: keyId }] = await t.sql<{ id: string }>('select id from api_keys where key_hash = $1', [sha256(owner.apiKey)]);

    // A never-used key hit by 20 requests at once.
    const first = await Promise.all(Array.from({ length: 20 }, () => get(bearer(owner.apiKey))));
    expect(first.map((r) => r.status)).toEqual(Array(20).fill(200));
    await vi.waitFor(async () => expect(await touches(keyId)).toBeGreaterThanOrEqual(1), { timeout: 10_000, interval: 20 });
    const stamp = await lastUsed(owner.apiKey);
    expect(stamp).not.toBeNull();

    // 20 more, one after the other and at once, within the minute.
    for (let i = 0; i < 10; i++) expect((await get(bearer(owner.apiKey))).status).toBe(200);
    const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => get(i % 2 ? bearer(owner.apiKey) : { 'x-api-key': owner.apiKey })));
    expect(burst.map((r) => r.status)).toEqual(Array(10).fill(200));
    // Let any write the burst started reach the database through the server's own pool.
    await Promise.all(Array.from({ length: 5 }, () => t.server.deps.orm.em.getConnection().execute('select 1')));

    expect(await lastUsed(owner.apiKey)).toEqual(stamp);
    expect(await touches(keyId)).toBe(1);
  });
});
