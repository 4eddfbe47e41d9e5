// Collections over real HTTP: the key API (/v1/collections) and the dashboard routes (JWT).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiResponse } from '../support/client.js';
import { adminHeaders, signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectError } from '../support/expect-error.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;
const tokens: Record<'developer' | 'admin' | 'viewer', string> = { developer: '', admin: '', viewer: '' };

const V1 = '/v1/collections';
const DASH = '/dashboard/collections';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DEFAULT_COLOR = '#64748b';

const key = (tenant: SignedUpTenant) => ({ headers: bearer(tenant.apiKey) });
const jwt = (token: string) => ({ headers: bearer(token) });

async function invite(role: 'developer' | 'admin' | 'viewer') {
  const email = uniqueEmail(role);
  const password = `${role} password 123`;
  const res = await t.api.post('/dashboard/users', { email, role, password }, jwt(a.token));
  expect(res.status, res.text).toBe(201);
  const login = await t.api.post('/auth/login', { email, password });
  expect(login.status, login.text).toBe(200);
  return login.body.data.token as string;
}

let slugCounter = 0;
const freshSlug = (prefix = 'col') => `${prefix}-${++slugCounter}`;

async function create(tenant: SignedUpTenant, body: Record<string, unknown> = {}) {
  const res = await t.api.post(V1, { slug: freshSlug(), label: 'A collection', domain_keys: ['hiring'], ...body }, key(tenant));
  expect(res.status, res.text).toBe(201);
  return res.body.data.collection;
}

function expectInvalid(res: ApiResponse, path: string, label: string) {
  expect(res.status, `${label}: ${res.text}`).toBe(400);
  expect(res.body.error.code, label).toBe('INVALID_INPUT');
  expect(res.body.error.details.issues.map((i: { path: string }) => i.path), `${label}: ${res.text}`).toContain(path);
}

const auditActions = async (tenantId: string, targetId: string) =>
  (await t.sql<{ action: string }>('select action from audit_log where tenant_id = $1 and target_id = $2 order by created_at, id', [tenantId, targetId])).map((r) => r.action);

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Collections A' });
  b = await signupTenant(t.api, { companyName: 'Collections B' });
  tokens.developer = await invite('developer');
  tokens.admin = await invite('admin');
  tokens.viewer = await invite('viewer');
  const owner = jwt(a.token);
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'support', display_name: 'Support' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'archived', display_name: 'Archived', is_active: false }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'legal', display_name: 'Legal' }, owner)).status).toBe(201);
});
afterAll(() => t?.close());

describe('POST /v1/collections', () => {
  it('creates with the required fields and answers 201 with every Collection field', async () => {
    const res = await t.api.post(V1, { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, key(a));
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        collection: {
          id: expect.stringMatching(UUID),
          slug: 'handbook',
          label: 'Handbook',
          color: DEFAULT_COLOR,
          created_at: expect.stringMatching(ISO),
          domain_keys: ['hiring'],
          tags: [],
          visibility: 'workspace',
          last_synced_at: null,
          retrieval_config: null,
          default_embedding_model: null,
          default_chunking_strategy: null,
          default_chunk_size: null,
          default_chunk_overlap: null,
        },
      },
    });
    const id = res.body.data.collection.id;
    expect(await auditActions(a.tenantId, id)).toEqual(['collection.created']);
    const [audit] = await t.sql<{ actor_type: string; details: Record<string, unknown> }>('select actor_type, details from audit_log where target_id = $1', [id]);
    expect(audit).toEqual({ actor_type: 'api_key', details: { slug: 'handbook', domain_keys: ['hiring'] } });
  });

  it('takes every optional field, de-duplicates domain keys and lower-cases the color', async () => {
    const res = await t.api.post(
      V1,
      {
        slug: 'support_kb-2',
        label: '  Support KB  ',
        domain_keys: ['support', 'hiring', 'support'],
        color: '#1A2B3C',
        default_embedding_model: 'text-embedding-3-small',
        default_chunking_strategy: 'sliding_window',
        default_chunk_size: 800,
        default_chunk_overlap: 120,
        // Not part of CreateCollectionRequest: ignored.
        visibility: 'restricted',
        tags: ['ignored'],
        tenant_id: b.tenantId,
      },
      key(a),
    );
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.collection).toEqual({
      id: expect.stringMatching(UUID),
      slug: 'support_kb-2',
      label: 'Support KB',
      color: '#1a2b3c',
      created_at: expect.stringMatching(ISO),
      domain_keys: ['hiring', 'support'],
      tags: [],
      visibility: 'workspace',
      last_synced_at: null,
      retrieval_config: null,
      default_embedding_model: 'text-embedding-3-small',
      default_chunking_strategy: 'sliding_window',
      default_chunk_size: 800,
      default_chunk_overlap: 120,
    });
    const [row] = await t.sql('select tenant_id from collections where id = $1', [res.body.data.collection.id]);
    expect(row.tenant_id).toBe(a.tenantId);
    // A short hex color is accepted too; the boundaries of the chunk fields are inclusive.
    const short = await create(a, { color: '#FFF', default_chunk_size: 50, default_chunk_overlap: 49 });
    expect(short).toMatchObject({ color: '#fff', default_chunk_size: 50, default_chunk_overlap: 49 });
    expect(await create(a, { default_chunk_size: 20000, default_chunk_overlap: 4999 })).toMatchObject({ default_chunk_size: 20000, default_chunk_overlap: 4999 });
    expect(await create(a, { default_chunk_overlap: 0 })).toMatchObject({ default_chunk_size: null, default_chunk_overlap: 0 });
  });

  it('answers 400 INVALID_INPUT naming the field for each invalid value', async () => {
    const base = { slug: 'valid-slug', label: 'Valid', domain_keys: ['hiring'] };
    const cases: [Record<string, unknown>, string][] = [
      [{ slug: undefined }, 'slug'],
      [{ slug: 'Has Capitals' }, 'slug'],
      [{ slug: 'dots.not.allowed' }, 'slug'],
      [{ slug: '' }, 'slug'],
      [{ slug: 'x'.repeat(101) }, 'slug'],
      [{ slug: 42 }, 'slug'],
      [{ label: undefined }, 'label'],
      [{ label: '   ' }, 'label'],
      [{ label: 'x'.repeat(201) }, 'label'],
      [{ domain_keys: undefined }, 'domain_keys'],
      [{ domain_keys: [] }, 'domain_keys'],
      [{ domain_keys: 'hiring' }, 'domain_keys'],
      [{ domain_keys: [7] }, 'domain_keys.0'],
      [{ color: 'red' }, 'color'],
      [{ color: '#12345' }, 'color'],
      [{ color: '#ggg' }, 'color'],
      [{ default_embedding_model: 12 }, 'default_embedding_model'],
      [{ default_chunking_strategy: 'paragraph' }, 'default_chunking_strategy'],
      [{ default_chunk_size: 49 }, 'default_chunk_size'],
      [{ default_chunk_size: 20001 }, 'default_chunk_size'],
      [{ default_chunk_size: 100.5 }, 'default_chunk_size'],
      [{ default_chunk_size: '500' }, 'default_chunk_size'],
      [{ default_chunk_overlap: -1 }, 'default_chunk_overlap'],
      [{ default_chunk_overlap: 5000 }, 'default_chunk_overlap'],
      [{ default_chunk_overlap: '10' }, 'default_chunk_overlap'],
      [{ default_chunk_size: 100, default_chunk_overlap: 100 }, 'default_chunk_overlap'],
      [{ default_chunk_size: 6000, default_chunk_overlap: 5000 }, 'default_chunk_overlap'],
    ];
    for (const [extra, path] of cases) {
      const res = await t.api.post(V1, { ...base, ...extra }, key(a));
      expectInvalid(res, path, JSON.stringify(extra));
    }
    const notObject = await t.api.post(V1, undefined, { ...key(a), raw: '[1]', contentType: 'application/json' });
    expect(notObject.status).toBe(400);
    expect(await t.sql("select id from collections where slug = 'valid-slug'")).toEqual([]);
  });

  it('answers 404 NOT_FOUND naming an unknown domain key and 403 DOMAIN_NOT_ENABLED naming an inactive one, and creates nothing', async () => {
    for (const [keys, missing, status, code] of [
      [['nope'], 'nope', 404, 'NOT_FOUND'],
      [['archived'], 'archived', 403, 'DOMAIN_NOT_ENABLED'],
      [['hiring', 'nope'], 'nope', 404, 'NOT_FOUND'],
      [['support', 'archived'], 'archived', 403, 'DOMAIN_NOT_ENABLED'],
    ] as const) {
      const slug = freshSlug('missing-domain');
      const res = await t.api.post(V1, { slug, label: 'X', domain_keys: keys }, key(a));
      expectError(res, status, code);
      expect(res.body.error.message).toContain(`"${missing}"`);
      expect(res.body.error.details.domain).toBe(missing);
      expect(await t.sql('select id from collections where slug = $1', [slug])).toEqual([]);
    }
    // Another tenant's custom domain is not this tenant's domain.
    expectError(await t.api.post(V1, { slug: freshSlug(), label: 'X', domain_keys: ['support'] }, key(b)), 404, 'NOT_FOUND');
  });

  it('answers 403 DOMAIN_NOT_ENABLED for the built-in domain when the tenant does not have it enabled', async () => {
    const c = await signupTenant(t.api, { companyName: 'No hiring' });
    const off = await t.api.request('PATCH', `/admin/tenants/${c.tenantId}`, { enabledDomains: [] }, { headers: adminHeaders });
    expect(off.status, off.text).toBe(200);
    const res = await t.api.post(V1, { slug: 'x', label: 'X', domain_keys: ['hiring'] }, key(c));
    expectError(res, 403, 'DOMAIN_NOT_ENABLED');
    expect(res.body.error.details.domain).toBe('hiring');
  });

  it('answers 409 SLUG_CONFLICT for a slug taken in the tenant; other tenants may use it', async () => {
    await create(a, { slug: 'taken' });
    const again = await t.api.post(V1, { slug: 'taken', label: 'Again', domain_keys: ['support'] }, key(a));
    expectError(again, 409, 'SLUG_CONFLICT');
    expect(again.body.error.details).toEqual({ slug: 'taken' });
    const other = await t.api.post(V1, { slug: 'taken', label: 'B own', domain_keys: ['hiring'] }, key(b));
    expect(other.status, other.text).toBe(201);
    expect(other.body.data.collection).toMatchObject({ slug: 'taken', label: 'B own' });
  });

  it('lets exactly one of ten concurrent creates of one slug win; the others get 409', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.api.post(V1, { slug: 'race', label: `Racer ${i}`, domain_keys: ['hiring', 'support'] }, key(a))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses, results.map((r) => r.text).join('\n')).toEqual([201, ...Array(9).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('SLUG_CONFLICT');
    const rows = await t.sql<{ id: string }>("select id from collections where tenant_id = $1 and slug = 'race'", [a.tenantId]);
    expect(rows).toHaveLength(1);
    const winner = results.find((r) => r.status === 201)!.body.data.collection;
    expect(rows[0].id).toBe(winner.id);
    expect(winner.domain_keys).toEqual(['hiring', 'support']);
    const [{ n }] = await t.sql<{ n: number }>("select count(*)::int as n from collection_domains d join collections c on c.id = d.collection_id where c.slug = 'race' and c.tenant_id = $1", [a.tenantId]);
    expect(n).toBe(2);
    const [{ audits }] = await t.sql<{ audits: number }>("select count(*)::int as audits from audit_log where tenant_id = $1 and action = 'collection.created' and details->>'slug' = 'race'", [a.tenantId]);
    expect(audits).toBe(1);
  });

  it('needs an API key', async () => {
    expectError(await t.api.post(V1, { slug: 'x', label: 'X', domain_keys: ['hiring'] }), 401, 'MISSING_API_KEY');
    expectError(await t.api.post(V1, { slug: 'x', label: 'X', domain_keys: ['hiring'] }, jwt(a.token)), 401, 'INVALID_API_KEY_FORMAT');
  });
});

describe('GET /v1/collections and /v1/collections/{id}', () => {
  it('reads one collection and lists the tenant\'s collections with the same shape', async () => {
    const created = await create(a, { label: 'Readable', domain_keys: ['legal', 'hiring'] });
    const one = await t.api.get(`${V1}/${created.id}`, key(a));
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ success: true, data: { collection: created } });
    const list = await t.api.get(V1, key(a));
    expect(list.status).toBe(200);
    expect(Object.keys(list.body.data)).toEqual(['collections']);
    expect(list.body.data.collections).toContainEqual(created);
    for (const c of list.body.data.collections) {
      expect(Object.keys(c).sort()).toEqual(Object.keys(created).sort());
      expect(c.slug).toMatch(/^[a-z0-9_-]+$/);
    }
    // Same collections through the dashboard, for every role.
    for (const token of [a.token, tokens.viewer, tokens.developer]) {
      expect((await t.api.get(DASH, jwt(token))).body).toEqual(list.body);
      expect((await t.api.get(`${DASH}/${created.id}`, jwt(token))).body).toEqual(one.body);
    }
  });

  it('answers 404 for missing, malformed and other tenants\' ids', async () => {
    const created = await create(a);
    for (const id of [randomUUID(), 'not-a-uuid', '0']) {
      expectError(await t.api.get(`${V1}/${id}`, key(a)), 404, 'NOT_FOUND');
      expectError(await t.api.get(`${DASH}/${id}`, jwt(a.token)), 404, 'NOT_FOUND');
    }
    expectError(await t.api.get(`${V1}/${created.id}`, key(b)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`${DASH}/${created.id}`, jwt(b.token)), 404, 'NOT_FOUND');
    expect((await t.api.get(V1, key(b))).body.data.collections.map((c: { id: string }) => c.id)).not.toContain(created.id);
  });
});

describe('PATCH /v1/collections/{id}', () => {
  it('updates every updatable field and answers the full collection', async () => {
    const created = await create(a, { default_chunk_size: 500, default_chunk_overlap: 50 });
    const res = await t.api.patch(
      `${V1}/${created.id}`,
      {
        label: 'Renamed',
        color: '#ABC',
        tags: ['hr', 'policies', 'hr'],
        visibility: 'restricted',
        retrieval_config: { scope: 'collection_plus_domain', boost_priority: 2.5, fallback_when_empty: 'no_results' },
        default_embedding_model: 'text-embedding-3-large',
        default_chunking_strategy: 'semantic',
        default_chunk_size: 1000,
        default_chunk_overlap: 999,
      },
      key(a),
    );
    expect(res.status, res.text).toBe(200);
    const expected = {
      ...created,
      label: 'Renamed',
      color: '#abc',
      tags: ['hr', 'policies'],
      visibility: 'restricted',
      retrieval_config: { scope: 'collection_plus_domain', boost_priority: 2.5, fallback_when_empty: 'no_results' },
      default_embedding_model: 'text-embedding-3-large',
      default_chunking_strategy: 'semantic',
      default_chunk_size: 1000,
      default_chunk_overlap: 999,
    };
    expect(res.body).toEqual({ success: true, data: { collection: expected } });
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection).toEqual(expected);
    expect(await auditActions(a.tenantId, created.id)).toEqual(['collection.created', 'collection.updated']);

    // Only the fields sent change; null clears the nullable ones.
    const cleared = await t.api.patch(
      `${V1}/${created.id}`,
      { retrieval_config: null, default_embedding_model: null, default_chunking_strategy: null, default_chunk_size: null, default_chunk_overlap: null, tags: [] },
      key(a),
    );
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.data.collection).toEqual({
      ...expected,
      tags: [],
      retrieval_config: null,
      default_embedding_model: null,
      default_chunking_strategy: null,
      default_chunk_size: null,
      default_chunk_overlap: null,
    });
    // An empty body changes nothing and records nothing.
    const noop = await t.api.patch(`${V1}/${created.id}`, {}, key(a));
    expect(noop.status).toBe(200);
    expect(noop.body).toEqual(cleared.body);
    expect(await auditActions(a.tenantId, created.id)).toEqual(['collection.created', 'collection.updated', 'collection.updated']);
  });

  it('ignores slug and domain_keys (not updatable) and other unknown fields', async () => {
    const created = await create(a, { domain_keys: ['hiring'] });
    const res = await t.api.patch(`${V1}/${created.id}`, { slug: 'renamed-slug', domain_keys: ['support'], id: randomUUID(), created_at: '2000-01-01T00:00:00.000Z', label: 'Still here' }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.collection).toEqual({ ...created, label: 'Still here' });
    // Only slug/domain_keys sent: nothing changes.
    const only = await t.api.patch(`${V1}/${created.id}`, { slug: 'other', domain_keys: [] }, key(a));
    expect(only.status, only.text).toBe(200);
    expect(only.body.data.collection).toEqual({ ...created, label: 'Still here' });
  });

  it('answers 400 naming the field for each invalid value', async () => {
    const created = await create(a, { default_chunk_size: 400, default_chunk_overlap: 100 });
    const rc = { scope: 'collection_only', boost_priority: 1, fallback_when_empty: 'domain_fallback' };
    const cases: [Record<string, unknown>, string][] = [
      [{ label: '' }, 'label'],
      [{ label: 5 }, 'label'],
      [{ color: 'blue' }, 'color'],
      [{ color: null }, 'color'],
      [{ tags: 'hr' }, 'tags'],
      [{ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
      [{ tags: ['x'.repeat(51)] }, 'tags.0'],
      [{ tags: ['ok', 3] }, 'tags.1'],
      [{ visibility: 'private' }, 'visibility'],
      [{ retrieval_config: 'on' }, 'retrieval_config'],
      [{ retrieval_config: { ...rc, scope: 'everything' } }, 'retrieval_config.scope'],
      [{ retrieval_config: { ...rc, boost_priority: 11 } }, 'retrieval_config.boost_priority'],
      [{ retrieval_config: { ...rc, boost_priority: -1 } }, 'retrieval_config.boost_priority'],
      [{ retrieval_config: { ...rc, boost_priority: '5' } }, 'retrieval_config.boost_priority'],
      [{ retrieval_config: { ...rc, fallback_when_empty: undefined } }, 'retrieval_config.fallback_when_empty'],
      [{ default_chunking_strategy: 'paragraph' }, 'default_chunking_strategy'],
      [{ default_chunk_size: 10 }, 'default_chunk_size'],
      [{ default_chunk_size: true }, 'default_chunk_size'],
      [{ default_chunk_overlap: 5000 }, 'default_chunk_overlap'],
      // Checked against the stored chunk size (400) and overlap (100).
      [{ default_chunk_overlap: 400 }, 'default_chunk_overlap'],
      [{ default_chunk_size: 100 }, 'default_chunk_size'],
      [{ default_chunk_size: 200, default_chunk_overlap: 250 }, 'default_chunk_overlap'],
    ];
    for (const [body, path] of cases) {
      expectInvalid(await t.api.patch(`${V1}/${created.id}`, body, key(a)), path, JSON.stringify(body));
      expectInvalid(await t.api.patch(`${DASH}/${created.id}`, body, jwt(a.token)), path, `dashboard ${JSON.stringify(body)}`);
    }
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection).toEqual(created);
    // Boundaries that are fine.
    expect((await t.api.patch(`${V1}/${created.id}`, { default_chunk_overlap: 399 }, key(a))).status).toBe(200);
    expect((await t.api.patch(`${V1}/${created.id}`, { default_chunk_size: 400, default_chunk_overlap: 0, retrieval_config: { ...rc, boost_priority: 10 } }, key(a))).status).toBe(200);
  });

  it('answers 404 for missing, malformed and other tenants\' ids', async () => {
    const created = await create(a);
    for (const id of [randomUUID(), 'not-a-uuid']) expectError(await t.api.patch(`${V1}/${id}`, { label: 'x' }, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.patch(`${V1}/${created.id}`, { label: 'Stolen' }, key(b)), 404, 'NOT_FOUND');
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.label).toBe(created.label);
  });
});

describe('PATCH /dashboard/collections/{id} and roles', () => {
  it('takes the same body and answers the same result as the key API', async () => {
    const created = await create(a);
    const body = { label: 'From the dashboard', tags: ['x'], retrieval_config: { scope: 'collection_only', boost_priority: 0, fallback_when_empty: 'domain_fallback' }, slug: 'ignored' };
    const res = await t.api.patch(`${DASH}/${created.id}`, body, jwt(tokens.developer));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { collection: { ...created, label: 'From the dashboard', tags: ['x'], retrieval_config: { scope: 'collection_only', boost_priority: 0, fallback_when_empty: 'domain_fallback' } } },
    });
    const [audit] = await t.sql<{ actor_type: string; actor_name: string }>("select actor_type, actor_name from audit_log where target_id = $1 and action = 'collection.updated'", [created.id]);
    expect(audit.actor_type).toBe('user');
  });

  it('restricted collections: developer 403, admin and owner 200, API key 200; viewers never write', async () => {
    const created = await create(a);
    expect((await t.api.patch(`${V1}/${created.id}`, { visibility: 'restricted' }, key(a))).body.data.collection.visibility).toBe('restricted');

    const dev = await t.api.patch(`${DASH}/${created.id}`, { label: 'Developer' }, jwt(tokens.developer));
    expectError(dev, 403, 'FORBIDDEN');
    expect(dev.body.error.details).toEqual({ required_role: 'admin', role: 'developer' });
    expectError(await t.api.patch(`${DASH}/${created.id}`, { visibility: 'workspace' }, jwt(tokens.developer)), 403, 'FORBIDDEN');
    expectError(await t.api.patch(`${DASH}/${created.id}`, { label: 'Viewer' }, jwt(tokens.viewer)), 403, 'FORBIDDEN');
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.label).toBe(created.label);

    const admin = await t.api.patch(`${DASH}/${created.id}`, { label: 'Admin' }, jwt(tokens.admin));
    expect(admin.status, admin.text).toBe(200);
    expect(admin.body.data.collection).toMatchObject({ label: 'Admin', visibility: 'restricted' });
    const owner = await t.api.patch(`${DASH}/${created.id}`, { label: 'Owner' }, jwt(a.token));
    expect(owner.status, owner.text).toBe(200);
    const apiKey = await t.api.patch(`${V1}/${created.id}`, { label: 'Key' }, key(a));
    expect(apiKey.status, apiKey.text).toBe(200);
    expect(apiKey.body.data.collection.label).toBe('Key');

    // Back to workspace (by an admin): developers may write again, viewers still may not.
    expect((await t.api.patch(`${DASH}/${created.id}`, { visibility: 'workspace' }, jwt(tokens.admin))).status).toBe(200);
    expect((await t.api.patch(`${DASH}/${created.id}`, { label: 'Developer' }, jwt(tokens.developer))).status).toBe(200);
    expectError(await t.api.patch(`${DASH}/${created.id}`, { label: 'Viewer' }, jwt(tokens.viewer)), 403, 'FORBIDDEN');
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.label).toBe('Developer');
  });

  it('answers 404 for other tenants\' ids and 401 without a token', async () => {
    const created = await create(a);
    expectError(await t.api.patch(`${DASH}/${created.id}`, { label: 'x' }, jwt(b.token)), 404, 'NOT_FOUND');
    expectError(await t.api.patch(`${DASH}/${randomUUID()}`, { label: 'x' }, jwt(a.token)), 404, 'NOT_FOUND');
    expect((await t.api.patch(`${DASH}/${created.id}`, { label: 'x' })).status).toBe(401);
    expect((await t.api.patch(`${DASH}/${created.id}`, { label: 'x' }, key(a))).status).toBe(401);
  });
});

describe('dashboard domain attach and detach', () => {
  it('attaches an active domain, idempotently, and detaches it', async () => {
    const created = await create(a, { domain_keys: ['hiring'] });
    const attach = await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'support' }, jwt(tokens.developer));
    expect(attach.status, attach.text).toBe(200);
    expect(attach.body).toEqual({ success: true, data: { collection: { ...created, domain_keys: ['hiring', 'support'] } } });
    const again = await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'support' }, jwt(tokens.developer));
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(attach.body);
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.domain_keys).toEqual(['hiring', 'support']);

    const detach = await t.api.delete(`${DASH}/${created.id}/domains/hiring`, jwt(tokens.developer));
    expect(detach.status, detach.text).toBe(200);
    expect(detach.body).toEqual({ success: true, data: { collection: { ...created, domain_keys: ['support'] } } });
    expect(await auditActions(a.tenantId, created.id)).toEqual(['collection.created', 'collection.domain_attached', 'collection.domain_detached']);
  });

  it('answers 404 for an unknown domain, 403 for an inactive domain and 404 for a domain that is not attached', async () => {
    const created = await create(a, { domain_keys: ['hiring', 'support'] });
    for (const [domainKey, status, code] of [['nope', 404, 'NOT_FOUND'], ['archived', 403, 'DOMAIN_NOT_ENABLED']] as const) {
      const res = await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: domainKey }, jwt(a.token));
      expectError(res, status, code);
      expect(res.body.error.message).toContain(`"${domainKey}"`);
    }
    const notAttached = await t.api.delete(`${DASH}/${created.id}/domains/legal`, jwt(a.token));
    expectError(notAttached, 404, 'NOT_FOUND');
    expect(notAttached.body.error.details).toEqual({ domain_key: 'legal' });
    expectError(await t.api.delete(`${DASH}/${created.id}/domains/nope`, jwt(a.token)), 404, 'NOT_FOUND');
    expectInvalid(await t.api.post(`${DASH}/${created.id}/domains`, {}, jwt(a.token)), 'domain_key', 'missing domain_key');
    expectInvalid(await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 5 }, jwt(a.token)), 'domain_key', 'numeric domain_key');
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.domain_keys).toEqual(['hiring', 'support']);
  });

  it('refuses to detach the last domain with 409 CONFLICT', async () => {
    const created = await create(a, { domain_keys: ['hiring', 'legal'] });
    expect((await t.api.delete(`${DASH}/${created.id}/domains/legal`, jwt(a.token))).status).toBe(200);
    const last = await t.api.delete(`${DASH}/${created.id}/domains/hiring`, jwt(a.token));
    expectError(last, 409, 'CONFLICT');
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.domain_keys).toEqual(['hiring']);
    // Two concurrent detaches of a two-domain collection: one wins, the other meets the last-domain rule.
    expect((await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'support' }, jwt(a.token))).status).toBe(200);
    const both = await Promise.all(['hiring', 'support'].map((k) => t.api.delete(`${DASH}/${created.id}/domains/${k}`, jwt(a.token))));
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.domain_keys).toHaveLength(1);
  });

  it('needs developer or above, and admin or owner on a restricted collection', async () => {
    const created = await create(a, { domain_keys: ['hiring'] });
    expectError(await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'support' }, jwt(tokens.viewer)), 403, 'FORBIDDEN');
    expect((await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'support' }, jwt(tokens.developer))).status).toBe(200);
    expectError(await t.api.delete(`${DASH}/${created.id}/domains/support`, jwt(tokens.viewer)), 403, 'FORBIDDEN');

    expect((await t.api.patch(`${V1}/${created.id}`, { visibility: 'restricted' }, key(a))).status).toBe(200);
    expectError(await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'legal' }, jwt(tokens.developer)), 403, 'FORBIDDEN');
    expectError(await t.api.delete(`${DASH}/${created.id}/domains/support`, jwt(tokens.developer)), 403, 'FORBIDDEN');
    expect((await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'legal' }, jwt(tokens.admin))).body.data.collection.domain_keys).toEqual(['hiring', 'legal', 'support']);
    expect((await t.api.delete(`${DASH}/${created.id}/domains/support`, jwt(a.token))).body.data.collection.domain_keys).toEqual(['hiring', 'legal']);
  });

  it('answers 404 for other tenants\' ids and malformed ids', async () => {
    const created = await create(a, { domain_keys: ['hiring', 'support'] });
    expectError(await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'hiring' }, jwt(b.token)), 404, 'NOT_FOUND');
    expectError(await t.api.delete(`${DASH}/${created.id}/domains/hiring`, jwt(b.token)), 404, 'NOT_FOUND');
    for (const id of [randomUUID(), 'not-a-uuid']) {
      expectError(await t.api.post(`${DASH}/${id}/domains`, { domain_key: 'hiring' }, jwt(a.token)), 404, 'NOT_FOUND');
      expectError(await t.api.delete(`${DASH}/${id}/domains/hiring`, jwt(a.token)), 404, 'NOT_FOUND');
    }
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).body.data.collection.domain_keys).toEqual(['hiring', 'support']);
  });
});

describe('DELETE /v1/collections/{id}', () => {
  it('deletes the collection and its domain attachments; then GET is 404 and the list no longer shows it', async () => {
    const created = await create(a, { domain_keys: ['hiring', 'support'] });
    const res = await t.api.delete(`${V1}/${created.id}`, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ success: true });
    expectError(await t.api.get(`${V1}/${created.id}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.get(`${DASH}/${created.id}`, jwt(a.token)), 404, 'NOT_FOUND');
    expect((await t.api.get(V1, key(a))).body.data.collections.map((c: { id: string }) => c.id)).not.toContain(created.id);
    expect(await t.sql('select * from collection_domains where collection_id = $1', [created.id])).toEqual([]);
    expect(await auditActions(a.tenantId, created.id)).toEqual(['collection.created', 'collection.deleted']);
    // The domains themselves stay.
    expect((await t.api.get('/dashboard/custom-domains/support', jwt(a.token))).status).toBe(200);
    // Deleting again, or a deleted collection's routes: 404.
    expectError(await t.api.delete(`${V1}/${created.id}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.patch(`${V1}/${created.id}`, { label: 'x' }, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.post(`${DASH}/${created.id}/domains`, { domain_key: 'hiring' }, jwt(a.token)), 404, 'NOT_FOUND');
    // The slug is free again.
    expect((await t.api.post(V1, { slug: created.slug, label: 'Reborn', domain_keys: ['hiring'] }, key(a))).status).toBe(201);
  });

  it('answers 404 for other tenants\' ids, leaving the collection in place', async () => {
    const created = await create(a);
    for (const id of [created.id, randomUUID(), 'not-a-uuid']) expectError(await t.api.delete(`${V1}/${id}`, key(b)), 404, 'NOT_FOUND');
    expect((await t.api.get(`${V1}/${created.id}`, key(a))).status).toBe(200);
  });
});
