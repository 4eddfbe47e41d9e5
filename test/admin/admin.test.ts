import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { ADMIN_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const admin = { headers: adminHeaders };

const TENANT_FIELDS = [
  'apiKeyLastUsedAt', 'billingEmail', 'billingPlan', 'costThisMonth', 'createdAt', 'defaultModel', 'disabledIntents', 'enabledDomains', 'hasApiKey', 'id', 'isActive',
  'modelFallbacks', 'monthlyRequestQuota', 'monthlyTokenQuota', 'requestsThisMonth', 'tenantId', 'tenantName', 'tenantType', 'tokensThisMonth', 'updatedAt',
].sort();

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

function issuePaths(res: ApiResponse): string[] {
  return res.body.error.details.issues.map((i: { path: string }) => i.path);
}

async function createTenant(body: Record<string, unknown> = { tenantName: 'Tenant' }) {
  const res = await t.api.post('/admin/tenants', body, admin);
  expect(res.status, res.text).toBe(201);
  return res.body.data as { tenant: Record<string, any>; apiKey: string };
}

const collections = (key: string) => t.api.get('/v1/collections', { headers: bearer(key) });

// Every admin route, filled with a real tenant id, so a route added later is covered too.
async function adminRoutes(tenantId: string): Promise<{ method: string; path: string; body?: unknown }[]> {
  const doc = (await t.api.get('/openapi.json')).body;
  const routes: { method: string; path: string; body?: unknown }[] = [];
  for (const [template, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
    if (!template.startsWith('/admin')) continue;
    for (const method of Object.keys(ops)) {
      const path = template.replace(/\{[^}]+\}/g, tenantId);
      routes.push({ method: method.toUpperCase(), path, body: method === 'post' || method === 'patch' ? { tenantName: 'Should not be created' } : undefined });
    }
  }
  return routes;
}

describe('admin authentication', () => {
  let tenantId: string;
  beforeAll(async () => {
    tenantId = (await createTenant({ tenantName: 'Auth target' })).tenant.id;
  });

  it('every /admin route is in the OpenAPI document', async () => {
    const routes = (await adminRoutes(tenantId)).map((r) => `${r.method} ${r.path.replace(tenantId, '{tenantId}')}`).sort();
    expect(routes).toEqual([
      'DELETE /admin/tenants/{tenantId}',
      'DELETE /admin/tenants/{tenantId}/api-key',
      'GET /admin/audit-log',
      'GET /admin/diagnostics',
      'GET /admin/stats',
      'GET /admin/tenants',
      'GET /admin/tenants/{tenantId}',
      'GET /admin/tenants/{tenantId}/export',
      'GET /admin/usage',
      'PATCH /admin/tenants/{tenantId}',
      'POST /admin/tenants',
      'POST /admin/tenants/import',
      'POST /admin/tenants/{tenantId}/api-key/rotate',
      'POST /admin/tenants/{tenantId}/erasures',
    ]);
  });

  it('no secret, an empty secret, or a wrong secret (same or other length) is 401 ADMIN_UNAUTHORIZED on every route', async () => {
    const wrongSameLength = ADMIN_SECRET.slice(0, -1) + (ADMIN_SECRET.endsWith('x') ? 'y' : 'x');
    expect(wrongSameLength.length).toBe(ADMIN_SECRET.length);
    const variants: (Record<string, string> | undefined)[] = [
      undefined,
      { 'x-admin-secret': '' },
      { 'x-admin-secret': wrongSameLength },
      { 'x-admin-secret': 'short' },
      { 'x-admin-secret': ADMIN_SECRET + '-and-more' },
      { 'x-admin-secret': ADMIN_SECRET.toUpperCase() },
      // The admin secret is not a bearer token.
      { authorization: `Bearer ${ADMIN_SECRET}` },
    ];
    const before = await t.sql<{ n: string }>('select count(*)::text as n from tenants');
    for (const route of await adminRoutes(tenantId)) {
      for (const headers of variants) {
        const res = await t.api.request(route.method, route.path, route.body, { headers });
        expect(res.status, `${route.method} ${route.path} ${JSON.stringify(headers)}`).toBe(401);
        expectError(res, 401, 'ADMIN_UNAUTHORIZED');
      }
    }
    // Nothing was created, rotated or revoked.
    expect(await t.sql('select count(*)::text as n from tenants')).toEqual(before);
    const keys = await t.sql('select count(*)::text as n from api_keys where tenant_id = $1 and revoked_at is null', [tenantId]);
    expect(keys).toEqual([{ n: '2' }]);
  });

  it('the right secret passes', async () => {
    const res = await t.api.get(`/admin/tenants/${tenantId}`, admin);
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(tenantId);
  });

  it('a server without ADMIN_SECRET answers 403 ADMIN_DISABLED on every route, even with a secret', async () => {
    const off = await startTestServer({ ADMIN_SECRET: '' });
    try {
      expect(off.server.deps.config.ADMIN_SECRET).toBeUndefined();
      for (const route of await adminRoutes(tenantId)) {
        for (const headers of [undefined, adminHeaders, { 'x-admin-secret': '' }]) {
          const res = await off.api.request(route.method, route.path, route.body, { headers });
          expect(res.status, `${route.method} ${route.path}`).toBe(403);
          expect(res.body.error.code).toBe('ADMIN_DISABLED');
        }
      }
      expect(await off.sql('select count(*)::text as n from tenants')).toEqual([{ n: '0' }]);
    } finally {
      await off.close();
    }
  });
});

describe('GET /admin/tenants', () => {
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) await createTenant({ tenantName: `Listed ${i}` });
  });

  it('lists tenants newest first with pagination {total, limit, offset}', async () => {
    const [{ n }] = await t.sql<{ n: string }>('select count(*)::text as n from tenants');
    const total = Number(n);
    expect(total).toBeGreaterThanOrEqual(4);
    const all = await t.api.get('/admin/tenants', admin);
    expect(all.status).toBe(200);
    expect(all.body.data.pagination).toEqual({ total, limit: 20, offset: 0 });
    expect(all.body.data.tenants).toHaveLength(Math.min(total, 20));
    for (const tenant of all.body.data.tenants) expect(Object.keys(tenant).sort()).toEqual(TENANT_FIELDS);
    const ids = all.body.data.tenants.map((x: { id: string }) => x.id);
    const expected = await t.sql<{ id: string }>('select id from tenants order by created_at desc, id limit 20');
    expect(ids).toEqual(expected.map((r) => r.id));

    const page = await t.api.get('/admin/tenants?limit=2&offset=1', admin);
    expect(page.status).toBe(200);
    expect(page.body.data.pagination).toEqual({ total, limit: 2, offset: 1 });
    expect(page.body.data.tenants.map((x: { id: string }) => x.id)).toEqual(ids.slice(1, 3));

    const past = await t.api.get(`/admin/tenants?offset=${total}`, admin);
    expect(past.body.data).toEqual({ tenants: [], pagination: { total, limit: 20, offset: total } });
  });

  it('clamps limit to 100', async () => {
    const res = await t.api.get('/admin/tenants?limit=1000', admin);
    expect(res.status).toBe(200);
    expect(res.body.data.pagination.limit).toBe(100);
  });

  it('refuses limit 0, a negative offset and non-numbers with 400 naming the field', async () => {
    for (const [query, field] of [['limit=0', 'limit'], ['limit=-5', 'limit'], ['offset=-1', 'offset'], ['limit=abc', 'limit'], ['limit=1.5', 'limit']]) {
      const res = await t.api.get(`/admin/tenants?${query}`, admin);
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), query).toEqual([field]);
    }
  });
});

describe('POST /admin/tenants', () => {
  it('creates a tenant with defaults and returns its key once', async () => {
    const res = await t.api.post('/admin/tenants', { tenantName: 'Defaults Inc' }, admin);
    expect(res.status).toBe(201);
    expect(Object.keys(res.body.data).sort()).toEqual(['apiKey', 'tenant']);
    const { tenant, apiKey } = res.body.data;
    expect(apiKey).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(tenant).toEqual({
      id: expect.any(String),
      tenantId: tenant.id,
      tenantName: 'Defaults Inc',
      tenantType: 'trial',
      isActive: true,
      enabledDomains: ['hiring'],
      disabledIntents: [],
      defaultModel: null,
      modelFallbacks: null,
      billingPlan: 'trial',
      billingEmail: null,
      monthlyRequestQuota: null,
      monthlyTokenQuota: null,
      requestsThisMonth: 0,
      tokensThisMonth: '0',
      costThisMonth: '0.000000',
      hasApiKey: true,
      apiKeyLastUsedAt: null,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    // Production and development environments, each with a key.
    const envs = await t.sql<{ name: string; keys: string }>(
      `select e.name, count(k.id)::text as keys from environments e left join api_keys k on k.environment_id = e.id where e.tenant_id = $1 group by e.name order by e.name`,
      [tenant.id],
    );
    expect(envs).toEqual([{ name: 'development', keys: '1' }, { name: 'production', keys: '1' }]);
    const audit = await t.sql('select action, actor_type, target_id from audit_log where tenant_id = $1', [tenant.id]);
    expect(audit).toEqual([{ action: 'tenant.created', actor_type: 'admin', target_id: tenant.id }]);
  });

  it('the returned key works on /v1', async () => {
    const { apiKey } = await createTenant({ tenantName: 'Key works' });
    const res = await collections(apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { collections: [] } });
    const xKey = await t.api.get('/v1/collections', { headers: { 'x-api-key': apiKey } });
    expect(xKey.status).toBe(200);
  });

  it('takes every field; monthlyTokenQuota comes back as a string', async () => {
    const res = await t.api.post(
      '/admin/tenants',
      {
        tenantName: '  Full Corp  ',
        tenantType: 'enterprise',
        billingPlan: 'pro',
        billingEmail: 'billing@full.example.com',
        enabledDomains: ['hiring', 'hiring'],
        modelFallbacks: [' backup/gpt-4o-mini ', 'fake-model'],
        monthlyRequestQuota: 12345,
        monthlyTokenQuota: 9_000_000_000,
      },
      admin,
    );
    expect(res.status).toBe(201);
    expect(res.body.data.tenant).toMatchObject({
      tenantName: 'Full Corp',
      tenantType: 'enterprise',
      billingPlan: 'pro',
      billingEmail: 'billing@full.example.com',
      enabledDomains: ['hiring'],
      modelFallbacks: ['backup/gpt-4o-mini', 'fake-model'],
      monthlyRequestQuota: 12345,
      monthlyTokenQuota: '9000000000',
      isActive: true,
    });
    const got = await t.api.get(`/admin/tenants/${res.body.data.tenant.id}`, admin);
    expect(got.body.data).toEqual(res.body.data.tenant);
  });

  it('accepts every tenant type and every plan, an empty domain list and zero quotas', async () => {
    for (const tenantType of ['internal', 'partner', 'enterprise', 'trial']) {
      const { tenant } = await createTenant({ tenantName: `type ${tenantType}`, tenantType });
      expect(tenant.tenantType).toBe(tenantType);
    }
    for (const billingPlan of ['free', 'trial', 'starter', 'pro', 'enterprise']) {
      const { tenant } = await createTenant({ tenantName: `plan ${billingPlan}`, billingPlan });
      expect(tenant.billingPlan).toBe(billingPlan);
    }
    const { tenant } = await createTenant({ tenantName: 'zeros', enabledDomains: [], monthlyRequestQuota: 0, monthlyTokenQuota: 0, billingEmail: null });
    expect(tenant).toMatchObject({ enabledDomains: [], monthlyRequestQuota: 0, monthlyTokenQuota: '0', billingEmail: null });
  });

  it('refuses bad values with 400 INVALID_INPUT naming the field, and creates nothing', async () => {
    const [{ n: before }] = await t.sql<{ n: string }>('select count(*)::text as n from tenants');
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'tenantName'],
      [{ tenantName: '' }, 'tenantName'],
      [{ tenantName: '   ' }, 'tenantName'],
      [{ tenantName: 42 }, 'tenantName'],
      [{ tenantName: 'x'.repeat(201) }, 'tenantName'],
      [{ tenantName: 'X', tenantType: 'bogus' }, 'tenantType'],
      [{ tenantName: 'X', billingPlan: 'platinum' }, 'billingPlan'],
      [{ tenantName: 'X', billingEmail: 'not-an-email' }, 'billingEmail'],
      [{ tenantName: 'X', enabledDomains: ['nope'] }, 'enabledDomains.0'],
      [{ tenantName: 'X', enabledDomains: 'hiring' }, 'enabledDomains'],
      [{ tenantName: 'X', monthlyRequestQuota: -1 }, 'monthlyRequestQuota'],
      [{ tenantName: 'X', monthlyRequestQuota: 1.5 }, 'monthlyRequestQuota'],
      [{ tenantName: 'X', monthlyRequestQuota: '100' }, 'monthlyRequestQuota'],
      [{ tenantName: 'X', monthlyRequestQuota: 2_147_483_648 }, 'monthlyRequestQuota'],
      [{ tenantName: 'X', monthlyTokenQuota: -1 }, 'monthlyTokenQuota'],
      [{ tenantName: 'X', monthlyTokenQuota: '1000' }, 'monthlyTokenQuota'],
      [{ tenantName: 'X', modelFallbacks: { model: 'fake-model' } }, 'modelFallbacks'],
      [{ tenantName: 'X', modelFallbacks: ['a', 'b', 'c', 'd'] }, 'modelFallbacks'],
      [{ tenantName: 'X', modelFallbacks: ['a', ' a'] }, 'modelFallbacks'],
      [{ tenantName: 'X', modelFallbacks: ['  '] }, 'modelFallbacks.0'],
      [{ tenantName: 'X', modelFallbacks: ['x'.repeat(201)] }, 'modelFallbacks.0'],
    ];
    for (const [body, field] of cases) {
      const res = await t.api.post('/admin/tenants', body, admin);
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), JSON.stringify(body)).toEqual([field]);
    }
    const multi = await t.api.post('/admin/tenants', { tenantType: 'x', billingPlan: 'y', monthlyTokenQuota: -3 }, admin);
    expectError(multi, 400, 'INVALID_INPUT');
    expect(issuePaths(multi).sort()).toEqual(['billingPlan', 'monthlyTokenQuota', 'tenantName', 'tenantType']);
    expect(await t.sql('select count(*)::text as n from tenants')).toEqual([{ n: before }]);
  });
});

describe('GET /admin/tenants/{tenantId}', () => {
  it('returns every Tenant field with its type', async () => {
    const { tenant: created } = await createTenant({ tenantName: 'Typed' });
    const res = await t.api.get(`/admin/tenants/${created.id}`, admin);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'success']);
    const tenant = res.body.data;
    expect(Object.keys(tenant).sort()).toEqual(TENANT_FIELDS);
    expect(tenant.id).toBe(created.id);
    expect(tenant.tenantId).toBe(tenant.id);
    expect(tenant.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(typeof tenant.tenantName).toBe('string');
    expect(['internal', 'partner', 'enterprise', 'trial']).toContain(tenant.tenantType);
    expect(typeof tenant.isActive).toBe('boolean');
    expect(Array.isArray(tenant.enabledDomains)).toBe(true);
    expect(['free', 'trial', 'starter', 'pro', 'enterprise']).toContain(tenant.billingPlan);
    expect(tenant.billingEmail).toBeNull();
    expect(tenant.monthlyRequestQuota).toBeNull();
    expect(tenant.monthlyTokenQuota).toBeNull();
    expect(tenant.requestsThisMonth).toBe(0);
    expect(tenant.tokensThisMonth).toBe('0');
    expect(tenant.costThisMonth).toBe('0.000000');
    expect(tenant.hasApiKey).toBe(true);
    expect(tenant.apiKeyLastUsedAt).toBeNull();
    expect(tenant.createdAt).toMatch(ISO);
    expect(tenant.updatedAt).toMatch(ISO);
  });

  it('a signed-up tenant is visible to the admin', async () => {
    const signed = await signupTenant(t.api, { companyName: 'Signed Up Co' });
    const res = await t.api.get(`/admin/tenants/${signed.tenantId}`, admin);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: signed.tenantId, tenantName: 'Signed Up Co', billingPlan: 'trial', isActive: true, hasApiKey: true });
  });

  it('an unknown uuid or a malformed id is 404 NOT_FOUND', async () => {
    for (const id of [randomUUID(), 'not-a-uuid', '123', "1' or '1'='1", '00000000-0000-0000-0000-00000000000g']) {
      const res = await t.api.get(`/admin/tenants/${encodeURIComponent(id)}`, admin);
      expectError(res, 404, 'NOT_FOUND');
    }
  });
});

describe('PATCH /admin/tenants/{tenantId}', () => {
  it('updates each field on its own and records tenant.updated', async () => {
    const { tenant } = await createTenant({ tenantName: 'Patchable' });
    const steps: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ tenantName: 'Renamed' }, { tenantName: 'Renamed' }],
      [{ tenantType: 'partner' }, { tenantType: 'partner' }],
      [{ billingPlan: 'starter' }, { billingPlan: 'starter' }],
      [{ billingEmail: 'pay@renamed.example.com' }, { billingEmail: 'pay@renamed.example.com' }],
      [{ billingEmail: null }, { billingEmail: null }],
      [{ enabledDomains: [] }, { enabledDomains: [] }],
      [{ enabledDomains: ['hiring'] }, { enabledDomains: ['hiring'] }],
      [{ monthlyRequestQuota: 500 }, { monthlyRequestQuota: 500 }],
      [{ monthlyRequestQuota: null }, { monthlyRequestQuota: null }],
      [{ monthlyTokenQuota: 7_500_000_000 }, { monthlyTokenQuota: '7500000000' }],
      [{ monthlyTokenQuota: null }, { monthlyTokenQuota: null }],
      [{ modelFallbacks: ['backup/gpt-4o-mini'] }, { modelFallbacks: ['backup/gpt-4o-mini'] }],
      [{ modelFallbacks: [] }, { modelFallbacks: [] }],
      [{ modelFallbacks: null }, { modelFallbacks: null }],
    ];
    let expected: Record<string, unknown> = { ...tenant };
    for (const [body, change] of steps) {
      const res = await t.api.patch(`/admin/tenants/${tenant.id}`, body, admin);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expected = { ...expected, ...change };
      const { updatedAt, ...rest } = res.body.data;
      const { updatedAt: _, ...expectedRest } = expected;
      expect(rest).toEqual(expectedRest);
      expect(updatedAt).toMatch(ISO);
    }
    const got = await t.api.get(`/admin/tenants/${tenant.id}`, admin);
    expect(got.body.data).toMatchObject({ tenantName: 'Renamed', tenantType: 'partner', billingPlan: 'starter', isActive: true });

    const audit = await t.sql<{ action: string; actor_type: string; actor_name: string; details: Record<string, unknown> }>(
      `select action, actor_type, actor_name, details from audit_log where tenant_id = $1 and action <> 'tenant.created' order by created_at, id`,
      [tenant.id],
    );
    expect(audit).toHaveLength(steps.length);
    for (const entry of audit) expect(entry).toMatchObject({ action: 'tenant.updated', actor_type: 'admin', actor_name: 'admin' });
    expect(audit[0].details).toEqual({ tenantName: { from: 'Patchable', to: 'Renamed' } });
    expect(audit[2].details).toEqual({ billingPlan: { from: 'trial', to: 'starter' } });
  });

  it('a change moves updatedAt and keeps createdAt', async () => {
    const { tenant } = await createTenant({ tenantName: 'Timestamps' });
    await t.sql(`update tenants set created_at = '2020-01-01T00:00:00Z', updated_at = '2020-01-02T00:00:00Z' where id = $1`, [tenant.id]);
    const res = await t.api.patch(`/admin/tenants/${tenant.id}`, { billingPlan: 'pro' }, admin);
    expect(res.status).toBe(200);
    expect(res.body.data.createdAt).toBe('2020-01-01T00:00:00.000Z');
    expect(Date.parse(res.body.data.updatedAt)).toBeGreaterThan(Date.parse('2020-01-02T00:00:00Z'));
  });

  it('an empty or unchanged patch changes nothing and records nothing', async () => {
    const { tenant } = await createTenant({ tenantName: 'Same' });
    for (const body of [{}, { tenantName: 'Same', billingPlan: 'trial' }]) {
      const res = await t.api.patch(`/admin/tenants/${tenant.id}`, body, admin);
      expect(res.status).toBe(200);
      expect(res.body.data.tenantName).toBe('Same');
    }
    const audit = await t.sql('select action from audit_log where tenant_id = $1', [tenant.id]);
    expect(audit).toEqual([{ action: 'tenant.created' }]);
  });

  it('refuses bad values with 400 naming the field', async () => {
    const { tenant } = await createTenant({ tenantName: 'Strict' });
    const cases: [Record<string, unknown>, string][] = [
      [{ tenantName: '' }, 'tenantName'],
      [{ tenantType: 'gold' }, 'tenantType'],
      [{ billingPlan: 'gold' }, 'billingPlan'],
      [{ billingEmail: 'nope' }, 'billingEmail'],
      [{ enabledDomains: ['unknown-domain'] }, 'enabledDomains.0'],
      [{ monthlyRequestQuota: -10 }, 'monthlyRequestQuota'],
      [{ monthlyTokenQuota: -10 }, 'monthlyTokenQuota'],
      [{ isActive: 'false' }, 'isActive'],
      [{ isActive: 0 }, 'isActive'],
      [{ modelFallbacks: ['a', 'a'] }, 'modelFallbacks'],
      [{ modelFallbacks: [null] }, 'modelFallbacks.0'],
    ];
    for (const [body, field] of cases) {
      const res = await t.api.patch(`/admin/tenants/${tenant.id}`, body, admin);
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), JSON.stringify(body)).toEqual([field]);
    }
    const got = await t.api.get(`/admin/tenants/${tenant.id}`, admin);
    expect(got.body.data).toMatchObject({ tenantName: 'Strict', tenantType: 'trial', billingPlan: 'trial', isActive: true });
  });

  it('an unknown or malformed tenant is 404 NOT_FOUND', async () => {
    for (const id of [randomUUID(), 'not-a-uuid']) {
      const res = await t.api.patch(`/admin/tenants/${id}`, { tenantName: 'Ghost' }, admin);
      expectError(res, 404, 'NOT_FOUND');
    }
  });

  it('deactivation makes every key of the tenant 403 ACCOUNT_INACTIVE; reactivation restores them', async () => {
    const owner: SignedUpTenant = await signupTenant(t.api);
    const env = await t.api.post('/dashboard/environments', { name: 'staging' }, { headers: bearer(owner.token) });
    expect(env.status).toBe(201);
    const keys = [owner.apiKey, env.body.data.apiKey as string];
    for (const key of keys) expect((await collections(key)).status).toBe(200);

    const off = await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: false }, admin);
    expect(off.status).toBe(200);
    expect(off.body.data.isActive).toBe(false);
    expect(off.body.data.hasApiKey).toBe(true);
    for (const key of keys) {
      expectError(await collections(key), 403, 'ACCOUNT_INACTIVE');
      expectError(await t.api.get('/v1/collections', { headers: { 'x-api-key': key } }), 403, 'ACCOUNT_INACTIVE');
    }
    // Its users are shut out too.
    expectError(await t.api.post('/auth/login', { email: owner.email, password: owner.password }), 403, 'ACCOUNT_INACTIVE');
    expectError(await t.api.get('/dashboard/account', { headers: bearer(owner.token) }), 403, 'ACCOUNT_INACTIVE');
    // Other tenants are not affected.
    const other = await signupTenant(t.api);
    expect((await collections(other.apiKey)).status).toBe(200);

    const on = await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: true }, admin);
    expect(on.status).toBe(200);
    expect(on.body.data.isActive).toBe(true);
    for (const key of keys) expect((await collections(key)).status).toBe(200);
    expect((await t.api.post('/auth/login', { email: owner.email, password: owner.password })).status).toBe(200);

    const audit = await t.api.get('/dashboard/audit-log', { headers: bearer(owner.token) });
    expect(audit.status).toBe(200);
    const tenantEntries = audit.body.data.entries.filter((e: { target_type: string }) => e.target_type === 'tenant');
    expect(tenantEntries.map((e: { action: string }) => e.action)).toEqual(['tenant.activated', 'tenant.deactivated']);
    expect(tenantEntries[1]).toMatchObject({ actor: 'admin', actor_type: 'admin', target_id: owner.tenantId, details: { isActive: { from: true, to: false } } });
  });
});

describe('POST /admin/tenants/{tenantId}/api-key/rotate', () => {
  it('issues a new production key and revokes every other key', async () => {
    const owner = await signupTenant(t.api);
    const env = await t.api.post('/dashboard/environments', { name: 'ci' }, { headers: bearer(owner.token) });
    const oldKeys = [owner.apiKey, env.body.data.apiKey as string];

    const res = await t.api.post(`/admin/tenants/${owner.tenantId}/api-key/rotate`, undefined, admin);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['apiKey', 'apiKeyPreview', 'maskedKey']);
    const { apiKey, apiKeyPreview, maskedKey } = res.body.data;
    expect(apiKey).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(oldKeys).not.toContain(apiKey);
    expect(apiKeyPreview).toBe(`${apiKey.slice(0, 12)}...${apiKey.slice(-4)}`);
    expect(maskedKey).toBe(apiKeyPreview);

    for (const key of oldKeys) expectError(await collections(key), 401, 'API_KEY_REVOKED');
    expect((await collections(apiKey)).status).toBe(200);

    const active = await t.sql('select e.name from api_keys k join environments e on e.id = k.environment_id where k.tenant_id = $1 and k.revoked_at is null', [owner.tenantId]);
    expect(active).toEqual([{ name: 'production' }]);
    const tenant = await t.api.get(`/admin/tenants/${owner.tenantId}`, admin);
    expect(tenant.body.data.hasApiKey).toBe(true);
    const account = await t.api.get('/dashboard/account', { headers: bearer(owner.token) });
    expect(account.body.data.tenant.apiKeyPreview).toBe(apiKeyPreview);
    const audit = await t.sql('select action, actor_type from audit_log where tenant_id = $1 and action like $2', [owner.tenantId, 'api_key.%']);
    expect(audit).toEqual([{ action: 'api_key.rotated_all', actor_type: 'admin' }]);

    // Rotating again revokes the key just issued.
    const again = await t.api.post(`/admin/tenants/${owner.tenantId}/api-key/rotate`, {}, admin);
    expect(again.status).toBe(200);
    expectError(await collections(apiKey), 401, 'API_KEY_REVOKED');
    expect((await collections(again.body.data.apiKey)).status).toBe(200);
  });

  it('restores a key after every key was revoked', async () => {
    const { tenant, apiKey } = await createTenant({ tenantName: 'Revoked then rotated' });
    expect((await t.api.delete(`/admin/tenants/${tenant.id}/api-key`, admin)).status).toBe(200);
    const res = await t.api.post(`/admin/tenants/${tenant.id}/api-key/rotate`, undefined, admin);
    expect(res.status).toBe(200);
    expect((await collections(res.body.data.apiKey)).status).toBe(200);
    expectError(await collections(apiKey), 401, 'API_KEY_REVOKED');
    expect((await t.api.get(`/admin/tenants/${tenant.id}`, admin)).body.data.hasApiKey).toBe(true);
  });

  it('an unknown or malformed tenant is 404 NOT_FOUND and creates nothing', async () => {
    const [{ n: before }] = await t.sql<{ n: string }>('select count(*)::text as n from api_keys');
    for (const id of [randomUUID(), 'not-a-uuid']) {
      expectError(await t.api.post(`/admin/tenants/${id}/api-key/rotate`, undefined, admin), 404, 'NOT_FOUND');
    }
    expect(await t.sql('select count(*)::text as n from api_keys')).toEqual([{ n: before }]);
  });
});

describe('DELETE /admin/tenants/{tenantId}/api-key', () => {
  it('revokes every key of the tenant', async () => {
    const { tenant, apiKey } = await createTenant({ tenantName: 'Revoke all' });
    expect((await collections(apiKey)).status).toBe(200);
    const res = await t.api.delete(`/admin/tenants/${tenant.id}/api-key`, admin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { revokedKeys: 2 } });
    expectError(await collections(apiKey), 401, 'API_KEY_REVOKED');
    expectError(await t.api.get('/v1/collections', { headers: { 'x-api-key': apiKey } }), 401, 'API_KEY_REVOKED');
    expect(await t.sql('select count(*)::text as n from api_keys where tenant_id = $1 and revoked_at is null', [tenant.id])).toEqual([{ n: '0' }]);
    const got = await t.api.get(`/admin/tenants/${tenant.id}`, admin);
    expect(got.body.data.hasApiKey).toBe(false);
    const audit = await t.sql('select action, details from audit_log where tenant_id = $1 and action like $2', [tenant.id, 'api_key.%']);
    expect(audit).toEqual([{ action: 'api_key.revoked_all', details: { revoked: 2 } }]);

    const again = await t.api.delete(`/admin/tenants/${tenant.id}/api-key`, admin);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ success: true, data: { revokedKeys: 0 } });
  });

  it('revokes the keys of a signed-up tenant and leaves other tenants alone', async () => {
    const victim = await signupTenant(t.api);
    const bystander = await signupTenant(t.api);
    const res = await t.api.delete(`/admin/tenants/${victim.tenantId}/api-key`, admin);
    expect(res.body.data).toEqual({ revokedKeys: 2 });
    expectError(await collections(victim.apiKey), 401, 'API_KEY_REVOKED');
    expect((await collections(bystander.apiKey)).status).toBe(200);
    expect((await t.api.get(`/admin/tenants/${bystander.tenantId}`, admin)).body.data.hasApiKey).toBe(true);
  });

  it('an unknown or malformed tenant is 404 NOT_FOUND', async () => {
    for (const id of [randomUUID(), 'not-a-uuid']) {
      expectError(await t.api.delete(`/admin/tenants/${id}/api-key`, admin), 404, 'NOT_FOUND');
    }
  });
});

describe('GET /admin/stats', () => {
  it('has the documented shape and counts tenants, active tenants and users', async () => {
    const res = await t.api.get('/admin/stats', admin);
    expect(res.status).toBe(200);
    const stats = res.body.data;
    expect(Object.keys(stats).sort()).toEqual(['activeTenants', 'costThisMonth', 'requestsThisMonth', 'runsByKind', 'tenants', 'tokensThisMonth', 'users']);
    const [counts] = await t.sql<{ tenants: string; active: string; users: string }>(
      'select (select count(*) from tenants)::int as tenants, (select count(*) from tenants where is_active)::int as active, (select count(*) from users)::int as users',
    );
    expect(stats).toEqual({
      tenants: counts.tenants,
      activeTenants: counts.active,
      users: counts.users,
      requestsThisMonth: 0,
      tokensThisMonth: '0',
      costThisMonth: '0.000000',
      runsByKind: {},
    });

    const { tenant } = await createTenant({ tenantName: 'Counted' });
    await signupTenant(t.api);
    const more = (await t.api.get('/admin/stats', admin)).body.data;
    expect(more.tenants).toBe(stats.tenants + 2);
    expect(more.activeTenants).toBe(stats.activeTenants + 2);
    expect(more.users).toBe(stats.users + 1);

    await t.api.patch(`/admin/tenants/${tenant.id}`, { isActive: false }, admin);
    const after = (await t.api.get('/admin/stats', admin)).body.data;
    expect(after.tenants).toBe(more.tenants);
    expect(after.activeTenants).toBe(more.activeTenants - 1);
  });
});

describe('GET /admin/usage', () => {
  it('reports one tenant with tenantId, or the platform without it', async () => {
    const { tenant } = await createTenant({ tenantName: 'Usage' });
    const one = await t.api.get(`/admin/usage?tenantId=${tenant.id}`, admin);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual({
      tenantId: tenant.id,
      from: expect.stringMatching(ISO),
      to: expect.stringMatching(ISO),
      totals: { requests: 0, tokens: 0, costUsd: '0.000000' },
      days: [],
      domains: [],
      intents: [],
    });
    const all = await t.api.get('/admin/usage', admin);
    expect(all.status).toBe(200);
    expect(all.body.data).toMatchObject({ tenantId: null, totals: { requests: 0, tokens: 0, costUsd: '0.000000' } });
    // Default range: the start of this month (UTC) until now.
    const now = new Date();
    expect(all.body.data.from).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());

    const ranged = await t.api.get('/admin/usage?from=2024-01-01&to=2024-02-01', admin);
    expect(ranged.status).toBe(200);
    expect(ranged.body.data).toMatchObject({ from: '2024-01-01T00:00:00.000Z', to: '2024-02-01T00:00:00.000Z' });
  });

  it('an unknown or malformed tenantId is 404 NOT_FOUND', async () => {
    for (const id of [randomUUID(), 'not-a-uuid']) {
      expectError(await t.api.get(`/admin/usage?tenantId=${id}`, admin), 404, 'NOT_FOUND');
    }
  });

  it('a malformed date is 400 naming the field', async () => {
    for (const field of ['from', 'to']) {
      const res = await t.api.get(`/admin/usage?${field}=yesterday`, admin);
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res)).toEqual([field]);
    }
  });
});
