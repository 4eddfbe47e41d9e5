// Dashboard authentication over real HTTP: signup, login (and its rate limit), /auth/me, refresh,
// JWT forgery attempts, e-mail verification, password reset and deactivated tenants.
import { createHash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { adminHeaders, signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { JWT_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

const MAX_FAILURES = 3;
const SEVEN_DAYS = 7 * 24 * 3600;
const KEY_PATTERN = /^svc_[A-Za-z0-9_-]{43}$/;
const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ LOGIN_MAX_FAILURES: String(MAX_FAILURES) });
});
afterAll(() => t?.close());

const secretKey = new TextEncoder().encode(JWT_SECRET);
const now = () => Math.floor(Date.now() / 1000);
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function issuePaths(res: ApiResponse): string[] {
  return res.body.error.details.issues.map((issue: { path: string }) => issue.path).sort();
}

interface ForgeOptions {
  alg?: string;
  secret?: Uint8Array;
  iat?: number;
  /** `null` leaves the claim out. */
  exp?: number | null;
}

/** Signs a dashboard token by hand (the test server's secret unless told otherwise). */
async function forgeToken(claims: { sub: string; tid: string; role?: string }, options: ForgeOptions = {}) {
  const iat = options.iat ?? now();
  const jwt = new SignJWT({ tid: claims.tid, role: claims.role ?? 'owner' })
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt(iat);
  if (options.exp !== null) jwt.setExpirationTime(options.exp ?? iat + 3600);
  return jwt.sign(options.secret ?? secretKey);
}

async function outbox(email: string, kind?: string) {
  return t.sql<{ subject: string; body: string; kind: string; created_at: Date }>(
    `select subject, body, kind, created_at from outbox_messages where to_address = $1 ${kind ? 'and kind = $2' : ''} order by created_at, id`,
    kind ? [email, kind] : [email],
  );
}

const MARKERS: Record<string, string> = {
  verify_email: 'POST /auth/verify-email: ',
  password_reset: 'POST /auth/password-reset/confirm: ',
};

/** The raw token of the newest mail of that kind for that address. */
async function mailedToken(email: string, kind: 'verify_email' | 'password_reset'): Promise<string> {
  const mails = await outbox(email, kind);
  expect(mails.length, `a ${kind} mail for ${email}`).toBeGreaterThan(0);
  return tokenFromBody(mails[mails.length - 1].body, kind);
}

function tokenFromBody(body: string, kind: string): string {
  const at = body.indexOf(MARKERS[kind]);
  expect(at, `token marker in ${body}`).toBeGreaterThanOrEqual(0);
  const token = /^[A-Za-z0-9_-]+/.exec(body.slice(at + MARKERS[kind].length))?.[0];
  expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return token!;
}

describe('POST /auth/signup', () => {
  it('creates the tenant, its owner, two environments with a key each, and answers 201', async () => {
    const email = uniqueEmail('signup');
    const res = await t.api.post('/auth/signup', { companyName: '  Globex Hiring ', email, password: 'correct horse battery', fullName: 'Grace Hopper' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        token: expect.any(String),
        user: { id: UUID, email, role: 'owner' },
        tenant: { tenantId: UUID, tenantName: 'Globex Hiring', plan: 'trial' },
        apiKey: expect.stringMatching(KEY_PATTERN),
      },
    });
    const { token, user, tenant, apiKey } = res.body.data;

    // The token: HS256 with the documented claims and a 7-day lifetime.
    expect(decodeProtectedHeader(token).alg).toBe('HS256');
    const claims = decodeJwt(token);
    expect(claims).toEqual({ sub: user.id, tid: tenant.tenantId, role: 'owner', iat: expect.any(Number), exp: expect.any(Number) });
    expect(claims.exp! - claims.iat!).toBe(SEVEN_DAYS);

    const envs = await t.sql(
      `select e.name, count(k.id) filter (where k.revoked_at is null)::int as active_keys
         from environments e left join api_keys k on k.environment_id = e.id
        where e.tenant_id = $1 group by e.name order by e.name`,
      [tenant.tenantId],
    );
    expect(envs).toEqual([
      { name: 'development', active_keys: 1 },
      { name: 'production', active_keys: 1 },
    ]);
    // The returned key is the production key.
    const [production] = await t.sql(
      `select k.key_hash from api_keys k join environments e on e.id = k.environment_id where e.tenant_id = $1 and e.name = 'production'`,
      [tenant.tenantId],
    );
    expect(production.key_hash).toBe(sha256(apiKey));

    const [row] = await t.sql('select type, plan, enabled_domains, billing_email, is_active from tenants where id = $1', [tenant.tenantId]);
    expect(row).toEqual({ type: 'trial', plan: 'trial', enabled_domains: ['hiring'], billing_email: email, is_active: true });
    const [owner] = await t.sql('select email, full_name, role, email_verified, password_hash from users where id = $1', [user.id]);
    expect(owner).toEqual({ email, full_name: 'Grace Hopper', role: 'owner', email_verified: false, password_hash: expect.stringMatching(/^\$argon2id\$/) });

    const mails = await outbox(email);
    expect(mails).toHaveLength(1);
    expect(mails[0].kind).toBe('verify_email');
    expect(mails[0].body).toContain(MARKERS.verify_email);
    expect(mails[0].body).not.toContain('correct horse battery');

    const admin = await t.api.get(`/admin/tenants/${tenant.tenantId}`, { headers: adminHeaders });
    expect(admin.status).toBe(200);
    expect(admin.body.data).toMatchObject({ tenantType: 'trial', billingPlan: 'trial', enabledDomains: ['hiring'], isActive: true, hasApiKey: true });

    // Both the key and the token work straight away.
    expect((await t.api.get('/v1/collections', { headers: bearer(apiKey) })).status).toBe(200);
    expect((await t.api.get('/auth/me', { headers: bearer(token) })).status).toBe(200);
  });

  it('refuses an e-mail that is taken, in any letter case, with 409 EMAIL_TAKEN', async () => {
    const email = uniqueEmail('dup');
    await signupTenant(t.api, { email });
    const again = await t.api.post('/auth/signup', { companyName: 'Second', email, password: 'another password' });
    expectError(again, 409, 'EMAIL_TAKEN');
    const upper = await t.api.post('/auth/signup', { companyName: 'Third', email: email.toUpperCase(), password: 'another password' });
    expectError(upper, 409, 'EMAIL_TAKEN');
    const [count] = await t.sql('select count(*)::int as n from users where lower(email) = $1', [email]);
    expect(count.n).toBe(1);
    const [tenants] = await t.sql(`select count(*)::int as n from tenants where name in ('Second', 'Third')`);
    expect(tenants.n).toBe(0);
  });

  it('stores the e-mail lower-cased and trimmed', async () => {
    const email = uniqueEmail('case');
    const res = await t.api.post('/auth/signup', { companyName: 'Case Co', email: `  ${email.toUpperCase()} `, password: 'correct horse battery' });
    expect(res.status).toBe(201);
    expect(res.body.data.user.email).toBe(email);
  });

  it('answers 400 INVALID_INPUT naming exactly the failing fields', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ companyName: 'Short Pw', email: uniqueEmail(), password: 'short' }, ['password']],
      [{ companyName: 'Bad Mail', email: 'not-an-email', password: 'long enough password' }, ['email']],
      [{ email: uniqueEmail(), password: 'long enough password' }, ['companyName']],
      [{ companyName: '   ', email: uniqueEmail(), password: 'long enough password' }, ['companyName']],
      [{ companyName: 'Typed', email: uniqueEmail(), password: 12345678 }, ['password']],
      [{}, ['companyName', 'email', 'password']],
    ];
    for (const [body, paths] of cases) {
      const res = await t.api.post('/auth/signup', body);
      expectError(res, 400, 'INVALID_INPUT');
      expect(issuePaths(res), JSON.stringify(body)).toEqual(paths);
    }
    const [created] = await t.sql(`select count(*)::int as n from tenants where name in ('Short Pw', 'Bad Mail', 'Typed')`);
    expect(created.n).toBe(0);
  });
});

describe('POST /auth/login', () => {
  let owner: SignedUpTenant;
  beforeAll(async () => {
    owner = await signupTenant(t.api, { companyName: 'Login Co' });
  });

  it('answers {token, user, tenant} without an API key', async () => {
    const res = await t.api.post('/auth/login', { email: owner.email, password: owner.password });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        token: expect.any(String),
        user: { id: owner.userId, email: owner.email, role: 'owner' },
        tenant: { tenantId: owner.tenantId, tenantName: 'Login Co', plan: 'trial' },
      },
    });
    expect(decodeJwt(res.body.data.token)).toMatchObject({ sub: owner.userId, tid: owner.tenantId, role: 'owner' });
    const me = await t.api.get('/auth/me', { headers: bearer(res.body.data.token) });
    expect(me.status).toBe(200);
    expect(me.body.data.user.id).toBe(owner.userId);
  });

  it('accepts the e-mail in any letter case', async () => {
    const res = await t.api.post('/auth/login', { email: owner.email.toUpperCase(), password: owner.password });
    expect(res.status).toBe(200);
  });

  it('answers a wrong password and an unknown e-mail alike: 401 INVALID_CREDENTIALS', async () => {
    const wrong = await t.api.post('/auth/login', { email: owner.email, password: 'not the password' });
    const unknown = await t.api.post('/auth/login', { email: uniqueEmail('nobody'), password: owner.password });
    expectError(wrong, 401, 'INVALID_CREDENTIALS');
    expectError(unknown, 401, 'INVALID_CREDENTIALS');
    expect(unknown.body).toEqual(wrong.body);
  });

  it('validates the body: 400 INVALID_INPUT', async () => {
    const res = await t.api.post('/auth/login', { email: 'nope' });
    expectError(res, 400, 'INVALID_INPUT');
    expect(issuePaths(res)).toEqual(['email', 'password']);
  });
});

describe('login rate limit', () => {
  it(`after ${MAX_FAILURES} failures answers 429 RATE_LIMITED with Retry-After, even for the right password`, async () => {
    const victim = await signupTenant(t.api);
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await t.api.post('/auth/login', { email: victim.email, password: `wrong-${i}` }), 401, 'INVALID_CREDENTIALS');
    }
    const limited = await t.api.post('/auth/login', { email: victim.email, password: 'wrong again' });
    expectError(limited, 429, 'RATE_LIMITED');
    const retryAfter = limited.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(15 * 60);
    expect(limited.body.error.details).toEqual({ retry_after_seconds: Number(retryAfter) });

    const correct = await t.api.post('/auth/login', { email: victim.email, password: victim.password });
    expectError(correct, 429, 'RATE_LIMITED');
    expect(correct.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(correct.body.data).toBeUndefined();

    // The limit is per e-mail: another account still logs in, and the victim's existing token still works.
    const other = await signupTenant(t.api);
    expect((await t.api.post('/auth/login', { email: other.email, password: other.password })).status).toBe(200);
    expect((await t.api.get('/auth/me', { headers: bearer(victim.token) })).status).toBe(200);
  });

  it('limits unknown e-mails the same way (no account enumeration)', async () => {
    const email = uniqueEmail('ghost');
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await t.api.post('/auth/login', { email, password: 'whatever-password' }), 401, 'INVALID_CREDENTIALS');
    }
    expectError(await t.api.post('/auth/login', { email, password: 'whatever-password' }), 429, 'RATE_LIMITED');
  });

  it('counts the e-mail case-insensitively', async () => {
    const victim = await signupTenant(t.api);
    for (let i = 0; i < MAX_FAILURES; i++) {
      const email = i % 2 ? victim.email.toUpperCase() : victim.email;
      expectError(await t.api.post('/auth/login', { email, password: 'wrong password' }), 401, 'INVALID_CREDENTIALS');
    }
    expectError(await t.api.post('/auth/login', { email: victim.email.toUpperCase(), password: victim.password }), 429, 'RATE_LIMITED');
  });

  it('a successful login starts the count again', async () => {
    const user = await signupTenant(t.api);
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      expectError(await t.api.post('/auth/login', { email: user.email, password: 'wrong password' }), 401, 'INVALID_CREDENTIALS');
    }
    expect((await t.api.post('/auth/login', { email: user.email, password: user.password })).status).toBe(200);
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      expectError(await t.api.post('/auth/login', { email: user.email, password: 'wrong password' }), 401, 'INVALID_CREDENTIALS');
    }
    expect((await t.api.post('/auth/login', { email: user.email, password: user.password })).status).toBe(200);
  });
});

describe('GET /auth/me and POST /auth/refresh', () => {
  let owner: SignedUpTenant;
  beforeAll(async () => {
    owner = await signupTenant(t.api, { companyName: 'Me Co' });
  });

  it('returns the user and the tenant profile with the production key preview', async () => {
    const res = await t.api.get('/auth/me', { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        user: { id: owner.userId, email: owner.email, fullName: null, role: 'owner', emailVerified: false, createdAt: ISO },
        tenant: {
          tenantId: owner.tenantId,
          tenantName: 'Me Co',
          billingPlan: 'trial',
          billingEmail: owner.email,
          monthlyRequestQuota: null,
          monthlyTokenQuota: null,
          enabledDomains: ['hiring'],
          isActive: true,
          apiKeyPreview: `${owner.apiKey.slice(0, 12)}...${owner.apiKey.slice(-4)}`,
        },
      },
    });
    expect(res.body.data.tenant.apiKeyPreview).toHaveLength(19);
  });

  it('refresh returns a new token with a later expiry; /auth/me never returns a token', async () => {
    // A token issued 100 s ago with a short life: the refreshed one must be new and longer-lived.
    const old = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { iat: now() - 100, exp: now() + 600 });
    const res = await t.api.post('/auth/refresh', undefined, { headers: bearer(old) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { token: expect.any(String) } });
    const fresh = res.body.data.token as string;
    expect(fresh).not.toBe(old);
    const claims = decodeJwt(fresh);
    expect(claims).toEqual({ sub: owner.userId, tid: owner.tenantId, role: 'owner', iat: expect.any(Number), exp: expect.any(Number) });
    expect(claims.iat!).toBeGreaterThan(now() - 100);
    expect(claims.exp! - claims.iat!).toBe(SEVEN_DAYS);
    const me = await t.api.get('/auth/me', { headers: bearer(fresh) });
    expect(me.status).toBe(200);
    expect(me.body.data.token).toBeUndefined();
  });

  it('refresh needs a still-valid token', async () => {
    expectError(await t.api.post('/auth/refresh'), 401, 'UNAUTHORIZED');
    const expired = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { iat: now() - 7200, exp: now() - 60 });
    expectError(await t.api.post('/auth/refresh', undefined, { headers: bearer(expired) }), 401, 'TOKEN_EXPIRED');
    const wrongSecret = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { secret: new TextEncoder().encode('x'.repeat(48)) });
    expectError(await t.api.post('/auth/refresh', undefined, { headers: bearer(wrongSecret) }), 401, 'INVALID_TOKEN');
  });

  it('takes the role from the database, not from the token', async () => {
    const invited = uniqueEmail('viewer');
    const created = await t.api.post('/dashboard/users', { email: invited, role: 'viewer', password: 'viewer password' }, { headers: bearer(owner.token) });
    expect(created.status).toBe(201);
    // A token that claims owner for a viewer: the claim is ignored.
    const claimsOwner = await forgeToken({ sub: created.body.data.user.id, tid: owner.tenantId, role: 'owner' });
    const me = await t.api.get('/auth/me', { headers: bearer(claimsOwner) });
    expect(me.status).toBe(200);
    expect(me.body.data.user.role).toBe('viewer');
    expectError(await t.api.get('/dashboard/audit-log', { headers: bearer(claimsOwner) }), 403, 'FORBIDDEN');
    const refreshed = await t.api.post('/auth/refresh', undefined, { headers: bearer(claimsOwner) });
    expect(decodeJwt(refreshed.body.data.token).role).toBe('viewer');
  });
});

describe('JWT attacks on /auth/me', () => {
  let owner: SignedUpTenant;
  let other: SignedUpTenant;
  beforeAll(async () => {
    owner = await signupTenant(t.api);
    other = await signupTenant(t.api);
  });

  const me = (headers: Record<string, string> = {}) => t.api.get('/auth/me', { headers });

  it('no Authorization header: 401 UNAUTHORIZED', async () => {
    expectError(await me(), 401, 'UNAUTHORIZED');
    expectError(await me({ authorization: '' }), 401, 'UNAUTHORIZED');
  });

  it('garbage, a non-Bearer scheme or an API key: 401 INVALID_TOKEN', async () => {
    for (const authorization of ['Bearer garbage', 'Bearer a.b.c', 'Bearer ', 'Basic dXNlcjpwYXNz', owner.token, `Bearer ${owner.apiKey}`, `Bearer ${owner.token} extra`]) {
      expectError(await me({ authorization }), 401, 'INVALID_TOKEN');
    }
  });

  it('a wrong signature or a tampered payload: 401 INVALID_TOKEN', async () => {
    const wrongSecret = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { secret: new TextEncoder().encode('another-secret-0123456789abcdefghijklmnop') });
    expectError(await me(bearer(wrongSecret)), 401, 'INVALID_TOKEN');
    // The other tenant's owner's real signature on a payload naming our owner.
    const [header, , signature] = other.token.split('.');
    const payload = b64url({ ...decodeJwt(other.token), sub: owner.userId, tid: owner.tenantId });
    expectError(await me(bearer(`${header}.${payload}.${signature}`)), 401, 'INVALID_TOKEN');
  });

  it('alg none: 401 INVALID_TOKEN', async () => {
    const payload = b64url({ sub: owner.userId, tid: owner.tenantId, role: 'owner', iat: now(), exp: now() + 3600 });
    for (const alg of ['none', 'None', 'NONE']) {
      const header = b64url({ alg, typ: 'JWT' });
      expectError(await me(bearer(`${header}.${payload}.`)), 401, 'INVALID_TOKEN');
      expectError(await me(bearer(`${header}.${payload}`)), 401, 'INVALID_TOKEN');
    }
  });

  it('HS512 or HS384 with the right secret: 401 INVALID_TOKEN', async () => {
    for (const alg of ['HS512', 'HS384']) {
      const token = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { alg });
      expectError(await me(bearer(token)), 401, 'INVALID_TOKEN');
    }
  });

  it('an expired token: 401 TOKEN_EXPIRED', async () => {
    const expired = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { iat: now() - SEVEN_DAYS - 10, exp: now() - 10 });
    expectError(await me(bearer(expired)), 401, 'TOKEN_EXPIRED');
  });

  it('a token without exp, or with a user of another tenant, or of no user: 401 INVALID_TOKEN', async () => {
    expectError(await me(bearer(await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { exp: null }))), 401, 'INVALID_TOKEN');
    expectError(await me(bearer(await forgeToken({ sub: owner.userId, tid: other.tenantId }))), 401, 'INVALID_TOKEN');
    expectError(await me(bearer(await forgeToken({ sub: '00000000-0000-4000-8000-000000000000', tid: owner.tenantId }))), 401, 'INVALID_TOKEN');
    expectError(await me(bearer(await forgeToken({ sub: 'not-a-uuid', tid: owner.tenantId }))), 401, 'INVALID_TOKEN');
    expectError(await me(bearer(await forgeToken({ sub: owner.userId, tid: "x' or '1'='1" }))), 401, 'INVALID_TOKEN');
  });

  it('the token of a deleted user: 401 INVALID_TOKEN', async () => {
    const email = uniqueEmail('gone');
    const invited = await t.api.post('/dashboard/users', { email, role: 'developer', password: 'developer password' }, { headers: bearer(owner.token) });
    expect(invited.status).toBe(201);
    const login = await t.api.post('/auth/login', { email, password: 'developer password' });
    expect(login.status).toBe(200);
    const token = login.body.data.token as string;
    expect((await me(bearer(token))).status).toBe(200);
    const removed = await t.api.delete(`/dashboard/users/${invited.body.data.user.id}`, { headers: bearer(owner.token) });
    expect(removed.status).toBe(200);
    expectError(await me(bearer(token)), 401, 'INVALID_TOKEN');
    expectError(await t.api.post('/auth/refresh', undefined, { headers: bearer(token) }), 401, 'INVALID_TOKEN');
  });

  it('a dashboard token is not an API key', async () => {
    expectError(await t.api.get('/v1/collections', { headers: bearer(owner.token) }), 401, 'INVALID_API_KEY_FORMAT');
  });
});

describe('e-mail verification', () => {
  it('verifies with the mailed token, once', async () => {
    const owner = await signupTenant(t.api);
    const token = await mailedToken(owner.email, 'verify_email');
    // Only the hash of the token is stored.
    const stored = await t.sql<{ token_hash: string }>(
      `select token_hash from email_tokens et join users u on u.id = et.user_id where u.email = $1 and et.kind = 'verify_email'`,
      [owner.email],
    );
    expect(stored).toEqual([{ token_hash: sha256(token) }]);

    const res = await t.api.post('/auth/verify-email', { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { user: { id: owner.userId, email: owner.email, fullName: null, role: 'owner', emailVerified: true, createdAt: ISO } },
    });
    const me = await t.api.get('/auth/me', { headers: bearer(owner.token) });
    expect(me.body.data.user.emailVerified).toBe(true);

    const reuse = await t.api.post('/auth/verify-email', { token });
    expectError(reuse, 400, 'INVALID_INPUT');
  });

  it('refuses a garbage, empty or missing token with 400 INVALID_INPUT', async () => {
    expectError(await t.api.post('/auth/verify-email', { token: 'garbage' }), 400, 'INVALID_INPUT');
    expectError(await t.api.post('/auth/verify-email', { token: 'A'.repeat(43) }), 400, 'INVALID_INPUT');
    const empty = await t.api.post('/auth/verify-email', { token: '' });
    expectError(empty, 400, 'INVALID_INPUT');
    expect(issuePaths(empty)).toEqual(['token']);
    const missing = await t.api.post('/auth/verify-email', {});
    expectError(missing, 400, 'INVALID_INPUT');
    expect(issuePaths(missing)).toEqual(['token']);
  });

  it('a password-reset token is not a verification token', async () => {
    const owner = await signupTenant(t.api);
    expect((await t.api.post('/auth/password-reset/request', { email: owner.email })).status).toBe(200);
    const resetToken = await mailedToken(owner.email, 'password_reset');
    expectError(await t.api.post('/auth/verify-email', { token: resetToken }), 400, 'INVALID_INPUT');
    const me = await t.api.get('/auth/me', { headers: bearer(owner.token) });
    expect(me.body.data.user.emailVerified).toBe(false);
  });

  it('resend sends a new working mail while unverified, and nothing once verified', async () => {
    const owner = await signupTenant(t.api);
    expectError(await t.api.post('/auth/verify-email/resend'), 401, 'UNAUTHORIZED');
    const res = await t.api.post('/auth/verify-email/resend', undefined, { headers: bearer(owner.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { sent: true } });
    const mails = await outbox(owner.email, 'verify_email');
    expect(mails).toHaveLength(2);
    const second = tokenFromBody(mails[1].body, 'verify_email');
    expect(second).not.toBe(tokenFromBody(mails[0].body, 'verify_email'));
    expect((await t.api.post('/auth/verify-email', { token: second })).status).toBe(200);

    const again = await t.api.post('/auth/verify-email/resend', undefined, { headers: bearer(owner.token) });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ success: true, data: { sent: false } });
    expect(await outbox(owner.email, 'verify_email')).toHaveLength(2);
  });
});

describe('password reset', () => {
  it('a request for an unknown e-mail answers 200 and sends nothing', async () => {
    const email = uniqueEmail('unknown');
    const res = await t.api.post('/auth/password-reset/request', { email });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { requested: true } });
    expect(await outbox(email)).toEqual([]);
  });

  it('a request for a known e-mail answers the same and mails a token', async () => {
    const owner = await signupTenant(t.api);
    const res = await t.api.post('/auth/password-reset/request', { email: owner.email.toUpperCase() });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { requested: true } });
    const mails = await outbox(owner.email, 'password_reset');
    expect(mails).toHaveLength(1);
    expect(mails[0].body).toContain(MARKERS.password_reset);
  });

  it('a request with a malformed e-mail is 400 INVALID_INPUT', async () => {
    const res = await t.api.post('/auth/password-reset/request', { email: 'nope' });
    expectError(res, 400, 'INVALID_INPUT');
    expect(issuePaths(res)).toEqual(['email']);
  });

  it('confirm sets the new password once and refuses tokens issued before the reset', async () => {
    const owner = await signupTenant(t.api);
    // A token issued well before the reset (whole seconds, like every JWT iat).
    const before = await forgeToken({ sub: owner.userId, tid: owner.tenantId }, { iat: now() - 5, exp: now() + 3600 });
    expect((await t.api.get('/auth/me', { headers: bearer(before) })).status).toBe(200);

    await t.api.post('/auth/password-reset/request', { email: owner.email });
    const token = await mailedToken(owner.email, 'password_reset');
    const stored = await t.sql(`select token_hash from email_tokens where user_id = $1 and kind = 'password_reset'`, [owner.userId]);
    expect(stored).toEqual([{ token_hash: sha256(token) }]);

    // A too-short password fails validation and leaves the token usable.
    const short = await t.api.post('/auth/password-reset/confirm', { token, password: 'short' });
    expectError(short, 400, 'INVALID_INPUT');
    expect(issuePaths(short)).toEqual(['password']);

    const res = await t.api.post('/auth/password-reset/confirm', { token, password: 'a brand new password' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { reset: true } });

    expectError(await t.api.post('/auth/login', { email: owner.email, password: owner.password }), 401, 'INVALID_CREDENTIALS');
    const login = await t.api.post('/auth/login', { email: owner.email, password: 'a brand new password' });
    expect(login.status).toBe(200);
    expect((await t.api.get('/auth/me', { headers: bearer(login.body.data.token) })).status).toBe(200);

    expectError(await t.api.get('/auth/me', { headers: bearer(before) }), 401, 'INVALID_TOKEN');
    expectError(await t.api.post('/auth/refresh', undefined, { headers: bearer(before) }), 401, 'INVALID_TOKEN');

    const reuse = await t.api.post('/auth/password-reset/confirm', { token, password: 'yet another password' });
    expectError(reuse, 400, 'INVALID_INPUT');
    expect((await t.api.post('/auth/login', { email: owner.email, password: 'a brand new password' })).status).toBe(200);
  });

  it('confirming one reset token voids the earlier ones', async () => {
    const owner = await signupTenant(t.api);
    await t.api.post('/auth/password-reset/request', { email: owner.email });
    await t.api.post('/auth/password-reset/request', { email: owner.email });
    const mails = await outbox(owner.email, 'password_reset');
    expect(mails).toHaveLength(2);
    const [first, second] = mails.map((m) => tokenFromBody(m.body, 'password_reset'));
    expect((await t.api.post('/auth/password-reset/confirm', { token: second, password: 'second new password' })).status).toBe(200);
    expectError(await t.api.post('/auth/password-reset/confirm', { token: first, password: 'first new password' }), 400, 'INVALID_INPUT');
    expect((await t.api.post('/auth/login', { email: owner.email, password: 'second new password' })).status).toBe(200);
  });

  it('refuses garbage and verification tokens with 400 INVALID_INPUT', async () => {
    const owner = await signupTenant(t.api);
    expectError(await t.api.post('/auth/password-reset/confirm', { token: 'garbage', password: 'long enough password' }), 400, 'INVALID_INPUT');
    const verifyToken = await mailedToken(owner.email, 'verify_email');
    expectError(await t.api.post('/auth/password-reset/confirm', { token: verifyToken, password: 'long enough password' }), 400, 'INVALID_INPUT');
    expect((await t.api.post('/auth/login', { email: owner.email, password: owner.password })).status).toBe(200);
  });
});

describe('a deactivated tenant', () => {
  it('cannot log in or use its tokens and keys (403 ACCOUNT_INACTIVE) until reactivated', async () => {
    const owner = await signupTenant(t.api);
    const off = await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: false }, { headers: adminHeaders });
    expect(off.status).toBe(200);
    expect(off.body.data.isActive).toBe(false);

    expectError(await t.api.post('/auth/login', { email: owner.email, password: owner.password }), 403, 'ACCOUNT_INACTIVE');
    // A wrong password still says only that the credentials are wrong.
    expectError(await t.api.post('/auth/login', { email: owner.email, password: 'wrong password' }), 401, 'INVALID_CREDENTIALS');
    expectError(await t.api.get('/auth/me', { headers: bearer(owner.token) }), 403, 'ACCOUNT_INACTIVE');
    expectError(await t.api.post('/auth/refresh', undefined, { headers: bearer(owner.token) }), 403, 'ACCOUNT_INACTIVE');
    expectError(await t.api.get('/dashboard/account', { headers: bearer(owner.token) }), 403, 'ACCOUNT_INACTIVE');
    expectError(await t.api.get('/v1/collections', { headers: bearer(owner.apiKey) }), 403, 'ACCOUNT_INACTIVE');

    const on = await t.api.patch(`/admin/tenants/${owner.tenantId}`, { isActive: true }, { headers: adminHeaders });
    expect(on.status).toBe(200);
    expect((await t.api.post('/auth/login', { email: owner.email, password: owner.password })).status).toBe(200);
    expect((await t.api.get('/auth/me', { headers: bearer(owner.token) })).status).toBe(200);
  });
});
