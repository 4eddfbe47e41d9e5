// The scale-out topology of compose.yaml without Docker: one PostgreSQL, two API processes without
// a job runner (`liya start` with WORKER=0) and two job runners (`liya worker`), all real processes
// of the compiled CLI on one database. Documents uploaded through both APIs become ingestion jobs
// that embed their chunks through a fake OpenAI-protocol provider; each job must be taken by a
// runner exactly once and finish (one embeddings call and one metered usage event per document),
// and both APIs must serve the same data. Which runner takes which job is left to them: the split
// is reported as an annotation, not asserted.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearer, createClient, type ApiClient } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { freePort } from '../support/free-port.js';
import { ADMIN_SECRET, createTestDatabase } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DOCUMENTS = 24;
const JOB_TIMEOUT_MS = 40_000;
const EMBEDDING_MODEL = 'fake-embedding';
/** Each runner calls the provider with its own key, so the provider's log tells who ran what. */
const WORKER_KEYS = ['sk-worker-1', 'sk-worker-2'];

interface Proc {
  name: string;
  child: ChildProcess;
  output: string;
  exited: Promise<number | null>;
}

const procs: Proc[] = [];
let pool: pg.Pool;
let llm: FakeLlm;
let apis: ApiClient[] = [];

const sql = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []) => (await pool.query<T>(text, params)).rows;

/** `bin/liya.mjs <args>` as a user runs it, on the test run's build of the current sources (LIYA_DIST). */
function startLiya(name: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['bin/liya.mjs', ...args], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', LOG_FORMAT: 'json', CI: 'true', NO_COLOR: '1', LIYA_DIST: inject('liyaDist'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc: Proc = { name, child, output: '', exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
  const append = (d: Buffer) => {
    // Enough to explain a failure, bounded for a long run.
    proc.output = (proc.output + d.toString()).slice(-20_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  procs.push(proc);
  return proc;
}

async function stop(proc: Proc) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
  await proc.exited;
  clearTimeout(timer);
}

const describeProcs = () => procs.map((p) => `--- ${p.name} (exit ${p.child.exitCode ?? p.child.signalCode ?? 'running'})\n${p.output.slice(-2000)}`).join('\n');

/** Fails early (with the processes' output) when one of them has died, instead of timing out. */
function assertAlive() {
  const dead = procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
  if (dead) throw new Error(`${dead.name} exited\n${describeProcs()}`);
}

beforeAll(async () => {
  llm = await startFakeLlm();
  const databaseUrl = await createTestDatabase();
  pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  pool.on('error', () => undefined);

  // A row every time a runner takes (locks) a job and every time a job leaves the queue:
  // graphile-worker deletes a job once it has succeeded, so the queue alone cannot tell how often
  // a job ran.
  await sql(`
    create table test_job_events (event text not null, job_key text, locked_by text, attempts int, at timestamptz not null default clock_timestamp());
    create function test_record_job_event() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' then
        insert into test_job_events (event, job_key, locked_by, attempts) values ('locked', new.key, new.locked_by, new.attempts);
        return new;
      end if;
      insert into test_job_events (event, job_key, locked_by, attempts) values ('removed', old.key, old.locked_by, old.attempts);
      return old;
    end $$;
    create trigger test_job_locked after update on graphile_worker._private_jobs
      for each row when (old.locked_by is null and new.locked_by is not null) execute function test_record_job_event();
    create trigger test_job_removed after delete on graphile_worker._private_jobs
      for each row execute function test_record_job_event();
  `);

  // JWT_SECRET and ENCRYPTION_KEY are left unset on purpose: the processes must share the ones
  // generated once and kept in the database.
  const common = { DATABASE_URL: databaseUrl, ADMIN_SECRET, HOST: '127.0.0.1', DB_POOL_MAX: '4', WORKER_CONCURRENCY: '2' };
  const ports = [await freePort(), await freePort()];
  ports.forEach((port, i) => startLiya(`api-${i + 1}`, ['start'], { ...common, WORKER: '0', PORT: String(port), LOG_LEVEL: 'warn' }));
  const workers = WORKER_KEYS.map((key, i) =>
    startLiya(`worker-${i + 1}`, ['worker'], {
      ...common,
      LOG_LEVEL: 'info',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: key,
      EMBEDDING_MODEL,
      // A retried provider call would look like a second run of the job.
      LLM_MAX_RETRIES: '0',
    }),
  );
  apis = ports.map((port) => createClient(`http://127.0.0.1:${port}`));

  try {
    await waitFor(
      async () => {
        assertAlive();
        const ready = await Promise.all(apis.map((api) => api.get('/health/ready').then((r) => r.status === 200, () => false)));
        return ready.every(Boolean);
      },
      'both API processes to be ready',
      45_000,
    );
    await waitFor(
      () => {
        assertAlive();
        return workers.every((w) => w.output.includes('job runner started'));
      },
      'both job runners to start',
      45_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${describeProcs()}`);
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(procs.map(stop));
  await pool?.end();
  await llm?.close();
});

describe('two API processes and two job runners on one database', () => {
  let token: string;
  let apiKey: string;
  let tenantId: string;
  let collectionId: string;
  const jobIds: string[] = [];

  it('runs every ingestion job exactly once, whichever API enqueued it', async ({ annotate }) => {
    const signup = await apis[0].post('/auth/signup', { companyName: 'Scale Out', email: `scale-${Date.now()}@example.com`, password: 'scale out password' });
    expect(signup.status, signup.text).toBe(201);
    ({ token, apiKey } = signup.body.data);
    tenantId = signup.body.data.tenant.tenantId;

    // Written through the second API with a key issued by the first.
    const collection = await apis[1].post('/v1/collections', { slug: 'scale-out', label: 'Scale out', domain_keys: ['hiring'] }, { headers: bearer(apiKey) });
    expect(collection.status, collection.text).toBe(201);
    collectionId = collection.body.data.collection.id;

    // A dashboard session from the first API is valid on the second: the signing key is shared
    // through the database.
    const me = await apis[1].get('/auth/me', { headers: bearer(token) });
    expect(me.status, me.text).toBe(200);

    // A little provider latency, so that jobs overlap and both runners have work at once.
    llm.setLatency(30);
    const uploads = Array.from({ length: DOCUMENTS }, (_, i) => {
      const paragraphs = Array.from({ length: 4 }, (_, p) => `Document ${i} paragraph ${p}. ${`Scale-out marker d${i}p${p} carries this sentence again. `.repeat(12)}`);
      const content = `# Document ${i}\n\n${paragraphs.join('\n\n')}\n`;
      return apis[i % 2].post(
        '/dashboard/documents',
        { name: `doc-${i}.md`, content_base64: Buffer.from(content).toString('base64'), collection_ids: [collectionId], chunking: { strategy: 'fixed', size: 800, overlap: 0 } },
        { headers: bearer(token) },
      );
    });
    for (const res of await Promise.all(uploads)) {
      expect(res.status, res.text).toBe(202);
      jobIds.push(res.body.data.jobId);
    }
    expect(new Set(jobIds).size).toBe(DOCUMENTS);

    await waitFor(
      async () => {
        assertAlive();
        const [{ open }] = await sql<{ open: number }>(`select count(*)::int as open from ingestion_jobs where status in ('pending', 'running')`);
        return open === 0;
      },
      'every ingestion job to finish',
      JOB_TIMEOUT_MS,
    );
    // The queue is empty once the last runner has reported its job done.
    await waitFor(async () => (await sql<{ n: number }>(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'ingest_document'`))[0].n === 0, 'the job queue to drain');

    const jobs = await sql<{ id: string; status: string; document_id: string; result: { chunks: number; embedded: boolean; embedding_model: string } }>(
      'select id, status, document_id, result from ingestion_jobs where id = any($1::uuid[])',
      [jobIds],
    );
    expect(jobs).toHaveLength(DOCUMENTS);
    for (const job of jobs) {
      expect(job.status, `job ${job.id}`).toBe('completed');
      expect(job.result, `job ${job.id}`).toEqual(expect.objectContaining({ embedded: true, embedding_model: EMBEDDING_MODEL }));
    }

    // Taken once and removed once per job; no retry (attempts 1 when taken).
    const events = await sql<{ event: string; job_key: string; attempts: number }>(`select event, job_key, attempts from test_job_events where job_key = any($1::text[])`, [jobIds]);
    const locked = events.filter((e) => e.event === 'locked');
    const removed = events.filter((e) => e.event === 'removed');
    expect(locked.map((e) => e.job_key).sort()).toEqual([...jobIds].sort());
    expect(removed.map((e) => e.job_key).sort()).toEqual([...jobIds].sort());
    expect(locked.every((e) => e.attempts === 1)).toBe(true);

    // Each document ready, its chunks written once: as many as the job reported, ordinals 0..n-1,
    // no text twice.
    const documents = await sql<{ id: string; status: string; chunk_count: number }>('select id, status, chunk_count from documents where id = any($1::uuid[])', [
      jobs.map((j) => j.document_id),
    ]);
    expect(documents).toHaveLength(DOCUMENTS);
    const chunks = await sql<{ document_id: string; n: number; distinct_texts: number; min_ordinal: number; max_ordinal: number; embedded: number }>(
      `select document_id, count(*)::int as n, count(distinct text)::int as distinct_texts, min(ordinal) as min_ordinal, max(ordinal) as max_ordinal,
              count(embedding)::int as embedded
         from document_chunks where document_id = any($1::uuid[]) group by document_id`,
      [documents.map((d) => d.id)],
    );
    const chunksOf = new Map(chunks.map((c) => [c.document_id, c]));
    for (const job of jobs) {
      const doc = documents.find((d) => d.id === job.document_id)!;
      const n = job.result.chunks;
      expect(doc.status).toBe('ready');
      expect(n).toBeGreaterThan(1);
      expect(chunksOf.get(doc.id), `chunks of ${doc.id}`).toEqual({ document_id: doc.id, n, distinct_texts: n, min_ordinal: 0, max_ordinal: n - 1, embedded: n });
      expect(doc.chunk_count).toBe(n);
    }

    // The provider's side: one embeddings call per document (each fits one batch), carrying exactly
    // that document's chunks, from one runner. A second run of a job would call it again.
    const documentOfText = new Map(
      (await sql<{ text: string; document_id: string }>('select text, document_id from document_chunks where document_id = any($1::uuid[])', [documents.map((d) => d.id)])).map((c) => [
        c.text,
        c.document_id,
      ]),
    );
    const calls = llm.requests.filter((r) => r.path === '/v1/embeddings');
    expect(calls).toHaveLength(DOCUMENTS);
    const runnerOf = new Map<string, string>();
    for (const call of calls) {
      const inputs = call.body.input as string[];
      const owners = new Set(inputs.map((text) => documentOfText.get(text)));
      expect(owners.size, 'one document per embeddings call').toBe(1);
      const [documentId] = owners;
      expect(documentId, 'embedded text that was stored').toBeDefined();
      expect(runnerOf.has(documentId!), `document ${documentId} embedded twice`).toBe(false);
      expect(inputs).toHaveLength(chunksOf.get(documentId!)!.n);
      runnerOf.set(documentId!, String(call.headers.authorization).replace(/^Bearer /, ''));
    }
    expect(runnerOf.size).toBe(DOCUMENTS);
    expect([...runnerOf.values()].every((key) => WORKER_KEYS.includes(key))).toBe(true);

    // Metered once per document: a job run twice would bill the tenant twice.
    const [usage] = await sql<{ n: number }>(`select count(*)::int as n from usage_events where tenant_id = $1 and kind = 'embedding'`, [tenantId]);
    expect(usage.n).toBe(DOCUMENTS);

    const split = WORKER_KEYS.map((key, i) => `worker-${i + 1}: ${[...runnerOf.values()].filter((k) => k === key).length}`).join(', ');
    await annotate(`jobs per runner: ${split}`);
  });

  it('serves the same data from both API processes', async () => {
    const read = async (api: ApiClient) => {
      const documents = await api.get(`/v1/documents?collection_id=${collectionId}&pageSize=100`, { headers: bearer(apiKey) });
      const collection = await api.get(`/v1/collections/${collectionId}`, { headers: bearer(apiKey) });
      const jobs = await api.get('/dashboard/ingestion-jobs?pageSize=100', { headers: bearer(token) });
      expect(documents.status, documents.text).toBe(200);
      expect(collection.status, collection.text).toBe(200);
      expect(jobs.status, jobs.text).toBe(200);
      return { documents: documents.body.data, collection: collection.body.data, jobs: jobs.body.data };
    };
    const [first, second] = await Promise.all(apis.map(read));
    expect(first.documents.documents).toHaveLength(DOCUMENTS);
    expect(first.documents.documents.every((d: { status: string; embeddingModel: string }) => d.status === 'ready' && d.embeddingModel === EMBEDDING_MODEL)).toBe(true);
    expect(first.jobs.jobs.map((j: { id: string }) => j.id).sort()).toEqual([...jobIds].sort());
    expect(second).toEqual(first);
  });
});
