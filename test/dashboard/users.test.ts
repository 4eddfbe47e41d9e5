// Dashboard users over real HTTP: list, invite, role changes, removal, the last-owner rule,
// role checks and tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

type Role = 'owner' | 'admin' | 'developer' | 'viewer';

const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
const PASSWORD = 'member password 1';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

interface Member {
  id: string;
  email: string;
  token: string;
}

/** Invites a user with `inviter`'s token and logs them in. */
async function addMember(inviterToken: string, role: Role): Promise<Member> {
  const email = uniqueEmail(role);
  const res = await t.api.post('/dashboard/users', { email, role, password: PASSWORD }, { headers: bearer(inviterToken) });
  expect(res.status, res.text).toBe(201);
  const login = await t.api.post('/auth/login', { email, password: PASSWORD });
  expect(login.status, login.text).toBe(200);
  return { id: res.body.data.user.id, email, token: login.body.data.token };
}

async function rolesOf(tenantId: string) {
  const rows = await t.sql<{ email: string; role: string }>('select email, role from users where tenant_id = $1 order by email', [tenantId]);
  return Object.fromEntries(rows.map((r) => [r.email, r.role]));
}

async function auditEntries(token: string, action: string) {
  const res = await t.api.get(`/dashboard/audit-log?action=${action}&pageSize=100`, { headers: bearer(token) });
  expect(res.status, res.text).toBe(200);
  return res.body.data.entries as { actor: string; actor_type: string; actor_id: string; action: string; target_type: string; target_id: string; details: Record<string, unknown> }[];
}

describe('GET /dashboard/users', () => {
  it('lists the tenant\'s users, oldest first, for every role', async () => {
    const owner = await signupTenant(t.api);
    const res = await t.api.get('/dashboard/users', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        users: [{ id: owner.userId, email: owner.email, fullName: null, role: 'owner', emailVerified: false, createdAt: ISO }],
        pagination: { total: 1, limit: 20, offset: 0 },
      },
    });

    const viewer = await addMember(owner.token, 'viewer');
    const asViewer = await t.api.get('/dashboard/users', { headers: bearer(viewer.token) });
    expect(asViewer.status).toBe(200);
    expect(asViewer.body.data.users.map((u: { email: string; role: string }) => [u.email, u.role])).toEqual([
      [owner.email, 'owner'],
      [viewer.email, 'viewer'],
    ]);
    // No secret ever leaves in a user record.
    expect(asViewer.text).not.toMatch(/password|argon/i);
  });

  it('pages with page and pageSize (default 20, at most 100) and answers pagination like every list', async () => {
    const owner = await signupTenant(t.api);
    const members = [await addMember(owner.token, 'viewer'), await addMember(owner.token, 'developer'), await addMember(owner.token, 'admin')];
    const emails = [owner.email, ...members.map((m) => m.email)];
    const page = async (query: string) => {
      const res = await t.api.get(`/dashboard/users${query}`, { headers: bearer(members[0].token) });
      expect(res.status, res.text).toBe(200);
      return { emails: res.body.data.users.map((u: { email: string }) => u.email), pagination: res.body.data.pagination };
    };
    expect(await page('')).toEqual({ emails, pagination: { total: 4, limit: 20, offset: 0 } });
    expect(await page('?page=1&pageSize=3')).toEqual({ emails: emails.slice(0, 3), pagination: { total: 4, limit: 3, offset: 0 } });
    expect(await page('?page=2&pageSize=3')).toEqual({ emails: emails.slice(3), pagination: { total: 4, limit: 3, offset: 3 } });
    expect(await page('?page=3&pageSize=3')).toEqual({ emails: [], pagination: { total: 4, limit: 3, offset: 6 } });
    expect((await page('?pageSize=1000')).pagination).toEqual({ total: 4, limit: 100, offset: 0 });
    for (const query of ['?page=0', '?pageSize=0', '?page=x']) expectError(await t.api.get(`/dashboard/users${query}`, { headers: bearer(owner.token) }), 400, 'INVALID_INPUT');
  });

  it('needs a token', async () => {
    expectError(await t.api.get('/dashboard/users'), 401, 'UNAUTHORIZED');
  });
});

describe('POST /dashboard/users (invite)', () => {
  let owner: SignedUpTenant;
  let admin: Member;
  let developer: Member;
  let viewer: Member;
  beforeAll(async () => {
    owner = await signupTenant(t.api, { companyName: 'Invite Co' });
    admin = await addMember(owner.token, 'admin');
    developer = await addMember(owner.token, 'developer');
    viewer = await addMember(owner.token, 'viewer');
  });

  it('an owner invites: 201 with the user; the audit log records it', async () => {
    const email = uniqueEmail('ada');
    const res = await t.api.post('/dashboard/users', { email: email.toUpperCase(), role: 'developer', password: PASSWORD, fullName: 'Ada Lovelace' }, { headers: bearer(owner.token) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: { user: { id: UUID, email, fullName: 'Ada Lovelace', role: 'developer', emailVerified: false, createdAt: ISO } },
    });
    const [row] = await t.sql('select tenant_id, password_hash from users where id = $1', [res.body.data.user.id]);
    expect(row.tenant_id).toBe(owner.tenantId);
    expect(row.password_hash).toMatch(/^\$argon2id\$/);

    const entries = await auditEntries(owner.token, 'user.invited');
    expect(entries.find((e) => e.target_id === res.body.data.user.id)).toEqual(expect.objectContaining({
      actor: owner.email, actor_type: 'user', actor_id: owner.userId, target_type: 'user', details: { email, role: 'developer' },
    }));
  });

  it('the invited user logs in with the given password and sees the same tenant', async () => {
    const email = uniqueEmail('newbie');
    const invited = await t.api.post('/dashboard/users', { email, role: 'developer', password: 'initial password' }, { headers: bearer(owner.token) });
    expect(invited.status).toBe(201);
    const login = await t.api.post('/auth/login', { email, password: 'initial password' });
    expect(login.status).toBe(200);
    expect(login.body.data).toEqual({
      token: expect.any(String),
      user: { id: invited.body.data.user.id, email, role: 'developer' },
      tenant: { tenantId: owner.tenantId, tenantName: 'Invite Co', plan: 'trial' },
    });
    const me = await t.api.get('/auth/me', { headers: bearer(login.body.data.token) });
    expect(me.status).toBe(200);
    expect(me.body.data.tenant.tenantId).toBe(owner.tenantId);
    expect(me.body.data.tenant.apiKeyPreview).toBe(`${owner.apiKey.slice(0, 12)}...${owner.apiKey.slice(-4)}`);
  });

  it('an admin invites any role but owner', async () => {
    for (const role of ['admin', 'developer', 'viewer'] as const) {
      const res = await t.api.post('/dashboard/users', { email: uniqueEmail(role), role, password: PASSWORD }, { headers: bearer(admin.token) });
      expect(res.status, role).toBe(201);
      expect(res.body.data.user.role).toBe(role);
    }
    const email = uniqueEmail('would-be-owner');
    const res = await t.api.post('/dashboard/users', { email, role: 'owner', password: PASSWORD }, { headers: bearer(admin.token) });
    expectError(res, 403, 'FORBIDDEN');
    expect(await t.sql('select id from users where email = $1', [email])).toEqual([]);
  });

  it('an owner may invite another owner', async () => {
    const res = await t.api.post('/dashboard/users', { email: uniqueEmail('co-owner'), role: 'owner', password: PASSWORD }, { headers: bearer(owner.token) });
    expect(res.status).toBe(201);
    expect(res.body.data.user.role).toBe('owner');
  });

  it('developers and viewers cannot invite: 403 FORBIDDEN', async () => {
    for (const member of [developer, viewer]) {
      const email = uniqueEmail('nope');
      const res = await t.api.post('/dashboard/users', { email, role: 'viewer', password: PASSWORD }, { headers: bearer(member.token) });
      expectError(res, 403, 'FORBIDDEN');
      expect(await t.sql('select id from users where email = $1', [email])).toEqual([]);
    }
  });

  it('a taken e-mail (this tenant or another, any case) is 409 EMAIL_TAKEN', async () => {
    const elsewhere = await signupTenant(t.api);
    for (const email of [developer.email, developer.email.toUpperCase(), owner.email, elsewhere.email]) {
      const res = await t.api.post('/dashboard/users', { email, role: 'viewer', password: PASSWORD }, { headers: bearer(owner.token) });
      expectError(res, 409, 'EMAIL_TAKEN');
    }
    // The other tenant's user was not touched.
    expect(await rolesOf(elsewhere.tenantId)).toEqual({ [elsewhere.email]: 'owner' });
  });

  it('invalid bodies are 400 INVALID_INPUT naming the fields', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ email: uniqueEmail(), role: 'superuser', password: PASSWORD }, ['role']],
      [{ email: uniqueEmail(), role: 'viewer', password: 'short' }, ['password']],
      [{ email: 'not-an-email', role: 'viewer', password: PASSWORD }, ['email']],
      [{}, ['email', 'password', 'role']],
    ];
    for (const [body, paths] of cases) {
      const res = await t.api.post('/dashboard/users', body, { headers: bearer(owner.token) });
      expectError(res, 400, 'INVALID_INPUT');
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path).sort(), JSON.stringify(body)).toEqual(paths);
    }
  });
});

describe('PATCH /dashboard/users/{id} (role)', () => {
  let owner: SignedUpTenant;
  let admin: Member;
  let developer: Member;
  let viewer: Member;
  beforeAll(async () => {
    owner = await signupTenant(t.api);
    admin = await addMember(owner.token, 'admin');
    developer = await addMember(owner.token, 'developer');
    viewer = await addMember(owner.token, 'viewer');
  });

  it('an owner changes a role; the change is audited and applies to the user\'s token at once', async () => {
    const member = await addMember(owner.token, 'admin');
    // As an admin the member may read the audit log...
    expect((await t.api.get('/dashboard/audit-log', { headers: bearer(member.token) })).status).toBe(200);
    const res = await t.api.patch(`/dashboard/users/${member.id}`, { role: 'viewer' }, { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { user: { id: member.id, email: member.email, fullName: null, role: 'viewer', emailVerified: false, createdAt: ISO } },
    });
    // ...and with the same token, now a viewer, may not.
    expectError(await t.api.get('/dashboard/audit-log', { headers: bearer(member.token) }), 403, 'FORBIDDEN');
    const me = await t.api.get('/auth/me', { headers: bearer(member.token) });
    expect(me.body.data.user.role).toBe('viewer');

    const entries = await auditEntries(owner.token, 'user.role_changed');
    expect(entries.filter((e) => e.target_id === member.id)).toEqual([
      expect.objectContaining({ actor: owner.email, actor_type: 'user', target_type: 'user', details: { email: member.email, from: 'admin', to: 'viewer' } }),
    ]);
  });

  it('an admin changes non-owner roles', async () => {
    const member = await addMember(owner.token, 'viewer');
    const res = await t.api.patch(`/dashboard/users/${member.id}`, { role: 'developer' }, { headers: bearer(admin.token) });
    expect(res.status).toBe(200);
    expect(res.body.data.user.role).toBe('developer');
    const entries = await auditEntries(owner.token, 'user.role_changed');
    expect(entries.find((e) => e.target_id === member.id)?.actor).toBe(admin.email);
  });

  it('viewers and developers cannot change roles: 403 FORBIDDEN', async () => {
    for (const member of [viewer, developer]) {
      expectError(await t.api.patch(`/dashboard/users/${viewer.id}`, { role: 'admin' }, { headers: bearer(member.token) }), 403, 'FORBIDDEN');
      // Not even their own.
      expectError(await t.api.patch(`/dashboard/users/${member.id}`, { role: 'owner' }, { headers: bearer(member.token) }), 403, 'FORBIDDEN');
    }
    const roles = await rolesOf(owner.tenantId);
    expect([roles[viewer.email], roles[developer.email]]).toEqual(['viewer', 'developer']);
  });

  it('an admin cannot change an owner, nor make anyone owner: 403 FORBIDDEN', async () => {
    expectError(await t.api.patch(`/dashboard/users/${owner.userId}`, { role: 'viewer' }, { headers: bearer(admin.token) }), 403, 'FORBIDDEN');
    expectError(await t.api.patch(`/dashboard/users/${developer.id}`, { role: 'owner' }, { headers: bearer(admin.token) }), 403, 'FORBIDDEN');
    expectError(await t.api.patch(`/dashboard/users/${admin.id}`, { role: 'owner' }, { headers: bearer(admin.token) }), 403, 'FORBIDDEN');
    const roles = await rolesOf(owner.tenantId);
    expect([roles[owner.email], roles[developer.email], roles[admin.email]]).toEqual(['owner', 'developer', 'admin']);
  });

  it('an invalid role is 400 INVALID_INPUT', async () => {
    for (const body of [{ role: 'superuser' }, { role: '' }, {}, { role: 3 }]) {
      const res = await t.api.patch(`/dashboard/users/${developer.id}`, body, { headers: bearer(owner.token) });
      expectError(res, 400, 'INVALID_INPUT');
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['role']);
    }
  });

  it('an unknown or malformed id is 404 NOT_FOUND', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '1']) {
      expectError(await t.api.patch(`/dashboard/users/${id}`, { role: 'viewer' }, { headers: bearer(owner.token) }), 404, 'NOT_FOUND');
    }
  });
});

describe('the last owner', () => {
  it('cannot be demoted or removed (409 LAST_OWNER); with a second owner both work', async () => {
    const owner = await signupTenant(t.api);
    expectError(await t.api.patch(`/dashboard/users/${owner.userId}`, { role: 'admin' }, { headers: bearer(owner.token) }), 409, 'LAST_OWNER');
    expectError(await t.api.delete(`/dashboard/users/${owner.userId}`, { headers: bearer(owner.token) }), 409, 'LAST_OWNER');
    expect(await rolesOf(owner.tenantId)).toEqual({ [owner.email]: 'owner' });

    // Keeping the owner role is not a demotion.
    expect((await t.api.patch(`/dashboard/users/${owner.userId}`, { role: 'owner' }, { headers: bearer(owner.token) })).status).toBe(200);

    const second = await addMember(owner.token, 'owner');
    const demote = await t.api.patch(`/dashboard/users/${owner.userId}`, { role: 'admin' }, { headers: bearer(second.token) });
    expect(demote.status).toBe(200);
    expect(demote.body.data.user.role).toBe('admin');
    // Now `second` is the last owner.
    expectError(await t.api.patch(`/dashboard/users/${second.id}`, { role: 'developer' }, { headers: bearer(second.token) }), 409, 'LAST_OWNER');
    expectError(await t.api.delete(`/dashboard/users/${second.id}`, { headers: bearer(second.token) }), 409, 'LAST_OWNER');
    // The demoted founder, now an admin, cannot touch the owner either.
    expectError(await t.api.delete(`/dashboard/users/${second.id}`, { headers: bearer(owner.token) }), 403, 'FORBIDDEN');
  });

  it('two owners demoting each other at once leave exactly one owner', async () => {
    const first = await signupTenant(t.api);
    const second = await addMember(first.token, 'owner');
    const [a, b] = await Promise.all([
      t.api.patch(`/dashboard/users/${second.id}`, { role: 'admin' }, { headers: bearer(first.token) }),
      t.api.patch(`/dashboard/users/${first.userId}`, { role: 'admin' }, { headers: bearer(second.token) }),
    ]);
    const [won, lost] = [a, b].sort((x, y) => x.status - y.status);
    expect(won.status).toBe(200);
    // Whichever runs second either finds its caller already demoted (403) or the target the last owner (409).
    expect([[403, 'FORBIDDEN'], [409, 'LAST_OWNER']]).toContainEqual([lost.status, lost.body.error.code]);
    const [count] = await t.sql(`select count(*)::int as n from users where tenant_id = $1 and role = 'owner'`, [first.tenantId]);
    expect(count.n).toBe(1);
  });
});

describe('DELETE /dashboard/users/{id}', () => {
  let owner: SignedUpTenant;
  let admin: Member;
  let developer: Member;
  let viewer: Member;
  let other: SignedUpTenant;
  beforeAll(async () => {
    owner = await signupTenant(t.api);
    admin = await addMember(owner.token, 'admin');
    developer = await addMember(owner.token, 'developer');
    viewer = await addMember(owner.token, 'viewer');
    other = await signupTenant(t.api);
  });

  it('removes the user: 200 {success: true}; their token, login and listing are gone; audited', async () => {
    const member = await addMember(owner.token, 'developer');
    expect((await t.api.get('/auth/me', { headers: bearer(member.token) })).status).toBe(200);
    const res = await t.api.delete(`/dashboard/users/${member.id}`, { headers: bearer(admin.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });

    expectError(await t.api.get('/auth/me', { headers: bearer(member.token) }), 401, 'INVALID_TOKEN');
    expectError(await t.api.get('/dashboard/users', { headers: bearer(member.token) }), 401, 'INVALID_TOKEN');
    expectError(await t.api.post('/auth/login', { email: member.email, password: PASSWORD }), 401, 'INVALID_CREDENTIALS');
    const list = await t.api.get('/dashboard/users', { headers: bearer(owner.token) });
    expect(list.body.data.users.map((u: { id: string }) => u.id)).not.toContain(member.id);

    const entries = await auditEntries(owner.token, 'user.removed');
    expect(entries.filter((e) => e.target_id === member.id)).toEqual([
      expect.objectContaining({ actor: admin.email, target_type: 'user', details: { email: member.email, role: 'developer' } }),
    ]);
    // A second delete finds nothing.
    expectError(await t.api.delete(`/dashboard/users/${member.id}`, { headers: bearer(owner.token) }), 404, 'NOT_FOUND');
  });

  it('viewers and developers cannot remove users: 403 FORBIDDEN', async () => {
    for (const member of [viewer, developer]) {
      expectError(await t.api.delete(`/dashboard/users/${viewer.id}`, { headers: bearer(member.token) }), 403, 'FORBIDDEN');
    }
    expect((await rolesOf(owner.tenantId))[viewer.email]).toBe('viewer');
  });

  it('an admin cannot remove an owner: 403 FORBIDDEN', async () => {
    await addMember(owner.token, 'owner');
    expectError(await t.api.delete(`/dashboard/users/${owner.userId}`, { headers: bearer(admin.token) }), 403, 'FORBIDDEN');
    expect((await rolesOf(owner.tenantId))[owner.email]).toBe('owner');
  });

  it('another tenant\'s user is 404 NOT_FOUND for PATCH and DELETE, and stays untouched', async () => {
    expectError(await t.api.patch(`/dashboard/users/${other.userId}`, { role: 'viewer' }, { headers: bearer(owner.token) }), 404, 'NOT_FOUND');
    expectError(await t.api.delete(`/dashboard/users/${other.userId}`, { headers: bearer(owner.token) }), 404, 'NOT_FOUND');
    expect(await rolesOf(other.tenantId)).toEqual({ [other.email]: 'owner' });
    expect((await t.api.get('/auth/me', { headers: bearer(other.token) })).status).toBe(200);
    // And the other way round.
    expectError(await t.api.delete(`/dashboard/users/${developer.id}`, { headers: bearer(other.token) }), 404, 'NOT_FOUND');
    const list = await t.api.get('/dashboard/users', { headers: bearer(other.token) });
    expect(list.body.data.users.map((u: { email: string }) => u.email)).toEqual([other.email]);
  });

  it('a malformed or unknown id is 404 NOT_FOUND', async () => {
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', `${developer.id}x`]) {
      expectError(await t.api.delete(`/dashboard/users/${encodeURIComponent(id)}`, { headers: bearer(owner.token) }), 404, 'NOT_FOUND');
    }
  });
});
