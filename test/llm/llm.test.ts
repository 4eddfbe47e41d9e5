// The model layer against the real openai SDK, a fake OpenAI-protocol provider and a real database.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { AppError } from '../../server/errors.js';
import { createOpenAiClient, type ClientSpec } from '../../server/llm/client-cache.js';
import { createLlmGateway } from '../../server/llm/llm-gateway.js';
import type { LlmGateway, StructuredCallRequest } from '../../server/llm/llm.types.js';
import { deleteTenantProviderKey, listTenantProviderKeys, setTenantProviderKey } from '../../server/llm/provider-keys.service.js';
import { signupTenant } from '../support/fixtures.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let local: FakeLlm;
let llm: LlmGateway;

beforeAll(async () => {
  [fake, local] = await Promise.all([startFakeLlm(), startFakeLlm()]);
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: 'test-key',
    DEFAULT_MODEL: 'platform-model',
    LLM_PROVIDERS: JSON.stringify([{ name: 'local', baseUrl: local.url, apiKeyEnv: 'LOCAL_LLM_KEY' }]),
    LOCAL_LLM_KEY: 'local-key',
    LLM_PRICES: JSON.stringify({ 'local/llama3': { input: 1, output: 2 } }),
    ENCRYPTION_KEY: 'an-encryption-key-of-at-least-32-chars',
  });
  llm = t.server.deps.llm;
});
afterAll(async () => {
  await t?.close();
  await Promise.all([fake?.close(), local?.close()]);
});
beforeEach(() => {
  fake.reset();
  local.reset();
});

const em = () => t.server.deps.orm.em.fork();

const SCHEMA = {
  type: 'object',
  required: ['summary', 'score'],
  properties: { summary: { type: 'string', minLength: 3 }, score: { type: 'integer', minimum: 0, maximum: 10 } },
  additionalProperties: false,
};

const request = (tenantId: string, overrides: Partial<StructuredCallRequest> = {}): StructuredCallRequest => ({
  usage: { tenantId, kind: 'intent_run', domain: 'hiring', intent: 'resume-analysis' },
  messages: [
    { role: 'system', content: 'You analyse resumes.' },
    { role: 'user', content: 'Jane Doe, 8 years of TypeScript.' },
  ],
  schema: SCHEMA,
  schemaName: 'resume_analysis',
  ...overrides,
});

/** The rejection of `promise`, which must be an AppError. */
async function appError(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const usageRows = (tenantId: string) =>
  t.sql<Record<string, unknown>>(
    `select kind, domain, intent, model, prompt_tokens, completion_tokens, total_tokens, cost_usd::text as cost, latency_ms, status, counts_as_request
       from usage_events where tenant_id = $1 order by created_at, counts_as_request desc`,
    [tenantId],
  );

describe('completeStructured', () => {
  it('returns a schema-valid answer and records one usage event', async () => {
    const { tenantId } = await signupTenant(t.api);
    const result = await llm.completeStructured(em(), request(tenantId, { model: 'gpt-4o-mini', temperature: 0.2, maxTokens: 300 }));
    expect(result.output).toEqual({ summary: 'sample', score: 0 });
    expect(result).toMatchObject({ model: 'gpt-4o-mini', provider: 'openai', calls: 1 });
    expect(result.promptTokens).toBeGreaterThan(0);
    expect(result.completionTokens).toBeGreaterThan(0);

    const [sent] = fake.chatRequests();
    expect(sent.body).toMatchObject({
      model: 'gpt-4o-mini',
      temperature: 0.2,
      max_tokens: 300,
      response_format: { type: 'json_schema', json_schema: { name: 'resume_analysis', schema: SCHEMA, strict: false } },
    });
    expect(sent.body.messages).toEqual(request(tenantId).messages);
    expect(sent.headers.authorization).toBe('Bearer test-key');

    const rows = await usageRows(tenantId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: 'intent_run', domain: 'hiring', intent: 'resume-analysis', model: 'gpt-4o-mini', status: 'ok', counts_as_request: true });
    expect(rows[0].prompt_tokens).toBe(result.promptTokens);
    expect(rows[0].completion_tokens).toBe(result.completionTokens);
  });

  it('prices usage from the built-in table and records tokens as the provider reported them', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.script([{ content: { summary: 'fine', score: 3 }, model: 'gpt-4o-mini-2024-07-18', usage: { prompt_tokens: 1000, completion_tokens: 500 } }]);
    const result = await llm.completeStructured(em(), request(tenantId, { model: 'gpt-4o-mini' }));
    // gpt-4o-mini: $0.15 / $0.60 per million tokens.
    expect(result).toMatchObject({ model: 'gpt-4o-mini-2024-07-18', promptTokens: 1000, completionTokens: 500, costUsd: 0.00045 });
    const [row] = await usageRows(tenantId);
    expect(row).toMatchObject({ model: 'gpt-4o-mini-2024-07-18', prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, cost: '0.000450' });
    expect(row.latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('costs 0 for an unpriced model and counts missing usage as 0 tokens', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.script([{ content: { summary: 'fine', score: 1 }, usage: null }, { content: { summary: 'fine', score: 1 } }]);
    const unreported = await llm.completeStructured(em(), request(tenantId, { model: 'gpt-4o' }));
    expect(unreported).toMatchObject({ promptTokens: 0, completionTokens: 0, costUsd: 0 });
    const unpriced = await llm.completeStructured(em(), request(tenantId, { model: 'some-unknown-model' }));
    expect(unpriced.promptTokens).toBeGreaterThan(0);
    expect(unpriced.costUsd).toBe(0);
    expect((await usageRows(tenantId)).map((r) => [r.total_tokens, r.cost])).toEqual([
      [0, '0.000000'],
      [unpriced.promptTokens + unpriced.completionTokens, '0.000000'],
    ]);
  });

  it('unwraps an answer in a markdown code fence without a re-ask', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.script(['```json\n{"summary": "fenced", "score": 2}\n```']);
    const result = await llm.completeStructured(em(), request(tenantId));
    expect(result.output).toEqual({ summary: 'fenced', score: 2 });
    expect(result.calls).toBe(1);
  });

  it('re-asks once with the validation errors when the first answer is invalid', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.script([{ content: { summary: 'ok', score: 99, mood: 'happy' } }]); // then the default, schema-valid answer
    const result = await llm.completeStructured(em(), request(tenantId, { model: 'gpt-4o-mini' }));
    expect(result.output).toEqual({ summary: 'sample', score: 0 });
    expect(result.calls).toBe(2);

    const [first, second] = fake.chatRequests();
    expect(second.body.messages).toHaveLength(first.body.messages.length + 2);
    const [assistant, repair] = second.body.messages.slice(-2);
    expect(assistant).toEqual({ role: 'assistant', content: '{"summary":"ok","score":99,"mood":"happy"}' });
    expect(repair.role).toBe('user');
    expect(repair.content).toContain('resume_analysis');
    expect(repair.content).toContain('/summary: must NOT have fewer than 3 characters');
    expect(repair.content).toContain('/score: must be <= 10');
    expect(repair.content).toContain('/: must NOT have additional properties: mood');

    const rows = await usageRows(tenantId);
    expect(rows.map((r) => [r.status, r.counts_as_request])).toEqual([
      ['ok', true],
      ['ok', false],
    ]);
    expect(result.promptTokens).toBe(Number(rows[0].prompt_tokens) + Number(rows[1].prompt_tokens));
  });

  it('throws OUTPUT_INVALID with the errors when the re-asked answer is invalid too', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.script(['not json at all', { content: { summary: 'still wrong' } }]);
    const err = await appError(llm.completeStructured(em(), request(tenantId)));
    expect(err.code).toBe('OUTPUT_INVALID');
    expect(err.status).toBe(502);
    expect(err.details).toEqual({ errors: [{ path: '/', message: 'must have required property \'score\'' }] });
    expect(fake.chatRequests()).toHaveLength(2);
    expect(fake.chatRequests()[1].body.messages.at(-1).content).toContain('not valid JSON');
    expect(await usageRows(tenantId)).toHaveLength(2);
  });

  it('refuses a broken schema before calling the provider', async () => {
    const { tenantId } = await signupTenant(t.api);
    const err = await appError(llm.completeStructured(em(), request(tenantId, { schema: { type: 'object', properties: { a: { type: 'no-such-type' } } } })));
    expect(err.code).toBe('INVALID_INPUT');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('provider failures', () => {
  it('succeeds when the SDK retries a 500', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.fail(1, 500);
    const result = await llm.completeStructured(em(), request(tenantId));
    expect(result.output).toEqual({ summary: 'sample', score: 0 });
    expect(fake.chatRequests()).toHaveLength(2);
    // One provider call from the gateway's point of view: one usage event.
    expect((await usageRows(tenantId)).map((r) => r.status)).toEqual(['ok']);
  });

  it('throws LLM_PROVIDER_ERROR after the retries, without the key, and meters the failed call', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.fail(3, 500, { message: 'Incorrect API key provided: test-key' });
    const err = await appError(llm.completeStructured(em(), request(tenantId, { model: 'gpt-4o-mini' })));
    expect(err.code).toBe('LLM_PROVIDER_ERROR');
    expect(err.status).toBe(502);
    expect(err.details).toEqual({ provider: 'openai', model: 'gpt-4o-mini', reason: 'server_error', status: 500, retryable: true, retry_after_seconds: 1, attempts: 3 });
    expect(err.headers).toEqual({ 'Retry-After': '1' });
    expect(JSON.stringify({ message: err.message, details: err.details, stack: err.stack })).not.toContain('test-key');
    expect(fake.chatRequests()).toHaveLength(3); // LLM_MAX_RETRIES = 2
    const rows = await usageRows(tenantId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ model: 'gpt-4o-mini', status: 'error', counts_as_request: false, prompt_tokens: 0, completion_tokens: 0, cost: '0.000000' });
  });

  it('throws LLM_PROVIDER_ERROR with the provider status for a 4xx (no retry)', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.script([{ status: 401, error: { message: 'Incorrect API key provided: test-key', type: 'invalid_request_error' } }]);
    const err = await appError(llm.completeStructured(em(), request(tenantId)));
    expect(err.details).toEqual({ provider: 'openai', model: 'platform-model', reason: 'unauthorized', status: 401, retryable: false, attempts: 1 });
    expect(err.message).not.toContain('test-key');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('throws LLM_PROVIDER_ERROR when every attempt times out', async () => {
    const { tenantId } = await signupTenant(t.api);
    fake.fail(3, 'hang');
    const err = await appError(llm.completeStructured(em(), request(tenantId, { timeoutMs: 250 })));
    expect(err.code).toBe('LLM_PROVIDER_ERROR');
    expect(err.details).toEqual({ provider: 'openai', model: 'platform-model', reason: 'timeout', retryable: true, retry_after_seconds: 2, attempts: 3 });
    expect(err.message).toContain('timed out');
    expect(fake.chatRequests()).toHaveLength(3);
    expect((await usageRows(tenantId)).map((r) => r.status)).toEqual(['error']);
  });
});

describe('routing', () => {
  it("uses the intent's model, else the tenant's default, else DEFAULT_MODEL", async () => {
    const { tenantId } = await signupTenant(t.api);
    await llm.completeStructured(em(), request(tenantId));
    await t.sql(`update tenants set default_model = 'tenant-model' where id = $1`, [tenantId]);
    await llm.completeStructured(em(), request(tenantId));
    await llm.completeStructured(em(), request(tenantId, { model: 'intent-model' }));
    expect(fake.chatRequests().map((r) => r.body.model)).toEqual(['platform-model', 'tenant-model', 'intent-model']);
  });

  it('sends `provider/model` to the named provider, with its key from apiKeyEnv and its LLM_PRICES price', async () => {
    const { tenantId } = await signupTenant(t.api);
    local.script([{ content: { summary: 'local answer', score: 5 }, usage: { prompt_tokens: 2000, completion_tokens: 1000 } }]);
    const result = await llm.completeStructured(em(), request(tenantId, { model: 'local/llama3' }));
    expect(result).toMatchObject({ output: { summary: 'local answer', score: 5 }, provider: 'local', model: 'llama3', costUsd: 0.004 });
    expect(fake.requests).toHaveLength(0);
    const [sent] = local.chatRequests();
    expect(sent.body.model).toBe('llama3');
    expect(sent.headers.authorization).toBe('Bearer local-key');
    expect((await usageRows(tenantId))[0]).toMatchObject({ model: 'llama3', cost: '0.004000' });
  });

  it('refuses an unknown provider with LLM_NOT_CONFIGURED before any call', async () => {
    const { tenantId } = await signupTenant(t.api);
    const err = await appError(llm.completeStructured(em(), request(tenantId, { model: 'nope/some-model' })));
    expect(err.code).toBe('LLM_NOT_CONFIGURED');
    expect(err.status).toBe(503);
    expect(fake.requests.length + local.requests.length).toBe(0);
    expect(await usageRows(tenantId)).toHaveLength(0);
  });

  it('throws LLM_NOT_CONFIGURED when no provider is configured, without calling anything', async () => {
    const { tenantId } = await signupTenant(t.api);
    const bare = createLlmGateway({ config: loadConfig({ NODE_ENV: 'test' }) });
    expect(await bare.isConfigured(em(), tenantId)).toBe(false);
    const err = await appError(bare.completeStructured(em(), request(tenantId)));
    expect(err.code).toBe('LLM_NOT_CONFIGURED');
    expect(fake.requests.length + local.requests.length).toBe(0);
    expect(await llm.isConfigured(em(), tenantId)).toBe(true);
  });
});

describe("tenants' own provider keys", () => {
  const deps = () => t.server.deps;

  it("override the platform key for that tenant only, and are stored encrypted", async () => {
    const a = await signupTenant(t.api);
    const b = await signupTenant(t.api);
    const secret = 'sk-tenant-secret-0123456789';
    const view = await setTenantProviderKey(em(), deps(), a.tenantId, 'openai', secret);
    expect(view).toMatchObject({ provider: 'openai', keyPreview: 'sk-...6789' });
    expect(JSON.stringify(view)).not.toContain(secret);

    await llm.completeStructured(em(), request(a.tenantId));
    await llm.completeStructured(em(), request(b.tenantId));
    expect(fake.chatRequests().map((r) => r.headers.authorization)).toEqual([`Bearer ${secret}`, 'Bearer test-key']);

    const rows = await t.sql<{ encrypted_key: string; key_preview: string }>(`select encrypted_key, key_preview from tenant_provider_keys where tenant_id = $1`, [a.tenantId]);
    expect(rows).toHaveLength(1);
    expect(rows[0].key_preview).toBe('sk-...6789');
    expect(rows[0].encrypted_key).not.toContain(secret);
    expect(rows[0].encrypted_key).not.toContain(Buffer.from(secret).toString('base64url').slice(0, 12));
    expect(rows[0].encrypted_key).toMatch(/^v1:/);

    expect(await listTenantProviderKeys(em(), a.tenantId)).toEqual([expect.objectContaining({ provider: 'openai', keyPreview: 'sk-...6789' })]);
    expect(await listTenantProviderKeys(em(), b.tenantId)).toEqual([]);

    expect(await deleteTenantProviderKey(em(), a.tenantId, 'openai')).toBe(true);
    expect(await deleteTenantProviderKey(em(), a.tenantId, 'openai')).toBe(false);
    fake.reset();
    await llm.completeStructured(em(), request(a.tenantId));
    expect(fake.chatRequests()[0].headers.authorization).toBe('Bearer test-key');
  });

  it('override a named provider key and can be replaced', async () => {
    const { tenantId } = await signupTenant(t.api);
    await setTenantProviderKey(em(), deps(), tenantId, 'local', 'first-local-key-000');
    await setTenantProviderKey(em(), deps(), tenantId, 'local', 'second-local-key-111');
    await llm.completeStructured(em(), request(tenantId, { model: 'local/llama3' }));
    expect(local.chatRequests()[0].headers.authorization).toBe('Bearer second-local-key-111');
    expect(await listTenantProviderKeys(em(), tenantId)).toEqual([expect.objectContaining({ provider: 'local', keyPreview: 'sec...-111' })]);
  });

  it('make an unconfigured provider usable for the tenant that has one', async () => {
    const { tenantId } = await signupTenant(t.api);
    const bare = createLlmGateway({ config: loadConfig({ NODE_ENV: 'test' }) });
    await setTenantProviderKey(em(), { config: loadConfig({ NODE_ENV: 'test' }) }, tenantId, 'openai', 'sk-own-key-abcdefgh');
    expect(await bare.isConfigured(em(), tenantId)).toBe(true);
  });

  it('refuse unknown providers and blank keys', async () => {
    const { tenantId } = await signupTenant(t.api);
    expect((await appError(setTenantProviderKey(em(), deps(), tenantId, 'nope', 'sk-whatever-123456'))).code).toBe('INVALID_INPUT');
    expect((await appError(setTenantProviderKey(em(), deps(), tenantId, 'openai', '   '))).code).toBe('INVALID_INPUT');
  });

  it("don't decrypt when copied to another tenant's row", async () => {
    const a = await signupTenant(t.api);
    const b = await signupTenant(t.api);
    await setTenantProviderKey(em(), deps(), a.tenantId, 'openai', 'sk-tenant-a-key-000000');
    await t.sql(
      `insert into tenant_provider_keys (tenant_id, provider, encrypted_key, key_preview, created_at, updated_at)
       select $2, provider, encrypted_key, key_preview, now(), now() from tenant_provider_keys where tenant_id = $1`,
      [a.tenantId, b.tenantId],
    );
    const err = await appError(llm.completeStructured(em(), request(b.tenantId)));
    expect(err.code).toBe('LLM_NOT_CONFIGURED');
    expect(fake.requests).toHaveLength(0);
  });

  it('are encrypted with a key generated once and kept in platform_settings when ENCRYPTION_KEY is unset', async () => {
    const { tenantId } = await signupTenant(t.api);
    const config = loadConfig({ NODE_ENV: 'test', OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key' });
    const gateway = createLlmGateway({ config });
    await setTenantProviderKey(em(), { config }, tenantId, 'openai', 'sk-generated-key-case-1');
    const settings = await t.sql(`select value from platform_settings where key = 'provider_key_encryption_key'`);
    expect(settings).toHaveLength(1);
    await gateway.completeStructured(em(), request(tenantId));
    expect(fake.chatRequests()[0].headers.authorization).toBe('Bearer sk-generated-key-case-1');
    // The server's gateway derives its key from ENCRYPTION_KEY: the same row is unreadable there.
    expect((await appError(llm.completeStructured(em(), request(tenantId)))).code).toBe('LLM_NOT_CONFIGURED');
  });
});

describe('configuration', () => {
  it('rejects malformed LLM_PROVIDERS and LLM_PRICES at start-up', () => {
    const load = (env: Record<string, string>) => () => loadConfig({ NODE_ENV: 'test', ...env });
    expect(load({ LLM_PROVIDERS: 'not json' })).toThrow(ConfigError);
    expect(load({ LLM_PROVIDERS: '[{"name":"openai","baseUrl":"http://127.0.0.1:1/v1"}]' })).toThrow(/reserved/);
    expect(load({ LLM_PROVIDERS: '[{"name":"a","baseUrl":"http://x/v1"},{"name":"a","baseUrl":"http://y/v1"}]' })).toThrow(/unique/);
    expect(load({ LLM_PROVIDERS: '[{"name":"groq","baseUrl":"http://x/v1","apiKeyEnv":"GROQ_KEY"}]' })).toThrow(/GROQ_KEY is not set/);
    expect(load({ LLM_PRICES: '{"m":{"input":"cheap"}}' })).toThrow(ConfigError);
  });

  it('reuses one SDK client per base URL and key, built with LLM_MAX_RETRIES', async () => {
    const { tenantId } = await signupTenant(t.api);
    const specs: ClientSpec[] = [];
    const gateway = createLlmGateway({
      config: loadConfig({ NODE_ENV: 'test', OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key', LLM_MAX_RETRIES: '0' }),
      createClient: (spec) => {
        specs.push(spec);
        return createOpenAiClient(spec);
      },
    });
    await gateway.completeStructured(em(), request(tenantId));
    await gateway.completeStructured(em(), request(tenantId, { model: 'other-model' }));
    expect(specs).toHaveLength(1);
    expect(specs[0]).toMatchObject({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 0 });
    fake.fail(1, 500);
    expect((await appError(gateway.completeStructured(em(), request(tenantId)))).code).toBe('LLM_PROVIDER_ERROR');
    expect(fake.chatRequests()).toHaveLength(3);
  });
});
