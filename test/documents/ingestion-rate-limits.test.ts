// An ingestion whose embeddings the provider rate-limits, over HTTP with the job runner and the fake
// provider: the refused batch waits and is tried again within PROVIDER_PATIENCE_MS (the job's stage
// says it waits) instead of failing the job's run, and the document is embedded in full.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let llm: FakeLlm;
let a: SignedUpTenant;

const jwt = () => ({ headers: bearer(a.token) });
const embeddingCalls = () => llm.requests.filter((r) => r.path === '/v1/embeddings');

beforeAll(async () => {
  llm = await startFakeLlm();
  t = await startTestServer({
    OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', EMBEDDING_MODEL: 'fake-embedding',
    // One provider call per gateway call: the waiting under test is the ingestion's own.
    LLM_MAX_RETRIES: '0',
  });
  a = await signupTenant(t.api, { companyName: 'Rate-limited ingestion' });
});
afterAll(async () => {
  await t?.close();
  await llm?.close();
});

describe('an ingestion the provider rate-limits', () => {
  it('the refused embeddings batch waits and is tried again: the job completes in its first run, its stage said it waited', async () => {
    // Three batches of 64 texts; the first batch is refused three times.
    const text = Array.from({ length: 150 }, (_, i) => `Row ${i} of a rate-limited document.`).join('\n');
    llm.fail(3, 429, { retryAfter: '0' });
    const res = await t.api.post('/dashboard/documents', { name: 'limited.txt', content_base64: Buffer.from(text).toString('base64'), chunking: { strategy: 'fixed', size: 50 } }, jwt());
    expect(res.status, res.text).toBe(202);
    const jobId = res.body.data.jobId as string;

    const stages = new Set<string>();
    const job = await waitFor(async () => {
      const current = (await t.api.get(`/dashboard/ingestion-jobs/${jobId}`, jwt())).body.data.job;
      if (current.stage) stages.add(current.stage);
      return ['completed', 'failed', 'cancelled'].includes(current.status) ? current : null;
    }, `ingestion job ${jobId} to end`, 25_000);

    expect(job).toMatchObject({ status: 'completed', stage: 'completed', progress: 100, error_message: null });
    expect(job.result).toMatchObject({ embedded: true, embedding_model: 'fake-embedding' });
    const batches = Math.ceil(job.result.chunks / 64);
    expect(batches).toBeGreaterThan(1);
    expect(stages.has('embedding (waiting for provider)'), [...stages].join(' | ')).toBe(true);
    // The three refusals, then each batch once: the job was not run again from the start.
    expect(embeddingCalls()).toHaveLength(3 + batches);
    const [chunks] = await t.sql<{ total: number; embedded: number }>(
      'select count(*)::int as total, count(embedding)::int as embedded from document_chunks where document_id = $1',
      [job.document_id],
    );
    expect(chunks).toEqual({ total: job.result.chunks, embedded: job.result.chunks });
  });
});
