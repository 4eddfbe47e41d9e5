// Document ingestion throughput: 1,000 Markdown documents of about two pages each (5,000-6,000
// characters of handbook sentences with headings) uploaded through POST /dashboard/documents with a
// bounded number of uploads in flight, then ingested (extract -> chunk -> index; no embedding model
// configured, so text only). The clock runs from the first upload to the last job's completed_at;
// every job must complete (a failed job fails the bench). Measured once per WORKER_CONCURRENCY, each
// on a fresh database and server. CPU per document: this Node process (server and load generator
// share it) and PostgreSQL's processes (read from /proc; null where they cannot be read).
// Baselines, in the first run's database once its server has stopped:
//  - the same uploads, same load generator, against a plain node:http + pg server doing the same
//    job with the same guarantees (ingestion-baseline-server.ts): the fastest honest yardstick;
//  - chunkText + one multi-row insert per document through plain pg clients, without HTTP, job
//    rows or extraction (what the chunk inserts alone cost).
// Figures are printed with the target (>= 250 documents/s end to end at the default concurrency)
// as PASS/MISS and written to results/ingestion.json.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '../../db/orm.js';
import { startServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { chunkText, DEFAULT_CHUNKING } from '../../server/documents/chunk-text.js';
import { CORPUS } from '../knowledge/corpus.js';
import { startIngestionBaselineServer } from './ingestion-baseline-server.js';
import { benchDatabase, type Cleanup, fmt, table, withDatabase } from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'ingestion.json');
const TARGET_DOCS_PER_SECOND = 250;
/** The configuration default of WORKER_CONCURRENCY, where the target applies. */
const DEFAULT_WORKER_CONCURRENCY = 4;

export interface IngestionBenchSettings {
  documents: number;
  /** Uploads in flight at once. */
  uploadConcurrency: number;
  /** One measured run per value (fresh database and server each time). */
  workerConcurrencies: number[];
  /** Parallel pg clients of the second baseline row (the first uses one). */
  baselineClients: number;
  /** Per run, from the first upload. */
  timeoutSeconds: number;
  poolMax: number;
}

// A seeded generator, so every run builds the same documents.
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const SECTION_TITLES = ['Overview', 'Scope', 'Eligibility', 'How to apply', 'Approval', 'Exceptions', 'Responsibilities', 'Records', 'Examples', 'Questions'];

/** Markdown documents of 5,000-6,000 characters: a title, sections, paragraphs of handbook sentences. */
export function buildDocuments(count: number): { name: string; text: string }[] {
  const random = rng(42);
  const sentences = CORPUS.flatMap((d) => d.paragraphs.flatMap((p) => p.split(/(?<=[.!?])\s+/))).filter((s) => s.length > 20);
  const words = [...new Set(CORPUS.flatMap((d) => d.paragraphs.join(' ').toLowerCase().match(/[a-z]{3,}/g) ?? []))];
  const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)];
  const wordSentence = () => {
    const text = Array.from({ length: 8 + Math.floor(random() * 10) }, () => pick(words)).join(' ');
    return `${text[0].toUpperCase()}${text.slice(1)}.`;
  };
  const paragraph = () => Array.from({ length: 3 + Math.floor(random() * 3) }, () => (random() < 0.7 ? pick(sentences) : wordSentence())).join(' ');

  const documents: { name: string; text: string }[] = [];
  for (let i = 0; i < count; i++) {
    const topic = pick(CORPUS);
    const target = 5000 + Math.floor(random() * 900);
    const parts = [`# ${topic.name} (revision ${i + 1})`];
    let length = parts[0].length;
    let section = 0;
    while (length < target) {
      if (section === 0 || random() < 0.3) {
        const heading = `## ${SECTION_TITLES[section % SECTION_TITLES.length]}`;
        parts.push(heading);
        length += heading.length + 2;
        section++;
      }
      const p = paragraph();
      if (length >= 5000 && length + p.length + 2 > 6000) break;
      parts.push(p);
      length += p.length + 2;
    }
    documents.push({ name: `handbook-${String(i + 1).padStart(4, '0')}.md`, text: parts.join('\n\n') });
  }
  return documents;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Runs `work` over `items` with at most `limit` calls in flight. */
async function pooled<T>(items: T[], limit: number, work: (item: T, index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index], index);
      }
    }),
  );
}

interface RunFigures {
  /** `liya` or `baseline` (the plain node:http + pg server). */
  server: 'liya' | 'baseline';
  workerConcurrency: number;
  documents: number;
  uploadSeconds: number;
  uploadP50Ms: number;
  uploadP95Ms: number;
  wallSeconds: number;
  documentsPerSecond: number;
  chunks: number;
  characters: number;
  /** created_at -> started_at, per job. */
  queueWaitAvgMs: number;
  /** started_at -> completed_at, per job. */
  processingAvgMs: number;
  processingP95Ms: number;
  /** This Node process (server, its job runner and the load generator), per document. */
  nodeCpuMsPerDocument: number;
  /** PostgreSQL's processes, per document (null where /proc cannot be read). */
  postgresCpuMsPerDocument: number | null;
  pass: boolean | null;
}

interface BaselineFigures {
  clients: number;
  documents: number;
  seconds: number;
  documentsPerSecond: number;
  chunks: number;
  characters: number;
  chunkingMs: number;
}

const TICKS_PER_SECOND = 100;

/**
 * CPU milliseconds used so far by the PostgreSQL server `client` is connected to: its postmaster,
 * the children it has reaped, and its live children (Linux /proc; null elsewhere or when the server
 * is not on this machine).
 */
async function postgresCpuMs(client: pg.Client): Promise<number | null> {
  try {
    const [{ pid }] = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows;
    const stat = (p: number | string) => {
      const text = readFileSync(`/proc/${p}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces) closing at the last ')'.
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      return { ppid: Number(fields[1]), utime: Number(fields[11]), stime: Number(fields[12]), cutime: Number(fields[13]), cstime: Number(fields[14]) };
    };
    const postmaster = stat(pid).ppid;
    const root = stat(postmaster);
    let ticks = root.utime + root.stime + root.cutime + root.cstime;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const child = stat(entry);
        if (child.ppid === postmaster) ticks += child.utime + child.stime;
      } catch {
        // gone meanwhile
      }
    }
    return (ticks * 1000) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

function cpuMeter(client: pg.Client) {
  return {
    async start() {
      const node = process.cpuUsage();
      const postgres = await postgresCpuMs(client);
      return async (documents: number) => {
        const used = process.cpuUsage(node);
        const postgresNow = await postgresCpuMs(client);
        return {
          nodeCpuMsPerDocument: (used.user + used.system) / 1000 / documents,
          postgresCpuMsPerDocument: postgres === null || postgresNow === null ? null : (postgresNow - postgres) / documents,
        };
      };
    },
  };
}

async function startLiya(adminUrl: string, cleanup: Cleanup, database: string, workerConcurrency: number, poolMax: number) {
  await ensureDatabase(adminUrl, database);
  const databaseUrl = withDatabase(adminUrl, database);
  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    WORKER: '1',
    WORKER_CONCURRENCY: String(workerConcurrency),
    DB_POOL_MAX: String(poolMax),
  });
  const liya = await startServer({ config, databaseUrl });
  let closing: Promise<void> | null = null;
  const close = () => (closing ??= liya.close());
  cleanup.add(`liya server (worker concurrency ${workerConcurrency})`, close);

  const signup = await fetch(`${liya.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ companyName: 'Ingestion Bench', email: `ingestion-${workerConcurrency}@example.com`, password: 'bench-password-123' }),
  });
  const signed = (await signup.json()) as { data?: { apiKey?: string; token?: string } };
  const apiKey = signed.data?.apiKey;
  const token = signed.data?.token;
  if (signup.status !== 201 || !apiKey || !token) throw new Error(`signup failed: HTTP ${signup.status} ${JSON.stringify(signed).slice(0, 300)}`);
  const created = await fetch(`${liya.url}/v1/collections`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'bench-handbook', label: 'Bench handbook', domain_keys: ['hiring'] }),
  });
  const createdBody = (await created.json()) as { data?: { collection?: { id?: string } } };
  const collectionId = createdBody.data?.collection?.id;
  if (created.status !== 201 || !collectionId) throw new Error(`collection create failed: HTTP ${created.status} ${JSON.stringify(createdBody).slice(0, 300)}`);

  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  cleanup.add(`bench db client (worker concurrency ${workerConcurrency})`, () => client.end());
  const [{ tenant_id: tenantId }] = (await client.query<{ tenant_id: string }>('select tenant_id from api_keys where key_hash = $1', [createHash('sha256').update(apiKey).digest('hex')])).rows;
  return { liya, close, databaseUrl, token, collectionId, client, tenantId, jwtKey: liya.deps.jwtKey };
}

async function waitForJobs(client: pg.Client, jobIds: string[], deadline: number, label: string): Promise<void> {
  let last = '';
  let lastLog = 0;
  for (;;) {
    const { rows } = await client.query<{ status: string; n: number }>('select status, count(*)::int as n from ingestion_jobs where id = any($1::uuid[]) group by status', [jobIds]);
    const counts = Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
    const failed = (counts.failed ?? 0) + (counts.cancelled ?? 0);
    if (failed > 0) {
      const { rows: errors } = await client.query<{ name: string; status: string; error_message: string | null }>(
        `select name, status, error_message from ingestion_jobs where id = any($1::uuid[]) and status in ('failed', 'cancelled') limit 5`,
        [jobIds],
      );
      throw new Error(`${label}: ${failed} ingestion job(s) failed or were cancelled, e.g. ${JSON.stringify(errors)}`);
    }
    if ((counts.completed ?? 0) >= jobIds.length) return;
    last = JSON.stringify(counts);
    if (Date.now() - lastLog > 5000) {
      console.log(`  jobs: ${last}`);
      lastLog = Date.now();
    }
    if (Date.now() > deadline) throw new Error(`${label}: timed out waiting for ${jobIds.length} completed jobs (last counts ${last})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Uploads every document to `url` (8 in flight by default), waits for every job to complete, and
 * reads the figures back from the job and document rows those uploads created.
 */
async function measureUploads(
  target: { server: RunFigures['server']; url: string; token: string; client: pg.Client; workerConcurrency: number },
  settings: IngestionBenchSettings,
  docs: { name: string; text: string }[],
  collectionId: string,
): Promise<RunFigures> {
  const { client, workerConcurrency } = target;
  const label = `${target.server}, worker concurrency ${workerConcurrency}`;
  const bodies = docs.map((d) => JSON.stringify({ name: d.name, content_base64: Buffer.from(d.text).toString('base64'), mime_type: 'text/markdown', collection_ids: [collectionId] }));
  console.log(`${label}: uploading ${docs.length} documents, ${settings.uploadConcurrency} in flight ...`);
  const latencies: number[] = [];
  const jobIds: string[] = [];
  const meter = await cpuMeter(client).start();
  const startedAt = Date.now();
  const started = performance.now();
  await pooled(bodies, settings.uploadConcurrency, async (body, i) => {
    const t = performance.now();
    const res = await fetch(`${target.url}/dashboard/documents`, { method: 'POST', headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' }, body });
    const answer = (await res.json()) as { data?: { jobId?: string } };
    latencies.push(performance.now() - t);
    if (res.status !== 202 || !answer.data?.jobId) throw new Error(`upload ${docs[i].name}: HTTP ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
    jobIds.push(answer.data.jobId);
  });
  const uploadSeconds = (performance.now() - started) / 1000;
  console.log(`  uploaded in ${fmt(uploadSeconds, 2)} s; waiting for the jobs ...`);
  await waitForJobs(client, jobIds, startedAt + settings.timeoutSeconds * 1000, label);
  const cpu = await meter(docs.length);

  const [stats] = (
    await client.query<{ last_ms: number; queue_ms: number; proc_ms: number; proc_p95_ms: number }>(
      `select extract(epoch from max(completed_at)) * 1000 as last_ms,
              avg(extract(epoch from started_at - created_at)) * 1000 as queue_ms,
              avg(extract(epoch from completed_at - started_at)) * 1000 as proc_ms,
              percentile_cont(0.95) within group (order by extract(epoch from completed_at - started_at)) * 1000 as proc_p95_ms
         from ingestion_jobs where id = any($1::uuid[]) and status = 'completed'`,
      [jobIds],
    )
  ).rows;
  const [content] = (
    await client.query<{ chunks: number; chunk_rows: number; characters: string; ready: number }>(
      `with docs as (select d.* from documents d join ingestion_jobs j on j.document_id = d.id where j.id = any($1::uuid[]))
       select (select coalesce(sum(chunk_count), 0)::int from docs) as chunks,
              (select count(*)::int from document_chunks c where c.document_id in (select id from docs)) as chunk_rows,
              (select coalesce(sum(characters), 0)::text from docs) as characters, (select count(*)::int from docs where status = 'ready') as ready`,
      [jobIds],
    )
  ).rows;
  if (content.ready !== docs.length || content.chunks !== content.chunk_rows) {
    throw new Error(`${label}: ${content.ready} ready documents, ${content.chunks} chunks counted vs ${content.chunk_rows} chunk rows`);
  }
  const wallSeconds = (Number(stats.last_ms) - startedAt) / 1000;
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(`  all ${docs.length} jobs completed ${fmt(wallSeconds, 2)} s after the first upload`);
  return {
    server: target.server,
    workerConcurrency,
    documents: docs.length,
    uploadSeconds,
    uploadP50Ms: percentile(sorted, 50),
    uploadP95Ms: percentile(sorted, 95),
    wallSeconds,
    documentsPerSecond: docs.length / wallSeconds,
    chunks: content.chunks,
    characters: Number(content.characters),
    queueWaitAvgMs: Number(stats.queue_ms),
    processingAvgMs: Number(stats.proc_ms),
    processingP95Ms: Number(stats.proc_p95_ms),
    ...cpu,
    pass: target.server === 'liya' && workerConcurrency === DEFAULT_WORKER_CONCURRENCY ? docs.length / wallSeconds >= TARGET_DOCS_PER_SECOND : null,
  };
}

async function measureHttp(adminUrl: string, cleanup: Cleanup, settings: IngestionBenchSettings, workerConcurrency: number, docs: { name: string; text: string }[]) {
  console.log(`starting Liya (WORKER on, WORKER_CONCURRENCY=${workerConcurrency}, LOG_LEVEL=silent) ...`);
  const setup = await startLiya(adminUrl, cleanup, `liya_bench_ingestion_w${workerConcurrency}`, workerConcurrency, settings.poolMax);
  const figures = await measureUploads({ server: 'liya', url: setup.liya.url, token: setup.token, client: setup.client, workerConcurrency }, settings, docs, setup.collectionId);
  return { figures, setup };
}

/** The same uploads against the plain node:http + pg server, on the same database (Liya stopped). */
async function measureBaselineServer(setup: Awaited<ReturnType<typeof startLiya>>, cleanup: Cleanup, settings: IngestionBenchSettings, docs: { name: string; text: string }[]) {
  const server = await startIngestionBaselineServer({ url: setup.databaseUrl, poolMax: settings.poolMax, jwtKey: setup.jwtKey, concurrency: DEFAULT_WORKER_CONCURRENCY });
  cleanup.add('ingestion baseline server', () => server.close());
  try {
    return await measureUploads({ server: 'baseline', url: server.url, token: setup.token, client: setup.client, workerConcurrency: DEFAULT_WORKER_CONCURRENCY }, settings, docs, setup.collectionId);
  } finally {
    await server.idle();
    await server.close();
  }
}

/** The same chunking and chunk inserts in-process: no HTTP, no queue, no job rows. */
async function measureBaseline(databaseUrl: string, cleanup: Cleanup, tenantId: string, docs: { name: string; text: string }[], clients: number): Promise<BaselineFigures> {
  const pool: pg.Client[] = [];
  for (let i = 0; i < clients; i++) {
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    cleanup.add(`baseline client ${i}`, () => c.end());
    pool.push(c);
  }
  // The documents rows (needed by the chunks' foreign key) are created before the clock starts.
  const { rows } = await pool[0].query<{ id: string }>(
    `insert into documents (tenant_id, name, category, mime_type, size_bytes, content_hash, status, characters, chunk_count, uploaded_by, uploaded_at, updated_at)
     select $1, n, 'document', 'text/markdown', 0, md5(n), 'ready', 0, 0, 'bench@example.com', now(), now() from unnest($2::text[]) with ordinality as x(n, i) order by i returning id`,
    [tenantId, docs.map((d) => `baseline ${clients} ${d.name}`)],
  );
  const ids = rows.map((r) => r.id);
  let chunks = 0;
  let characters = 0;
  let chunkingMs = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    pool.map(async (client) => {
      while (next < docs.length) {
        const index = next++;
        const t = performance.now();
        const pieces = chunkText(docs[index].text, DEFAULT_CHUNKING);
        chunkingMs += performance.now() - t;
        const values: string[] = [];
        const params: unknown[] = [tenantId, ids[index]];
        pieces.forEach((piece, ordinal) => {
          const p = params.length;
          values.push(`(gen_random_uuid(), $1, $2, $${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, to_tsvector('english', unaccent($${p + 2})), null, now())`);
          params.push(ordinal, piece.text, piece.text.length, piece.locator);
        });
        await client.query(
          `insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, locator, search_vector, embedding, created_at) values ${values.join(', ')}`,
          params,
        );
        chunks += pieces.length;
        characters += docs[index].text.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { clients, documents: docs.length, seconds, documentsPerSecond: docs.length / seconds, chunks, characters, chunkingMs };
}

export async function runIngestionBench(adminUrl: string, cleanup: Cleanup, settings: IngestionBenchSettings) {
  const docs = buildDocuments(settings.documents);
  const lengths = docs.map((d) => d.text.length).sort((a, b) => a - b);
  console.log(`${docs.length} Markdown documents, ${lengths[0]}-${lengths.at(-1)} characters (median ${percentile(lengths, 50)})`);

  const runs: RunFigures[] = [];
  const baselines: BaselineFigures[] = [];
  for (const [index, workerConcurrency] of settings.workerConcurrencies.entries()) {
    const { figures, setup } = await measureHttp(adminUrl, cleanup, settings, workerConcurrency, docs);
    runs.push(figures);
    // Stop this server (and its job runner) before the baselines and the next run.
    await setup.close();
    if (index === 0) {
      // Baselines in the first run's database, with its tenant, user and collection.
      console.log('baseline: the same uploads against a plain node:http + pg server doing the same job ...');
      runs.push(await measureBaselineServer(setup, cleanup, settings, docs));
      for (const clients of [...new Set([1, settings.baselineClients])]) {
        console.log(`baseline: chunkText + one multi-row insert per document, ${clients} pg client(s) ...`);
        baselines.push(await measureBaseline(setup.databaseUrl, cleanup, setup.tenantId, docs, clients));
      }
    }
  }

  const characters = docs.reduce((n, d) => n + d.text.length, 0);
  const cpu = (r: RunFigures) => `${fmt(r.nodeCpuMsPerDocument, 2)} / ${r.postgresCpuMsPerDocument === null ? '-' : fmt(r.postgresCpuMsPerDocument, 2)}`;
  console.log('');
  console.log(
    `${docs.length} documents (${characters.toLocaleString('en-US')} characters, text only, no embeddings, semantic chunking ${DEFAULT_CHUNKING.size}/${DEFAULT_CHUNKING.overlap}); ` +
      `${settings.uploadConcurrency} uploads in flight; ${os.cpus().length} cores shared by client, server, worker and PostgreSQL`,
  );
  console.log(
    table(
      ['run', 'upload s', 'upload p50/p95 ms', 'wall s', 'docs/s', 'chunks', 'queue wait ms (avg)', 'job ms avg/p95', 'CPU ms/doc node / pg', `target >= ${TARGET_DOCS_PER_SECOND}/s`],
      [
        ...runs.map((r) => [
          r.server === 'liya' ? `Liya, WORKER_CONCURRENCY=${r.workerConcurrency}` : `BASELINE node:http + pg, ${r.workerConcurrency} at once`,
          fmt(r.uploadSeconds, 2),
          `${fmt(r.uploadP50Ms)} / ${fmt(r.uploadP95Ms)}`,
          fmt(r.wallSeconds, 2),
          fmt(r.documentsPerSecond),
          r.chunks,
          fmt(r.queueWaitAvgMs, 0),
          `${fmt(r.processingAvgMs, 0)} / ${fmt(r.processingP95Ms, 0)}`,
          cpu(r),
          r.pass === null ? '' : r.pass ? 'PASS' : 'MISS',
        ]),
        ...baselines.map((b) => [`BASELINE chunk inserts only, ${b.clients} pg client(s)`, '', '', fmt(b.seconds, 2), fmt(b.documentsPerSecond), b.chunks, '', '', '', '']),
      ],
    ),
  );
  console.log(
    'wall s: first upload to the last completed_at. CPU per document: this Node process (server, job runner and load generator) / PostgreSQL. ' +
      'BASELINE node:http + pg: the same uploads, guarantees and chunks, by hand (ingestion-baseline-server.ts). ' +
      'BASELINE chunk inserts only: chunkText + one multi-row insert per document (no HTTP, job rows or extraction).',
  );
  for (const b of baselines) console.log(`baseline (${b.clients} client(s)): chunking ${fmt(b.chunkingMs, 0)} ms of ${fmt(b.seconds * 1000, 0)} ms`);

  const results = {
    benchmark: 'ingestion',
    route: 'POST /dashboard/documents -> ingestion (in the accepting process, the ingest_document job as recovery)',
    date: new Date().toISOString(),
    environment: { database: benchDatabase(), node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverage: os.loadavg() },
    settings: { ...settings, characters, minCharacters: lengths[0], maxCharacters: lengths.at(-1), mimeType: 'text/markdown', embeddings: false, chunking: DEFAULT_CHUNKING },
    runs,
    baselines,
    target: {
      documentsPerSecond: TARGET_DOCS_PER_SECOND,
      workerConcurrency: DEFAULT_WORKER_CONCURRENCY,
      runs: runs.filter((r) => r.pass !== null).map((r) => ({ workerConcurrency: r.workerConcurrency, documentsPerSecond: r.documentsPerSecond, pass: r.pass })),
    },
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  return results;
}
