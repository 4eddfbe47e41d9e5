// The model label of the metrics is bounded per tenant: a tenant trying model name after model name
// gets its later names counted as `other`, and cannot use up the model labels of the whole process,
// so another tenant's model keeps its own series. Model calls go through custom intents whose
// execution_config.model the tenant sets, to the fake provider, over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

const TOKEN = 'metrics-token-0123456789abcdef';
/** More distinct names than the whole process labels (200). */
const MANY = 210;
/** The distinct model names one tenant adds to the label set. */
const PER_TENANT = 20;

/** The sum of `name`'s samples whose labels include `labels`, from the Prometheus text format. */
function total(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$/.exec(line);
    if (!sample || sample[1] !== name) continue;
    const found = Object.fromEntries([...sample[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) sum += Number(sample[3]);
  }
  return sum;
}

/** The distinct values `label` takes in `name`'s samples. */
function labelValues(text: string, name: string, label: string): Set<string> {
  const values = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const value = new RegExp(`[{,]${label}="((?:[^"\\\\]|\\\\.)*)"`).exec(line)?.[1];
    if (value !== undefined) values.add(value);
  }
  return values;
}

describe('model names as metric labels', () => {
  let t: TestServer;
  let fake: FakeLlm;
  let many: SignedUpTenant;
  let few: SignedUpTenant;
  let text: string;

  /** A custom intent `labels/echo` of `tenant`, whose model each call sets. */
  async function createEcho(tenant: SignedUpTenant) {
    const dash = { headers: bearer(tenant.token) };
    const domain = await t.api.post('/dashboard/custom-domains', { domain_key: 'labels', display_name: 'Labels' }, dash);
    expect(domain.status, domain.text).toBe(201);
    const intent = await t.api.post('/dashboard/custom-domains/labels/intents', { intent_key: 'echo', display_name: 'Echo', prompt_template: 'Say {{input.word}}' }, dash);
    expect(intent.status, intent.text).toBe(201);
  }

  /** One model call of `tenant` on `model`. */
  async function callModel(tenant: SignedUpTenant, model: string) {
    const patched = await t.api.patch('/dashboard/custom-domains/labels/intents/echo', { execution_config: { model } }, { headers: bearer(tenant.token) });
    expect(patched.status, patched.text).toBe(200);
    const run = await t.api.post('/v1/domains/labels/intents/echo/run', { input: { user_id: 'u', word: model } }, { headers: bearer(tenant.apiKey) });
    expect(run.status, run.text).toBe(200);
  }

  beforeAll(async () => {
    fake = await startFakeLlm();
    t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', METRICS_TOKEN: TOKEN });
    many = await signupTenant(t.api, { companyName: 'Many models' });
    few = await signupTenant(t.api, { companyName: 'Few models' });
    await createEcho(many);
    await createEcho(few);
    // One tenant tries more model names than the process labels...
    for (let i = 1; i <= MANY; i++) await callModel(many, `many-${String(i).padStart(3, '0')}`);
    // ... then another tenant uses a model of its own, and one the first tenant uses too, after it.
    await callModel(few, 'few-model');
    await callModel(few, 'shared-model');
    await callModel(many, 'shared-model');
    const res = await fetch(`${t.url}/metrics`, { headers: bearer(TOKEN) });
    text = await res.text();
    expect(res.status, text).toBe(200);
    expect(fake.chatRequests()).toHaveLength(MANY + 3);
  }, 300_000);
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('another tenant\'s model keeps its own label, however many names one tenant tried', () => {
    expect(total(text, 'liya_model_calls_total', { provider: 'openai', model: 'few-model', operation: 'chat', outcome: 'ok' })).toBe(1);
    expect(total(text, 'liya_model_tokens_total', { model: 'few-model', type: 'input' })).toBeGreaterThan(0);
  });

  it('a tenant adds at most 20 model names; its later ones are counted as `other`', () => {
    const names = [...labelValues(text, 'liya_model_calls_total', 'model')];
    expect(names.filter((n) => n.startsWith('many-')).sort()).toEqual(Array.from({ length: PER_TENANT }, (_, i) => `many-${String(i + 1).padStart(3, '0')}`));
    expect(total(text, 'liya_model_calls_total', { model: 'other' })).toBe(MANY - PER_TENANT);
    // Every call is counted, under its name or under `other`.
    expect(total(text, 'liya_model_calls_total', {})).toBe(MANY + 3);
  });

  it('a name already labelled is reported as itself, even for a tenant past its own share', () => {
    expect(total(text, 'liya_model_calls_total', { model: 'shared-model' })).toBe(2);
  });
});
