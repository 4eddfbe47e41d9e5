// The pgvector path of knowledge retrieval, against a PostgreSQL that has the `vector` extension
// available: the server enables it at start-up, ingestion writes each embedding into the vector
// column, older embeddings are copied in, and the vector leg ranks every embedded chunk in scope
// inside PostgreSQL. The embedded PostgreSQL from npm ships without pgvector, so these tests run
// only where the extension is installed in the test server's PostgreSQL (they are skipped, not
// passed, elsewhere); the portable path is what the other knowledge tests cover there.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlPool, type SqlPool } from '../../db/sql-pool.js';
import { VECTOR_SCAN_MAX } from '../../server/knowledge/knowledge.service.js';
import { backfillVectors, maintainVectorIndex, nearestChunkIds, PGVECTOR_SCAN_MAX_VALUES } from '../../server/knowledge/pgvector.js';
import { INDEX_BUILD_LOCK_KEY } from '../../server/knowledge/store/vector-support.js';
import { bearer } from '../support/client.js';
import { fakeEmbedding, startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { embeddingBytes, insertDocument } from './seed.js';

const llm: FakeLlm = await startFakeLlm();
const t: TestServer = await startTestServer({ OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', EMBEDDING_MODEL: 'fake-embedding' });
const pgvector = t.server.deps.pgvector;
if (!pgvector) {
  await t.close();
  await llm.close();
}

let a: SignedUpTenant;
let sql: SqlPool;
let collectionId: string;
/** The large collection of the ranking test, and its chunk whose vector is the question's. */
let plants: string;
let hiddenId: string;

/** pgvector's text form parsed back to float32 values. */
const parseVector = (text: string) => Float32Array.from(JSON.parse(text) as number[]);
const decode = (bytes: Buffer) => new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));

describe.skipIf(!pgvector)('pgvector', () => {
  beforeAll(async () => {
    a = await signupTenant(t.api, { companyName: 'Vector Corp' });
    const res = await t.api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, { headers: bearer(a.apiKey) });
    expect(res.status, res.text).toBe(201);
    collectionId = res.body.data.collection.id;
    sql = createSqlPool(t.databaseUrl, 2, pino({ level: 'silent' }));
  });
  afterAll(async () => {
    await sql?.end();
    await t.close();
    await llm.close();
  });

  it('is enabled at start-up, with a vector column beside the portable one', async () => {
    const [row] = await t.sql<{ extension: boolean; column: string | null }>(
      `select exists (select 1 from pg_extension where extname = 'vector') as extension,
              (select udt_name from information_schema.columns where table_name = 'document_chunks' and column_name = 'embedding_vector') as column`,
    );
    expect(row).toEqual({ extension: true, column: 'vector' });
  });

  it('ingestion writes each embedding into the vector column as well', async () => {
    const text = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} explains the expense policy in detail.`).join('\n\n');
    const upload = await t.api.post('/dashboard/documents', { name: 'expenses.md', content_base64: Buffer.from(text).toString('base64'), collection_ids: [collectionId] }, { headers: bearer(a.token) });
    expect(upload.status, upload.text).toBe(202);
    const job = await waitFor(async () => {
      const res = await t.api.get(`/dashboard/ingestion-jobs/${upload.body.data.jobId}`, { headers: bearer(a.token) });
      return ['completed', 'failed', 'cancelled'].includes(res.body.data.job.status) && res.body.data.job;
    }, 'the ingestion job');
    expect(job.status, JSON.stringify(job)).toBe('completed');
    const chunks = await t.sql<{ embedding: Buffer; vector: string }>('select embedding, embedding_vector::text as vector from document_chunks where document_id = $1 order by ordinal', [job.document_id]);
    expect(chunks.length).toBeGreaterThan(0);
    for (const chunk of chunks) expect(parseVector(chunk.vector)).toEqual(decode(chunk.embedding));
  });

  it('copies embeddings stored before pgvector was enabled into the vector column', async () => {
    const { chunkIds } = await insertDocument(t.sql, {
      tenantId: a.tenantId,
      name: 'Older upload',
      collectionIds: [collectionId],
      chunks: ['Laptops are replaced every three years.', 'Monitors are ordered through the service desk.'],
      embeddingModel: 'fake-embedding',
      withoutVectorColumn: true,
    });
    expect(await backfillVectors(sql)).toBeGreaterThanOrEqual(2);
    const rows = await t.sql<{ embedding: Buffer; vector: string }>('select embedding, embedding_vector::text as vector from document_chunks where id = any($1::uuid[])', [chunkIds]);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(parseVector(row.vector)).toEqual(decode(row.embedding));
    expect(await backfillVectors(sql)).toBe(0);
  });

  it(`ranks every embedded chunk in scope in PostgreSQL (beyond the ${VECTOR_SCAN_MAX} the portable path scans), within its bound`, async () => {
    const question = 'How do I claim travel expenses?';
    // A collection of its own, so the earlier tests' documents about expenses are not in scope.
    const created = await t.api.post('/v1/collections', { slug: 'plants', label: 'Plants', domain_keys: ['hiring'] }, { headers: bearer(a.apiKey) });
    expect(created.status, created.text).toBe(201);
    plants = created.body.data.collection.id as string;
    // More embedded filler chunks than the portable scan reads, none sharing a word with the question.
    const fillers = Array.from({ length: VECTOR_SCAN_MAX + 200 }, (_, i) => `Filler note ${i} about potted office plants.`);
    const [doc] = await t.sql<{ id: string }>(
      `insert into documents (tenant_id, name, category, mime_type, size_bytes, content_hash, status, characters, chunk_count, embedding_model, uploaded_by, uploaded_at, updated_at)
       values ($1, 'Plants', 'document', 'text/plain', 0, 'plants', 'ready', 0, $2, 'fake-embedding', 'seed@example.com', now(), now()) returning id`,
      [a.tenantId, fillers.length + 1],
    );
    await t.sql('insert into document_collections (document_id, collection_id, tenant_id, created_at) values ($1, $2, $3, now())', [doc.id, plants, a.tenantId]);
    // The hidden chunk shares no word with the question either, but its vector is the question's.
    const texts = [...fillers, 'Zebra quokka marmalade.'];
    const vectors = [...fillers.map((f) => embeddingBytes(f)), Buffer.from(new Float32Array(fakeEmbedding(question)).buffer)];
    const [hidden] = await t.sql<{ id: string }>(
      `insert into document_chunks (tenant_id, document_id, ordinal, text, characters, search_vector, embedding, created_at)
       select $1, $2, o - 1, x.text, length(x.text), to_tsvector('english', x.text), x.embedding, now()
         from unnest($3::text[], $4::bytea[]) with ordinality as x(text, embedding, o)
       returning id, text`,
      [a.tenantId, doc.id, texts, vectors],
    ).then((rows) => rows.filter((r) => (r as { text?: string }).text === 'Zebra quokka marmalade.'));
    await backfillVectors(sql);

    const res = await t.api.post('/v1/domains/hiring/knowledge/query', { query: question, top_k: 3, collection_ids: [plants] }, { headers: bearer(a.apiKey) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.results[0]).toEqual(expect.objectContaining({ chunk_id: hidden.id, document_name: 'Plants', text: 'Zebra quokka marmalade.' }));
    hiddenId = hidden.id;

    // Past the exact-scan bound (chunks x dimensions, from the documents' chunk counts) and without
    // an HNSW index of the dimension yet, the portable path answers: it compares only the lexical
    // candidates, and there are none here. That query asks for the index to be built.
    await t.sql('update documents set chunk_count = $2 where id = $1', [doc.id, Math.ceil(PGVECTOR_SCAN_MAX_VALUES / 64) + 1]);
    const bounded = await t.api.post('/v1/domains/hiring/knowledge/query', { query: question, top_k: 3, collection_ids: [plants] }, { headers: bearer(a.apiKey) });
    expect(bounded.status, bounded.text).toBe(200);
    expect(bounded.body.data.results).toEqual([]);

    // Once built, the index ranks the large scope: the hidden chunk is found again.
    const found = await waitFor(async () => {
      const res = await t.api.post('/v1/domains/hiring/knowledge/query', { query: question, top_k: 3, collection_ids: [plants] }, { headers: bearer(a.apiKey) });
      expect(res.status, res.text).toBe(200);
      return res.body.data.results[0]?.chunk_id === hidden.id && res.body.data.results;
    }, 'the HNSW index to rank the scope', 60_000);
    expect(found[0]).toEqual(expect.objectContaining({ document_name: 'Plants', text: 'Zebra quokka marmalade.' }));
    const [index] = await t.sql<{ definition: string; valid: boolean }>(
      `select pg_get_indexdef(x.indexrelid) as definition, x.indisvalid as valid from pg_index x join pg_class i on i.oid = x.indexrelid where i.relname = 'document_chunks_embedding_hnsw_64'`,
    );
    expect(index).toEqual({ definition: expect.stringMatching(/USING hnsw .*vector_cosine_ops\) WHERE \(vector_dims\(embedding_vector\) = 64\)/), valid: true });
  });

  it('builds again an HNSW index a failed build left invalid, one process at a time', async () => {
    const silent = pino({ level: 'silent' });
    const indexState = () =>
      t.sql<{ definition: string; valid: boolean }>(
        `select pg_get_indexdef(x.indexrelid) as definition, x.indisvalid as valid from pg_index x join pg_class i on i.oid = x.indexrelid where i.relname = 'document_chunks_embedding_hnsw_64'`,
      );
    // A concurrent build that fails half-way leaves an invalid index of the name behind, which
    // "create index concurrently if not exists" alone would take for the index for ever.
    await t.sql('drop index if exists document_chunks_embedding_hnsw_64');
    await expect(t.sql('create index concurrently document_chunks_embedding_hnsw_64 on document_chunks ((1 / (ordinal - ordinal)))')).rejects.toThrow(/division by zero/);
    expect(await indexState()).toEqual([{ definition: expect.stringContaining('(1 / (ordinal - ordinal))'), valid: false }]);
    // Another process holding the build lock: this one leaves the index to it.
    await sql.session(async (query) => {
      await query('select pg_advisory_lock($1::int, $2::int)', [INDEX_BUILD_LOCK_KEY, 64]);
      expect(await maintainVectorIndex(sql, silent, 64)).toBe('busy');
    });
    expect(await maintainVectorIndex(sql, silent, 64)).toBe('rebuilt');
    expect(await indexState()).toEqual([{ definition: expect.stringMatching(/USING hnsw .*vector_cosine_ops\) WHERE \(vector_dims\(embedding_vector\) = 64\)/), valid: true }]);
    expect(await maintainVectorIndex(sql, silent, 64)).toBe('present');
    const found = await t.api.post('/v1/domains/hiring/knowledge/query', { query: 'How do I claim travel expenses?', top_k: 3, collection_ids: [plants] }, { headers: bearer(a.apiKey) });
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.results[0]?.chunk_id).toBe(hiddenId);
  });

  it('keeps chunks of other tenants out of the HNSW ranking', async () => {
    // Another tenant's chunk that is the question itself (so its vector is the question's), in a
    // collection of the same name: the index holds it, the scope must not let it through.
    const b = await signupTenant(t.api, { companyName: 'Other Vector Corp' });
    const created = await t.api.post('/v1/collections', { slug: 'plants', label: 'Plants', domain_keys: ['hiring'] }, { headers: bearer(b.apiKey) });
    expect(created.status, created.text).toBe(201);
    const question = 'How do I claim travel expenses?';
    const { chunkIds } = await insertDocument(t.sql, {
      tenantId: b.tenantId,
      name: 'Secret plants',
      collectionIds: [created.body.data.collection.id],
      chunks: [question],
      embeddingModel: 'fake-embedding',
    });
    const own = await t.api.post('/v1/domains/hiring/knowledge/query', { query: question, top_k: 50 }, { headers: bearer(a.apiKey) });
    expect(own.status, own.text).toBe(200);
    expect(own.body.data.results.length).toBeGreaterThan(0);
    expect(own.body.data.results.map((r: { chunk_id: string }) => r.chunk_id)).not.toContain(chunkIds[0]);

    // The vector leg itself, through the index (a scope past the exact bound): the other tenant's
    // chunk, as near as can be, is not among the candidates; this tenant's is first.
    const nearest = await nearestChunkIds({ sql, log: pino({ level: 'silent' }) }, { tenantId: a.tenantId, collectionIds: [plants], category: null }, 'fake-embedding', Float32Array.from(fakeEmbedding(question)), 20_000, 10);
    expect(nearest?.exact).toBe(false);
    expect(nearest?.ids[0]).toBe(hiddenId);
    expect(nearest?.ids).not.toContain(chunkIds[0]);
  });
});
