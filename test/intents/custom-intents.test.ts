import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;
let viewerToken: string;

const BASE = '/dashboard/custom-domains';

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api);
  b = await signupTenant(t.api);
  const email = uniqueEmail('viewer');
  await t.api.post('/dashboard/users', { email, role: 'viewer', password: 'viewer password 1' }, { headers: bearer(a.token) });
  viewerToken = (await t.api.post('/auth/login', { email, password: 'viewer password 1' })).body.data.token;
});
afterAll(() => t?.close());

const as = (tenant: SignedUpTenant) => ({ headers: bearer(tenant.token) });

async function createDomain(tenant: SignedUpTenant, key: string) {
  const res = await t.api.post(BASE, { domain_key: key, display_name: `Domain ${key}`, description: 'Test domain' }, as(tenant));
  expect(res.status, res.text).toBe(201);
  return res.body.data.domain;
}

async function createIntent(tenant: SignedUpTenant, domain: string, key: string, extra: Record<string, unknown> = {}) {
  const res = await t.api.post(`${BASE}/${domain}/intents`, { intent_key: key, display_name: `Intent ${key}`, prompt_template: 'Summarise {{input.text}}', ...extra }, as(tenant));
  expect(res.status, res.text).toBe(201);
  return res.body.data.intent;
}

describe('custom domains', () => {
  it('create, read, list, update, delete', async () => {
    const domain = await createDomain(a, 'sales');
    expect(domain).toMatchObject({ domain_key: 'sales', display_name: 'Domain sales', description: 'Test domain', is_active: true, sort_order: 0, intent_count: 0 });
    expect((await t.api.get(`${BASE}/sales`, as(a))).body.data.domain.id).toBe(domain.id);
    const updated = await t.api.patch(`${BASE}/sales`, { display_name: 'Sales', is_active: false, sort_order: 5 }, as(a));
    expect(updated.status).toBe(200);
    expect(updated.body.data.domain).toMatchObject({ display_name: 'Sales', is_active: false, sort_order: 5 });
    const list = await t.api.get(BASE, as(a));
    expect(list.body.data.domains.map((d: { domain_key: string }) => d.domain_key)).toContain('sales');
    expect((await t.api.delete(`${BASE}/sales`, as(a))).body).toEqual({ success: true });
    expect((await t.api.get(`${BASE}/sales`, as(a))).status).toBe(404);
  });

  it('the list takes page and pageSize (default 20, at most 100), in sort_order then key, and answers pagination', async () => {
    const c = await signupTenant(t.api);
    for (const [key, sort_order] of [['d-zeta', 0], ['d-alpha', 0], ['d-first', -1], ['d-last', 9]] as const) {
      expect((await t.api.post(BASE, { domain_key: key, display_name: key, sort_order }, as(c))).status).toBe(201);
    }
    await createIntent(c, 'd-alpha', 'one');
    const page = async (query: string) => {
      const res = await t.api.get(`${BASE}${query}`, as(c));
      expect(res.status, res.text).toBe(200);
      return { keys: res.body.data.domains.map((d: { domain_key: string }) => d.domain_key), pagination: res.body.data.pagination, domains: res.body.data.domains };
    };
    const order = ['d-first', 'd-alpha', 'd-zeta', 'd-last'];
    const all = await page('');
    expect({ keys: all.keys, pagination: all.pagination }).toEqual({ keys: order, pagination: { total: 4, limit: 20, offset: 0 } });
    const first = await page('?page=1&pageSize=2');
    expect({ keys: first.keys, pagination: first.pagination }).toEqual({ keys: order.slice(0, 2), pagination: { total: 4, limit: 2, offset: 0 } });
    // Intent counts are right on any page.
    expect(first.domains.find((d: { domain_key: string }) => d.domain_key === 'd-alpha').intent_count).toBe(1);
    const second = await page('?page=2&pageSize=2');
    expect({ keys: second.keys, pagination: second.pagination }).toEqual({ keys: order.slice(2), pagination: { total: 4, limit: 2, offset: 2 } });
    expect((await page('?page=9&pageSize=2')).keys).toEqual([]);
    expect((await page('?pageSize=250')).pagination).toEqual({ total: 4, limit: 100, offset: 0 });
    for (const query of ['?page=0', '?pageSize=0', '?pageSize=many']) {
      const res = await t.api.get(`${BASE}${query}`, as(c));
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
    }
  });

  it('keys are validated, unique per tenant, and the built-in key is reserved', async () => {
    await createDomain(a, 'legal');
    const dup = await t.api.post(BASE, { domain_key: 'legal', display_name: 'Again' }, as(a));
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('DOMAIN_KEY_TAKEN');
    expect((await t.api.post(BASE, { domain_key: 'hiring', display_name: 'Mine' }, as(a))).body.error.code).toBe('DOMAIN_KEY_TAKEN');
    const bad = await t.api.post(BASE, { domain_key: 'Bad Key!', display_name: 'x' }, as(a));
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues[0].path).toBe('domain_key');
    // Another tenant may use the same key.
    await createDomain(b, 'legal');
  });

  it('viewers read but do not write; other tenants see 404', async () => {
    await createDomain(a, 'ops');
    expect((await t.api.get(`${BASE}/ops`, { headers: bearer(viewerToken) })).status).toBe(200);
    const write = await t.api.post(BASE, { domain_key: 'viewer-made', display_name: 'x' }, { headers: bearer(viewerToken) });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('FORBIDDEN');
    for (const [method, path] of [['GET', `${BASE}/ops`], ['PATCH', `${BASE}/ops`], ['DELETE', `${BASE}/ops`], ['GET', `${BASE}/ops/intents`]]) {
      const res = await t.api.request(method, path, method === 'PATCH' ? { display_name: 'stolen' } : undefined, as(b));
      expect(res.status, `${method} ${path}`).toBe(404);
    }
  });
});

describe('custom intents', () => {
  it('create returns every CustomIntent field and version 1', async () => {
    await createDomain(a, 'support');
    const intent = await createIntent(a, 'support', 'triage', {
      description: 'Sort tickets',
      input_schema: { type: 'object', required: ['text'], properties: { text: { type: 'string', minLength: 3 } } },
      output_schema: { type: 'object', required: ['priority'], properties: { priority: { type: 'string', enum: ['low', 'high'] } } },
      execution_config: { model: 'gpt-4o-mini', temperature: 0.2, max_tokens: 500 },
      cache_config: { enabled: true, ttl_seconds: 600 },
      guardrails_config: { pii: { action: 'redact' }, injection: { action: 'block' } },
      sort_order: 3,
    });
    expect(Object.keys(intent).sort()).toEqual(
      [
        'id', 'domain_key', 'intent_key', 'display_name', 'description', 'prompt_template', 'prompt_binding', 'output_schema', 'input_schema',
        'guardrails_config', 'agent_config', 'execution_config', 'retrieval_config', 'cache_config', 'sort_order', 'is_active', 'current_version',
        'created_at', 'updated_at',
      ].sort(),
    );
    expect(intent).toMatchObject({ domain_key: 'support', intent_key: 'triage', is_active: true, sort_order: 3, current_version: 1, agent_config: null, prompt_binding: null });
    const versions = await t.api.get(`${BASE}/support/intents/triage/versions`, as(a));
    expect(versions.body.data.versions).toHaveLength(1);
    expect(versions.body.data.versions[0]).toMatchObject({ version_number: 1, change_type: 'create', restored_from_version: null, created_by: a.userId, actorName: a.email });
    expect(versions.body.data.versions[0].changed_fields).toEqual(expect.arrayContaining(['display_name', 'prompt_template', 'input_schema', 'output_schema', 'sort_order']));
  });

  it('rejects unusable schemas and bad configs with 400 naming the field', async () => {
    await createDomain(a, 'checks');
    const cases: [Record<string, unknown>, string][] = [
      [{ output_schema: { type: 'strnig' } }, 'output_schema'],
      [{ input_schema: 'not an object' }, 'input_schema'],
      [{ execution_config: { temperature: 3 } }, 'execution_config.temperature'],
      [{ execution_config: { temperature: '0.5' } }, 'execution_config.temperature'],
      [{ cache_config: { enabled: 'yes' } }, 'cache_config.enabled'],
      [{ retrieval_config: { enabled: true, top_k: 500 } }, 'retrieval_config.top_k'],
      [{ guardrails_config: { pii: { action: 'shred' } } }, 'guardrails_config.pii.action'],
      [{ sort_order: '1' }, 'sort_order'],
      [{ intent_key: 'Has Spaces' }, 'intent_key'],
      [{ prompt_template: '' }, 'prompt_template'],
    ];
    for (const [extra, path] of cases) {
      const res = await t.api.post(`${BASE}/checks/intents`, { intent_key: 'x', display_name: 'X', prompt_template: 'P', ...extra }, as(a));
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path), JSON.stringify(extra)).toContain(path);
    }
    expect((await t.api.post(`${BASE}/nope/intents`, { intent_key: 'x', display_name: 'X', prompt_template: 'P' }, as(a))).status).toBe(404);
  });

  it('duplicate keys are 409 INTENT_KEY_TAKEN; lists follow sort_order', async () => {
    await createDomain(a, 'ordering');
    await createIntent(a, 'ordering', 'second', { sort_order: 2 });
    await createIntent(a, 'ordering', 'first', { sort_order: 1 });
    const dup = await t.api.post(`${BASE}/ordering/intents`, { intent_key: 'first', display_name: 'X', prompt_template: 'P' }, as(a));
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('INTENT_KEY_TAKEN');
    const list = await t.api.get(`${BASE}/ordering/intents`, as(a));
    expect(list.body.data.intents.map((i: { intent_key: string }) => i.intent_key)).toEqual(['first', 'second']);
    expect((await t.api.get(`${BASE}/ordering`, as(a))).body.data.domain.intent_count).toBe(2);
  });

  it('another tenant gets 404 for every intent route', async () => {
    await createDomain(a, 'private');
    await createIntent(a, 'private', 'secret');
    const paths: [string, string, unknown?][] = [
      ['GET', `${BASE}/private/intents/secret`],
      ['PATCH', `${BASE}/private/intents/secret`, { display_name: 'stolen' }],
      ['DELETE', `${BASE}/private/intents/secret`],
      ['GET', `${BASE}/private/intents/secret/versions`],
      ['GET', `${BASE}/private/intents/secret/versions/1`],
      ['GET', `${BASE}/private/intents/secret/versions/1/diff/1`],
      ['POST', `${BASE}/private/intents/secret/versions/1/restore`],
    ];
    for (const [method, path, body] of paths) {
      const res = await t.api.request(method, path, body, as(b));
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await t.api.get(`${BASE}/private/intents/secret`, as(a))).body.data.intent.display_name).toBe('Intent secret');
  });
});

describe('versions', () => {
  it('every save makes an immutable version; diff and restore work; later versions survive a restore', async () => {
    await createDomain(a, 'writing');
    await createIntent(a, 'writing', 'tagline', { execution_config: { temperature: 0.7 } });
    const base = `${BASE}/writing/intents/tagline`;
    const v2 = await t.api.patch(base, { prompt_template: 'Write a tagline for {{input.product}}' }, as(a));
    expect(v2.status).toBe(200);
    expect(v2.body.data.intent.current_version).toBe(2);
    const v3 = await t.api.patch(base, { execution_config: { temperature: 0.9 }, description: 'Taglines' }, as(a));
    expect(v3.body.data.intent.current_version).toBe(3);
    // A save with no change is still a save.
    const v4 = await t.api.patch(base, {}, as(a));
    expect(v4.body.data.intent.current_version).toBe(4);

    const versions = (await t.api.get(`${base}/versions`, as(a))).body.data.versions;
    expect(versions.map((v: { version_number: number }) => v.version_number)).toEqual([4, 3, 2, 1]);
    expect(versions.map((v: { changed_fields: string[] }) => v.changed_fields.sort())).toEqual([[], ['description', 'execution_config'], ['prompt_template'], expect.any(Array)]);

    const one = await t.api.get(`${base}/versions/1`, as(a));
    expect(one.body.data.version.definition).toMatchObject({ prompt_template: 'Summarise {{input.text}}', execution_config: { temperature: 0.7 }, description: null });

    const diff = await t.api.get(`${base}/versions/1/diff/3`, as(a));
    expect(diff.body.data).toEqual({
      from: 1,
      to: 3,
      changes: [
        { field: 'description', before: null, after: 'Taglines' },
        { field: 'prompt_template', before: 'Summarise {{input.text}}', after: 'Write a tagline for {{input.product}}' },
        { field: 'execution_config', before: { temperature: 0.7 }, after: { temperature: 0.9 } },
      ],
    });

    const restored = await t.api.post(`${base}/versions/1/restore`, undefined, as(a));
    expect(restored.status).toBe(200);
    expect(restored.body.data.intent).toMatchObject({ prompt_template: 'Summarise {{input.text}}', description: null, execution_config: { temperature: 0.7 }, current_version: 5 });
    const after = (await t.api.get(`${base}/versions`, as(a))).body.data.versions;
    expect(after.map((v: { version_number: number }) => v.version_number)).toEqual([5, 4, 3, 2, 1]);
    expect(after[0]).toMatchObject({ change_type: 'restore', restored_from_version: 1 });
    expect(after[0].changed_fields.sort()).toEqual(['description', 'execution_config', 'prompt_template']);
    // Version 3 is untouched.
    expect((await t.api.get(`${base}/versions/3`, as(a))).body.data.version.definition.prompt_template).toBe('Write a tagline for {{input.product}}');
  });

  it('unknown versions are 404, malformed ones 400', async () => {
    await createDomain(a, 'versions404');
    await createIntent(a, 'versions404', 'x');
    const base = `${BASE}/versions404/intents/x`;
    expect((await t.api.get(`${base}/versions/9`, as(a))).status).toBe(404);
    expect((await t.api.get(`${base}/versions/1/diff/9`, as(a))).status).toBe(404);
    expect((await t.api.post(`${base}/versions/9/restore`, undefined, as(a))).status).toBe(404);
    expect((await t.api.get(`${base}/versions/abc`, as(a))).status).toBe(400);
    expect((await t.api.get(`${base}/versions/0`, as(a))).status).toBe(400);
  });

  it('concurrent saves never produce duplicate version numbers', async () => {
    await createDomain(a, 'race');
    await createIntent(a, 'race', 'x');
    const base = `${BASE}/race/intents/x`;
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => t.api.patch(base, { description: `save ${i}` }, as(a))));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    const numbers = (await t.api.get(`${base}/versions`, as(a))).body.data.versions.map((v: { version_number: number }) => v.version_number);
    expect(numbers).toEqual(Array.from({ length: 13 }, (_, i) => 13 - i));
  });

  it('the cross-domain feed lists recent changes of this tenant only', async () => {
    await createDomain(a, 'feed-one');
    await createDomain(a, 'feed-two');
    await createIntent(a, 'feed-one', 'alpha');
    await createIntent(a, 'feed-two', 'beta');
    await t.api.patch(`${BASE}/feed-one/intents/alpha`, { description: 'changed' }, as(a));
    const feed = await t.api.get(`${BASE}/intent-versions?pageSize=3`, as(a));
    expect(feed.status).toBe(200);
    expect(feed.body.data.versions.slice(0, 3).map((v: { domain_key: string; intent_key: string; version_number: number }) => `${v.domain_key}/${v.intent_key}@${v.version_number}`)).toEqual([
      'feed-one/alpha@2',
      'feed-two/beta@1',
      'feed-one/alpha@1',
    ]);
    expect(feed.body.data.pagination.limit).toBe(3);
    const filtered = await t.api.get(`${BASE}/intent-versions?domain_key=feed-two`, as(a));
    expect(filtered.body.data.versions.map((v: { intent_key: string }) => v.intent_key)).toEqual(['beta']);
    const other = await t.api.get(`${BASE}/intent-versions`, as(b));
    expect(other.body.data.versions.every((v: { domain_key: string }) => !v.domain_key.startsWith('feed-'))).toBe(true);
  });
});

describe('prompt library and bindings', () => {
  it('prompts have versions; an intent binds to one; a bound prompt cannot be deleted', async () => {
    const created = await t.api.post('/dashboard/prompts', { prompt_key: 'summary', name: 'Summary', template: 'Summarise: {{input.text}}' }, as(a));
    expect(created.status).toBe(201);
    expect(created.body.data.version.version_number).toBe(1);
    const v2 = await t.api.post('/dashboard/prompts/summary/versions', { template: 'Summarise briefly: {{input.text}}', note: 'shorter' }, as(a));
    expect(v2.body.data.version).toMatchObject({ version_number: 2, note: 'shorter' });
    const got = await t.api.get('/dashboard/prompts/summary', as(a));
    expect(got.body.data.prompt.latest_version).toBe(2);
    expect(got.body.data.versions.map((v: { version_number: number }) => v.version_number)).toEqual([2, 1]);
    expect((await t.api.post('/dashboard/prompts', { prompt_key: 'summary', name: 'x', template: 'y' }, as(a))).body.error.code).toBe('PROMPT_KEY_TAKEN');

    await createDomain(a, 'bound');
    const missing = await t.api.post(`${BASE}/bound/intents`, { intent_key: 'x', display_name: 'X', prompt_template: 'P', prompt_binding: { prompt_key: 'summary', version: 7 } }, as(a));
    expect(missing.status).toBe(400);
    await createIntent(a, 'bound', 'x', { prompt_binding: { prompt_key: 'summary', version: 2 } });
    const del = await t.api.delete('/dashboard/prompts/summary', as(a));
    expect(del.status).toBe(409);
    expect(del.body.error.details.intents).toEqual(['bound/x']);
    await t.api.patch(`${BASE}/bound/intents/x`, { prompt_binding: null }, as(a));
    expect((await t.api.delete('/dashboard/prompts/summary', as(a))).status).toBe(200);
    expect((await t.api.get('/dashboard/prompts/summary', as(b))).status).toBe(404);
  });
});

describe('audit', () => {
  it('records intent saves and restores', async () => {
    const log = await t.api.get('/dashboard/audit-log?pageSize=100', as(a));
    const actions = new Set(log.body.data.entries.map((e: { action: string }) => e.action));
    for (const action of ['custom_domain.created', 'custom_intent.created', 'custom_intent.updated', 'custom_intent.restored', 'prompt.created']) {
      expect(actions.has(action), action).toBe(true);
    }
  });
});
