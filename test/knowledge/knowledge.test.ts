// POST /v1/domains/{domainKey}/knowledge/query over real HTTP and a real database, plus intent
// grounding. Documents and chunks are inserted with SQL, as a finished ingestion leaves them.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { insertDocument } from './seed.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
const col: Record<string, string> = {};
const docs: Record<string, string> = {};

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const owner = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
const query = (s: SignedUpTenant, body: unknown, domain = 'hiring') => t.api.post(`/v1/domains/${encodeURIComponent(domain)}/knowledge/query`, body, key(s));
const names = (res: { body: any }) => (res.body.data.results as { document_name: string }[]).map((r) => r.document_name);

async function createCollection(s: SignedUpTenant, slug: string, domainKeys = ['hiring']): Promise<string> {
  const res = await t.api.post('/v1/collections', { slug, label: slug, domain_keys: domainKeys }, key(s));
  expect(res.status, res.text).toBe(201);
  return res.body.data.collection.id;
}

async function setRetrievalConfig(s: SignedUpTenant, id: string, config: Record<string, unknown> | null) {
  const res = await t.api.patch(`/v1/collections/${id}`, { retrieval_config: config }, key(s));
  expect(res.status, res.text).toBe(200);
}

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test-platform', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Tenant A' });
  b = await signupTenant(t.api, { companyName: 'Tenant B' });
  col.handbook = await createCollection(a, 'handbook');
  col.benefits = await createCollection(a, 'benefits');
  col.extra = await createCollection(a, 'extra');

  const insert = async (name: string, collectionIds: string[], chunks: string[], extra: Partial<Parameters<typeof insertDocument>[1]> = {}) => {
    docs[name] = (await insertDocument(t.sql, { tenantId: a.tenantId, name, collectionIds, chunks, ...extra })).documentId;
  };
  await insert('Parental leave policy', [col.handbook], [
    'Parental leave: every employee who becomes a parent receives sixteen weeks of fully paid parental leave, to be taken within the first year.',
    'Adoptive and foster parents are covered by the same parental leave rules as birth parents.',
  ]);
  await insert('Interview process', [col.handbook], [
    'Our interview process has four stages: a recruiter screen, a technical interview, a take-home exercise and a final panel with the hiring manager.',
  ]);
  await insert('Health insurance benefits', [col.benefits], [
    'Health insurance covers medical, dental and vision care for employees and their dependants from the first day of employment.',
  ], { category: 'benefits' });
  await insert('Gym stipend', [col.benefits], ['A monthly wellness stipend of 50 euros reimburses gym memberships and fitness classes.'], { category: 'benefits' });
  await insert('Remote work guidelines', [col.extra], ['Remote work is allowed up to three days a week; core collaboration hours are 10:00 to 15:00 in your time zone.']);
  await insert('Draft severance policy', [col.handbook], ['Severance pay drafts: parental leave interaction to be decided.'], { status: 'processing' });
  await insert('Broken upload', [col.handbook], ['Parental leave sixteen weeks copy that failed ingestion.'], { status: 'failed' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

describe('ranking', () => {
  it('answers the best chunks first, with the documented fields', async () => {
    const res = await query(a, { query: 'How many weeks of paid parental leave do new parents get?' });
    expect(res.status, res.text).toBe(200);
    const results = res.body.data.results;
    expect(results.length).toBeGreaterThan(0);
    expect(results[0]).toEqual({
      chunk_id: expect.any(String),
      document_id: docs['Parental leave policy'],
      document_name: 'Parental leave policy',
      collection_ids: [col.handbook],
      text: expect.stringContaining('sixteen weeks'),
      score: expect.any(Number),
      locator: null,
    });
    const scores = results.map((r: { score: number }) => r.score);
    expect([...scores].sort((x, y) => y - x)).toEqual(scores);
    // Processing and failed documents are never searched.
    expect(names(res)).not.toContain('Draft severance policy');
    expect(names(res)).not.toContain('Broken upload');
  });

  it('tolerates typos through trigram similarity', async () => {
    const res = await query(a, { query: 'intervew proces stages' });
    expect(res.status, res.text).toBe(200);
    expect(names(res)[0]).toBe('Interview process');
    const insurance = await query(a, { query: 'helth insurence dentl' });
    expect(names(insurance)[0]).toBe('Health insurance benefits');
  });

  it('folds accents and matches word forms', async () => {
    const res = await query(a, { query: 'Rémote wörking days' });
    expect(names(res)[0]).toBe('Remote work guidelines');
  });

  it('honours top_k (default 5)', async () => {
    const many = await query(a, { query: 'parental leave health insurance interview remote gym stipend' });
    expect(many.body.data.results).toHaveLength(5);
    const one = await query(a, { query: 'parental leave health insurance interview remote gym stipend', top_k: 1 });
    expect(one.body.data.results).toHaveLength(1);
  });

  it('chunks holding every query word come first: some of the words are searched only when fewer than 100 chunks hold them all', async () => {
    const c = await signupTenant(t.api, { companyName: 'Tenant C' });
    const collection = await createCollection(c, 'calibration');
    // A chunk repeating one of the words outranks (ts_rank_cd) chunks holding each word once.
    const loud = 'Calibration calibration calibration calibration calibration calibration calibration calibration.';
    await insertDocument(t.sql, { tenantId: c.tenantId, name: 'Loud', collectionIds: [collection], chunks: [loud] });
    const ask = { query: 'quarterly calibration', top_k: 50 };
    const together = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `Item ${from + i}: the quarterly calibration meets on Monday.`);
    await insertDocument(t.sql, { tenantId: c.tenantId, name: 'Notes', collectionIds: [collection], chunks: together(99) });
    // 99 chunks hold both words: the chunk holding one of them is a candidate too, and ranks first.
    expect(names(await query(c, ask))[0]).toBe('Loud');
    await insertDocument(t.sql, { tenantId: c.tenantId, name: 'More notes', collectionIds: [collection], chunks: together(1, 99) });
    // 100 do: the candidates are those.
    const res = await query(c, ask);
    expect(res.body.data.results).toHaveLength(50);
    expect(names(res)).not.toContain('Loud');
  });

  it('answers an empty list when nothing matches', async () => {
    const res = await query(a, { query: 'quantum chromodynamics' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { results: [] } });
  });
});

describe('filters', () => {
  it('collection_ids narrows the search to those collections', async () => {
    const res = await query(a, { query: 'parental leave insurance gym stipend', collection_ids: [col.benefits] });
    expect(res.status, res.text).toBe(200);
    expect(new Set(names(res))).toEqual(new Set(['Health insurance benefits', 'Gym stipend']));
    for (const r of res.body.data.results) expect(r.collection_ids).toContain(col.benefits);
  });

  it('category keeps only documents of that category', async () => {
    const res = await query(a, { query: 'parental leave insurance gym stipend interview', category: 'benefits' });
    expect(new Set(names(res))).toEqual(new Set(['Health insurance benefits', 'Gym stipend']));
    const none = await query(a, { query: 'parental leave', category: 'benefits' });
    expect(none.body.data.results).toEqual([]);
  });
});

describe('retrieval_config', () => {
  let left: string;
  let right: string;
  beforeAll(async () => {
    left = await createCollection(a, 'rc-left');
    right = await createCollection(a, 'rc-right');
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Left relocation', collectionIds: [left], chunks: ['Relocation allowance: moving costs are reimbursed up to a fixed relocation budget.'] });
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Right relocation', collectionIds: [right], chunks: ['Relocation allowance: moving costs are reimbursed up to a fixed relocation budget.'] });
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Right sabbatical', collectionIds: [right], chunks: ['A sabbatical of three months is offered after five years of service.'] });
  });

  afterEach(async () => {
    await setRetrievalConfig(a, left, null);
    await setRetrievalConfig(a, right, null);
  });

  it('boost_priority multiplies the scores of a collection\'s chunks', async () => {
    await setRetrievalConfig(a, right, { scope: 'collection_only', boost_priority: 3, fallback_when_empty: 'no_results' });
    const boosted = await query(a, { query: 'relocation allowance moving costs' });
    expect(names(boosted).slice(0, 2)).toEqual(['Right relocation', 'Left relocation']);
    const [first, second] = boosted.body.data.results;
    // Same text: the same fused score but for tie-breaks between the legs (ranks 1 and 2), times 3.
    expect(first.score / second.score).toBeGreaterThan(2.9);
    expect(first.score / second.score).toBeLessThan(3.1);
    await setRetrievalConfig(a, right, null);
    await setRetrievalConfig(a, left, { scope: 'collection_only', boost_priority: 2, fallback_when_empty: 'no_results' });
    const other = await query(a, { query: 'relocation allowance moving costs' });
    expect(names(other).slice(0, 2)).toEqual(['Left relocation', 'Right relocation']);
    await setRetrievalConfig(a, left, null);
  });

  it('scope collection_only searches only the requested collections; collection_plus_domain adds the rest at lower weight', async () => {
    await setRetrievalConfig(a, left, { scope: 'collection_only', boost_priority: 1, fallback_when_empty: 'no_results' });
    const only = await query(a, { query: 'relocation allowance sabbatical', collection_ids: [left] });
    expect(names(only)).toEqual(['Left relocation']);

    await setRetrievalConfig(a, left, { scope: 'collection_plus_domain', boost_priority: 1, fallback_when_empty: 'no_results' });
    const plus = await query(a, { query: 'relocation allowance moving costs', collection_ids: [left] });
    expect(names(plus)).toContain('Right relocation');
    const score = (name: string) => plus.body.data.results.find((r: { document_name: string }) => r.document_name === name).score;
    expect(score('Left relocation')).toBeGreaterThan(score('Right relocation'));
    expect(names(plus)[0]).toBe('Left relocation');
    await setRetrievalConfig(a, left, null);
  });

  it('fallback_when_empty: domain_fallback searches the whole domain, no_results answers nothing', async () => {
    await setRetrievalConfig(a, left, { scope: 'collection_only', boost_priority: 1, fallback_when_empty: 'no_results' });
    const none = await query(a, { query: 'sabbatical after five years', collection_ids: [left] });
    expect(none.body.data.results).toEqual([]);
    await setRetrievalConfig(a, left, { scope: 'collection_only', boost_priority: 1, fallback_when_empty: 'domain_fallback' });
    const fallback = await query(a, { query: 'sabbatical after five years', collection_ids: [left] });
    expect(names(fallback)[0]).toBe('Right sabbatical');
    // No retrieval_config: collection_only, no fallback.
    await setRetrievalConfig(a, left, null);
    expect((await query(a, { query: 'sabbatical after five years', collection_ids: [left] })).body.data.results).toEqual([]);
  });
});

describe('tenant isolation and live data', () => {
  it('tenant B never sees tenant A\'s text, with the same query and the same domain', async () => {
    const ask = { query: 'How many weeks of paid parental leave do new parents get?', top_k: 50 };
    const empty = await query(b, ask);
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body.data.results).toEqual([]);

    const bCollection = await createCollection(b, 'handbook');
    await insertDocument(t.sql, { tenantId: b.tenantId, name: 'B leave policy', collectionIds: [bCollection], chunks: ['Tenant B offers twelve weeks of parental leave.'] });
    const own = await query(b, ask);
    expect(names(own)).toEqual(['B leave policy']);
    expect(own.text).not.toContain('sixteen weeks');
    // A's collection ids are not B's: 404, not a search of A's documents.
    const foreign = await query(b, { ...ask, collection_ids: [col.handbook] });
    expect(foreign.status).toBe(404);
    expect(foreign.text).not.toContain('sixteen');
    // And A does not see B's.
    expect(names(await query(a, ask))).not.toContain('B leave policy');
  });

  it('a deleted document is gone from the next query', async () => {
    const { documentId } = await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Expense policy', collectionIds: [col.handbook], chunks: ['Expense claims for travel must be filed within thirty days with receipts.'] });
    expect(names(await query(a, { query: 'expense claims travel receipts' }))[0]).toBe('Expense policy');
    await t.sql('delete from documents where id = $1', [documentId]);
    expect(names(await query(a, { query: 'expense claims travel receipts' }))).not.toContain('Expense policy');
  });
});

describe('embeddings', () => {
  it('embeds the query with the documents\' model and ranks by vector similarity too', async () => {
    const vec = await createCollection(a, 'vectors');
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Embedded probation', collectionIds: [vec], chunks: ['Probation lasts six months with a review meeting at the end.'], embeddingModel: 'fake-embedding' });
    // Only stop words in common: neither lexical leg can match, the vector leg (fake word-hash
    // embeddings) still finds the chunk that shares them.
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Embedded filler', collectionIds: [vec], chunks: ['it is what it is and so on'], embeddingModel: 'fake-embedding' });
    const res = await query(a, { query: 'what is it', collection_ids: [vec] });
    expect(res.status, res.text).toBe(200);
    expect(names(res)[0]).toBe('Embedded filler');
    const calls = fake.requests.filter((r) => r.path === '/v1/embeddings');
    expect(calls).toHaveLength(1);
    expect(calls[0].body).toMatchObject({ model: 'fake-embedding', input: 'what is it' });

    const lexical = await query(a, { query: 'probation review', collection_ids: [vec] });
    expect(names(lexical)[0]).toBe('Embedded probation');
  });

  it('a failing embedding provider leaves lexical ranking working', async () => {
    fake.fail(3, 500);
    const res = await query(a, { query: 'probation six months review', top_k: 3 });
    expect(res.status, res.text).toBe(200);
    expect(names(res)[0]).toBe('Embedded probation');
  });
});

describe('validation and errors', () => {
  it('rejects empty, too long and malformed requests with 400', async () => {
    const cases: [unknown, string][] = [
      [{}, 'query'],
      [{ query: '' }, 'query'],
      [{ query: '   ' }, 'query'],
      [{ query: 'x'.repeat(2001) }, 'query'],
      [{ query: 42 }, 'query'],
      [{ query: 'leave', top_k: 0 }, 'top_k'],
      [{ query: 'leave', top_k: 51 }, 'top_k'],
      [{ query: 'leave', top_k: '5' }, 'top_k'],
      [{ query: 'leave', top_k: 2.5 }, 'top_k'],
      [{ query: 'leave', collection_ids: 'abc' }, 'collection_ids'],
      [{ query: 'leave', collection_ids: [] }, 'collection_ids'],
      [{ query: 'leave', category: '' }, 'category'],
    ];
    for (const [body, path] of cases) {
      const res = await query(a, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path), JSON.stringify(body)).toContain(path);
    }
    expect((await query(a, { query: 'x'.repeat(2000) })).status).toBe(200);
    expect((await query(a, { query: 'leave', top_k: 50 })).status).toBe(200);
  });

  it('unknown collection ids, and collections not attached to the domain, are 404', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const res = await query(a, { query: 'leave', collection_ids: [col.handbook, id] });
      expect(res.status, res.text).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', details: { collection_id: id } });
    }
    expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'sales', display_name: 'Sales' }, owner(a))).status).toBe(201);
    const salesOnly = await createCollection(a, 'sales-playbook', ['sales']);
    const res = await query(a, { query: 'leave', collection_ids: [salesOnly] });
    expect(res.status).toBe(404);
  });

  it('an unknown domain is 404; a built-in domain not enabled or an inactive custom domain is 403; no key is 401', async () => {
    const unknown = await query(a, { query: 'leave' }, 'nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'dormant', display_name: 'Dormant' }, owner(a))).status).toBe(201);
    expect((await query(a, { query: 'leave' }, 'dormant')).status).toBe(200);
    expect((await t.api.patch('/dashboard/custom-domains/dormant', { is_active: false }, owner(a))).status).toBe(200);
    expect((await query(a, { query: 'leave' }, 'dormant')).status).toBe(403);

    const c = await signupTenant(t.api, { companyName: 'Tenant C' });
    await t.sql(`update tenants set enabled_domains = '[]'::jsonb where id = $1`, [c.tenantId]);
    const disabled = await query(c, { query: 'leave' });
    expect(disabled.status).toBe(403);
    expect(disabled.body.error.code).toBe('DOMAIN_NOT_ENABLED');

    const anonymous = await t.api.post('/v1/domains/hiring/knowledge/query', { query: 'leave' });
    expect(anonymous.status).toBe(401);
  });
});

describe('intent grounding', () => {
  it('fills {{context}} with retrieved chunks and reports their ids', async () => {
    const o = owner(a);
    expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'people-ops', display_name: 'People ops' }, o)).status).toBe(201);
    const created = await t.api.post('/dashboard/custom-domains/people-ops/intents', {
      intent_key: 'policy-answer',
      display_name: 'Policy answer',
      prompt_template: 'Context: {{context}} Question: {{input.q}}',
      retrieval_config: { enabled: true, top_k: 2 },
    }, o);
    expect(created.status, created.text).toBe(201);
    expect((await t.api.post('/dashboard/custom-domains/people-ops/intents', { intent_key: 'plain', display_name: 'Plain', prompt_template: 'Context: [{{context}}] Question: {{input.q}}' }, o)).status).toBe(201);
    const peopleOps = await createCollection(a, 'people-ops-docs', ['people-ops']);
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Holiday calendar', collectionIds: [peopleOps], chunks: ['The office closes between Christmas and New Year; those days are extra paid holidays.'] });
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Annual leave', collectionIds: [peopleOps], chunks: ['Full-time staff accrue 25 days of annual paid holidays, and may carry five unused days over.'] });
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Laptop policy', collectionIds: [peopleOps], chunks: ['Laptops are replaced every three years.'] });

    const q = 'How many paid holidays do full-time staff get?';
    const expected = await query(a, { query: q, top_k: 2 }, 'people-ops');
    expect(expected.body.data.results).toHaveLength(2);

    const run = await t.api.post('/v1/domains/people-ops/intents/policy-answer/run', { input: { user_id: 'emp-1', q } }, key(a));
    expect(run.status, run.text).toBe(200);
    expect(run.body.metadata.context_chunk_ids).toEqual(expected.body.data.results.map((r: { chunk_id: string }) => r.chunk_id));
    const prompt: string = fake.chatRequests().at(-1)!.body.messages.at(-1).content;
    expect(prompt).toContain('Annual leave');
    expect(prompt).toContain('accrue 25 days of annual paid holidays');
    expect(prompt).toContain(`Question: ${q}`);
    expect(prompt).not.toContain('Laptops are replaced');

    const plain = await t.api.post('/v1/domains/people-ops/intents/plain/run', { input: { user_id: 'emp-1', q } }, key(a));
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.metadata.context_chunk_ids).toEqual([]);
    expect(fake.chatRequests().at(-1)!.body.messages.at(-1).content).toContain('Context: [] Question');
  });

  it('restricts grounding to retrieval_config.collection_ids', async () => {
    const o = owner(a);
    const restricted = await createCollection(a, 'people-ops-laptops', ['people-ops']);
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Laptop refresh', collectionIds: [restricted], chunks: ['Paid holidays do not change laptop refresh cycles of three years.'] });
    const created = await t.api.post('/dashboard/custom-domains/people-ops/intents', {
      intent_key: 'laptops-only',
      display_name: 'Laptops only',
      prompt_template: 'Context: {{context}} Question: {{input.q}}',
      retrieval_config: { enabled: true, collection_ids: [restricted] },
    }, o);
    expect(created.status, created.text).toBe(201);
    const run = await t.api.post('/v1/domains/people-ops/intents/laptops-only/run', { input: { user_id: 'emp-2', q: 'paid holidays for staff' } }, key(a));
    expect(run.status, run.text).toBe(200);
    expect(run.body.metadata.context_chunk_ids).toHaveLength(1);
    const prompt: string = fake.chatRequests().at(-1)!.body.messages.at(-1).content;
    expect(prompt).toContain('Laptop refresh');
    expect(prompt).not.toContain('Annual leave');
  });

  it('built-in intents report context_chunk_ids: []', async () => {
    const res = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: 'cand-1', resume_text: 'Backend engineer with eight years of TypeScript, Node.js and PostgreSQL in production.' } }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.metadata.context_chunk_ids).toEqual([]);
  });
});
