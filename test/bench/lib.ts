// Helpers shared by the benchmark scripts (run by `npm run bench`, not by vitest).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import autocannon, { type Result } from 'autocannon';
import { ensureTestBuild } from '../../scripts/build.mjs';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';

export interface BenchDatabase {
  kind: 'embedded' | 'external';
  version: string;
  settings: Record<string, string>;
  /** One line for the console and the README: "external PostgreSQL 15.18 (shared_buffers 128MB, ...)". */
  label: string;
}

// The settings that decide how a write-heavy benchmark performs; read, not assumed.
const REPORTED_SETTINGS = ['shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_wal_size', 'work_mem', 'max_connections'];

/** What the benchmarks run against, for every results file. */
export async function describeDatabase(adminUrl: string, kind: BenchDatabase['kind']): Promise<BenchDatabase> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const version = (await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0].v;
    const rows = (await client.query<{ name: string; setting: string; unit: string | null; source: string }>(
      'select name, setting, unit, source from pg_settings where name = any($1)',
      [REPORTED_SETTINGS],
    )).rows;
    const settings = Object.fromEntries(rows.map((r) => [r.name, r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024}MB` : r.unit ? `${r.setting}${r.unit}` : r.setting]));
    const label = `${kind} PostgreSQL ${version.split(' ')[0]} (shared_buffers ${settings.shared_buffers}, synchronous_commit ${settings.synchronous_commit}, fsync ${settings.fsync})`;
    return { kind, version, settings, label };
  } finally {
    await client.end();
  }
}

let currentDatabase: BenchDatabase | null = null;
export const setBenchDatabase = (database: BenchDatabase) => {
  currentDatabase = database;
};
/** The database of this `npm run bench`, recorded in every results file. */
export const benchDatabase = (): BenchDatabase | null => currentDatabase;

/** Drops the benchmarks' own databases (liya_bench*) on a reused PostgreSQL. */
export async function dropBenchDatabases(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>("select datname from pg_database where datname like 'liya\_bench%'");
    for (const row of rows) await client.query(`drop database ${client.escapeIdentifier(row.datname)} with (force)`);
  } finally {
    await client.end();
  }
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/**
 * Cleanup steps run in reverse order of registration, each one even if an earlier one failed.
 * A second call (say a signal handler while the normal path is cleaning up) waits for the first.
 */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];
  private running: Promise<void> | null = null;

  add(name: string, run: () => Promise<unknown>) {
    this.steps.push({ name, run });
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
        try {
          await step.run();
        } catch (err) {
          console.error(`cleanup step "${step.name}" failed:`, err);
        }
      }
    })();
    return this.running;
  }
}

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** Default GET. */
  method?: string;
  /** Request body sent as is (set content-type in `headers`). */
  body?: string;
  /** Replace every `[<id>]` in the body with a new unique id (27 characters) on every request. */
  idReplacement?: boolean;
}

export interface LoadFigures {
  reqPerSec: number;
  reqPerSecStddev: number;
  latencyAvgMs: number;
  latencyP50Ms: number;
  latencyP90Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  totalRequests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  durationSeconds: number;
  statusCodes: Record<string, number>;
  /**
   * CPU time of this process's main thread (where the servers run; the load generator has its own
   * thread) per completed request, user + system. Less sensitive to a loaded machine than req/s.
   */
  serverCpuUsPerRequest: number;
  serverCpuUserUsPerRequest: number;
  /** CPU time of this whole process (servers, load generator thread, any other worker thread) per request. */
  processCpuUsPerRequest: number;
  /**
   * CPU time the rest of the machine used per request: the database, plus anything else running
   * (null where /proc/stat is not readable).
   */
  otherCpuUsPerRequest: number | null;
  /** Share of all cores busy during the run, 0-100 (null where /proc/stat is not readable). */
  machineCpuBusyPct: number | null;
  /** Share of the run's time the hypervisor gave the cores to someone else (steal), 0-100. */
  machineCpuStealPct: number | null;
}

interface CpuSnapshot {
  thread: NodeJS.CpuUsage;
  process: NodeJS.CpuUsage;
  /** Busy, total and stolen time of all cores in microseconds, from /proc/stat (Linux). */
  machine: { busyUs: number; totalUs: number; stealUs: number } | null;
}

// /proc/stat counts in USER_HZ ticks, 100 per second on Linux.
const TICK_US = 10_000;

function machineCpu(): CpuSnapshot['machine'] {
  try {
    // user nice system idle iowait irq softirq steal
    const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const busy = user + nice + system + irq + softirq;
    return { busyUs: busy * TICK_US, totalUs: (busy + idle + iowait + (steal || 0)) * TICK_US, stealUs: (steal || 0) * TICK_US };
  } catch {
    return null;
  }
}

const snapshot = (): CpuSnapshot => ({ thread: process.threadCpuUsage(), process: process.cpuUsage(), machine: machineCpu() });

async function fire(options: LoadOptions, duration: number): Promise<Result> {
  return autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.idReplacement ? { idReplacement: true } : {}),
    connections: options.connections,
    duration,
    timeout: 10,
    // The load generator runs in its own thread so it does not share an event loop with the
    // servers under test (it still shares the machine's cores with them).
    workers: 1,
  });
}

/** A warm-up run (discarded), then the measured run. */
export async function measure(options: LoadOptions): Promise<{ figures: LoadFigures; warmup: LoadFigures }> {
  const beforeWarm = snapshot();
  const warm = await fire(options, options.warmupSeconds);
  const afterWarm = snapshot();
  const beforeRun = snapshot();
  const result = await fire(options, options.durationSeconds);
  const afterRun = snapshot();
  return { figures: toFigures(result, beforeRun, afterRun), warmup: toFigures(warm, beforeWarm, afterWarm) };
}

function toFigures(r: Result, before: CpuSnapshot, after: CpuSnapshot): LoadFigures {
  const requests = Math.max(1, r['2xx'] + r.non2xx);
  const threadUser = after.thread.user - before.thread.user;
  const threadAll = threadUser + after.thread.system - before.thread.system;
  const processAll = after.process.user - before.process.user + after.process.system - before.process.system;
  const machine =
    before.machine && after.machine
      ? { busyUs: after.machine.busyUs - before.machine.busyUs, totalUs: after.machine.totalUs - before.machine.totalUs, stealUs: after.machine.stealUs - before.machine.stealUs }
      : null;
  return {
    serverCpuUsPerRequest: threadAll / requests,
    serverCpuUserUsPerRequest: threadUser / requests,
    processCpuUsPerRequest: processAll / requests,
    otherCpuUsPerRequest: machine ? Math.max(0, machine.busyUs - processAll) / requests : null,
    machineCpuBusyPct: machine && machine.totalUs > 0 ? (100 * machine.busyUs) / machine.totalUs : null,
    machineCpuStealPct: machine && machine.totalUs > 0 ? (100 * machine.stealUs) / machine.totalUs : null,
    reqPerSec: r.requests.average,
    reqPerSecStddev: r.requests.stddev,
    latencyAvgMs: r.latency.average,
    latencyP50Ms: r.latency.p50,
    latencyP90Ms: r.latency.p90,
    latencyP99Ms: r.latency.p99,
    latencyMaxMs: r.latency.max,
    totalRequests: r['2xx'] + r.non2xx,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    durationSeconds: r.duration,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, s]) => [code, s.count])),
  };
}

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export const fmt = (n: number, digits = 1) => n.toFixed(digits);

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A digest of the server's sources (server/ and db/), so results say which code they measured. */
export async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const dir of ['server', 'db']) {
    const files = (await readdir(path.join(PROJECT_ROOT, dir), { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => path.join(e.parentPath, e.name))
      .sort();
    for (const file of files) hash.update(path.relative(PROJECT_ROOT, file)).update('\0').update(await readFile(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 12);
}

/** The tenant of a signed-up API key (benchmarks check the rows a run stored). */
export async function tenantIdOf(client: pg.Client, apiKey: string): Promise<string> {
  const hash = createHash('sha256').update(apiKey).digest('hex');
  const { rows } = await client.query<{ tenant_id: string }>('select tenant_id from api_keys where key_hash = $1', [hash]);
  if (!rows[0]) throw new Error('the signed-up key is not in api_keys');
  return rows[0].tenant_id;
}

/** Baseline servers: a JSON answer with its length. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown) {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

/**
 * A baseline's plain node:http server on a free loopback port: `handle` answers each request (a
 * throw is a 500, or a dropped connection once headers went out); `close` also runs `onClose`.
 */
export async function serveBaseline(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>,
  onClose: () => Promise<void> = async () => undefined,
): Promise<{ url: string; close(): Promise<void> }> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { success: false, error: { code: 'INTERNAL_ERROR', message: 'An internal error occurred' } });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 10_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
  } catch (err) {
    await onClose();
    throw err;
  }
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await onClose();
    },
  };
}

/** Baseline servers: the request body as JSON. */
export async function readJsonBody(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/**
 * One JSON call to a server under test (set-up and checks, not load): the status and the body,
 * parsed when it is JSON, else the text.
 */
export async function callJson(baseUrl: string, method: string, route: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseUrl}${route}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // left as text
  }
  return { status: res.status, body: parsed };
}

/** Signs a fresh tenant up through the API (a unique e-mail per call); returns its API key. */
export async function signUpBenchTenant(baseUrl: string, companyName: string): Promise<string> {
  const slug = companyName.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  const res = await callJson(baseUrl, 'POST', '/auth/signup', {}, { companyName, email: `${slug}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`, password: 'bench-password-123' });
  if (res.status !== 201 || !res.body?.data?.apiKey) throw new Error(`signup failed: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.apiKey as string;
}

/** Creates a workflow and deploys it; returns the deploy answer's data (the workflow, and a webhook's URL and secret). */
export async function deployBenchWorkflow(baseUrl: string, apiKey: string, name: string, steps: unknown[]): Promise<any> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const created = await callJson(baseUrl, 'POST', '/v1/workflows', auth, { name, steps });
  if (created.status !== 201) throw new Error(`creating the workflow failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  const deployed = await callJson(baseUrl, 'POST', `/v1/workflows/${created.body.data.workflow.id}/deploy`, auth);
  if (deployed.status !== 200) throw new Error(`deploying the workflow failed: HTTP ${deployed.status} ${JSON.stringify(deployed.body)}`);
  return deployed.body.data;
}

/** A process's CPU time in microseconds (utime + stime from /proc). */
/**
 * CPU time (user + system, microseconds, 10 ms ticks per process) of the benchmark's PostgreSQL:
 * the server listening on `port` (found by its command line) and its children (backends, background
 * workers), from /proc/<pid>/stat; null where /proc is not readable or the server is not found.
 * Backends that exited count too: the postmaster reaped them, and their time is in its cutime and
 * cstime (without these a pool closing a connection between two readings made the sum go down).
 */
export function postgresCpuUs(port: string): number | null {
  try {
    const procs = new Map<number, { ppid: number; comm: string; ticks: number; reaped: number }>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue; // gone meanwhile
      }
      // pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17): comm may hold spaces, so split after its ')'.
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      procs.set(Number(entry), {
        ppid: Number(fields[1]), comm: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(fields[11]) + Number(fields[12]), reaped: Number(fields[13]) + Number(fields[14]),
      });
    }
    const postmaster = [...procs].find(([pid, p]) => {
      if (p.comm !== 'postgres') return false;
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return args.some((arg, i) => (arg === '-p' && args[i + 1] === port) || arg === `--port=${port}`);
      } catch {
        return false;
      }
    })?.[0];
    if (postmaster === undefined) return null;
    let ticks = procs.get(postmaster)!.reaped;
    for (const [pid, p] of procs) if (pid === postmaster || p.ppid === postmaster) ticks += p.ticks;
    return ticks * TICK_US;
  } catch {
    return null;
  }
}

export function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command, in ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0);

/** Count, p50, p95, p99 and max of latency samples in ms. */
export function latencyFigures(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { reads: sorted.length, p50Ms: percentile(sorted, 50), p95Ms: percentile(sorted, 95), p99Ms: percentile(sorted, 99), maxMs: sorted[sorted.length - 1] ?? 0 };
}

/**
 * Liya as users run it: `liya start` in its own process, default log level and pool, JSON logs to
 * a pipe (kept for the error message if it dies); `env` adds settings. Stopped by `cleanup`.
 */
export async function startLiyaProcess(databaseUrl: string, cleanup: Cleanup, env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess }> {
  const dist = ensureTestBuild();
  const port = await freePort();
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const child = spawn(process.execPath, ['bin/liya.mjs', 'start'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', LOG_FORMAT: 'json', ...env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: String(port), LIYA_DIST: dist },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  cleanup.add('liya process', async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`liya exited ${child.exitCode}\n${output}`);
    return fetch(`${url}/health/ready`).then((r) => r.status === 200, () => false);
  }, 'liya to be ready', 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${output}`);
  });
  return { url, child };
}

/** `liya worker` in its own process (the job runner alone), with the same settings; stopped by `cleanup`. */
export function startLiyaWorkerProcess(databaseUrl: string, cleanup: Cleanup, env: Record<string, string> = {}): ChildProcess {
  const dist = ensureTestBuild();
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const child = spawn(process.execPath, ['bin/liya.mjs', 'worker'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', LOG_FORMAT: 'json', ...env, DATABASE_URL: databaseUrl, LIYA_DIST: dist },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  cleanup.add('liya worker process', async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  });
  return child;
}
