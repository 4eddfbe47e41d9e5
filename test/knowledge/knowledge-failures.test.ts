// A retrieval whose full-text statement fails answers an error and leaves the server up: the
// failure is reported once, by the request, and by nothing left unobserved beside it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { insertDocument } from './seed.js';

let t: TestServer;
let a: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Failures' });
  const created = await t.api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, { headers: bearer(a.apiKey) });
  expect(created.status, created.text).toBe(201);
  await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Leave', collectionIds: [created.body.data.collection.id], chunks: ['Sixteen weeks of parental leave.'] });
});
afterAll(async () => {
  await t?.close();
});

it('a failing full-text leg answers an error envelope, the server goes on, and the next query works', async () => {
  const ask = () => t.api.post('/v1/domains/hiring/knowledge/query', { query: 'parental leave' }, { headers: bearer(a.apiKey) });
  expect((await ask()).status).toBe(200);
  // Outside a test runner, an unhandled rejection ends the process (worker/lost-job-writes.ts
  // rethrows anything it does not own): collected here instead.
  const unhandled: unknown[] = [];
  const collect = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', collect);
  // The domain and lexeme reads still work; only the statements over chunk search vectors fail.
  await t.sql('alter table document_chunks rename column search_vector to search_vector_away');
  try {
    const failed = await ask();
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failed.body.success).toBe(false);
    // A rejection left unhandled by the first query is reported at the latest when that turn of the
    // event loop ends: a second query's whole round trip comes after it.
    const second = await ask();
    expect(second.body.success).toBe(false);
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', collect);
    await t.sql('alter table document_chunks rename column search_vector_away to search_vector');
  }
  const again = await ask();
  expect(again.status, again.text).toBe(200);
  expect(again.body.data.results[0].document_name).toBe('Leave');
});
