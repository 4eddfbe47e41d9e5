// The in-memory search vocabulary (spelling corrections, common-word pruning) is rebuilt only when
// the tenant's documents changed: checked against a real database, with a zero refresh interval.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlPool, type SqlPool } from '../../db/sql-pool.js';
import { tenantVocabulary, type Vocabulary } from '../../server/knowledge/vocabulary.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { insertDocument } from './seed.js';

let t: TestServer;
let a: SignedUpTenant;
let sql: SqlPool;
let deps: { sql: SqlPool; log: pino.Logger };
let collectionId: string;

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Vocabulary Corp' });
  const res = await t.api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, { headers: bearer(a.apiKey) });
  expect(res.status, res.text).toBe(201);
  collectionId = res.body.data.collection.id;
  sql = createSqlPool(t.databaseUrl, 2, pino({ level: 'silent' }));
  deps = { sql, log: pino({ level: 'silent' }) };
});
afterAll(async () => {
  await sql?.end();
  await t?.close();
});

/** Asks until the background check has replaced `previous` (a refresh runs after each ask). */
const nextVocabulary = (previous: Vocabulary) =>
  waitFor(async () => {
    const v = await tenantVocabulary(deps, a.tenantId, 0);
    return v !== previous && v;
  }, 'the vocabulary check');

describe('tenant vocabulary', () => {
  it('keeps its word counts while the documents stay the same, and rebuilds when they change', async () => {
    await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Sabbatical policy', collectionIds: [collectionId], chunks: ['A sabbatical of three months is granted after five years.'] });
    const first = await tenantVocabulary(deps, a.tenantId, 0);
    expect(first.df.get('sabbat')).toBe(1);
    expect(first.chunks).toBe(1);

    // Nothing changed: the check keeps the same counts (no rebuild), only its time moves on.
    const checked = await nextVocabulary(first);
    expect(checked.df).toBe(first.df);
    expect(checked.builtAt).toBeGreaterThanOrEqual(first.builtAt);

    const { documentId } = await insertDocument(t.sql, { tenantId: a.tenantId, name: 'Telescope loans', collectionIds: [collectionId], chunks: ['Employees may borrow the office telescope.'] });
    const rebuilt = await waitFor(async () => {
      const v = await tenantVocabulary(deps, a.tenantId, 0);
      return v.df.has('telescop') && v;
    }, 'the new document in the vocabulary');
    expect(rebuilt.df).not.toBe(first.df);
    expect(rebuilt.chunks).toBe(2);

    // A deleted document's words leave at the next check.
    const res = await t.api.delete(`/v1/documents/${documentId}`, { headers: bearer(a.apiKey) });
    expect(res.status, res.text).toBe(200);
    const after = await waitFor(async () => {
      const v = await tenantVocabulary(deps, a.tenantId, 0);
      return !v.df.has('telescop') && v;
    }, 'the deleted document out of the vocabulary');
    expect(after.chunks).toBe(1);
  });
});
