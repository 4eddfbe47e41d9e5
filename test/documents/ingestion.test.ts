// Ingestion jobs over real HTTP: stages and progress, cancellation (pending, running, finished),
// unreadable files, and the task's idempotence (re-run of a finished job, resume of an
// interrupted one). One database: a server without a job runner keeps jobs pending; a second
// server with a runner on the same database picks them up later.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { makeDocx, makePdf } from '../fixtures/make-files.js';
import { expectError } from '../support/expect-error.js';
import { waitFor } from '../support/wait-for.js';

let idle: TestServer; // WORKER=0: jobs stay pending
let t: TestServer | undefined; // runs jobs (started in the second part)
let llm: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let viewer: string;

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const jwt = (token: string) => ({ headers: bearer(token) });
const b64 = (content: string | Buffer) => Buffer.from(content).toString('base64');
const server = () => t ?? idle;

async function upload(body: Record<string, unknown>) {
  const res = await server().api.post('/dashboard/documents', body, jwt(a.token));
  expect(res.status, res.text).toBe(202);
  return res.body.data.jobId as string;
}

const getJob = async (jobId: string) => {
  const res = await server().api.get(`/dashboard/ingestion-jobs/${jobId}`, jwt(a.token));
  expect(res.status, res.text).toBe(200);
  return res.body.data.job;
};

/** Polls the job until it has ended, recording every (stage, progress) seen on the way. */
async function waitForJob(jobId: string, seen: { stage: string | null; progress: number }[] = []) {
  return waitFor(async () => {
    const job = await getJob(jobId);
    const last = seen.at(-1);
    if (!last || last.stage !== job.stage || last.progress !== job.progress) seen.push({ stage: job.stage, progress: job.progress });
    return TERMINAL.has(job.status) ? job : null;
  }, `job ${jobId} to end`, 30_000, 20);
}

/** Waits until the job queue holds no ingestion job (every run, including repeats, has finished). */
async function waitForQueue() {
  await waitFor(async () => (await idle.sql<{ n: number }>(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'ingest_document'`))[0].n === 0, 'no ingestion job queued', 30_000, 20);
}

const chunkRows = (documentId: string) =>
  idle.sql<{ id: string; ordinal: number; text: string }>('select id, ordinal, text from document_chunks where document_id = $1 order by ordinal', [documentId]);

const enqueueAgain = (jobId: string) => idle.sql(`select graphile_worker.add_job('ingest_document', json_build_object('jobId', $1::text))`, [jobId]);

let interruptedJob: string;
let interruptedDocument: string;
let corruptJob: string;
let corruptDocument: string;

beforeAll(async () => {
  llm = await startFakeLlm();
  idle = await startTestServer({ WORKER: '0' });
  a = await signupTenant(idle.api, { companyName: 'Ingest A' });
  b = await signupTenant(idle.api, { companyName: 'Ingest B' });
  const email = uniqueEmail('viewer');
  expect((await idle.api.post('/dashboard/users', { email, role: 'viewer', password: 'viewer password 1' }, jwt(a.token))).status).toBe(201);
  viewer = (await idle.api.post('/auth/login', { email, password: 'viewer password 1' })).body.data.token;
});
afterAll(async () => {
  await t?.close();
  await idle?.close();
  await llm?.close();
});

describe('without a job runner (jobs stay pending)', () => {
  it('a new job is pending, listed, and filterable by status', async () => {
    const jobId = await upload({ name: 'waiting.txt', content_base64: b64('waiting') });
    const job = await getJob(jobId);
    expect(job).toEqual(expect.objectContaining({ status: 'pending', stage: null, progress: 0, result: null, error_message: null, started_at: null, completed_at: null }));
    const pending = await idle.api.get('/dashboard/ingestion-jobs?status=pending', jwt(viewer));
    expect(pending.status, pending.text).toBe(200);
    expect(pending.body.data.jobs.map((j: { id: string }) => j.id)).toContain(jobId);
    expect(pending.body.data.pagination).toEqual({ total: pending.body.data.jobs.length, limit: 20, offset: 0, total_is_exact: true, next_cursor: null });
    const done = await idle.api.get('/dashboard/ingestion-jobs?status=completed', jwt(viewer));
    expect(done.body.data.jobs).toEqual([]);
    expectError(await idle.api.get('/dashboard/ingestion-jobs?status=bogus', jwt(viewer)), 400, 'INVALID_INPUT');
    const [doc] = await idle.sql<{ status: string }>('select status from documents where id = $1', [job.document_id]);
    expect(doc.status).toBe('processing');
  });

  it('cancelling a pending job removes its document and its queued run; a second cancel is 409', async () => {
    const jobId = await upload({ name: 'cancel-me.txt', content_base64: b64('never ingested') });
    const { document_id: documentId } = await getJob(jobId);
    expectError(await idle.api.post(`/dashboard/ingestion-jobs/${jobId}/cancel`, undefined, jwt(viewer)), 403, 'FORBIDDEN');
    expectError(await idle.api.post(`/dashboard/ingestion-jobs/${jobId}/cancel`, undefined, jwt(b.token)), 404, 'NOT_FOUND');
    const res = await idle.api.post(`/dashboard/ingestion-jobs/${jobId}/cancel`, undefined, jwt(a.token));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.job).toEqual(expect.objectContaining({ id: jobId, status: 'cancelled', completed_at: expect.any(String), document_id: null }));
    expect(await idle.sql('select id from documents where id = $1', [documentId])).toEqual([]);
    expect(await idle.sql(`select id from graphile_worker.jobs where key = $1`, [jobId])).toEqual([]);
    const [row] = await idle.sql<{ content: Buffer | null }>('select content from ingestion_jobs where id = $1', [jobId]);
    expect(row.content).toBeNull();
    expectError(await idle.api.post(`/dashboard/ingestion-jobs/${jobId}/cancel`, undefined, jwt(a.token)), 409, 'CONFLICT');
    const audit = await idle.sql<{ action: string }>('select action from audit_log where target_id = $1', [jobId]);
    expect(audit.map((r) => r.action)).toEqual(['ingestion_job.cancelled']);
  });

  it('prepares a job interrupted mid-way: running, with partial chunks, and queued twice', async () => {
    const text = Array.from({ length: 8 }, (_, i) => `Section ${i} explains the rule number ${i} in detail.`).join('\n\n');
    interruptedJob = await upload({ name: 'interrupted.txt', content_base64: b64(text), chunking: { strategy: 'fixed', size: 60 } });
    interruptedDocument = (await getJob(interruptedJob)).document_id;
    // As a crashed run leaves it: marked running, two chunks written (one stale).
    await idle.sql(`update ingestion_jobs set status = 'running', started_at = now(), stage = 'indexing', progress = 90 where id = $1`, [interruptedJob]);
    for (const [ordinal, chunk] of [[0, text.slice(0, 60)], [1, 'stale text from an older run']] as const) {
      await idle.sql(
        `insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, created_at) values (gen_random_uuid(), $1, $2, $3, $4, $5, now())`,
        [a.tenantId, interruptedDocument, ordinal, chunk, chunk.length],
      );
    }
    await enqueueAgain(interruptedJob); // a second run of the same job, next to the original one
    // A corrupt upload whose interrupted run had already written a chunk.
    corruptJob = await upload({ name: 'corrupt.pdf', content_base64: b64('%PDF-1.7\ncorrupt body') });
    corruptDocument = (await getJob(corruptJob)).document_id;
    await idle.sql(`update ingestion_jobs set status = 'running', started_at = now(), stage = 'indexing' where id = $1`, [corruptJob]);
    await idle.sql(`insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, created_at) values (gen_random_uuid(), $1, $2, 0, 'left over', 9, now())`, [a.tenantId, corruptDocument]);
    expect((await idle.sql<{ n: number }>(`select count(*)::int as n from graphile_worker._private_jobs where payload->>'jobId' = $1`, [interruptedJob]))[0].n).toBe(2);
  });
});

describe('with a job runner', () => {
  beforeAll(async () => {
    t = await startTestServer({ OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', EMBEDDING_MODEL: 'fake-embedding' }, { databaseUrl: idle.databaseUrl });
  });

  it('the interrupted job finishes after the restart, once, with no duplicate or stale chunks', async () => {
    const job = await waitForJob(interruptedJob);
    await waitForQueue();
    expect(job.status).toBe('completed');
    const chunks = await chunkRows(interruptedDocument);
    expect(chunks.map((c) => c.ordinal)).toEqual(chunks.map((_, i) => i));
    expect(chunks.length).toBe(job.result.chunks);
    expect(chunks.map((c) => c.text)).not.toContain('stale text from an older run');
    const [doc] = await idle.sql<{ status: string; chunk_count: number }>('select status, chunk_count from documents where id = $1', [interruptedDocument]);
    expect(doc).toEqual({ status: 'ready', chunk_count: chunks.length });
    expect((await getJob(interruptedJob)).status).toBe('completed');
  });

  it('reports each stage with rising progress, embeds with EMBEDDING_MODEL, and clears the upload', async () => {
    llm.reset();
    llm.setLatency(60); // each embeddings batch takes a moment, so polling sees the stage move
    const text = Array.from({ length: 200 }, (_, i) => `Line ${i} of the staged document.`).join('\n');
    const jobId = await upload({ name: 'staged.txt', content_base64: b64(text), chunking: { strategy: 'fixed', size: 50 } });
    const seen: { stage: string | null; progress: number }[] = [];
    const job = await waitForJob(jobId, seen);
    llm.setLatency(0);
    expect(job).toEqual(expect.objectContaining({ status: 'completed', stage: 'completed', progress: 100, error_message: null }));
    expect(job.result).toEqual(expect.objectContaining({ embedded: true, embedding_model: 'fake-embedding', chunks: Math.ceil(text.length / 50), characters: text.length, pages: null }));
    const order = [null, 'extracting', 'chunking', 'embedding', 'indexing', 'completed'];
    const stages = seen.map((s) => s.stage);
    expect(stages).toContain('embedding');
    expect(stages.map((s) => order.indexOf(s))).toEqual([...stages.map((s) => order.indexOf(s))].sort((x, y) => x - y));
    expect(stages.every((s) => order.includes(s))).toBe(true);
    const progress = seen.map((s) => s.progress);
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
    // Progress moves during embedding, batch by batch.
    expect(new Set(seen.filter((s) => s.stage === 'embedding').map((s) => s.progress)).size).toBeGreaterThan(1);
    expect(llm.requests.filter((r) => r.path === '/v1/embeddings').length).toBe(Math.ceil(job.result.chunks / 64));
    const [row] = await idle.sql<{ content: Buffer | null; embedding_model: string }>(
      'select j.content, d.embedding_model from ingestion_jobs j join documents d on d.id = j.document_id where j.id = $1',
      [jobId],
    );
    expect(row).toEqual({ content: null, embedding_model: 'fake-embedding' });
  });

  it('running the task again for a completed job changes nothing', async () => {
    const job = await waitForJob(await upload({ name: 'done.md', content_base64: b64('# Done\n\nFinished once.') }));
    await waitForQueue();
    const before = { chunks: await chunkRows(job.document_id), job: await getJob(job.id), doc: await idle.sql('select * from documents where id = $1', [job.document_id]) };
    await enqueueAgain(job.id);
    await enqueueAgain(job.id);
    await waitForQueue();
    expect({ chunks: await chunkRows(job.document_id), job: await getJob(job.id), doc: await idle.sql('select * from documents where id = $1', [job.document_id]) }).toEqual(before);
  });

  it('cancelling a finished job is 409 CONFLICT', async () => {
    const job = await waitForJob(await upload({ name: 'finished.txt', content_base64: b64('finished') }));
    expect(job.status).toBe('completed');
    const res = await server().api.post(`/dashboard/ingestion-jobs/${job.id}/cancel`, undefined, jwt(a.token));
    expectError(res, 409, 'CONFLICT');
    expect(res.body.error.details).toEqual({ status: 'completed' });
    expectError(await server().api.post('/dashboard/ingestion-jobs/00000000-0000-4000-8000-000000000000/cancel', undefined, jwt(a.token)), 404, 'NOT_FOUND');
  });

  it('cancelling a running job stops it between batches: no document, no chunks, stays cancelled', async () => {
    llm.reset();
    llm.setLatency(250);
    const text = Array.from({ length: 400 }, (_, i) => `Row ${i} of a long document.`).join('\n');
    const jobId = await upload({ name: 'long.txt', content_base64: b64(text), chunking: { strategy: 'fixed', size: 50 } });
    const job = await waitFor(async () => {
      const seen = await getJob(jobId);
      return seen.stage === 'embedding' || TERMINAL.has(seen.status) ? seen : null;
    }, 'the embedding stage', 30_000, 20);
    expect(job).toEqual(expect.objectContaining({ status: 'running', stage: 'embedding' }));
    const documentId = job.document_id;
    const res = await server().api.post(`/dashboard/ingestion-jobs/${jobId}/cancel`, undefined, jwt(a.token));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.job.status).toBe('cancelled');
    await waitForQueue();
    llm.setLatency(0);
    expect((await getJob(jobId)).status).toBe('cancelled');
    expect(await idle.sql('select id from documents where id = $1', [documentId])).toEqual([]);
    expect(await chunkRows(documentId)).toEqual([]);
    // It stopped early: far fewer embeddings calls than the whole document needed.
    expect(llm.requests.filter((r) => r.path === '/v1/embeddings').length).toBeLessThan(Math.ceil(400 / 64));
  });

  it('unreadable files fail with error_message, the document failed and no chunks', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: 'broken.pdf', content_base64: b64('%PDF-1.4\nthis is not really a pdf') }, /PDF file could not be read/],
      [{ name: 'broken.docx', content_base64: b64(Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.from('garbage bytes')])) }, /DOCX file could not be read/],
      [{ name: 'latin1.txt', content_base64: b64(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0xff])) }, /not valid UTF-8/],
      [{ name: 'empty.json', content_base64: b64('{}') }, /No text could be extracted/],
      [{ name: 'bad.json', content_base64: b64('{"a": ') }, /not valid JSON/],
      [{ name: 'blank.pdf', content_base64: b64(makePdf([''])) }, /No text could be extracted/],
    ];
    for (const [body, message] of cases) {
      const job = await waitForJob(await upload(body));
      expect(job.status, `${body.name}: ${JSON.stringify(job)}`).toBe('failed');
      expect(job.error_message, String(body.name)).toMatch(message);
      expect(job.completed_at).toEqual(expect.any(String));
      const [doc] = await idle.sql<{ status: string; chunk_count: number }>('select status, chunk_count from documents where id = $1', [job.document_id]);
      expect(doc).toEqual({ status: 'failed', chunk_count: 0 });
      expect(await chunkRows(job.document_id)).toEqual([]);
      const [row] = await idle.sql<{ content: Buffer | null }>('select content from ingestion_jobs where id = $1', [job.id]);
      expect(row.content).toBeNull();
      expectError(await server().api.post(`/dashboard/ingestion-jobs/${job.id}/cancel`, undefined, jwt(a.token)), 409, 'CONFLICT');
    }
  });

  it('a failed job leaves no chunks, even those an earlier interrupted run had written', async () => {
    const job = await waitForJob(corruptJob);
    await waitForQueue();
    expect(job.status).toBe('failed');
    expect(job.error_message).toMatch(/PDF/);
    expect(await chunkRows(corruptDocument)).toEqual([]);
    const [doc] = await idle.sql<{ status: string }>('select status from documents where id = $1', [corruptDocument]);
    expect(doc.status).toBe('failed');
  });

  it('a DOCX and a PDF ingest next to each other', async () => {
    const [docx, pdf] = await Promise.all([
      upload({ name: 'one.docx', content_base64: b64(makeDocx('One', ['first'])) }).then((id) => waitForJob(id)),
      upload({ name: 'two.pdf', content_base64: b64(makePdf(['second'])) }).then((id) => waitForJob(id)),
    ]);
    expect([docx.status, pdf.status]).toEqual(['completed', 'completed']);
  });

  it('ingestion jobs of another tenant are 404 and never listed', async () => {
    const [job] = (await server().api.get('/dashboard/ingestion-jobs', jwt(a.token))).body.data.jobs;
    expectError(await server().api.get(`/dashboard/ingestion-jobs/${job.id}`, jwt(b.token)), 404, 'NOT_FOUND');
    expectError(await server().api.get('/dashboard/ingestion-jobs/not-an-id', jwt(a.token)), 404, 'NOT_FOUND');
    expect((await server().api.get('/dashboard/ingestion-jobs', jwt(b.token))).body.data).toEqual({ jobs: [], pagination: { total: 0, limit: 20, offset: 0, total_is_exact: true, next_cursor: null } });
  });
});
