// Environments and API keys from the dashboard over real HTTP: listing, creation, per-environment
// and legacy rotation, concurrency, role checks, tenant isolation, storage and audit.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { adminHeaders, signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';
import { PERMISSIONS } from '../../server/keys/permissions.js';
import { waitFor } from '../support/wait-for.js';

const KEY = expect.stringMatching(/^svc_[A-Za-z0-9_-]{43}$/);
const PREVIEW = expect.stringMatching(/^svc_[A-Za-z0-9_-]{8}\.\.\.[A-Za-z0-9_-]{4}$/);
const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
// An environment's keys may do everything until an owner or admin tightens it.
const ALL_PERMISSIONS = Object.keys(PERMISSIONS);

let t: TestServer;
/** Every full key the server handed out in this file: none may be stored anywhere. */
const issuedKeys: string[] = [];

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const preview = (key: string) => `${key.slice(0, 12)}...${key.slice(-4)}`;

async function newTenant(): Promise<SignedUpTenant> {
  const tenant = await signupTenant(t.api);
  issuedKeys.push(tenant.apiKey);
  return tenant;
}

/** A key-authenticated call: the status tells whether the key works. */
const useKey = (key: string) => t.api.get('/v1/collections', { headers: bearer(key) });

async function expectKeyWorks(key: string) {
  const res = await useKey(key);
  expect(res.status, res.text).toBe(200);
}

async function expectKeyRevoked(key: string) {
  expectError(await useKey(key), 401, 'API_KEY_REVOKED');
  expectError(await t.api.get('/v1/collections', { headers: { 'x-api-key': key } }), 401, 'API_KEY_REVOKED');
}

interface Env {
  id: string;
  name: string;
  apiKeyPreview: string | null;
  apiKeyLastUsedAt: string | null;
  createdAt: string;
}

async function listEnvironments(token: string): Promise<Env[]> {
  const res = await t.api.get('/dashboard/environments', { headers: bearer(token) });
  expect(res.status, res.text).toBe(200);
  return res.body.data.environments;
}

async function envId(token: string, name: string): Promise<string> {
  const env = (await listEnvironments(token)).find((e) => e.name === name);
  expect(env, name).toBeDefined();
  return env!.id;
}

async function addMember(ownerToken: string, role: 'admin' | 'developer' | 'viewer') {
  const email = uniqueEmail(role);
  const invited = await t.api.post('/dashboard/users', { email, role, password: 'member password 1' }, { headers: bearer(ownerToken) });
  expect(invited.status, invited.text).toBe(201);
  const login = await t.api.post('/auth/login', { email, password: 'member password 1' });
  expect(login.status, login.text).toBe(200);
  return { email, token: login.body.data.token as string };
}

async function rotate(token: string, environmentId: string) {
  const res = await t.api.post(`/dashboard/environments/${environmentId}/api-key/rotate`, undefined, { headers: bearer(token) });
  if (res.status === 200) issuedKeys.push(res.body.data.apiKey);
  return res;
}

async function rotateAll(token: string) {
  const res = await t.api.post('/dashboard/api-key/rotate', undefined, { headers: bearer(token) });
  if (res.status === 200) issuedKeys.push(res.body.data.apiKey);
  return res;
}

async function activeKeyHashes(environmentId: string) {
  const rows = await t.sql<{ key_hash: string }>('select key_hash from api_keys where environment_id = $1 and revoked_at is null', [environmentId]);
  return rows.map((r) => r.key_hash);
}

describe('GET /dashboard/environments', () => {
  it('lists production and development with previews; last use appears after a key call', async () => {
    const owner = await newTenant();
    const before = await t.api.get('/dashboard/environments', { headers: bearer(owner.token) });
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      success: true,
      data: {
        environments: [
          { id: UUID, name: 'production', apiKeyPreview: preview(owner.apiKey), apiKeyLastUsedAt: null, permissions: ALL_PERMISSIONS, createdAt: ISO },
          { id: UUID, name: 'development', apiKeyPreview: PREVIEW, apiKeyLastUsedAt: null, permissions: ALL_PERMISSIONS, createdAt: ISO },
        ],
      },
    });
    expect(before.body.data.environments[1].apiKeyPreview).not.toBe(preview(owner.apiKey));

    await expectKeyWorks(owner.apiKey);
    // The last-use stamp is written after the response: wait for it.
    const envs = await waitFor(async () => {
      const list = await listEnvironments(owner.token);
      return list[0].apiKeyLastUsedAt !== null ? list : null;
    }, 'the key\'s last-use stamp');
    expect(envs[0]).toEqual({ id: before.body.data.environments[0].id, name: 'production', apiKeyPreview: preview(owner.apiKey), apiKeyLastUsedAt: ISO, permissions: ALL_PERMISSIONS, createdAt: ISO });
    expect(Date.parse(envs[0].apiKeyLastUsedAt!)).toBeLessThanOrEqual(Date.now() + 5_000);
    expect(envs[1].apiKeyLastUsedAt).toBeNull();
  });

  it('every role may read it, and only its own tenant\'s environments', async () => {
    const owner = await newTenant();
    const other = await newTenant();
    const viewer = await addMember(owner.token, 'viewer');
    const mine = await listEnvironments(owner.token);
    expect(await listEnvironments(viewer.token)).toEqual(mine);
    const theirs = await listEnvironments(other.token);
    expect(theirs.map((e) => e.id).some((id) => mine.some((m) => m.id === id))).toBe(false);
    expectError(await t.api.get('/dashboard/environments'), 401, 'UNAUTHORIZED');
  });
});

describe('POST /dashboard/environments', () => {
  let owner: SignedUpTenant;
  beforeAll(async () => {
    owner = await newTenant();
  });

  it('creates an environment with its own key, shown once (201); audited', async () => {
    const res = await t.api.post('/dashboard/environments', { name: 'staging' }, { headers: bearer(owner.token) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        environment: { id: UUID, name: 'staging', apiKeyPreview: PREVIEW, apiKeyLastUsedAt: null, permissions: ALL_PERMISSIONS, createdAt: ISO },
        apiKey: KEY,
      },
    });
    const { environment, apiKey } = res.body.data;
    issuedKeys.push(apiKey);
    expect(environment.apiKeyPreview).toBe(preview(apiKey));
    await expectKeyWorks(apiKey);
    await expectKeyWorks(owner.apiKey);

    const envs = await listEnvironments(owner.token);
    expect(envs.map((e) => e.name)).toEqual(['production', 'development', 'staging']);
    expect(envs[2]).toEqual(expect.objectContaining({ id: environment.id, apiKeyPreview: preview(apiKey) }));
    // The full key is never shown again.
    expect(JSON.stringify(envs)).not.toContain(apiKey);

    const audit = await t.api.get('/dashboard/audit-log?action=environment.created', { headers: bearer(owner.token) });
    expect(audit.body.data.entries).toEqual([
      expect.objectContaining({ actor: owner.email, action: 'environment.created', target_type: 'environment', target_id: environment.id, details: { name: 'staging' } }),
    ]);
  });

  it('a taken name is 409 CONFLICT', async () => {
    for (const name of ['production', 'development']) {
      expectError(await t.api.post('/dashboard/environments', { name }, { headers: bearer(owner.token) }), 409, 'CONFLICT');
    }
    expect((await t.api.post('/dashboard/environments', { name: 'qa' }, { headers: bearer(owner.token) })).status).toBe(201);
    expectError(await t.api.post('/dashboard/environments', { name: 'qa' }, { headers: bearer(owner.token) }), 409, 'CONFLICT');
    // Names are per tenant.
    const other = await newTenant();
    expect((await t.api.post('/dashboard/environments', { name: 'qa' }, { headers: bearer(other.token) })).status).toBe(201);
  });

  it('a bad name is 400 INVALID_INPUT', async () => {
    for (const name of ['Bad Name', 'UPPER', '', '   ', 'x'.repeat(65), 'emoji-\u{1F600}', 42, null]) {
      const res = await t.api.post('/dashboard/environments', { name }, { headers: bearer(owner.token) });
      expectError(res, 400, 'INVALID_INPUT');
      expect([...new Set(res.body.error.details.issues.map((i: { path: string }) => i.path))], JSON.stringify(name)).toEqual(['name']);
    }
    const [count] = await t.sql('select count(*)::int as n from environments where tenant_id = $1', [owner.tenantId]);
    expect(count.n).toBe(4);
  });

  it('developers and viewers cannot create one: 403 FORBIDDEN', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      const member = await addMember(owner.token, role);
      expectError(await t.api.post('/dashboard/environments', { name: `by-${role}` }, { headers: bearer(member.token) }), 403, 'FORBIDDEN');
    }
    const [count] = await t.sql(`select count(*)::int as n from environments where tenant_id = $1 and name like 'by-%'`, [owner.tenantId]);
    expect(count.n).toBe(0);
  });
});

describe('POST /dashboard/environments/{id}/api-key/rotate', () => {
  it('replaces that environment\'s key: the old one is revoked at once, the other environment\'s key still works', async () => {
    const owner = await newTenant();
    const devId = await envId(owner.token, 'development');
    const first = await rotate(owner.token, devId);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ success: true, data: { apiKey: KEY, apiKeyPreview: PREVIEW, maskedKey: PREVIEW }, message: expect.any(String) });
    expect(first.body.message.length).toBeGreaterThan(0);
    const devKey = first.body.data.apiKey as string;
    expect(first.body.data.apiKeyPreview).toBe(preview(devKey));
    expect(first.body.data.maskedKey).toBe(preview(devKey));
    await expectKeyWorks(devKey);

    const second = await rotate(owner.token, devId);
    expect(second.status).toBe(200);
    const newDevKey = second.body.data.apiKey as string;
    expect(newDevKey).not.toBe(devKey);
    // The very next request with the old key is refused.
    await expectKeyRevoked(devKey);
    await expectKeyWorks(newDevKey);
    await expectKeyWorks(owner.apiKey);

    const envs = await listEnvironments(owner.token);
    expect(envs.find((e) => e.id === devId)?.apiKeyPreview).toBe(preview(newDevKey));
    expect(envs.find((e) => e.name === 'production')?.apiKeyPreview).toBe(preview(owner.apiKey));
    expect(await activeKeyHashes(devId)).toEqual([sha256(newDevKey)]);
  });

  it('rotating production changes the preview in /auth/me and /dashboard/account', async () => {
    const owner = await newTenant();
    const prodId = await envId(owner.token, 'production');
    const res = await rotate(owner.token, prodId);
    expect(res.status).toBe(200);
    await expectKeyRevoked(owner.apiKey);
    await expectKeyWorks(res.body.data.apiKey);
    const me = await t.api.get('/auth/me', { headers: bearer(owner.token) });
    expect(me.body.data.tenant.apiKeyPreview).toBe(res.body.data.apiKeyPreview);
    const account = await t.api.get('/dashboard/account', { headers: bearer(owner.token) });
    expect(account.body.data.tenant.apiKeyPreview).toBe(res.body.data.apiKeyPreview);
  });

  it('an admin may rotate; developers and viewers get 403 FORBIDDEN and the key keeps working', async () => {
    const owner = await newTenant();
    const prodId = await envId(owner.token, 'production');
    for (const role of ['developer', 'viewer'] as const) {
      const member = await addMember(owner.token, role);
      expectError(await rotate(member.token, prodId), 403, 'FORBIDDEN');
      expectError(await rotateAll(member.token), 403, 'FORBIDDEN');
    }
    await expectKeyWorks(owner.apiKey);
    const admin = await addMember(owner.token, 'admin');
    const res = await rotate(admin.token, prodId);
    expect(res.status).toBe(200);
    const audit = await t.api.get('/dashboard/audit-log?action=api_key.rotated', { headers: bearer(owner.token) });
    expect(audit.body.data.entries[0]).toEqual(expect.objectContaining({ actor: admin.email, actor_type: 'user', target_id: prodId }));
  });

  it('another tenant\'s environment, an unknown or a malformed id is 404 NOT_FOUND', async () => {
    const owner = await newTenant();
    const other = await newTenant();
    const theirProd = await envId(other.token, 'production');
    expectError(await rotate(owner.token, theirProd), 404, 'NOT_FOUND');
    await expectKeyWorks(other.apiKey);
    expect(await activeKeyHashes(theirProd)).toEqual([sha256(other.apiKey)]);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', 'production']) {
      expectError(await rotate(owner.token, id), 404, 'NOT_FOUND');
    }
    await expectKeyWorks(owner.apiKey);
  });

  it('five concurrent rotations of one environment leave exactly one active key, the one that works', async () => {
    const owner = await newTenant();
    const devId = await envId(owner.token, 'development');
    const results = await Promise.all(Array.from({ length: 5 }, () => rotate(owner.token, devId)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const keys = results.map((r) => r.body.data.apiKey as string);
    expect(new Set(keys).size).toBe(5);

    const active = await activeKeyHashes(devId);
    expect(active).toHaveLength(1);
    const winners = keys.filter((k) => sha256(k) === active[0]);
    expect(winners).toHaveLength(1);
    await expectKeyWorks(winners[0]);
    for (const key of keys.filter((k) => k !== winners[0])) await expectKeyRevoked(key);
    await expectKeyWorks(owner.apiKey);
    const envs = await listEnvironments(owner.token);
    expect(envs.find((e) => e.id === devId)?.apiKeyPreview).toBe(preview(winners[0]));

    const audit = await t.api.get('/dashboard/audit-log?action=api_key.rotated', { headers: bearer(owner.token) });
    expect(audit.body.data.pagination.total).toBe(5);
  });
});

describe('POST /dashboard/api-key/rotate (legacy, tenant-wide)', () => {
  it('issues a new production key and revokes every other key of the tenant, and only that tenant', async () => {
    const owner = await newTenant();
    const other = await newTenant();
    const devId = await envId(owner.token, 'development');
    const devKey = (await rotate(owner.token, devId)).body.data.apiKey as string;
    const staging = await t.api.post('/dashboard/environments', { name: 'staging' }, { headers: bearer(owner.token) });
    const stagingKey = staging.body.data.apiKey as string;
    issuedKeys.push(stagingKey);
    await expectKeyWorks(devKey);
    await expectKeyWorks(stagingKey);

    const res = await rotateAll(owner.token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { apiKey: KEY, apiKeyPreview: PREVIEW, maskedKey: PREVIEW }, message: expect.any(String) });
    const newKey = res.body.data.apiKey as string;
    expect(res.body.data.apiKeyPreview).toBe(preview(newKey));
    expect(res.body.data.maskedKey).toBe(preview(newKey));
    expect(res.body.data.maskedKey).not.toContain(newKey.slice(12, -4));

    await expectKeyWorks(newKey);
    for (const key of [owner.apiKey, devKey, stagingKey]) await expectKeyRevoked(key);
    await expectKeyWorks(other.apiKey);

    const active = await t.sql<{ name: string; key_hash: string }>(
      `select e.name, k.key_hash from api_keys k join environments e on e.id = k.environment_id where k.tenant_id = $1 and k.revoked_at is null`,
      [owner.tenantId],
    );
    expect(active).toEqual([{ name: 'production', key_hash: sha256(newKey) }]);

    const envs = await listEnvironments(owner.token);
    expect(envs.map((e) => [e.name, e.apiKeyPreview])).toEqual([
      ['production', preview(newKey)],
      ['development', null],
      ['staging', null],
    ]);
    const me = await t.api.get('/auth/me', { headers: bearer(owner.token) });
    expect(me.body.data.tenant.apiKeyPreview).toBe(preview(newKey));

    // An environment left without a key gets one back by rotation.
    const again = await rotate(owner.token, devId);
    expect(again.status).toBe(200);
    await expectKeyWorks(again.body.data.apiKey);
    await expectKeyWorks(newKey);

    const audit = await t.api.get('/dashboard/audit-log?action=api_key.rotated_all', { headers: bearer(owner.token) });
    expect(audit.body.data.entries).toEqual([
      expect.objectContaining({ actor: owner.email, actor_type: 'user', target_type: 'tenant', target_id: owner.tenantId, details: { preview: preview(newKey) } }),
    ]);
  });
});

describe('rotations racing each other', () => {
  it('legacy and per-environment rotations at once all succeed and leave a consistent key set', async () => {
    const owner = await newTenant();
    const staging = await t.api.post('/dashboard/environments', { name: 'staging' }, { headers: bearer(owner.token) });
    issuedKeys.push(staging.body.data.apiKey);
    const ids = { production: await envId(owner.token, 'production'), development: await envId(owner.token, 'development'), staging: staging.body.data.environment.id as string };
    for (let round = 0; round < 5; round++) {
      const [legacy, ...perEnv] = await Promise.all([
        rotateAll(owner.token),
        rotate(owner.token, ids.development),
        rotate(owner.token, ids.staging),
        rotate(owner.token, ids.development),
        rotate(owner.token, ids.staging),
      ]);
      expect([legacy, ...perEnv].map((r) => r.status), `round ${round}: ${[legacy, ...perEnv].map((r) => r.text).join(' ')}`).toEqual([200, 200, 200, 200, 200]);
      // Only the legacy rotation touched production, so its key is the production key.
      expect(await activeKeyHashes(ids.production)).toEqual([sha256(legacy.body.data.apiKey)]);
      const returned = new Set(perEnv.map((r) => sha256(r.body.data.apiKey)));
      for (const id of [ids.development, ids.staging]) {
        const active = await activeKeyHashes(id);
        expect(active.length).toBeLessThanOrEqual(1);
        for (const hash of active) expect(returned.has(hash)).toBe(true);
      }
    }
  });
  it('a revoke-all that finishes after a rotation leaves no working key', async () => {
    const owner = await newTenant();
    const devId = await envId(owner.token, 'development');
    // Hold the tenant row so both requests queue behind it in a known order.
    const blocker = new pg.Client({ connectionString: t.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('select id from tenants where id = $1 for update', [owner.tenantId]);
      const waiting = (n: number) =>
        waitFor(async () => {
          const [row] = await t.sql<{ n: number }>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
          return row.n >= n;
        }, `${n} requests waiting for a lock`);
      const order: string[] = [];
      const rotation = rotate(owner.token, devId).then((r) => (order.push('rotation'), r));
      await waiting(1);
      const revokeAll = t.api.delete(`/admin/tenants/${owner.tenantId}/api-key`, { headers: adminHeaders }).then((r) => (order.push('revoke'), r));
      await waiting(2);
      await blocker.query('commit');
      const [rotated, revoked] = await Promise.all([rotation, revokeAll]);
      expect([rotated.status, revoked.status], revoked.text).toEqual([200, 200]);
      expect(order).toEqual(['rotation', 'revoke']);
      expect(await t.sql('select id from api_keys where tenant_id = $1 and revoked_at is null', [owner.tenantId])).toEqual([]);
      await expectKeyRevoked(rotated.body.data.apiKey);
      await expectKeyRevoked(owner.apiKey);
    } finally {
      await blocker.end();
    }
  });
});

describe('stored keys and the audit trail', () => {
  it('records api_key.rotated with the user\'s e-mail as actor and only a preview in details', async () => {
    const owner = await newTenant();
    const devId = await envId(owner.token, 'development');
    const first = await rotate(owner.token, devId);
    const second = await rotate(owner.token, devId);
    const res = await t.api.get('/dashboard/audit-log?action=api_key.rotated', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body.data.entries).toEqual([
      {
        id: UUID, actor: owner.email, actor_type: 'user', actor_id: owner.userId, action: 'api_key.rotated',
        target_type: 'environment', target_id: devId, details: { environment: 'development', preview: second.body.data.apiKeyPreview }, created_at: ISO,
      },
      {
        id: UUID, actor: owner.email, actor_type: 'user', actor_id: owner.userId, action: 'api_key.rotated',
        target_type: 'environment', target_id: devId, details: { environment: 'development', preview: first.body.data.apiKeyPreview }, created_at: ISO,
      },
    ]);
  });

  it('stores only SHA-256 hex digests and previews: no issued key appears in any table', async () => {
    // Runs after the rest of the file; a signup and a rotation of its own keep it meaningful alone.
    const owner = await newTenant();
    expect((await rotate(owner.token, await envId(owner.token, 'development'))).status).toBe(200);
    const rows = await t.sql<{ key_hash: string; key_preview: string }>('select key_hash, key_preview from api_keys');
    for (const row of rows) {
      expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.key_preview).toMatch(/^svc_[A-Za-z0-9_-]{8}\.\.\.[A-Za-z0-9_-]{4}$/);
    }
    const hashes = new Set(rows.map((r) => r.key_hash));
    for (const key of issuedKeys) expect(hashes.has(sha256(key)), preview(key)).toBe(true);

    const tables = await t.sql<{ schema: string; name: string }>(
      `select table_schema as schema, table_name as name from information_schema.tables
        where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
    );
    expect(tables.map((r) => r.name)).toEqual(expect.arrayContaining(['api_keys', 'audit_log', 'outbox_messages', 'tenants']));
    // The scan finds what is there: the digests, in api_keys only.
    const digests = issuedKeys.map(sha256);
    for (const { schema, name } of tables) {
      const [withDigest] = await t.sql<{ n: number }>(
        `select count(*)::int as n from "${schema}"."${name}" as r where exists (select 1 from unnest($1::text[]) as k where strpos(r::text, k) > 0)`,
        [digests],
      );
      expect(withDigest.n, `${schema}.${name}`).toBe(name === 'api_keys' ? issuedKeys.length : 0);
    }
    for (const { schema, name } of tables) {
      const found = await t.sql<{ n: number }>(
        `select count(*)::int as n from "${schema}"."${name}" as r where exists (select 1 from unnest($1::text[]) as k where strpos(r::text, k) > 0)`,
        [issuedKeys],
      );
      expect(found[0].n, `${schema}.${name}`).toBe(0);
    }
  });
});
