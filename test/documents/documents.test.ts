// The document pool over real HTTP: upload (every format, the error cases), the reads and delete
// of /v1/documents, collection references, embeddings, and tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { fakeEmbedding, startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { makeDocx, makePdf } from '../fixtures/make-files.js';
import { expectError } from '../support/expect-error.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let llm: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
const tokens: Record<'developer' | 'admin' | 'viewer', string> = { developer: '', admin: '', viewer: '' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

const key = (tenant: SignedUpTenant) => ({ headers: bearer(tenant.apiKey) });
const jwt = (token: string) => ({ headers: bearer(token) });
const b64 = (content: string | Buffer) => Buffer.from(content).toString('base64');

async function invite(role: 'developer' | 'admin' | 'viewer') {
  const email = uniqueEmail(role);
  const password = `${role} password 123`;
  expect((await t.api.post('/dashboard/users', { email, role, password }, jwt(a.token))).status).toBe(201);
  const login = await t.api.post('/auth/login', { email, password });
  expect(login.status, login.text).toBe(200);
  return login.body.data.token as string;
}

let slugs = 0;
async function createCollection(tenant: SignedUpTenant, body: Record<string, unknown> = {}) {
  const res = await t.api.post('/v1/collections', { slug: `docs-${++slugs}`, label: `Docs ${slugs}`, domain_keys: ['hiring'], ...body }, key(tenant));
  expect(res.status, res.text).toBe(201);
  return res.body.data.collection as { id: string; slug: string; label: string; color: string };
}

async function upload(body: Record<string, unknown>, token = a.token) {
  const res = await t.api.post('/dashboard/documents', body, jwt(token));
  expect(res.status, res.text).toBe(202);
  expect(res.body).toEqual({ success: true, data: { jobId: expect.stringMatching(UUID), status: 'pending' } });
  return res.body.data.jobId as string;
}

/** Polls the job until it has ended. */
function waitForJob(jobId: string, token = a.token) {
  return waitFor(async () => {
    const res = await t.api.get(`/dashboard/ingestion-jobs/${jobId}`, jwt(token));
    expect(res.status, res.text).toBe(200);
    return TERMINAL.has(res.body.data.job.status) ? res.body.data.job : null;
  }, `job ${jobId} to end`, 30_000, 25);
}

/** Uploads, waits for completion, and returns the job and the document. */
async function ingest(body: Record<string, unknown>) {
  const job = await waitForJob(await upload(body));
  expect(job.status, JSON.stringify(job)).toBe('completed');
  const doc = await t.api.get(`/v1/documents/${job.document_id}`, key(a));
  expect(doc.status, doc.text).toBe(200);
  return { job, document: doc.body.data.document };
}

const chunksOf = (documentId: string) =>
  t.sql<{ ordinal: number; text: string; locator: string | null; characters: number; has_vector: boolean; embedding: Buffer | null }>(
    'select ordinal, text, locator, characters, search_vector is not null as has_vector, embedding from document_chunks where document_id = $1 order by ordinal',
    [documentId],
  );

beforeAll(async () => {
  llm = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key' });
  a = await signupTenant(t.api, { companyName: 'Docs A' });
  b = await signupTenant(t.api, { companyName: 'Docs B' });
  tokens.developer = await invite('developer');
  tokens.admin = await invite('admin');
  tokens.viewer = await invite('viewer');
});
afterAll(async () => {
  await t?.close();
  await llm?.close();
});

describe('POST /dashboard/documents: every supported format is ingested', () => {
  it('text/plain (inferred from .txt)', async () => {
    const { job, document } = await ingest({ name: 'notes.txt', content_base64: b64('Plain notes about the onboarding process.\n\nSecond paragraph here.') });
    expect(job).toEqual({
      id: expect.stringMatching(UUID),
      source_type: 'upload',
      name: 'notes.txt',
      status: 'completed',
      stage: 'completed',
      progress: 100,
      result: expect.objectContaining({ chunks: 1, characters: 65, pages: null, embedded: false }),
      error_message: null,
      created_at: expect.stringMatching(ISO),
      started_at: expect.stringMatching(ISO),
      completed_at: expect.stringMatching(ISO),
      document_id: expect.stringMatching(UUID),
    });
    expect(document).toEqual({
      id: job.document_id,
      name: 'notes.txt',
      category: 'document',
      chunks: 1,
      sizeKb: 1,
      embeddingModel: null,
      uploadedBy: a.email,
      uploadedAt: expect.stringMatching(ISO),
      collections: [],
      status: 'ready',
    });
    const [row] = await t.sql<{ mime_type: string; content_hash: string; characters: number; size_bytes: number }>('select mime_type, content_hash, characters, size_bytes from documents where id = $1', [document.id]);
    expect(row).toEqual({ mime_type: 'text/plain', content_hash: expect.stringMatching(/^[0-9a-f]{64}$/), characters: 65, size_bytes: 65 });
    const chunks = await chunksOf(document.id);
    expect(chunks).toEqual([expect.objectContaining({ ordinal: 0, text: 'Plain notes about the onboarding process.\n\nSecond paragraph here.', has_vector: true, embedding: null })]);
    // The full-text vector folds accents and stems English words.
    const [match] = await t.sql<{ n: number }>(`select count(*)::int as n from document_chunks where document_id = $1 and search_vector @@ plainto_tsquery('english', 'onboard')`, [document.id]);
    expect(match.n).toBe(1);
  });

  it('text/markdown: heading paths become locators', async () => {
    const md = '# Handbook\n\nIntro text.\n\n## Vacation\n\nEmployees get 25 days.\n\n## Résumé tips\n\nKeep it short.';
    const { document } = await ingest({ name: 'handbook.md', content_base64: b64(md), chunking: { strategy: 'semantic', size: 200 } });
    const chunks = await chunksOf(document.id);
    expect(chunks.map((c) => c.locator)).toEqual(['Handbook', 'Handbook > Vacation', 'Handbook > Résumé tips']);
    const [accent] = await t.sql<{ n: number }>(`select count(*)::int as n from document_chunks where document_id = $1 and search_vector @@ plainto_tsquery('english', 'resume')`, [document.id]);
    expect(accent.n).toBe(1);
  });

  it('text/csv: each row as `column: value; ...`', async () => {
    const { document } = await ingest({ name: 'people.csv', content_base64: b64('name,role\nAda,engineer\nGrace,admiral\n') });
    expect((await chunksOf(document.id)).map((c) => c.text)).toEqual(['name: Ada; role: engineer\nname: Grace; role: admiral']);
  });

  it('application/json: flattened to `path: value` lines', async () => {
    const { document } = await ingest({ name: 'data', mime_type: 'application/json', content_base64: b64(JSON.stringify({ policy: { name: 'Travel', limits: [100, { hotel: 250 }] } })) });
    expect((await chunksOf(document.id))[0].text).toBe('policy.name: Travel\npolicy.limits[0]: 100\npolicy.limits[1].hotel: 250');
  });

  it('text/html: scripts and styles dropped, headings kept as lines', async () => {
    const html = '<html><head><style>p { color: red }</style><script>var secret = 1;</script></head><body><h1>Benefits</h1><p>Health <b>insurance</b> included.</p><h2>Dental</h2><p>Covered.</p></body></html>';
    const { document } = await ingest({ name: 'benefits.html', content_base64: b64(html) });
    const chunks = await chunksOf(document.id);
    const text = chunks.map((c) => c.text).join('\n');
    expect(text).not.toMatch(/secret|color/);
    expect(text).toContain('Health insurance included.');
    expect(chunks.map((c) => c.locator)).toEqual(['Benefits', 'Benefits > Dental']);
  });

  it('application/pdf: text and page count; chunks name their page', async () => {
    const { job, document } = await ingest({ name: 'policy.pdf', content_base64: b64(makePdf(['Expense policy first page', 'Approval rules on page two'])) });
    expect(job.result).toEqual(expect.objectContaining({ chunks: 2, pages: 2 }));
    const [row] = await t.sql<{ pages: number; characters: number }>('select pages, characters from documents where id = $1', [document.id]);
    expect(row.pages).toBe(2);
    expect((await chunksOf(document.id)).map((c) => [c.text, c.locator])).toEqual([
      ['Expense policy first page', 'page 1'],
      ['Approval rules on page two', 'page 2'],
    ]);
  });

  it('DOCX: paragraphs and headings', async () => {
    const { document } = await ingest({ name: 'guide.docx', content_base64: b64(makeDocx('Remote work', ['Allowed three days a week.', 'Ask your manager.'])) });
    const chunks = await chunksOf(document.id);
    expect(chunks.map((c) => [c.text, c.locator])).toEqual([['# Remote work\n\nAllowed three days a week.\n\nAsk your manager.', 'Remote work']]);
    const [row] = await t.sql<{ mime_type: string }>('select mime_type from documents where id = $1', [document.id]);
    expect(row.mime_type).toBe(DOCX);
  });

  it('chunking options from the upload, else the first collection\'s defaults', async () => {
    const text = 'abcdefghij'.repeat(30);
    const fixed = await ingest({ name: 'fixed.txt', content_base64: b64(text), chunking: { strategy: 'fixed', size: 100 } });
    expect((await chunksOf(fixed.document.id)).map((c) => c.characters)).toEqual([100, 100, 100]);
    const sliding = await ingest({ name: 'sliding.txt', content_base64: b64(text), chunking: { strategy: 'sliding_window', size: 100, overlap: 50 } });
    expect((await chunksOf(sliding.document.id)).map((c) => c.characters)).toEqual([100, 100, 100, 100, 100]);
    const collection = await createCollection(a, { default_chunking_strategy: 'fixed', default_chunk_size: 60 });
    const fromCollection = await ingest({ name: 'c.txt', content_base64: b64(text), collection_ids: [collection.id] });
    expect((await chunksOf(fromCollection.document.id)).map((c) => c.characters)).toEqual([60, 60, 60, 60, 60]);
    expect(fromCollection.job.result.chunking).toEqual({ strategy: 'fixed', size: 60, overlap: 0 });
    expect(fromCollection.document.collections).toEqual([{ id: collection.id, slug: collection.slug, label: collection.label, color: collection.color }]);
  });

  it('a 2 MB upload passes (the route\'s body limit is above the server-wide 1 MiB)', async () => {
    const text = `${'Lorem ipsum dolor sit amet. '.repeat(75_000)}`;
    const { document } = await ingest({ name: 'big.txt', content_base64: b64(text), chunking: { strategy: 'fixed', size: 20_000 } });
    expect(document.sizeKb).toBe(Math.ceil(Buffer.byteLength(text) / 1024));
    expect(document.chunks).toBe(Math.ceil(text.trim().length / 20_000));
  });
});

describe('POST /dashboard/documents: errors', () => {
  it('415 UNSUPPORTED_MEDIA_TYPE for other types, unknown extensions and content that does not match', async () => {
    const post = (body: Record<string, unknown>) => t.api.post('/dashboard/documents', body, jwt(a.token));
    expectError(await post({ name: 'photo.png', content_base64: b64('not really') }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(await post({ name: 'file', content_base64: b64('no extension') }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(await post({ name: 'x.txt', mime_type: 'image/png', content_base64: b64('x') }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    // A PDF sent as text, text sent as a PDF, a PDF named .docx.
    const pdfAsText = await post({ name: 'a.txt', content_base64: b64(makePdf(['x'])) });
    expectError(pdfAsText, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(pdfAsText.body.error.details).toEqual(expect.objectContaining({ detected: 'pdf' }));
    expectError(await post({ name: 'a.pdf', content_base64: b64('just text') }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(await post({ name: 'a.docx', content_base64: b64(makePdf(['x'])) }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    // Parameters and case of a declared type are ignored.
    expect((await post({ name: 'x', mime_type: 'Text/Plain; charset=utf-8', content_base64: b64('fine') })).status).toBe(202);
  });

  it('413 PAYLOAD_TOO_LARGE past 25 MB decoded', async () => {
    const res = await t.api.post('/dashboard/documents', { name: 'huge.txt', content_base64: Buffer.alloc(25 * 1024 * 1024 + 1, 0x61).toString('base64') }, jwt(a.token));
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('400 INVALID_INPUT for content that is not base64, empty content and a missing name', async () => {
    for (const body of [
      { name: 'a.txt', content_base64: 'this is not base64!' },
      { name: 'a.txt', content_base64: '' },
      { name: 'a.txt', content_base64: 'A' },
      { content_base64: b64('x') },
      { name: '  ', content_base64: b64('x') },
      { name: 'a.txt', content_base64: b64('x'), chunking: { strategy: 'sliding_window', size: 100, overlap: 100 } },
      { name: 'a.txt', content_base64: b64('x'), chunking: { strategy: 'paragraphs' } },
      { name: 'a.txt', content_base64: b64('x'), chunking: { strategy: 'fixed', size: '100' } },
    ]) {
      const res = await t.api.post('/dashboard/documents', body, jwt(a.token));
      expectError(res, 400, 'INVALID_INPUT');
    }
  });

  it('404 NOT_FOUND for a collection that is not the tenant\'s; nothing is stored', async () => {
    const before = await t.sql<{ n: number }>('select count(*)::int as n from documents where tenant_id = $1', [a.tenantId]);
    const other = await createCollection(b);
    for (const id of [other.id, '00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const res = await t.api.post('/dashboard/documents', { name: 'a.txt', content_base64: b64('x'), collection_ids: [id] }, jwt(a.token));
      expectError(res, 404, 'NOT_FOUND');
      expect(res.body.error.details).toEqual({ collection_id: id });
    }
    expect(await t.sql('select count(*)::int as n from documents where tenant_id = $1', [a.tenantId])).toEqual(before);
  });

  it('needs a dashboard token with the developer role or higher', async () => {
    const body = { name: 'a.txt', content_base64: b64('x') };
    expectError(await t.api.post('/dashboard/documents', body), 401, 'UNAUTHORIZED');
    expectError(await t.api.post('/dashboard/documents', body, key(a)), 401, 'INVALID_TOKEN');
    expectError(await t.api.post('/dashboard/documents', body, jwt(tokens.viewer)), 403, 'FORBIDDEN');
    const jobId = await upload(body, tokens.developer);
    expect((await waitForJob(jobId)).status).toBe('completed');
  });

  it('stores the document, references, job and graphile job together, and audits the upload', async () => {
    const collection = await createCollection(a);
    const jobId = await upload({ name: 'audited.md', content_base64: b64('# A\n\ntext'), category: 'policy', collection_ids: [collection.id, collection.id] });
    const job = await waitForJob(jobId);
    const [audit] = await t.sql<{ action: string; details: Record<string, unknown> }>(`select action, details from audit_log where tenant_id = $1 and target_id = $2`, [a.tenantId, job.document_id]);
    expect(audit).toEqual({ action: 'document.uploaded', details: expect.objectContaining({ name: 'audited.md', mime_type: 'text/markdown', job_id: jobId, collection_ids: [collection.id] }) });
    const [row] = await t.sql<{ content: Buffer | null; created_by: string }>('select content, created_by from ingestion_jobs where id = $1', [jobId]);
    expect(row).toEqual({ content: null, created_by: a.email }); // the bytes go once the job ends
  });
});

describe('GET /v1/documents, GET and DELETE /v1/documents/{id}', () => {
  let collectionId: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    const collection = await createCollection(a);
    collectionId = collection.id;
    ids.first = (await ingest({ name: 'first.txt', content_base64: b64('first'), category: 'faq', collection_ids: [collectionId] })).document.id;
    ids.second = (await ingest({ name: 'second.txt', content_base64: b64('second'), category: 'faq' })).document.id;
    ids.third = (await ingest({ name: 'third.txt', content_base64: b64('third'), collection_ids: [collectionId] })).document.id;
  });

  it('lists the tenant\'s documents newest first, with pagination', async () => {
    const res = await t.api.get('/v1/documents?pageSize=2', key(a));
    expect(res.status, res.text).toBe(200);
    const total = (await t.sql<{ n: number }>('select count(*)::int as n from documents where tenant_id = $1', [a.tenantId]))[0].n;
    expect(res.body.data.pagination).toEqual({ total, limit: 2, offset: 0 });
    expect(res.body.data.documents.map((d: { id: string }) => d.id)).toEqual([ids.third, ids.second]);
    const page2 = await t.api.get('/v1/documents?pageSize=2&page=2', key(a));
    expect(page2.body.data.documents[0].id).toBe(ids.first);
    expect(page2.body.data.pagination).toEqual({ total, limit: 2, offset: 2 });
  });

  it('filters by collection_id and category', async () => {
    const byCollection = await t.api.get(`/v1/documents?collection_id=${collectionId}`, key(a));
    expect(byCollection.body.data.documents.map((d: { id: string }) => d.id)).toEqual([ids.third, ids.first]);
    expect(byCollection.body.data.pagination.total).toBe(2);
    const byCategory = await t.api.get('/v1/documents?category=faq', key(a));
    expect(byCategory.body.data.documents.map((d: { id: string }) => d.id)).toEqual([ids.second, ids.first]);
    const both = await t.api.get(`/v1/documents?category=faq&collection_id=${collectionId}`, key(a));
    expect(both.body.data.documents.map((d: { id: string }) => d.id)).toEqual([ids.first]);
    const none = await t.api.get('/v1/documents?collection_id=not-a-collection', key(a));
    expect(none.body.data).toEqual({ documents: [], pagination: { total: 0, limit: 20, offset: 0 } });
  });

  it('needs an API key', async () => {
    expectError(await t.api.get('/v1/documents'), 401, 'MISSING_API_KEY');
    expect((await t.api.get('/v1/documents', jwt(a.token))).status).toBe(401);
  });

  it('DELETE removes the document, its chunks and references at once, and audits it', async () => {
    expect((await chunksOf(ids.first)).length).toBe(1);
    const res = await t.api.delete(`/v1/documents/${ids.first}`, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(await chunksOf(ids.first)).toEqual([]);
    expect(await t.sql('select * from document_collections where document_id = $1', [ids.first])).toEqual([]);
    expectError(await t.api.get(`/v1/documents/${ids.first}`, key(a)), 404, 'NOT_FOUND');
    expectError(await t.api.delete(`/v1/documents/${ids.first}`, key(a)), 404, 'NOT_FOUND');
    const audit = await t.sql<{ action: string }>('select action from audit_log where target_id = $1 order by created_at', [ids.first]);
    expect(audit.map((r) => r.action)).toEqual(['document.uploaded', 'document.deleted']);
    // The collection stays, referencing the remaining document only.
    const left = await t.api.get(`/v1/documents?collection_id=${collectionId}`, key(a));
    expect(left.body.data.documents.map((d: { id: string }) => d.id)).toEqual([ids.third]);
  });

  it('another tenant\'s documents are 404 and never listed', async () => {
    expectError(await t.api.get(`/v1/documents/${ids.second}`, key(b)), 404, 'NOT_FOUND');
    expectError(await t.api.delete(`/v1/documents/${ids.second}`, key(b)), 404, 'NOT_FOUND');
    expect((await t.api.get(`/v1/documents/${ids.second}`, key(a))).status).toBe(200);
    const list = await t.api.get('/v1/documents', key(b));
    expect(list.body.data.documents.filter((d: { id: string }) => Object.values(ids).includes(d.id))).toEqual([]);
    const jobs = await t.api.get('/dashboard/ingestion-jobs?pageSize=100', jwt(b.token));
    expect(jobs.body.data.jobs).toEqual([]);
  });
});

describe('collection references: POST and DELETE /dashboard/collections/{id}/documents', () => {
  it('attaches (idempotent) and detaches; the document stays in the pool', async () => {
    const collection = await createCollection(a);
    const { document } = await ingest({ name: 'ref.txt', content_base64: b64('referenced') });
    const path = `/dashboard/collections/${collection.id}/documents`;
    for (let i = 0; i < 2; i++) {
      const res = await t.api.post(path, { document_id: document.id }, jwt(tokens.developer));
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.document.collections).toEqual([{ id: collection.id, slug: collection.slug, label: collection.label, color: collection.color }]);
    }
    const audit = await t.sql<{ action: string }>('select action from audit_log where target_id = $1', [collection.id]);
    expect(audit.filter((r) => r.action === 'collection.document_attached').length).toBe(1);
    const detached = await t.api.delete(`${path}/${document.id}`, jwt(tokens.developer));
    expect(detached.status, detached.text).toBe(200);
    expect(detached.body.data.document.collections).toEqual([]);
    expectError(await t.api.delete(`${path}/${document.id}`, jwt(tokens.developer)), 404, 'NOT_FOUND');
    expect((await t.api.get(`/v1/documents/${document.id}`, key(a))).status).toBe(200);
  });

  it('404 for unknown collections and documents, 403 for viewers and for developers on restricted collections', async () => {
    const collection = await createCollection(a);
    const { document } = await ingest({ name: 'r.txt', content_base64: b64('restricted content') });
    const path = `/dashboard/collections/${collection.id}/documents`;
    expectError(await t.api.post(path, { document_id: '00000000-0000-4000-8000-000000000000' }, jwt(a.token)), 404, 'NOT_FOUND');
    expectError(await t.api.post(`/dashboard/collections/00000000-0000-4000-8000-000000000000/documents`, { document_id: document.id }, jwt(a.token)), 404, 'NOT_FOUND');
    expectError(await t.api.post(path, { document_id: document.id }, jwt(tokens.viewer)), 403, 'FORBIDDEN');
    expect((await t.api.patch(`/v1/collections/${collection.id}`, { visibility: 'restricted' }, key(a))).status).toBe(200);
    expectError(await t.api.post(path, { document_id: document.id }, jwt(tokens.developer)), 403, 'FORBIDDEN');
    expect((await t.api.post(path, { document_id: document.id }, jwt(tokens.admin))).status).toBe(200);
    expectError(await t.api.delete(`${path}/${document.id}`, jwt(tokens.developer)), 403, 'FORBIDDEN');
    expect((await t.api.delete(`${path}/${document.id}`, jwt(tokens.admin))).status).toBe(200);
  });

  it('another tenant\'s document cannot be added to one\'s own collection', async () => {
    const mine = await createCollection(b);
    const { document } = await ingest({ name: 'a-only.txt', content_base64: b64('tenant a') });
    expectError(await t.api.post(`/dashboard/collections/${mine.id}/documents`, { document_id: document.id }, jwt(b.token)), 404, 'NOT_FOUND');
  });
});

describe('embeddings', () => {
  it('are skipped when no embedding model is configured', async () => {
    const { job, document } = await ingest({ name: 'plain.txt', content_base64: b64('nothing to embed') });
    expect(job.result).toEqual(expect.objectContaining({ embedded: false, embedding_model: null, note: expect.stringContaining('No embedding model') }));
    expect(document.embeddingModel).toBeNull();
    expect((await chunksOf(document.id)).every((c) => c.embedding === null)).toBe(true);
  });

  it('are stored as Float32 little-endian with the collection\'s default model, in batches, metered', async () => {
    llm.reset();
    const collection = await createCollection(a, { default_embedding_model: 'fake-embedding' });
    const paragraphs = Array.from({ length: 100 }, (_, i) => `Paragraph ${i} about benefits and payroll number ${i}.`);
    const { job, document } = await ingest({ name: 'embedded.md', content_base64: b64(paragraphs.join('\n\n')), collection_ids: [collection.id], chunking: { strategy: 'fixed', size: 60 } });
    expect(document.embeddingModel).toBe('fake-embedding');
    expect(job.result).toEqual(expect.objectContaining({ embedded: true, embedding_model: 'fake-embedding' }));
    const chunks = await chunksOf(document.id);
    expect(chunks.length).toBeGreaterThan(64);
    for (const chunk of chunks) {
      expect(chunk.embedding).not.toBeNull();
      const stored = Array.from({ length: chunk.embedding!.length / 4 }, (_, i) => chunk.embedding!.readFloatLE(i * 4));
      const expected = fakeEmbedding(chunk.text);
      expect(stored.length).toBe(expected.length);
      stored.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 5));
    }
    const calls = llm.requests.filter((r) => r.path === '/v1/embeddings');
    expect(calls.map((c) => c.body.input.length)).toEqual([64, chunks.length - 64]);
    expect(calls.every((c) => c.body.model === 'fake-embedding')).toBe(true);
    const usage = await t.sql<{ kind: string; model: string; counts_as_request: boolean; prompt_tokens: number }>(
      `select kind, model, counts_as_request, prompt_tokens from usage_events where tenant_id = $1 and kind = 'embedding' order by created_at`,
      [a.tenantId],
    );
    expect(usage.length).toBe(2);
    expect(usage.every((u) => u.model === 'fake-embedding' && !u.counts_as_request && u.prompt_tokens > 0)).toBe(true);
  });

  it('the upload\'s embedding_model wins; a provider that is not configured fails the job', async () => {
    const { document } = await ingest({ name: 'own-model.txt', content_base64: b64('pick my model'), embedding_model: 'fake-embedding' });
    expect(document.embeddingModel).toBe('fake-embedding');
    const job = await waitForJob(await upload({ name: 'bad-model.txt', content_base64: b64('x'), embedding_model: 'nowhere/model' }));
    expect(job.status).toBe('failed');
    expect(job.error_message).toMatch(/nowhere/);
    expect((await t.api.get(`/v1/documents/${job.document_id}`, key(a))).body.data.document.status).toBe('failed');
  });
});
