// `liya documents upload|list` and `liya knowledge query` as a user runs them: a real subprocess
// (bin/liya.mjs) against a real server whose in-process worker ingests the uploads, with the fake
// model server for embeddings.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mimeTypeOf } from '../../cli/commands/documents.js';
import { excerpt } from '../../cli/commands/knowledge.js';
import { progressBar } from '../../cli/ui/ingestion-progress.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya } from '../support/cli.js';


let t: TestServer;
let fake: FakeLlm;
let tmp: string;
let configDir: string;
let apiKey: string;
let email: string;
let collectionId: string;
const password = 'correct horse battery';


function liya(args: string[], env: Record<string, string | undefined> = {}) {
  return runLiya(args, {
    env: { LIYA_URL: t.url, LIYA_API_KEY: apiKey, LIYA_CONFIG_DIR: configDir, LIYA_ADMIN_SECRET: undefined, LIYA_PASSWORD: undefined, LIYA_TIMEOUT: undefined, ...env },
  });
}

const LEAVE = [
  '# Parental leave',
  '',
  'Every employee who becomes a parent receives sixteen weeks of fully paid parental leave, to be taken within the first year.',
  'Adoptive and foster parents are covered by the same rules as birth parents.',
].join('\n');
const INTERVIEWS = 'Our interview process has four stages: a recruiter screen, a technical interview, a take-home exercise and a final panel with the hiring manager.\n';

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', EMBEDDING_MODEL: 'fake-embedding' });
  tmp = await mkdtemp(path.join(os.tmpdir(), 'liya-cli-documents-'));
  configDir = path.join(tmp, 'config');

  email = `cli-documents-${randomBytes(4).toString('hex')}@example.test`;
  const signup = await t.api.post('/auth/signup', { companyName: 'CLI Documents Co', email, password });
  expect(signup.status, signup.text).toBe(201);
  ({ apiKey } = signup.body.data as { apiKey: string });
  const collection = await t.api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(collection.status, collection.text).toBe(201);
  collectionId = (collection.body.data.collection ?? collection.body.data).id;
  expect(collectionId).toEqual(expect.any(String));

  await writeFile(path.join(tmp, 'parental-leave.md'), LEAVE);
  await writeFile(path.join(tmp, 'interviews.txt'), INTERVIEWS);
  await writeFile(path.join(tmp, 'setup.exe'), Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03]));
}, 120_000);

afterAll(async () => {
  await t?.close();
  await fake?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('helpers', () => {
  it('infers media types, draws bars and cuts long text', () => {
    expect(mimeTypeOf('a/b/Notes.MD')).toBe('text/markdown');
    expect(mimeTypeOf('x.htm')).toBe('text/html');
    expect(mimeTypeOf('setup.exe')).toBeUndefined();
    expect(progressBar(50, 10)).toBe('█████░░░░░');
    expect(progressBar(150, 4)).toBe('████');
    expect(excerpt('a\n\n b')).toBe('a b');
    const long = excerpt('x'.repeat(400));
    expect(long).toHaveLength(300);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('liya documents and liya knowledge', () => {
  it('needs a login and a key, uploads with progress, lists and finds the documents', async () => {
    const leave = path.join(tmp, 'parental-leave.md');
    const interviews = path.join(tmp, 'interviews.txt');

    const [notLoggedIn, login] = await Promise.all([
      liya(['documents', 'upload', leave, '--collection', 'handbook'], { LIYA_CONFIG_DIR: path.join(tmp, 'nobody') }),
      liya(['login', '--email', email, '--password', password]),
    ]);
    expect(notLoggedIn.code).toBe(2);
    expect(notLoggedIn.stderr).toContain('needs a dashboard login');
    expect(login.code, login.stderr).toBe(0);

    const [noKey, missing, unknownCollection, unsupported] = await Promise.all([
      liya(['documents', 'upload', leave, '--collection', 'handbook'], { LIYA_API_KEY: undefined }),
      liya(['documents', 'upload', path.join(tmp, 'missing.md'), '--collection', 'handbook']),
      liya(['documents', 'upload', leave, '--collection', 'nope']),
      liya(['documents', 'upload', path.join(tmp, 'setup.exe'), '--collection', 'handbook']),
    ]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
    expect(unknownCollection.code).toBe(2);
    expect(unknownCollection.stderr).toContain('The tenant has no collection "nope"');
    expect(unknownCollection.stderr).toContain('handbook');
    expect(unsupported.code).toBe(1);
    expect(unsupported.stderr).toContain('UNSUPPORTED_MEDIA_TYPE (HTTP 415)');

    const upload = await liya(['documents', 'upload', leave, interviews, '--collection', 'handbook', '--category', 'policies']);
    expect(upload.code, upload.stdout + upload.stderr).toBe(0);
    // Off a terminal: one line per stage change (the first as the first look found it: a small file
    // may be ingested before that look), then the outcome of each file.
    expect(upload.stdout).toMatch(/parental-leave\.md: (pending|running|completed)[^\n]* \d+%/);
    expect(upload.stdout).toMatch(/interviews\.txt: completed(, completed)? 100%/);
    expect(upload.stdout).toMatch(/✔ parental-leave\.md: completed, \d+ chunks?, \d+ characters/);
    expect(upload.stdout).toMatch(/✔ interviews\.txt: completed, 1 chunk\b/);
    expect(upload.stdout).toContain('2 of 2 files ingested into handbook.');

    const [table, json, byCollection, query, queryTable] = await Promise.all([
      liya(['documents', 'list']),
      liya(['documents', 'list', '--json']),
      liya(['documents', 'list', '--collection', collectionId, '--category', 'policies', '--json']),
      liya(['knowledge', 'query', 'hiring', 'sixteen weeks of fully paid parental leave', '--top-k', '3', '--collection', 'handbook', '--json']),
      liya(['knowledge', 'query', 'hiring', 'recruiter screen and technical interview']),
    ]);

    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/NAME\s+CATEGORY\s+CHUNKS\s+SIZE KB\s+COLLECTIONS\s+STATUS\s+UPLOADED/);
    expect(table.stdout).toMatch(/parental-leave\.md\s+policies\s+\d+\s+[\d.]+\s+handbook\s+ready/);
    expect(table.stdout).toContain('Documents 1–2 of 2');

    expect(json.code, json.stderr).toBe(0);
    const listed = JSON.parse(json.stdout) as { documents: { name: string; collections: { id: string }[] }[]; pagination: { total: number } };
    expect(listed.documents).toHaveLength(2);
    expect(listed.documents.map((d) => d.name).sort()).toEqual(['interviews.txt', 'parental-leave.md']);
    expect(listed.documents[0].collections.map((c) => c.id)).toEqual([collectionId]);
    expect(listed.pagination.total).toBe(2);
    expect(JSON.parse(byCollection.stdout).documents).toHaveLength(2);

    expect(query.code, query.stderr).toBe(0);
    const results = JSON.parse(query.stdout).results as { document_name: string; text: string }[];
    expect(results.length).toBeGreaterThan(0);
    expect(results[0].document_name).toBe('parental-leave.md');
    expect(results[0].text).toContain('sixteen weeks');

    expect(queryTable.code, queryTable.stderr).toBe(0);
    expect(queryTable.stdout).toMatch(/^1\. \d\.\d{3}\s+interviews\.txt/m);
    expect(queryTable.stdout).toContain('recruiter screen');

    // --json prints the final jobs.
    const again = await liya(['documents', 'upload', interviews, '--collection', collectionId, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const jobs = JSON.parse(again.stdout).jobs as { status: string; result: { chunks: number } }[];
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ status: 'completed', result: { chunks: 1 } });
  }, 120_000);
});
