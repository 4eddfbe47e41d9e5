// Providers that fail: every failure of a call is a provider error (never a 500), routes fall back
// to the next target, and a target's breaker opens, is shared with every process through
// PostgreSQL, and closes after a probe. Two fake providers: the primary (`openai`) and `backup`.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let primary: FakeLlm;
let backup: FakeLlm;

beforeAll(async () => {
  [primary, backup] = await Promise.all([startFakeLlm(), startFakeLlm()]);
});
afterAll(async () => {
  await Promise.all([primary?.close(), backup?.close()]);
});
afterEach(() => {
  primary.reset();
  backup.reset();
});

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

const env = (extra: Record<string, string> = {}) => ({
  OPENAI_BASE_URL: primary.url,
  OPENAI_API_KEY: 'sk-platform-primary',
  DEFAULT_MODEL: 'gpt-4o-mini',
  LLM_PROVIDERS: JSON.stringify([{ name: 'backup', baseUrl: backup.url }]),
  LLM_FALLBACK_MODELS: JSON.stringify(['backup/fake-model']),
  LLM_PRICES: JSON.stringify({ 'gpt-4o-mini': { input: 1, output: 1 }, 'backup/fake-model': { input: 100, output: 100 } }),
  LLM_MAX_RETRIES: '1',
  ...extra,
});

// career-path answers are cached: every run asks something new so it reaches a provider.
let runs = 0;
const runIntent = (t: TestServer, s: SignedUpTenant) =>
  t.api.post('/v1/hiring/career-path', { input: { user_id: 'u', current_role: `Analyst ${++runs}` } }, { headers: bearer(s.apiKey) });

/** A tenant whose calls never fall back (its own chain is empty). */
async function soloTenant(t: TestServer): Promise<SignedUpTenant> {
  const tenant = await signupTenant(t.api);
  await t.sql(`update tenants set model_fallbacks = '[]'::jsonb where id = $1`, [tenant.tenantId]);
  return tenant;
}

const failing = (status: number) => (request: FakeRequest) => (request.path === '/v1/chat/completions' ? { status, retry_after: null } : undefined);

describe('every failure of a call is a provider failure', () => {
  let t: TestServer;
  let solo: SignedUpTenant;
  let routed: SignedUpTenant;
  beforeAll(async () => {
    // Breakers stay closed here: 20 calls before one may open.
    t = await startTestServer(env({ LLM_BREAKER_MIN_CALLS: '20' }));
    [solo, routed] = await Promise.all([soloTenant(t), signupTenant(t.api)]);
  });
  afterAll(() => t?.close());

  it('a body cut after its headers is retried, and answers when the retry does', async () => {
    primary.fail(1, 'truncate');
    const res = await runIntent(t, solo);
    expect(res.status, res.text).toBe(200);
    expect(primary.chatRequests()).toHaveLength(2);
  });

  it('a body cut on every attempt is 502 LLM_PROVIDER_ERROR (reason truncated), never a 500', async () => {
    primary.fail(2, 'truncate');
    const res = await runIntent(t, solo);
    expect(res.status, res.text).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'LLM_PROVIDER_ERROR', details: { provider: 'openai', reason: 'truncated', retryable: true, attempts: 2 } });
    expect(primary.chatRequests()).toHaveLength(2);
  });

  it('a connection reset is retried', async () => {
    primary.fail(1, 'reset');
    const res = await runIntent(t, solo);
    expect(res.status, res.text).toBe(200);
    expect(primary.chatRequests()).toHaveLength(2);
  });

  it('a rate limit with Retry-After: 1 is waited out on the same target', async () => {
    primary.fail(1, 429, { retryAfter: '1' });
    const res = await runIntent(t, solo);
    expect(res.status, res.text).toBe(200);
    expect(primary.chatRequests()).toHaveLength(2);
    expect(backup.chatRequests()).toHaveLength(0);
  });

  it('a request the provider refuses (400) is not retried and not rerouted', async () => {
    primary.fail(1, 400);
    const res = await runIntent(t, routed);
    expect(res.status, res.text).toBe(502);
    expect(res.body.error.details).toMatchObject({ reason: 'rejected', status: 400, retryable: false });
    expect(primary.chatRequests()).toHaveLength(1);
    expect(backup.chatRequests()).toHaveLength(0);
  });

  it('when the primary fails, the platform fallback serves; the run, usage and cost name the model that served', async () => {
    primary.fail(2, 503);
    const res = await runIntent(t, routed);
    expect(res.status, res.text).toBe(200);
    expect(primary.chatRequests()).toHaveLength(2);
    expect(backup.chatRequests()).toHaveLength(1);
    expect(backup.chatRequests()[0].body.model).toBe('fake-model');
    expect(res.body.metadata.model_used).toBe('fake-model');
    const rows = await t.sql<{ model: string; status: string; cost: string; prompt_tokens: number; completion_tokens: number }>(
      `select model, status, cost_usd::text as cost, prompt_tokens, completion_tokens from usage_events where tenant_id = $1 order by created_at desc limit 1`,
      [routed.tenantId],
    );
    expect(rows[0]).toMatchObject({ model: 'fake-model', status: 'ok' });
    // Priced at the fallback's price (100 USD per million tokens), not the primary's (1).
    const tokens = rows[0].prompt_tokens + rows[0].completion_tokens;
    expect(Number(rows[0].cost)).toBeCloseTo((tokens * 100) / 1e6, 5);
    expect(res.body.metadata.cost_usd).toBeCloseTo((tokens * 100) / 1e6, 5);
  });

  it('a tenant\'s own chain replaces the platform\'s; an empty one means no fallback', async () => {
    primary.fail(2, 503);
    const res = await runIntent(t, solo);
    expect(res.status, res.text).toBe(502);
    expect(res.body.error.details).toMatchObject({ provider: 'openai', reason: 'server_error', status: 503 });
    expect(backup.chatRequests()).toHaveLength(0);
  });
});

describe('breakers every process shares', () => {
  let a: TestServer;
  let b: TestServer;
  let platformTenant: SignedUpTenant;
  let keyed: SignedUpTenant;
  beforeAll(async () => {
    const breakerEnv = env({ LLM_BREAKER_MIN_CALLS: '4', LLM_BREAKER_COOLDOWN_MS: '60000', METRICS_TOKEN });
    a = await startTestServer(breakerEnv);
    // A second process on the same database: the breaker reaches it through PostgreSQL.
    b = await startTestServer(breakerEnv, { databaseUrl: a.databaseUrl });
    [platformTenant, keyed] = await Promise.all([signupTenant(a.api), soloTenant(a)]);
    const set = await a.api.request('PUT', '/dashboard/provider-keys/openai', { apiKey: 'sk-tenant-own-key-123' }, { headers: bearer(keyed.token) });
    expect(set.status, set.text).toBe(200);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const diagnostics = async (t: TestServer) => {
    const res = await t.api.get('/admin/diagnostics', { headers: adminHeaders });
    expect(res.status, res.text).toBe(200);
    return res.body.data as { checks: { name: string; status: string; detail: string }[]; breakers: { provider: string; credential: string; state: string; remote: boolean; open_until: string | null }[] };
  };
  const breakerOf = async (t: TestServer, credential: 'platform' | 'tenant') => (await diagnostics(t)).breakers.find((x) => x.provider === 'openai' && x.credential === credential);

  it('a tenant\'s own key cooling down cools neither the platform\'s key nor another tenant; with no fallback it answers 503 with Retry-After', async () => {
    primary.script((request) => (request.headers.authorization === 'Bearer sk-tenant-own-key-123' ? { status: 503, retry_after: null } : undefined));
    // Failing runs until the tenant key's breaker opens (4 calls, over half of them failed).
    const refused = await waitFor(async () => {
      const res = await runIntent(a, keyed);
      expect([502, 503], res.text).toContain(res.status);
      return res.status === 503 ? res : null;
    }, 'the tenant key\'s breaker to open');
    expect(refused.body.error).toMatchObject({ code: 'LLM_UNAVAILABLE', details: { provider: 'openai', reason: 'circuit_open', retryable: true } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // No call while it is open.
    const calls = primary.chatRequests().length;
    expect((await runIntent(a, keyed)).status).toBe(503);
    expect(primary.chatRequests()).toHaveLength(calls);

    // The platform's key, same provider, still serves another tenant from the primary.
    const other = await runIntent(a, platformTenant);
    expect(other.status, other.text).toBe(200);
    expect(primary.chatRequests().at(-1)!.headers.authorization).toBe('Bearer sk-platform-primary');
    expect(backup.chatRequests()).toHaveLength(0);
    expect(await breakerOf(a, 'tenant')).toMatchObject({ state: 'open', remote: false });
    expect(await breakerOf(a, 'platform')).toMatchObject({ state: 'closed' });
  });

  it('the platform breaker opens in one process, reaches the other through PostgreSQL, and the fallback serves both without calling the primary', async () => {
    primary.script(failing(503));
    await waitFor(async () => {
      const res = await runIntent(a, platformTenant);
      expect(res.status, res.text).toBe(200); // the fallback serves every one of them
      return (await breakerOf(a, 'platform'))?.state === 'open';
    }, 'the platform breaker to open');
    const seen = await waitFor(async () => {
      const found = await breakerOf(b, 'platform');
      return found?.state === 'open' ? found : null;
    }, 'the other process to hear of the breaker');
    expect(seen.remote).toBe(true);
    expect(seen.open_until).toEqual(expect.any(String));

    const calls = primary.chatRequests().length;
    const served = backup.chatRequests().length;
    for (const t of [a, b, a, b]) {
      const res = await runIntent(t, platformTenant);
      expect(res.status, res.text).toBe(200);
      expect(res.body.metadata.model_used).toBe('fake-model');
    }
    expect(primary.chatRequests()).toHaveLength(calls);
    expect(backup.chatRequests()).toHaveLength(served + 4);

    const check = (await diagnostics(b)).checks.find((c) => c.name === 'provider breakers');
    expect(check).toMatchObject({ status: 'warn', detail: expect.stringContaining('openai (open') });
  });

  it('/metrics shows each target\'s breaker state and counts fallbacks', async () => {
    // Both servers run in this one test process, which has one metrics registry: the last started (b)
    // serves it. b holds the platform breaker open on a's word and served fallbacks itself.
    const res = await b.api.get('/metrics', { headers: bearer(METRICS_TOKEN) });
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/liya_model_breakers\{provider="openai",credential="platform",state="open"\} 1/);
    expect(res.text).toMatch(/liya_model_fallbacks_total\{from_provider="openai",to_provider="backup",reason="circuit_open"\} [1-9]/);
    expect(res.text).toMatch(/liya_model_breaker_transitions_total\{provider="openai",credential="platform",state="open"\} 1/);
  });
});

describe('a breaker closes after a probe', () => {
  let t: TestServer;
  let tenant: SignedUpTenant;
  beforeAll(async () => {
    t = await startTestServer(env({ LLM_BREAKER_MIN_CALLS: '4', LLM_BREAKER_COOLDOWN_MS: '500' }));
    tenant = await signupTenant(t.api);
  });
  afterAll(() => t?.close());

  it('once the primary answers again, a probe closes its breaker and the primary serves', async () => {
    primary.script(failing(500));
    await waitFor(async () => {
      expect((await runIntent(t, tenant)).status).toBe(200);
      const res = await t.api.get('/admin/diagnostics', { headers: adminHeaders });
      return res.body.data.breakers.some((x: { provider: string; state: string }) => x.provider === 'openai' && x.state !== 'closed');
    }, 'the breaker to open');
    primary.script(null);
    // Served by the fallback while cooling down, then by the primary once a probe got through.
    await waitFor(async () => {
      const res = await runIntent(t, tenant);
      expect(res.status, res.text).toBe(200);
      return res.body.metadata.model_used === 'gpt-4o-mini';
    }, 'the primary to serve again');
    const res = await t.api.get('/admin/diagnostics', { headers: adminHeaders });
    expect(res.body.data.breakers.find((x: { provider: string }) => x.provider === 'openai')).toMatchObject({ state: 'closed' });
  });
});
