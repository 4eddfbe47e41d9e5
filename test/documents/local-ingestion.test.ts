// Small text uploads ingested by the process that accepted them, over real HTTP: no graphile job,
// one completion with its stage and progress, the same chunks the job runner writes, a repeated run
// that changes nothing, the recovery of a job whose process stopped (and not of one whose process
// lives), and an upload into another tenant's collection that writes nothing. One database: a
// server without a job runner (WORKER=0) prepares queued and orphaned jobs; a second server with a
// runner (a 200 ms heartbeat, so a stopped process is noticed within a second) ingests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let idle: TestServer;
let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;
let collectionA: string;
let collectionB: string;

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const jwt = (token: string) => ({ headers: bearer(token) });
const b64 = (content: string) => Buffer.from(content).toString('base64');

const TEXT = [
  '# Travel policy',
  ...Array.from({ length: 6 }, (_, i) =>
    [`## Section ${i + 1}`, Array.from({ length: 8 }, (_, j) => `Rule ${i + 1}.${j + 1}: travellers book economy fares and file receipts within thirty days.`).join(' ')].join('\n\n'),
  ),
].join('\n\n');

async function upload(server: TestServer, body: Record<string, unknown>) {
  const res = await server.api.post('/dashboard/documents', body, jwt(a.token));
  expect(res.status, res.text).toBe(202);
  return res.body.data.jobId as string;
}

async function waitForJob(jobId: string) {
  return waitFor(async () => {
    const res = await t.api.get(`/dashboard/ingestion-jobs/${jobId}`, jwt(a.token));
    expect(res.status, res.text).toBe(200);
    return TERMINAL.has(res.body.data.job.status) ? res.body.data.job : null;
  }, `job ${jobId} to end`, 30_000, 20);
}

const queuedJobs = (jobId: string) => idle.sql<{ id: string }>('select id::text from graphile_worker._private_jobs where key = $1', [jobId]);
const jobRow = async (jobId: string) =>
  (await idle.sql<{ status: string; owner_id: string | null; document_id: string }>('select status, owner_id, document_id from ingestion_jobs where id = $1', [jobId]))[0];
const chunksOf = (documentId: string) =>
  idle.sql<{ ordinal: number; text: string; locator: string | null; characters: number; search_vector: string }>(
    'select ordinal, text, locator, characters, search_vector::text from document_chunks where document_id = $1 order by ordinal',
    [documentId],
  );

let queuedReference: string;
let orphaned: string;
let liveOwned: string;
let abandoned: string;
let liveOwner: string;

beforeAll(async () => {
  idle = await startTestServer({ WORKER: '0' });
  a = await signupTenant(idle.api, { companyName: 'Local ingest A' });
  b = await signupTenant(idle.api, { companyName: 'Local ingest B' });
  const create = async (tenant: SignedUpTenant, slug: string) => {
    const res = await idle.api.post('/v1/collections', { slug, label: slug, domain_keys: ['hiring'] }, { headers: bearer(tenant.apiKey) });
    expect(res.status, res.text).toBe(201);
    return res.body.data.collection.id as string;
  };
  collectionA = await create(a, 'travel-a');
  collectionB = await create(b, 'travel-b');

  // Without a job runner every upload gets a graphile job: the reference for the chunks.
  queuedReference = await upload(idle, { name: 'queued.md', content_base64: b64(TEXT), collection_ids: [collectionA] });
  expect(await queuedJobs(queuedReference)).toHaveLength(1);
  // Two uploads turned into local ingestions that never ran: one owned by a process that is gone,
  // one owned by a process that still beats (this one: the idle server's heartbeat row).
  orphaned = await upload(idle, { name: 'orphaned.md', content_base64: b64(TEXT) });
  liveOwned = await upload(idle, { name: 'live.md', content_base64: b64(TEXT) });
  // And one its living owner lost long ago (a completion lost with an asynchronous commit, say).
  abandoned = await upload(idle, { name: 'abandoned.md', content_base64: b64(TEXT) });
  [{ worker_id: liveOwner }] = await idle.sql<{ worker_id: string }>(`select worker_id from worker_heartbeats where worker_id like 'process:%' order by last_seen_at desc limit 1`);
  const ages: [string, string, string][] = [[orphaned, 'process:gone:1:dead', '1 hour'], [liveOwned, liveOwner, '5 seconds'], [abandoned, liveOwner, '1 hour']];
  for (const [jobId, owner, age] of ages) {
    await idle.sql('select graphile_worker.remove_job($1)', [jobId]);
    await idle.sql(`update ingestion_jobs set owner_id = $2, created_at = now() - $3::interval where id = $1`, [jobId, owner, age]);
  }

  t = await startTestServer({ HEARTBEAT_MS: '200' }, { databaseUrl: idle.databaseUrl });
});

afterAll(async () => {
  await t?.close();
  await idle?.close();
});

describe('a small text upload accepted by a process with a job runner', () => {
  let local: string;

  it('is ingested by that process without a graphile job, completed once with its stage and progress', async () => {
    local = await upload(t, { name: 'local.md', content_base64: b64(TEXT), collection_ids: [collectionA] });
    // It never had a job: the statement that stored it wrote no graphile job.
    expect(await queuedJobs(local)).toEqual([]);
    const job = await waitForJob(local);
    expect(job).toEqual(expect.objectContaining({ status: 'completed', stage: 'completed', progress: 100, error_message: null, started_at: expect.any(String), completed_at: expect.any(String) }));
    expect(Date.parse(job.started_at)).toBeLessThanOrEqual(Date.parse(job.completed_at));
    expect(job.result).toEqual(expect.objectContaining({ chunks: expect.any(Number), characters: TEXT.length, pages: null, embedded: false, embedding_model: null }));
    expect(job.result.chunks).toBeGreaterThan(1);
    expect(await queuedJobs(local)).toEqual([]);
    const row = await jobRow(local);
    expect(row.owner_id).toBeNull();
    const [doc] = await idle.sql<{ status: string; chunk_count: number; characters: number }>('select status, chunk_count, characters from documents where id = $1', [row.document_id]);
    expect(doc).toEqual({ status: 'ready', chunk_count: job.result.chunks, characters: TEXT.length });
    expect(await idle.sql('select collection_id::text from document_collections where document_id = $1', [row.document_id])).toEqual([{ collection_id: collectionA }]);
    const audit = await idle.sql<{ action: string; details: Record<string, unknown> }>('select action, details from audit_log where target_id = $1', [row.document_id]);
    expect(audit).toEqual([{ action: 'document.uploaded', details: expect.objectContaining({ job_id: local, name: 'local.md', mime_type: 'text/markdown', collection_ids: [collectionA] }) }]);
  });

  it('writes the same chunks the job runner writes for the same text', async () => {
    const reference = await waitForJob(queuedReference);
    expect(reference.status).toBe('completed');
    const localChunks = await chunksOf((await jobRow(local)).document_id);
    const queuedChunks = await chunksOf(reference.document_id);
    expect(localChunks.length).toBeGreaterThan(1);
    expect(localChunks).toEqual(queuedChunks);
  });

  it('running its job again changes nothing', async () => {
    const documentId = (await jobRow(local)).document_id;
    const snapshot = async () => ({
      job: await jobRow(local),
      chunks: await idle.sql('select id, ordinal, text from document_chunks where document_id = $1 order by ordinal', [documentId]),
      doc: await idle.sql('select * from documents where id = $1', [documentId]),
    });
    const before = await snapshot();
    await idle.sql(`select graphile_worker.add_job('ingest_document', json_build_object('jobId', $1::text))`, [local]);
    await waitFor(async () => (await idle.sql(`select 1 from graphile_worker.jobs where task_identifier = 'ingest_document'`)).length === 0, 'no ingestion job queued', 30_000, 20);
    expect(await snapshot()).toEqual(before);
  });

  it('a document to embed goes to the job runner instead', async () => {
    const jobId = await upload(t, { name: 'embed.md', content_base64: b64(TEXT), embedding_model: 'some-model' });
    expect((await jobRow(jobId)).owner_id).toBeNull();
    // No provider is configured: the job runner fails it.
    const job = await waitForJob(jobId);
    expect(job.status).toBe('failed');
  });

  it("a collection of another tenant is 404 naming it, and nothing is written", async () => {
    const count = async () => (await idle.sql<{ n: number }>('select count(*)::int as n from documents where tenant_id = $1', [a.tenantId]))[0].n;
    const before = await count();
    const res = await t.api.post('/dashboard/documents', { name: 'nope.md', content_base64: b64(TEXT), collection_ids: [collectionA, collectionB] }, jwt(a.token));
    expectError(res, 404, 'NOT_FOUND');
    expect(res.body.error.details).toEqual({ collection_id: collectionB });
    expect(await count()).toBe(before);
  });
});

describe('recovery', () => {
  it('the job of a process that stopped, or one its living owner lost a minute ago, is queued by the sweep and completes; a recent one whose process lives is left alone', async () => {
    for (const jobId of [orphaned, abandoned]) {
      expect((await waitForJob(jobId)).status).toBe('completed');
      expect((await jobRow(jobId)).owner_id).toBeNull();
    }
    expect(await jobRow(liveOwned)).toEqual(expect.objectContaining({ status: 'pending', owner_id: liveOwner }));
    expect(await queuedJobs(liveOwned)).toEqual([]);
  });
});
