// `npm run bench:footprint`: start time and idle memory of the compiled server, as `npm start` runs
// it. Starts `liya start` on a fresh data folder (first start: PostgreSQL initialised, migrations
// applied), stops it, starts it again (warm), touches every area of the API once, waits, and reads
// the API process's resident memory from /proc (the embedded PostgreSQL runs in other processes,
// not counted). The wait outlasts the document parser process (it exits 10 s after its last file);
// one still running is reported in its own column. The compiled server runs with the memory
// settings bin/launch.mjs gives `liya start`.
// Start times are noisy on a shared machine: FOOTPRINT_STARTS (3) first starts, each on a fresh data
// folder, and as many warm starts (start, ready, stop) are timed, and each start's CPU time (the
// API process's, PostgreSQL's not counted) is printed beside it.
// Settings: FOOTPRINT_IDLE_SECONDS (12), FOOTPRINT_STARTS (3), FOOTPRINT_STARTS_ONLY (1: only the
// start times, no memory run), FOOTPRINT_RUNTIME (`compiled`, or `tsx`: the sources through
// the TypeScript loader with Node's defaults), FOOTPRINT_NODE_FLAGS (extra Node flags; one the
// launcher also sets replaces its value) and MALLOC_* (passed on), for experiments.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildDistIfNeeded, projectRoot } from '../../scripts/build.mjs';
import { makeDocx, makePdf } from '../fixtures/make-files.js';
import { bearer, createClient, type ApiClient, type ApiResponse } from '../support/client.js';
import { startFakeLlm } from '../support/fake-llm.js';
import { freePort } from '../support/free-port.js';
import { Cleanup } from './lib.js';

const ADMIN_SECRET = 'footprint-admin-secret-0123456789';
const idleSeconds = Number(process.env.FOOTPRINT_IDLE_SECONDS ?? 12);
const runtime = process.env.FOOTPRINT_RUNTIME === 'tsx' ? 'tsx' : 'compiled';
const nodeFlags = (process.env.FOOTPRINT_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const startRuns = Math.max(1, Number(process.env.FOOTPRINT_STARTS ?? 3));
const startsOnly = process.env.FOOTPRINT_STARTS_ONLY === '1';

interface Started {
  child: ChildProcess;
  url: string;
  readyMs: number;
  /** CPU time (user + system) of the API process until ready. */
  cpuMs: number;
  output: () => string;
}

/** User + system CPU time of a process so far, in ms (/proc/<pid>/stat, in clock ticks of 10 ms). */
async function cpuOf(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** VmRSS and VmHWM (peak) of a process, in MiB. */
async function memoryOf(pid: number) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** RSS in MiB of the Node processes `pid` started (the document parser process), 0 when none runs. */
async function nodeChildrenRss(pid: number): Promise<number> {
  let total = 0;
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).split(/\s+/).filter(Boolean).map(Number);
  for (const child of children) {
    const exe = await readlink(`/proc/${child}/exe`).catch(() => '');
    if (path.basename(exe) === 'node') total += await memoryOf(child).then((m) => m.rss, () => 0);
  }
  return total;
}

async function startServer(env: NodeJS.ProcessEnv, cwd: string): Promise<Started> {
  const port = await freePort();
  const entry = runtime === 'tsx' ? [path.join(projectRoot, 'bin', 'run-ts.mjs'), path.join(projectRoot, 'cli', 'main.ts')] : [path.join(projectRoot, 'bin', 'liya.mjs')];
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, ...entry, 'start'], { cwd, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${output}`);
    const ready = await fetch(`${url}/health/ready`).then((r) => r.status === 200, () => false);
    if (ready) break;
    if (performance.now() - started > 120_000) throw new Error(`not ready after 120 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const readyMs = performance.now() - started;
  return { child, url, readyMs, cpuMs: await cpuOf(child.pid!), output: () => output };
}

async function stopServer(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

function expectStatus(res: ApiResponse, status: number, what: string) {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
  return res;
}

async function waitForJob(api: ApiClient, token: string, jobId: string) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const job = expectStatus(await api.get(`/dashboard/ingestion-jobs/${jobId}`, { headers: bearer(token) }), 200, 'ingestion job').body.data.job;
    if (job.status === 'completed') return;
    if (job.status !== 'pending' && job.status !== 'running') throw new Error(`ingestion job ${jobId} ended ${job.status}: ${job.error_message}`);
    if (Date.now() > deadline) throw new Error(`ingestion job ${jobId} still ${job.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One request (or one flow) to each area; `documents` picks the upload formats. */
async function touchEveryArea(url: string, documents: 'text' | 'all') {
  const api = createClient(url);
  expectStatus(await api.get('/health/live'), 200, 'health');
  expectStatus(await api.get('/openapi.json'), 200, 'openapi');
  expectStatus(await api.get('/docs'), 200, 'docs');
  for (const asset of ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js']) expectStatus(await api.get(`/docs/assets/${asset}`), 200, asset);
  const email = `owner-${Date.now()}@example.com`;
  const password = 'a long password 123';
  const signup = expectStatus(await api.post('/auth/signup', { companyName: 'Footprint', email, password }), 201, 'signup').body.data;
  const key = { headers: bearer(signup.apiKey as string) };
  const token = expectStatus(await api.post('/auth/login', { email, password }), 200, 'login').body.data.token as string;
  const jwt = { headers: bearer(token) };
  expectStatus(await api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, key), 201, 'create collection');
  expectStatus(await api.get('/v1/domains', key), 200, 'intents list');
  const collections = expectStatus(await api.get('/v1/collections', key), 200, 'v1 read').body.data.collections as { id: string }[];
  expectStatus(await api.get('/dashboard/usage', jwt), 200, 'dashboard read');
  expectStatus(
    await api.post('/v1/hiring/resume-analysis', { input: { user_id: 'candidate-1', resume_text: 'Backend engineer, eight years of TypeScript and PostgreSQL.' } }, key),
    200,
    'intent run',
  );
  expectStatus(await api.post('/v1/agents', { agent_key: 'helper', name: 'Helper', goal: 'Answer questions', tools_config: { enabled_platform_tools: ['current_time'] } }, key), 201, 'agent creation');
  expectStatus(await api.post('/v1/agents/helper/deploy', undefined, key), 200, 'agent deploy');
  expectStatus(await api.post('/v1/agents/helper/run', { input: { message: 'What can you do?' } }, key), 200, 'agent run');
  const files: { name: string; content: Buffer }[] = [{ name: 'leave.md', content: Buffer.from('# Leave\n\nParental leave lasts sixteen weeks, fully paid.\n') }];
  if (documents === 'all') {
    files.push({ name: 'remote.pdf', content: makePdf(['Remote work is allowed three days a week.']) });
    files.push({ name: 'travel.docx', content: makeDocx('Travel', ['Book economy for flights under six hours.']) });
  }
  for (const file of files) {
    const body = { name: file.name, content_base64: file.content.toString('base64'), collection_ids: [collections[0].id] };
    const jobId = expectStatus(await api.post('/dashboard/documents', body, jwt), 202, `upload ${file.name}`).body.data.jobId as string;
    await waitForJob(api, token, jobId);
  }
  expectStatus(await api.post('/v1/domains/hiring/knowledge/query', { query: 'How long is parental leave?' }, key), 200, 'knowledge query');
  const admin = { headers: { 'x-admin-secret': ADMIN_SECRET } };
  expectStatus(await api.post('/admin/tenants', { tenantName: `Footprint admin ${Date.now()}` }, admin), 201, 'admin tenant creation');
  expectStatus(await api.get('/admin/tenants', admin), 200, 'admin read');
}

const cleanup = new Cleanup();
process.on('SIGINT', () => void cleanup.run().then(() => process.exit(130)));
try {
  if (runtime === 'compiled') console.log(`build: dist/ ${buildDistIfNeeded()}`);
  const llm = await startFakeLlm();
  cleanup.add('fake provider', () => llm.close());
  const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-footprint-'));
  cleanup.add('data folder', () => rm(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    HOST: '127.0.0.1',
    PG_PORT: String(await freePort()),
    PG_DATA_DIR: path.join(dir, 'pg'),
    ADMIN_SECRET,
    OPENAI_BASE_URL: llm.url,
    OPENAI_API_KEY: 'fake-key',
    EMBEDDING_MODEL: 'fake-embedding',
    LOG_LEVEL: 'warn',
    // glibc allocator settings (MALLOC_ARENA_MAX, ...), for experiments.
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('MALLOC_'))),
  };

  const first = await startServer(env, dir);
  cleanup.add('first server', () => stopServer(first.child));
  const firstReadyRss = (await memoryOf(first.child.pid!)).rss;
  await stopServer(first.child);

  // More first starts (each on a data folder of its own) and warm starts (on the first one's).
  const firstStarts = [first];
  for (let i = 1; i < startRuns; i++) {
    const other = { ...env, PG_DATA_DIR: path.join(dir, `pg-${i}`) };
    const started = await startServer(other, dir);
    cleanup.add(`first server ${i}`, () => stopServer(started.child));
    await stopServer(started.child);
    firstStarts.push(started);
  }
  const warmStarts: Started[] = [];
  for (let i = 0; i < startRuns; i++) {
    const started = await startServer(env, dir);
    cleanup.add(`warm server ${i}`, () => stopServer(started.child));
    await stopServer(started.child);
    warmStarts.push(started);
  }
  const seconds = (runs: Started[]) => runs.map((r) => `${(r.readyMs / 1000).toFixed(2)} s (CPU ${r.cpuMs} ms)`).join(', ');
  console.log(`first starts (PostgreSQL initialised, migrations): ${seconds(firstStarts)}`);
  console.log(`warm starts: ${seconds(warmStarts)}`);
  const startTimes = {
    first: firstStarts.map((r) => ({ readyMs: r.readyMs, cpuMs: r.cpuMs })),
    warm: warmStarts.map((r) => ({ readyMs: r.readyMs, cpuMs: r.cpuMs })),
  };

  const rows: { run: string; readyMs: number; readyRss: number; idleRss: number; peakRss: number; parserRss: number }[] = [];
  for (const documents of startsOnly ? [] : (['text', 'all'] as const)) {
    const warm = await startServer(env, dir);
    cleanup.add('warm server', () => stopServer(warm.child));
    const readyRss = (await memoryOf(warm.child.pid!)).rss;
    await touchEveryArea(warm.url, documents);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const idle = await memoryOf(warm.child.pid!);
    const parserRss = await nodeChildrenRss(warm.child.pid!);
    rows.push({ run: documents === 'text' ? 'warm, Markdown upload' : 'warm, Markdown + PDF + DOCX', readyMs: warm.readyMs, readyRss, idleRss: idle.rss, peakRss: idle.peak, parserRss });
    await stopServer(warm.child);
  }

  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  console.log(`\nruntime: ${runtime}${nodeFlags.length ? ` ${nodeFlags.join(' ')}` : ''}; Node ${process.versions.node}; load average ${load}; idle ${idleSeconds} s`);
  console.log(`first start (initdb + migrations): ready in ${(first.readyMs / 1000).toFixed(2)} s, RSS at ready ${firstReadyRss.toFixed(1)} MiB`);
  console.log('| start | ready | RSS at ready | idle RSS after every area | peak RSS | parser process at idle |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    const parser = r.parserRss ? `${r.parserRss.toFixed(1)} MiB` : 'exited';
    console.log(`| ${r.run} | ${(r.readyMs / 1000).toFixed(2)} s | ${r.readyRss.toFixed(1)} MiB | ${r.idleRss.toFixed(1)} MiB | ${r.peakRss.toFixed(1)} MiB | ${parser} |`);
  }
  // A run of the start times only leaves the memory figures of the last full run in place.
  const results = path.join(projectRoot, 'test', 'bench', 'results', startsOnly ? 'footprint-starts.json' : runtime === 'compiled' ? 'footprint.json' : `footprint-${runtime}.json`);
  await writeFile(results, JSON.stringify({ runtime, settings: runtime === 'compiled' ? 'bin/launch.mjs server settings' : 'Node defaults', nodeFlags, node: process.versions.node, loadAverage: os.loadavg(), idleSeconds, first: { readyMs: first.readyMs, readyRss: firstReadyRss }, startTimes, warm: rows }, null, 2));
  console.log(`\nwritten: ${path.relative(projectRoot, results)}`);
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await cleanup.run();
}
