// A run whose API key this process has served before reads the key together with the run's own
// first data, preparing the run with the key's remembered scope meanwhile. These tests change the
// key or the tenant between two runs and check that the second run answers as a fresh lookup would.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test-platform', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '1' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
let sequence = 0;
const careerPath = () => ({ domain: 'hiring', intent: 'career-path', input: { user_id: 'u', current_role: `Data analyst ${++sequence}` } });
const sessionCount = async (tenantId: string) => Number((await t.sql<{ n: string }>('select count(*)::text as n from sessions where tenant_id = $1', [tenantId]))[0].n);

/** A tenant whose key has served one run in this server, so the server remembers its scope. */
async function servedTenant(): Promise<SignedUpTenant> {
  const tenant = await signupTenant(t.api);
  const first = await t.api.post('/v1/run', careerPath(), key(tenant));
  expect(first.status).toBe(200);
  return tenant;
}

describe('runs of a key served before', () => {
  it('send two statements on the run pool: the key with the run context, then the run record', async () => {
    const tenant = await servedTenant();
    const sql = t.server.deps.sql;
    const original = sql.query;
    const texts: string[] = [];
    sql.query = (text, params, prepare) => {
      texts.push(text);
      return original(text, params, prepare);
    };
    try {
      const run = await t.api.post('/v1/run', careerPath(), key(tenant));
      expect(run.status).toBe(200);
    } finally {
      sql.query = original;
    }
    // The job runner looks for queued online samples every second on the same pool: that look is not the request's.
    const request = texts.filter((text) => !/from "?online_eval_samples"?[\s\S]*group by/i.test(text));
    expect(request).toHaveLength(2);
    expect(request[0]).toMatch(/from api_keys k[\s\S]*left join usage_counters[\s\S]*left join intent_cache/);
    expect(request[1]).toMatch(/insert into session_messages/);
  });

  // Each request is the first one after its key's rotation: the process still remembers the key's
  // scope, so it is the remembered path that must answer the key's 401 (a 401 makes it forget).
  it.each([
    ['a valid run', careerPath()],
    ['an input the schema refuses', { domain: 'hiring', intent: 'career-path', input: {} }],
    ['an intent that does not exist', { domain: 'hiring', intent: 'nope', input: { user_id: 'u' } }],
    ['a hiring route', null],
  ] as const)('a key rotated since is 401 API_KEY_REVOKED for %s, before its input or intent is judged, with no provider call and nothing stored', async (_what, body) => {
    const tenant = await servedTenant();
    const sessions = await sessionCount(tenant.tenantId);
    const calls = fake.chatRequests().length;
    expect((await t.api.post('/dashboard/api-key/rotate', undefined, { headers: bearer(tenant.token) })).status).toBe(200);

    const res = body === null
      ? await t.api.post('/v1/hiring/career-path', { input: { user_id: 'u', current_role: 'Teacher' } }, key(tenant))
      : await t.api.post('/v1/run', body, key(tenant));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('API_KEY_REVOKED');
    expect(fake.chatRequests()).toHaveLength(calls);
    expect(await sessionCount(tenant.tenantId)).toBe(sessions);
  });

  it('a tenant deactivated since is 403 ACCOUNT_INACTIVE; reactivated, it runs again', async () => {
    const tenant = await servedTenant();
    const calls = fake.chatRequests().length;
    expect((await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { isActive: false }, { headers: adminHeaders })).status).toBe(200);
    const run = await t.api.post('/v1/run', careerPath(), key(tenant));
    expect(run.status).toBe(403);
    expect(run.body.error.code).toBe('ACCOUNT_INACTIVE');
    expect(fake.chatRequests()).toHaveLength(calls);
    expect((await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { isActive: true }, { headers: adminHeaders })).status).toBe(200);
    expect((await t.api.post('/v1/run', careerPath(), key(tenant))).status).toBe(200);
  });

  it('settings changed since apply at once: a quota lowered to what is used is 429, a domain switched off 403, switched on again 200', async () => {
    const tenant = await servedTenant();
    const calls = fake.chatRequests().length;
    expect((await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { monthlyRequestQuota: 1 }, { headers: adminHeaders })).status).toBe(200);
    const over = await t.api.post('/v1/run', careerPath(), key(tenant));
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');

    expect((await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { monthlyRequestQuota: null, enabledDomains: [] }, { headers: adminHeaders })).status).toBe(200);
    const off = await t.api.post('/v1/run', careerPath(), key(tenant));
    expect(off.status).toBe(403);
    expect(off.body.error.code).toBe('DOMAIN_NOT_ENABLED');
    expect(fake.chatRequests()).toHaveLength(calls);

    // The 403 was found with the key's new scope: switched on again, the remembered scope says "not
    // enabled" until the key is read, which must not stop the run.
    expect((await t.api.patch(`/admin/tenants/${tenant.tenantId}`, { enabledDomains: ['hiring'] }, { headers: adminHeaders })).status).toBe(200);
    const on = await t.api.post('/v1/run', careerPath(), key(tenant));
    expect(on.status).toBe(200);
    expect(on.body.usage.requests_remaining).toBeNull();
  });

  it('a cached answer is the key\'s own tenant\'s: the same input from another tenant calls the model', async () => {
    const a = await servedTenant();
    const b = await servedTenant();
    const body = careerPath();
    const first = await t.api.post('/v1/run', body, key(a));
    expect(first.body.metadata.cached).toBe(false);
    const again = await t.api.post('/v1/run', body, key(a));
    expect(again.body.metadata.cached).toBe(true);
    const calls = fake.chatRequests().length;
    const other = await t.api.post('/v1/run', body, key(b));
    expect(other.status).toBe(200);
    expect(other.body.metadata.cached).toBe(false);
    expect(fake.chatRequests()).toHaveLength(calls + 1);
  });
});
