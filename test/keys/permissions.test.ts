// Keys with permissions. The walk reads the served OpenAPI document, so every /v1 operation (a new
// one too) is tried with every preset: a key without the operation's permission is refused before
// the operation reads its input, and a key with it is never refused for want of a permission.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let tenant: SignedUpTenant;

interface Operation {
  method: string;
  path: string;
  permission: string;
}

let operations: Operation[] = [];
let presets: { name: string; permissions: string[] }[] = [];
let allPermissions: string[] = [];
const presetKeys = new Map<string, string>();

const owner = () => bearer(tenant.token);

async function createKey(body: Record<string, unknown>): Promise<ApiResponse> {
  return t.api.post('/dashboard/api-keys', body, { headers: owner() });
}

async function call(op: { method: string; path: string }, key: string, body: unknown = {}): Promise<ApiResponse> {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => (/id$/i.test(name) ? '00000000-0000-4000-8000-000000000000' : 'some-key'));
  const headers = bearer(key);
  switch (op.method) {
    case 'get':
      return t.api.get(path, { headers });
    case 'delete':
      return t.api.delete(path, { headers });
    case 'patch':
      return t.api.patch(path, body, { headers });
    default:
      return t.api.post(path, body, { headers });
  }
}

beforeAll(async () => {
  t = await startTestServer();
  tenant = await signupTenant(t.api);
  const doc = (await t.api.get('/openapi.json')).body;
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { 'x-permission'?: string; security?: Record<string, string[]>[] }>>)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(item)) {
      const permission = op['x-permission'];
      if (!permission) throw new Error(`${method.toUpperCase()} ${path} declares no permission`);
      operations.push({ method, path, permission });
    }
  }
  const catalog = (await t.api.get('/dashboard/permissions', { headers: owner() })).body.data;
  presets = catalog.presets;
  allPermissions = catalog.permissions.map((p: { name: string }) => p.name);
  for (const preset of presets) {
    const created = await createKey({ name: `preset-${preset.name}`, preset: preset.name });
    expect(created.status, created.text).toBe(201);
    presetKeys.set(preset.name, created.body.data.apiKey);
  }
});
afterAll(() => t?.close());

describe('the permission of every operation', () => {
  it('is documented as the role of each API-key security requirement', async () => {
    const doc = (await t.api.get('/openapi.json')).body;
    expect(operations.length).toBeGreaterThan(90);
    for (const op of operations) {
      const security = doc.paths[op.path][op.method].security;
      expect(security, `${op.method} ${op.path}`).toEqual([{ ApiKeyBearer: [op.permission] }, { ApiKeyHeader: [op.permission] }]);
      expect(allPermissions).toContain(op.permission);
    }
    // Every permission guards at least one operation.
    expect(new Set(operations.map((o) => o.permission))).toEqual(new Set(allPermissions.filter((p) => p !== 'project:prune')));
  });

  it('every preset against every operation: refused exactly when the preset lacks the permission', async () => {
    const wrong: string[] = [];
    for (const preset of presets) {
      const key = presetKeys.get(preset.name)!;
      for (const op of operations) {
        const res = await call(op, key);
        const denied = res.status === 403 && res.body?.error?.code === 'PERMISSION_DENIED';
        const allowed = preset.permissions.includes(op.permission);
        if (denied === allowed) wrong.push(`${preset.name}: ${op.method.toUpperCase()} ${op.path} answered ${res.status} ${res.body?.error?.code ?? ''}`);
        if (res.status >= 500) wrong.push(`${preset.name}: ${op.method.toUpperCase()} ${op.path} answered ${res.status}`);
        if (denied) expect(res.body.error.details).toEqual({ required: op.permission, key: `preset-${preset.name}`, granted: preset.permissions });
      }
    }
    expect(wrong).toEqual([]);
  });

  it('a read-only key changes nothing: every operation that is not a read is refused, whatever the body', async () => {
    const key = presetKeys.get('read-only')!;
    const before = (await t.api.get('/v1/project', { headers: bearer(tenant.apiKey) })).body.data;
    for (const op of operations.filter((o) => !o.permission.endsWith(':read'))) {
      const body = op.path.includes('collections') ? { slug: 'sneaky', label: 'x', domain_keys: ['hiring'] } : { name: 'sneaky', project: before.project };
      expectError(await call(op, key, body), 403, 'PERMISSION_DENIED');
    }
    expect((await t.api.get('/v1/project', { headers: bearer(tenant.apiKey) })).body.data).toEqual(before);
  });

  it('the environment keys keep every permission by default', async () => {
    const envs = (await t.api.get('/dashboard/environments', { headers: owner() })).body.data.environments;
    for (const env of envs) expect(env.permissions).toEqual(allPermissions);
    for (const op of operations) {
      const res = await call(op, tenant.apiKey);
      expect(res.body?.error?.code, `${op.method} ${op.path}`).not.toBe('PERMISSION_DENIED');
    }
  });
});

describe('named keys', () => {
  it('are created from a preset or a list, listed without their secret, and named in the audit log', async () => {
    const created = await createKey({ name: 'ci-runner', permissions: ['intents:run', 'runs:read', 'intents:run'], environment: 'development' });
    expect(created.status, created.text).toBe(201);
    const { key, apiKey } = created.body.data;
    expect(apiKey).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(key).toMatchObject({ name: 'ci-runner', kind: 'named', environment: 'development', permissions: ['intents:run', 'runs:read'], preset: null, expires_at: null, expired: false });
    expect(key.apiKeyPreview).toBe(`${apiKey.slice(0, 12)}...${apiKey.slice(-4)}`);

    const list = (await t.api.get('/dashboard/api-keys', { headers: owner() })).body.data.keys;
    expect(list.filter((k: { kind: string }) => k.kind === 'environment').map((k: { environment: string }) => k.environment).sort()).toEqual(['development', 'production']);
    expect(list.find((k: { name: string }) => k.name === 'ci-runner')).toEqual(key);
    expect(JSON.stringify(list)).not.toContain(apiKey);
    expect(list.find((k: { name: string }) => k.name === 'preset-deploy').preset).toBe('deploy');

    // A write by a named key is recorded under its name and preview.
    const collection = await t.api.post('/v1/collections', { slug: 'by-named-key', label: 'x', domain_keys: ['hiring'] }, { headers: bearer(presetKeys.get('full')!) });
    expect(collection.status, collection.text).toBe(201);
    const audit = (await t.api.get('/dashboard/audit-log', { headers: owner() })).body.data.entries;
    const created2 = audit.find((e: { action: string; details: { slug?: string } }) => e.action === 'collection.created' && e.details.slug === 'by-named-key');
    const fullKey = presetKeys.get('full')!;
    expect(created2.actor).toBe(`api-key:preset-full (${fullKey.slice(0, 12)}...${fullKey.slice(-4)})`);
    expect(audit.some((e: { action: string; details: { name?: string } }) => e.action === 'api_key.created' && e.details.name === 'ci-runner')).toBe(true);
  });

  it('refuses a taken name, no permissions, both a preset and a list, an unknown permission, a past expiry and an unknown environment', async () => {
    expectError(await createKey({ name: 'preset-full', preset: 'full' }), 409, 'KEY_NAME_TAKEN');
    expectError(await createKey({ name: 'nothing' }), 400, 'INVALID_INPUT');
    expectError(await createKey({ name: 'both', preset: 'full', permissions: ['intents:run'] }), 400, 'INVALID_INPUT');
    expectError(await createKey({ name: 'unknown', permissions: ['everything:all'] }), 400, 'INVALID_INPUT');
    expectError(await createKey({ name: 'past', preset: 'full', expires_at: '2020-01-01T00:00:00Z' }), 400, 'INVALID_INPUT');
    expectError(await createKey({ name: 'nowhere', preset: 'full', environment: 'staging' }), 400, 'INVALID_INPUT');
    expectError(await createKey({ name: 'Bad Name', preset: 'full' }), 400, 'INVALID_INPUT');
  });

  it('are managed by owners and admins only', async () => {
    const dev = await t.api.post('/dashboard/users', { email: `dev-${Date.now()}@example.com`, role: 'developer', password: 'correct horse battery' }, { headers: owner() });
    expect(dev.status).toBe(201);
    const login = await t.api.post('/auth/login', { email: dev.body.data.user.email, password: 'correct horse battery' });
    const devToken = bearer(login.body.data.token);
    expectError(await t.api.post('/dashboard/api-keys', { name: 'by-dev', preset: 'full' }, { headers: devToken }), 403, 'FORBIDDEN');
    expectError(await t.api.get('/dashboard/api-keys', { headers: devToken }), 403, 'FORBIDDEN');
  });

  it('a revoked key answers 401 API_KEY_REVOKED at once; its name is free again', async () => {
    const { apiKey, key } = (await createKey({ name: 'short-lived', preset: 'read-only' })).body.data;
    expect((await t.api.get('/v1/collections', { headers: bearer(apiKey) })).status).toBe(200);
    expect((await t.api.delete(`/dashboard/api-keys/${key.id}`, { headers: owner() })).status).toBe(200);
    expectError(await t.api.get('/v1/collections', { headers: bearer(apiKey) }), 401, 'API_KEY_REVOKED');
    expectError(await t.api.delete(`/dashboard/api-keys/${key.id}`, { headers: owner() }), 404, 'NOT_FOUND');
    const again = await createKey({ name: 'short-lived', preset: 'read-only' });
    expect(again.status).toBe(201);
    // By name too.
    expect((await t.api.delete('/dashboard/api-keys/short-lived', { headers: owner() })).status).toBe(200);
    expectError(await t.api.get('/v1/collections', { headers: bearer(again.body.data.apiKey) }), 401, 'API_KEY_REVOKED');
  });

  it('an expired key answers 401 API_KEY_EXPIRED', async () => {
    const { apiKey, key } = (await createKey({ name: 'expiring', preset: 'read-only', expires_at: '2999-01-01T00:00:00Z' })).body.data;
    expect(key.expires_at).toBe('2999-01-01T00:00:00.000Z');
    expect((await t.api.get('/v1/collections', { headers: bearer(apiKey) })).status).toBe(200);
    // Its time comes (moved into the past rather than waited for).
    await t.server.deps.sql.query(`update api_keys set expires_at = now() - interval '1 second' where id = $1`, [key.id]);
    expectError(await t.api.get('/v1/collections', { headers: bearer(apiKey) }), 401, 'API_KEY_EXPIRED');
    const listed = (await t.api.get('/dashboard/api-keys', { headers: owner() })).body.data.keys.find((k: { id: string }) => k.id === key.id);
    expect(listed.expired).toBe(true);
  });

  it('an environment key rotation leaves the environment\'s named keys working', async () => {
    const { apiKey } = (await createKey({ name: 'survivor', preset: 'read-only', environment: 'production' })).body.data;
    const envs = (await t.api.get('/dashboard/environments', { headers: owner() })).body.data.environments;
    const production = envs.find((e: { name: string }) => e.name === 'production');
    const rotated = await t.api.post(`/dashboard/environments/${production.id}/api-key/rotate`, {}, { headers: owner() });
    expect(rotated.status).toBe(200);
    expect((await t.api.get('/v1/collections', { headers: bearer(apiKey) })).status).toBe(200);
    tenant.apiKey = rotated.body.data.apiKey;
  });
});

describe('environment permissions', () => {
  it('an owner tightens an environment: its own key and its named keys lose what it no longer allows', async () => {
    const other = await signupTenant(t.api);
    const headers = bearer(other.token);
    const envs = (await t.api.get('/dashboard/environments', { headers })).body.data.environments;
    const development = envs.find((e: { name: string }) => e.name === 'development');
    const devKey = (await t.api.post(`/dashboard/environments/${development.id}/api-key/rotate`, {}, { headers })).body.data.apiKey;
    const named = (await t.api.post('/dashboard/api-keys', { name: 'dev-full', preset: 'full', environment: 'development' }, { headers })).body.data.apiKey;

    const set = await t.api.patch(`/dashboard/environments/${development.id}/permissions`, { preset: 'read-only' }, { headers });
    expect(set.status, set.text).toBe(200);
    expect(set.body.data.permissions).toEqual(allPermissions.filter((p) => p.endsWith(':read')));
    for (const key of [devKey, named]) {
      expect((await t.api.get('/v1/collections', { headers: bearer(key) })).status).toBe(200);
      const denied = expectError(await t.api.post('/v1/collections', { slug: 'nope', label: 'x', domain_keys: ['hiring'] }, { headers: bearer(key) }), 403, 'PERMISSION_DENIED');
      expect(denied.details.required).toBe('collections:write');
    }
    // A named key cannot be given more than its environment allows.
    expectError(await t.api.post('/dashboard/api-keys', { name: 'dev-writer', preset: 'full', environment: 'development' }, { headers }), 400, 'INVALID_INPUT');
    // Back to everything.
    const reset = await t.api.patch(`/dashboard/environments/${development.id}/permissions`, { permissions: null }, { headers });
    expect(reset.body.data.permissions).toEqual(allPermissions);
    expect((await t.api.post('/v1/collections', { slug: 'now-yes', label: 'x', domain_keys: ['hiring'] }, { headers: bearer(named) })).status).toBe(201);
    // Only owners and admins; another tenant's environment is not found.
    expectError(await t.api.patch(`/dashboard/environments/${development.id}/permissions`, { preset: 'full' }, { headers: owner() }), 404, 'NOT_FOUND');
  });
});

describe('intent runs', () => {
  it('a key without intents:run is refused, whether or not this process has seen the key before', async () => {
    const key = presetKeys.get('ingest-only')!;
    // Seen: remembered with its scope by an allowed call first.
    expect((await t.api.get('/v1/documents', { headers: bearer(key) })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const res = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: 'u1', resume_text: 'x' } }, { headers: bearer(key) });
      expectError(res, 403, 'PERMISSION_DENIED');
    }
    // A run-only key passes the permission check (no provider here: the run itself is refused later).
    const run = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: 'u1', resume_text: 'x' } }, { headers: bearer(presetKeys.get('run-only')!) });
    expect(run.body.error?.code).not.toBe('PERMISSION_DENIED');
  });
});
