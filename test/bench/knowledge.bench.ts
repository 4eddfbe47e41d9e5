// POST /v1/domains/{d}/knowledge/query latency at 10k and 100k chunks for one tenant. Chunks are
// synthetic: sentences drawn from the vocabulary of the test handbook (test/knowledge/corpus.ts)
// with a Zipf distribution, search_vector computed by PostgreSQL as ingestion does, no embeddings
// (the lexical legs are what scales with the chunk count). ~200 varied queries (handbook questions,
// keyword pairs and triples, typos) are sent one at a time and timed; p50/p95 are printed with
// PASS/MISS against the target (p95 < 50 ms at 100k chunks) and written to results/knowledge.json.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '../../db/orm.js';
import { startServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { CORPUS, QUESTIONS } from '../knowledge/corpus.js';
import { type Cleanup, fmt, table, withDatabase } from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'knowledge.json');
const TARGET_P95_MS = 50;

export interface KnowledgeBenchSettings {
  /** Chunk counts to measure at, ascending (default 10k then 100k). */
  sizes: number[];
  /** Queries per measured pass (default 200). */
  queries: number;
  chunksPerDocument: number;
  poolMax: number;
}

// A seeded generator, so every run builds the same data and the same queries.
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function vocabulary(): string[] {
  const counts = new Map<string, number>();
  for (const doc of CORPUS) for (const p of doc.paragraphs) for (const w of p.toLowerCase().match(/[a-z]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  // Most frequent first: the Zipf draw makes the first words the most common, as in real text.
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([w]) => w);
}

function zipfSampler(size: number, random: () => number) {
  const cumulative: number[] = [];
  let total = 0;
  for (let i = 1; i <= size; i++) cumulative.push((total += 1 / i));
  return () => {
    const target = random() * total;
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function chunkText(words: string[], draw: () => number, random: () => number): string {
  const sentences: string[] = [];
  const count = 3 + Math.floor(random() * 4);
  for (let s = 0; s < count; s++) {
    const length = 8 + Math.floor(random() * 12);
    const sentence = Array.from({ length }, () => words[draw()]).join(' ');
    sentences.push(sentence[0].toUpperCase() + sentence.slice(1) + '.');
  }
  return sentences.join(' ');
}

async function seedChunks(client: pg.Client, tenantId: string, collectionId: string, from: number, to: number, perDocument: number, words: string[], seed: number) {
  const random = rng(seed);
  const draw = zipfSampler(words.length, random);
  for (let start = from; start < to; start += perDocument * 50) {
    const end = Math.min(to, start + perDocument * 50);
    const docNames: string[] = [];
    for (let i = start; i < end; i += perDocument) docNames.push(`Synthetic handbook ${i / perDocument + 1}`);
    const docs = await client.query<{ id: string }>(
      `insert into documents (tenant_id, name, category, mime_type, size_bytes, content_hash, status, characters, chunk_count, uploaded_by, uploaded_at, updated_at)
       select $1, n, 'document', 'text/plain', 0, md5(n), 'ready', 0, $2, 'bench@example.com', now(), now() from unnest($3::text[]) n returning id`,
      [tenantId, perDocument, docNames],
    );
    await client.query(
      `insert into document_collections (document_id, collection_id, tenant_id, created_at) select d, $1, $2, now() from unnest($3::uuid[]) d`,
      [collectionId, tenantId, docs.rows.map((r) => r.id)],
    );
    const documentIds: string[] = [];
    const ordinals: number[] = [];
    const texts: string[] = [];
    for (let i = start; i < end; i++) {
      documentIds.push(docs.rows[Math.floor((i - start) / perDocument)].id);
      ordinals.push((i - start) % perDocument);
      texts.push(chunkText(words, draw, random));
    }
    await client.query(
      `insert into document_chunks (tenant_id, document_id, ordinal, text, characters, search_vector, created_at)
       select $1, d, o, t, length(t), to_tsvector('english', unaccent(t)), now() from unnest($2::uuid[], $3::int[], $4::text[]) as x(d, o, t)`,
      [tenantId, documentIds, ordinals, texts],
    );
  }
  await client.query('analyze documents; analyze document_chunks; analyze document_collections');
}

function makeQueries(count: number, words: string[]): string[] {
  const random = rng(7);
  const content = words.filter((w) => w.length >= 4).slice(0, 400);
  const pick = () => content[Math.floor(random() * content.length)];
  const typo = (w: string) => {
    const i = 1 + Math.floor(random() * (w.length - 2));
    return w.slice(0, i) + w.slice(i + 1);
  };
  const queries = QUESTIONS.map((q) => q.question);
  while (queries.length < count) {
    const kind = queries.length % 3;
    if (kind === 0) queries.push(`${pick()} ${pick()}`);
    else if (kind === 1) queries.push(`what is the ${pick()} ${pick()} ${pick()} policy`);
    else queries.push(`${typo(pick())} ${pick()}`);
  }
  return queries.slice(0, count);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

interface PassFigures {
  chunks: number;
  queries: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
  meanResults: number;
  pass: boolean | null;
}

async function timedPass(url: string, headers: Record<string, string>, queries: string[], chunks: number, judged: boolean): Promise<PassFigures> {
  const latencies: number[] = [];
  let results = 0;
  for (const q of queries) {
    const started = performance.now();
    const res = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ query: q, top_k: 5 }) });
    const body = (await res.json()) as { data?: { results?: unknown[] } };
    latencies.push(performance.now() - started);
    if (res.status !== 200 || !Array.isArray(body.data?.results)) throw new Error(`query "${q}" answered HTTP ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    results += body.data.results.length;
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const p95 = percentile(sorted, 95);
  return {
    chunks,
    queries: queries.length,
    p50Ms: percentile(sorted, 50),
    p95Ms: p95,
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1)!,
    meanMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
    meanResults: results / queries.length,
    pass: judged ? p95 < TARGET_P95_MS : null,
  };
}

export async function runKnowledgeBench(adminUrl: string, cleanup: Cleanup, settings: KnowledgeBenchSettings) {
  const database = 'liya_bench_knowledge';
  await ensureDatabase(adminUrl, database);
  const databaseUrl = withDatabase(adminUrl, database);
  console.log('starting Liya (WORKER=0, LOG_LEVEL=silent) ...');
  const config = loadConfig({ NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', WORKER: '0', DB_POOL_MAX: String(settings.poolMax) });
  const liya = await startServer({ config, databaseUrl });
  cleanup.add('liya server', () => liya.close());

  const signup = await fetch(`${liya.url}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ companyName: 'Knowledge Bench', email: `knowledge-${Date.now()}@example.com`, password: 'bench-password-123' }),
  });
  const signed = (await signup.json()) as { data?: { apiKey?: string; tenant?: { tenantId?: string } } };
  const apiKey = signed.data?.apiKey;
  if (signup.status !== 201 || !apiKey) throw new Error(`signup failed: HTTP ${signup.status}`);
  const headers = { authorization: `Bearer ${apiKey}` };
  const created = await fetch(`${liya.url}/v1/collections`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'bench-handbook', label: 'Bench handbook', domain_keys: ['hiring'] }),
  });
  const collectionId = ((await created.json()) as { data: { collection: { id: string } } }).data.collection.id;

  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  cleanup.add('bench db client', () => client.end());
  const [{ tenant_id: tenantId }] = (await client.query<{ tenant_id: string }>('select tenant_id from api_keys where key_hash = $1', [createHash('sha256').update(apiKey).digest('hex')])).rows;

  const words = vocabulary();
  const queries = makeQueries(settings.queries, words);
  const url = `${liya.url}/v1/domains/hiring/knowledge/query`;
  const passes: (PassFigures & { seedSeconds: number })[] = [];
  let seeded = 0;
  for (const [index, size] of settings.sizes.entries()) {
    const started = performance.now();
    console.log(`seeding chunks ${seeded} -> ${size} ...`);
    await seedChunks(client, tenantId, collectionId, seeded, size, settings.chunksPerDocument, words, 1000 + index);
    seeded = size;
    const seedSeconds = (performance.now() - started) / 1000;
    console.log(`  seeded in ${fmt(seedSeconds)} s; warm-up pass ...`);
    await timedPass(url, headers, queries, size, false);
    const figures = await timedPass(url, headers, queries, size, index === settings.sizes.length - 1);
    passes.push({ ...figures, seedSeconds });
  }

  console.log('');
  console.log(`POST /v1/domains/hiring/knowledge/query, top_k 5, ${settings.queries} distinct queries sent one at a time (after a warm-up pass), vocabulary ${words.length} words (Zipf)`);
  console.log(
    table(
      ['chunks', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'mean ms', 'results/query', 'seed s'],
      passes.map((p) => [p.chunks, fmt(p.p50Ms), fmt(p.p95Ms), fmt(p.p99Ms), fmt(p.maxMs), fmt(p.meanMs), fmt(p.meanResults), fmt(p.seedSeconds)]),
    ),
  );
  const last = passes.at(-1)!;
  console.log(`p95 at ${last.chunks} chunks: ${fmt(last.p95Ms)} ms  target < ${TARGET_P95_MS} ms  ${last.pass ? 'PASS' : 'MISS'}`);

  const results = {
    benchmark: 'knowledge-query',
    route: 'POST /v1/domains/{domainKey}/knowledge/query',
    date: new Date().toISOString(),
    environment: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverage: os.loadavg() },
    settings: { ...settings, vocabularyWords: words.length, embeddings: false, topK: 5, mode: 'sequential, one request at a time, after one warm-up pass' },
    passes,
    target: { p95Ms: TARGET_P95_MS, atChunks: last.chunks, pass: last.pass },
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  return results;
}
