import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-platform-key' });
  a = await signupTenant(t.api);
  b = await signupTenant(t.api);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const dash = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
// career-path answers are cached: every run here asks something new so it reaches the provider.
let runs = 0;
const run = (s: SignedUpTenant) =>
  t.api.post('/v1/hiring/career-path', { input: { user_id: 'u', current_role: `Analyst ${++runs}` } }, { headers: bearer(s.apiKey) });

describe('tenant provider keys', () => {
  it('a tenant\'s own key replaces the platform key for its runs only, and is shown as a preview', async () => {
    const set = await t.api.request('PUT', '/dashboard/provider-keys/openai', { apiKey: 'sk-tenant-a-secret-123456' }, dash(a));
    expect(set.status, set.text).toBe(200);
    expect(set.body.data.key).toMatchObject({ provider: 'openai', keyPreview: 'sk-...3456' });
    expect(set.text).not.toContain('sk-tenant-a-secret-123456');

    fake.reset();
    expect((await run(a)).status).toBe(200);
    expect((await run(b)).status).toBe(200);
    const auth = fake.chatRequests().map((r) => r.headers.authorization);
    expect(auth).toEqual(['Bearer sk-tenant-a-secret-123456', 'Bearer sk-platform-key']);

    const list = await t.api.get('/dashboard/provider-keys', dash(a));
    expect(list.body.data.providers).toContain('openai');
    expect(list.body.data.keys).toEqual([expect.objectContaining({ provider: 'openai', keyPreview: 'sk-...3456' })]);
    expect((await t.api.get('/dashboard/provider-keys', dash(b))).body.data.keys).toEqual([]);
    const stored = await t.sql<{ encrypted_key: string }>('select encrypted_key from tenant_provider_keys');
    expect(stored.map((r) => r.encrypted_key).join()).not.toContain('sk-tenant-a-secret');
    const audit = await t.api.get('/dashboard/audit-log?action=provider_key.set', dash(a));
    expect(audit.body.data.entries).toHaveLength(1);
  });

  it('another tenant cannot delete it; deleting it restores the platform key', async () => {
    const foreign = await t.api.delete('/dashboard/provider-keys/openai', dash(b));
    expect(foreign.status).toBe(404);
    expect((await t.api.delete('/dashboard/provider-keys/openai', dash(a))).body).toEqual({ success: true });
    fake.reset();
    await run(a);
    expect(fake.chatRequests()[0].headers.authorization).toBe('Bearer sk-platform-key');
  });

  it('unknown providers and blank keys are 400; developers and viewers cannot set keys', async () => {
    const unknown = await t.api.request('PUT', '/dashboard/provider-keys/nowhere', { apiKey: 'sk-123456789012' }, dash(a));
    expect(unknown.status).toBe(400);
    expect((await t.api.request('PUT', '/dashboard/provider-keys/openai', { apiKey: '' }, dash(a))).status).toBe(400);
    const email = uniqueEmail('dev');
    await t.api.post('/dashboard/users', { email, role: 'developer', password: 'developer password' }, dash(a));
    const token = (await t.api.post('/auth/login', { email, password: 'developer password' })).body.data.token;
    const denied = await t.api.request('PUT', '/dashboard/provider-keys/openai', { apiKey: 'sk-123456789012' }, { headers: bearer(token) });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
  });
});
