// The dashboard account, audit log and usage report over real HTTP: shapes, role checks,
// validation, pagination and tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

const issuePaths = (res: ApiResponse) => [...new Set(res.body.error.details.issues.map((i: { path: string }) => i.path))].sort();
const preview = (key: string) => `${key.slice(0, 12)}...${key.slice(-4)}`;

type Role = 'admin' | 'developer' | 'viewer';

async function addMember(ownerToken: string, role: Role) {
  const email = uniqueEmail(role);
  const invited = await t.api.post('/dashboard/users', { email, role, password: 'member password 1' }, { headers: bearer(ownerToken) });
  expect(invited.status, invited.text).toBe(201);
  const login = await t.api.post('/auth/login', { email, password: 'member password 1' });
  expect(login.status, login.text).toBe(200);
  return { id: invited.body.data.user.id as string, email, token: login.body.data.token as string };
}

async function auditLog(token: string, query = '') {
  const res = await t.api.get(`/dashboard/audit-log${query}`, { headers: bearer(token) });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { entries: any[]; pagination: { total: number; limit: number; offset: number } };
}

describe('GET /dashboard/account', () => {
  it('returns the tenant profile and the current user, for every role', async () => {
    const owner = await signupTenant(t.api, { companyName: 'Account Co' });
    const res = await t.api.get('/dashboard/account', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        tenant: {
          tenantId: owner.tenantId,
          tenantName: 'Account Co',
          billingPlan: 'trial',
          billingEmail: owner.email,
          monthlyRequestQuota: null,
          monthlyTokenQuota: null,
          enabledDomains: ['hiring'],
          isActive: true,
          apiKeyPreview: preview(owner.apiKey),
        },
        user: { id: owner.userId, email: owner.email, fullName: null, role: 'owner', emailVerified: false, createdAt: ISO },
      },
    });

    const viewer = await addMember(owner.token, 'viewer');
    const asViewer = await t.api.get('/dashboard/account', { headers: bearer(viewer.token) });
    expect(asViewer.status).toBe(200);
    expect(asViewer.body.data.tenant).toEqual(res.body.data.tenant);
    expect(asViewer.body.data.user).toEqual({ id: viewer.id, email: viewer.email, fullName: null, role: 'viewer', emailVerified: false, createdAt: ISO });
    expect(asViewer.text).not.toContain(owner.apiKey);
  });

  it('needs a token', async () => {
    expectError(await t.api.get('/dashboard/account'), 401, 'UNAUTHORIZED');
    expectError(await t.api.get('/dashboard/account', { headers: bearer('nope') }), 401, 'INVALID_TOKEN');
  });
});

describe('PATCH /dashboard/account', () => {
  let owner: SignedUpTenant;
  let admin: Awaited<ReturnType<typeof addMember>>;
  let developer: Awaited<ReturnType<typeof addMember>>;
  let viewer: Awaited<ReturnType<typeof addMember>>;
  beforeAll(async () => {
    owner = await signupTenant(t.api, { companyName: 'Patch Co' });
    admin = await addMember(owner.token, 'admin');
    developer = await addMember(owner.token, 'developer');
    viewer = await addMember(owner.token, 'viewer');
  });

  const tenantRow = async () => (await t.sql('select name, billing_email, plan, is_active from tenants where id = $1', [owner.tenantId]))[0];

  it('an owner renames the tenant and sets the billing e-mail; audited as account.updated', async () => {
    const res = await t.api.patch('/dashboard/account', { tenantName: '  Renamed Co ', billingEmail: 'Billing@Example.com' }, { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        tenant: {
          tenantId: owner.tenantId,
          tenantName: 'Renamed Co',
          billingPlan: 'trial',
          billingEmail: 'billing@example.com',
          monthlyRequestQuota: null,
          monthlyTokenQuota: null,
          enabledDomains: ['hiring'],
          isActive: true,
          apiKeyPreview: preview(owner.apiKey),
        },
        user: { id: owner.userId, email: owner.email, fullName: null, role: 'owner', emailVerified: false, createdAt: ISO },
      },
    });
    const again = await t.api.get('/dashboard/account', { headers: bearer(owner.token) });
    expect(again.body.data).toEqual(res.body.data);
    expect((await t.api.get('/auth/me', { headers: bearer(owner.token) })).body.data.tenant.tenantName).toBe('Renamed Co');

    const { entries } = await auditLog(owner.token, '?action=account.updated');
    expect(entries).toEqual([
      {
        id: UUID,
        actor: owner.email,
        actor_type: 'user',
        actor_id: owner.userId,
        action: 'account.updated',
        target_type: 'tenant',
        target_id: owner.tenantId,
        details: {
          tenantName: { from: 'Patch Co', to: 'Renamed Co' },
          billingEmail: { from: owner.email, to: 'billing@example.com' },
        },
        created_at: ISO,
      },
    ]);
  });

  it('an admin may update; a no-op update records nothing', async () => {
    const res = await t.api.patch('/dashboard/account', { tenantName: 'Admin Named' }, { headers: bearer(admin.token) });
    expect(res.status).toBe(200);
    expect(res.body.data.tenant.tenantName).toBe('Admin Named');
    expect(res.body.data.user.id).toBe(admin.id);
    const before = (await auditLog(owner.token, '?action=account.updated')).pagination.total;
    expect((await auditLog(owner.token, '?action=account.updated')).entries[0]).toEqual(expect.objectContaining({
      actor: admin.email, details: { tenantName: { from: 'Renamed Co', to: 'Admin Named' } },
    }));

    for (const body of [{ tenantName: 'Admin Named' }, {}]) {
      const same = await t.api.patch('/dashboard/account', body, { headers: bearer(admin.token) });
      expect(same.status).toBe(200);
    }
    expect((await auditLog(owner.token, '?action=account.updated')).pagination.total).toBe(before);
  });

  it('developers and viewers get 403 FORBIDDEN and nothing changes', async () => {
    const before = await tenantRow();
    for (const member of [developer, viewer]) {
      expectError(await t.api.patch('/dashboard/account', { tenantName: 'Hijacked', billingEmail: 'evil@example.com' }, { headers: bearer(member.token) }), 403, 'FORBIDDEN');
    }
    expect(await tenantRow()).toEqual(before);
  });

  it('invalid values are 400 INVALID_INPUT naming the field, and nothing changes', async () => {
    const before = await tenantRow();
    const cases: [Record<string, unknown>, string[]][] = [
      [{ billingEmail: 'not-an-email' }, ['billingEmail']],
      [{ billingEmail: 42 }, ['billingEmail']],
      [{ tenantName: '' }, ['tenantName']],
      [{ tenantName: '   ' }, ['tenantName']],
      [{ tenantName: 42 }, ['tenantName']],
      [{ tenantName: 'x'.repeat(201) }, ['tenantName']],
      [{ tenantName: 'Fine', billingEmail: 'bad' }, ['billingEmail']],
    ];
    for (const [body, paths] of cases) {
      const res = await t.api.patch('/dashboard/account', body, { headers: bearer(owner.token) });
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), JSON.stringify(body)).toEqual(paths);
    }
    expect(await tenantRow()).toEqual(before);
  });

  it('a null billing e-mail clears it; fields that are not updatable are ignored', async () => {
    const other = await signupTenant(t.api, { companyName: 'Bystander' });
    const res = await t.api.patch(
      '/dashboard/account',
      { billingEmail: null, tenantId: other.tenantId, billingPlan: 'enterprise', isActive: false, enabledDomains: [], monthlyRequestQuota: 1 },
      { headers: bearer(owner.token) },
    );
    expect(res.status).toBe(200);
    expect(res.body.data.tenant).toEqual(expect.objectContaining({
      tenantId: owner.tenantId, billingEmail: null, billingPlan: 'trial', isActive: true, enabledDomains: ['hiring'], monthlyRequestQuota: null,
    }));
    expect(await tenantRow()).toEqual({ name: 'Admin Named', billing_email: null, plan: 'trial', is_active: true });
    const bystander = await t.api.get('/dashboard/account', { headers: bearer(other.token) });
    expect(bystander.body.data.tenant).toEqual(expect.objectContaining({ tenantName: 'Bystander', billingEmail: other.email }));
  });
});

describe('GET /dashboard/audit-log', () => {
  let owner: SignedUpTenant;
  const names = ['Name 1', 'Name 2', 'Name 3', 'Name 4', 'Name 5'];
  beforeAll(async () => {
    owner = await signupTenant(t.api, { companyName: 'Name 0' });
    for (const tenantName of names) {
      const res = await t.api.patch('/dashboard/account', { tenantName }, { headers: bearer(owner.token) });
      expect(res.status).toBe(200);
    }
  });

  const renamedTo = (entries: any[]) => entries.map((e) => e.details.tenantName.to);

  it('lists newest first with {entries, pagination}; defaults page 1, pageSize 20', async () => {
    const res = await t.api.get('/dashboard/audit-log', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['entries', 'pagination']);
    expect(res.body.data.pagination).toEqual({ total: 5, limit: 20, offset: 0, total_is_exact: true, next_cursor: null });
    expect(renamedTo(res.body.data.entries)).toEqual(['Name 5', 'Name 4', 'Name 3', 'Name 2', 'Name 1']);
    expect(res.body.data.entries[4]).toEqual({
      id: UUID, actor: owner.email, actor_type: 'user', actor_id: owner.userId, action: 'account.updated',
      target_type: 'tenant', target_id: owner.tenantId, details: { tenantName: { from: 'Name 0', to: 'Name 1' } }, created_at: ISO,
    });
    const times = res.body.data.entries.map((e: { created_at: string }) => Date.parse(e.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('pages with page and pageSize', async () => {
    const pages = [];
    for (const page of [1, 2, 3, 4]) pages.push(await auditLog(owner.token, `?page=${page}&pageSize=2`));
    expect(pages.map((p) => p.pagination)).toEqual([
      { total: 5, limit: 2, offset: 0, total_is_exact: true, next_cursor: expect.any(String) },
      { total: 5, limit: 2, offset: 2, total_is_exact: true, next_cursor: expect.any(String) },
      { total: 5, limit: 2, offset: 4, total_is_exact: true, next_cursor: null },
      { total: 5, limit: 2, offset: 6, total_is_exact: true, next_cursor: null },
    ]);
    expect(pages.map((p) => renamedTo(p.entries))).toEqual([['Name 5', 'Name 4'], ['Name 3', 'Name 2'], ['Name 1'], []]);
  });

  it('clamps pageSize to 100', async () => {
    const data = await auditLog(owner.token, '?pageSize=500');
    expect(data.pagination).toEqual({ total: 5, limit: 100, offset: 0, total_is_exact: true, next_cursor: null });
    expect(data.entries).toHaveLength(5);
  });

  it('filters by action', async () => {
    expect((await auditLog(owner.token, '?action=account.updated')).pagination.total).toBe(5);
    expect(await auditLog(owner.token, '?action=user.invited')).toEqual({ entries: [], pagination: { total: 0, limit: 20, offset: 0, total_is_exact: true, next_cursor: null } });
  });

  it('rejects bad paging values with 400 INVALID_INPUT', async () => {
    const cases: [string, string[]][] = [
      ['?page=0', ['page']],
      ['?page=-1', ['page']],
      ['?page=abc', ['page']],
      ['?page=1.5', ['page']],
      ['?pageSize=0', ['pageSize']],
      ['?pageSize=ten', ['pageSize']],
    ];
    for (const [query, paths] of cases) {
      const res = await t.api.get(`/dashboard/audit-log${query}`, { headers: bearer(owner.token) });
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), query).toEqual(paths);
    }
  });

  it('is for owners and admins: developers and viewers get 403 FORBIDDEN', async () => {
    const admin = await addMember(owner.token, 'admin');
    expect((await t.api.get('/dashboard/audit-log', { headers: bearer(admin.token) })).status).toBe(200);
    for (const role of ['developer', 'viewer'] as const) {
      const member = await addMember(owner.token, role);
      expectError(await t.api.get('/dashboard/audit-log', { headers: bearer(member.token) }), 403, 'FORBIDDEN');
    }
    expectError(await t.api.get('/dashboard/audit-log'), 401, 'UNAUTHORIZED');
  });

  it('never shows another tenant\'s entries', async () => {
    const other = await signupTenant(t.api, { companyName: 'Other Co' });
    expect(await auditLog(other.token)).toEqual({ entries: [], pagination: { total: 0, limit: 20, offset: 0, total_is_exact: true, next_cursor: null } });
    expect((await t.api.patch('/dashboard/account', { tenantName: 'Other Renamed' }, { headers: bearer(other.token) })).status).toBe(200);

    const theirs = await auditLog(other.token, '?pageSize=100');
    expect(theirs.pagination.total).toBe(1);
    expect(theirs.entries).toEqual([expect.objectContaining({ actor: other.email, target_id: other.tenantId, details: { tenantName: { from: 'Other Co', to: 'Other Renamed' } } })]);
    const ours = await auditLog(owner.token, '?pageSize=100');
    const ourIds = new Set(ours.entries.map((e) => e.id));
    expect(theirs.entries.some((e) => ourIds.has(e.id))).toBe(false);
    expect(ours.entries.every((e) => e.target_id !== other.tenantId && e.actor !== other.email)).toBe(true);
    expect((await auditLog(other.token, '?action=account.updated&pageSize=100')).pagination.total).toBe(1);
    expect(await t.sql('select id from audit_log where tenant_id = $1 and actor_name = $2', [other.tenantId, owner.email])).toEqual([]);
  });
});

describe('GET /dashboard/usage', () => {
  const zero = { requests: 0, tokens: 0, costUsd: '0.000000' };

  it('with no events returns zero totals for this month so far', async () => {
    const owner = await signupTenant(t.api);
    const before = new Date();
    const res = await t.api.get('/dashboard/usage', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    const monthStart = new Date(Date.UTC(before.getUTCFullYear(), before.getUTCMonth(), 1)).toISOString();
    expect(res.body).toEqual({ success: true, data: { from: monthStart, to: ISO, totals: zero, days: [], domains: [], intents: [] } });
    expect(Date.parse(res.body.data.to)).toBeGreaterThanOrEqual(before.getTime());

    const viewer = await addMember(owner.token, 'viewer');
    expect((await t.api.get('/dashboard/usage', { headers: bearer(viewer.token) })).status).toBe(200);
    expectError(await t.api.get('/dashboard/usage'), 401, 'UNAUTHORIZED');
  });

  it('takes from and to as dates or date-times with an offset', async () => {
    const owner = await signupTenant(t.api);
    const res = await t.api.get('/dashboard/usage?from=2025-01-01&to=2025-02-01', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ from: '2025-01-01T00:00:00.000Z', to: '2025-02-01T00:00:00.000Z', totals: zero, days: [], domains: [], intents: [] });
    const offset = await t.api.get(`/dashboard/usage?from=${encodeURIComponent('2025-01-01T00:00:00+02:00')}&to=${encodeURIComponent('2025-01-02T00:00:00Z')}`, { headers: bearer(owner.token) });
    expect(offset.status).toBe(200);
    expect([offset.body.data.from, offset.body.data.to]).toEqual(['2024-12-31T22:00:00.000Z', '2025-01-02T00:00:00.000Z']);
  });

  it('refuses bad dates with 400 INVALID_INPUT naming the field', async () => {
    const owner = await signupTenant(t.api);
    const cases: [string, string[]][] = [
      ['?from=yesterday', ['from']],
      ['?to=2025-13-45', ['to']],
      ['?from=2025-01-01T00:00:00', ['from']],
      ['?from=1700000000', ['from']],
      ['?from=nope&to=nope', ['from', 'to']],
      ['?from=2025-02-01&to=2025-01-01', ['from']],
      ['?from=2025-02-30', ['from']],
    ];
    for (const [query, paths] of cases) {
      const res = await t.api.get(`/dashboard/usage${query}`, { headers: bearer(owner.token) });
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), query).toEqual(paths);
    }
  });

  it('counts only the tenant\'s own events, by day, domain and intent', async () => {
    const owner = await signupTenant(t.api);
    const other = await signupTenant(t.api);
    const insert = (tenantId: string, domain: string | null, intent: string | null, tokens: number, cost: string) =>
      t.sql(
        `insert into usage_events (tenant_id, kind, domain, intent, prompt_tokens, completion_tokens, total_tokens, cost_usd, created_at)
         values ($1, 'intent_run', $2, $3, $4, 0, $4, $5, now())`,
        [tenantId, domain, intent, tokens, cost],
      );
    await insert(owner.tenantId, 'hiring', 'resume-analysis', 100, '0.001000');
    await insert(owner.tenantId, 'hiring', 'resume-analysis', 50, '0.000500');
    await insert(owner.tenantId, 'hiring', 'job-match', 20, '0.000200');
    await insert(other.tenantId, 'hiring', 'resume-analysis', 9999, '9.000000');

    const today = new Date().toISOString().slice(0, 10);
    const res = await t.api.get('/dashboard/usage', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      from: ISO,
      to: ISO,
      totals: { requests: 3, tokens: 170, costUsd: '0.001700' },
      days: [{ date: today, requests: 3, tokens: 170, costUsd: '0.001700' }],
      domains: [{ domain: 'hiring', requests: 3, tokens: 170, costUsd: '0.001700' }],
      intents: [
        { domain: 'hiring', intent: 'resume-analysis', requests: 2, tokens: 150, costUsd: '0.001500' },
        { domain: 'hiring', intent: 'job-match', requests: 1, tokens: 20, costUsd: '0.000200' },
      ],
    });
    const theirs = await t.api.get('/dashboard/usage', { headers: bearer(other.token) });
    expect(theirs.body.data.totals).toEqual({ requests: 1, tokens: 9999, costUsd: '9.000000' });
    // Outside the range nothing counts.
    const past = await t.api.get('/dashboard/usage?from=2020-01-01&to=2020-02-01', { headers: bearer(owner.token) });
    expect(past.body.data.totals).toEqual(zero);
  });
});
