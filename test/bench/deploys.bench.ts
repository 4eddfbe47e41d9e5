// Ten tenants deploy 1,000 custom intents each, all at once, while another tenant reads its
// workflows (GET /v1/workflows, one request at a time, as a dashboard or a client polls). Target:
// that tenant's reads stay under 250 ms while the deployments run. The yardstick in the same run is
// the same reads on the same server with nothing else to do (the fastest honest way to answer
// them: this server idle). Liya runs as users run it: `liya start` in its own process, default log
// level, default pool (DB_POOL_MAX 10) and DEPLOY_CONCURRENCY; the CPU figures are that process's
// (from /proc), per read and per deployment. Each deployment is checked afterwards: 1,000 intents,
// one version each. Figures are printed and written to results/deploys.json; the target is
// reported as PASS/MISS, never asserted.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureDatabase } from '../../db/orm.js';
import { benchDatabase, deployBenchWorkflow, latencyFigures, processCpuUs, signUpBenchTenant, startLiyaProcess, type Cleanup, fmt, sourceHash, table, withDatabase } from './lib.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RESULTS_FILE = path.join(ROOT, 'test', 'bench', 'results', 'deploys.json');
const DATABASE = 'liya_bench_deploys';
const TARGET_MS = 250;

export interface DeploysSettings {
  tenants: number;
  intents: number;
  idleSeconds: number;
}

/** A project of one custom domain and `n` intents, each with its own prompt and output schema. */
function projectOf(n: number, salt: string) {
  return {
    domains: [{ key: 'bulk', display_name: 'Bulk' }],
    intents: Array.from({ length: n }, (_, i) => ({
      domain: 'bulk',
      key: `intent-${String(i).padStart(4, '0')}`,
      display_name: `Intent ${i}`,
      description: `Bulk intent number ${i} (${salt})`,
      prompt_template: `You are helper ${i}. Answer the question: {{input.message}}`,
      output_schema: { type: 'object', properties: { answer: { type: 'string' }, score: { type: 'number' } }, required: ['answer'] },
    })),
  };
}

/** Sequential reads until `until` resolves (or for `seconds`); each read's latency in ms. */
async function readLoop(url: string, apiKey: string, stop: () => boolean): Promise<{ latencies: number[]; startedAt: number[]; failures: number }> {
  const latencies: number[] = [];
  const startedAt: number[] = [];
  let failures = 0;
  while (!stop()) {
    const started = performance.now();
    const res = await fetch(`${url}/v1/workflows`, { headers: { authorization: `Bearer ${apiKey}` } });
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
    startedAt.push(started);
    if (res.status !== 200) failures++;
  }
  return { latencies, startedAt, failures };
}

export async function runDeploysBench(adminUrl: string, cleanup: Cleanup, settings: DeploysSettings) {
  const serverSource = await sourceHash();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);
  console.log('starting liya in its own process (defaults: DB_POOL_MAX 10, DEPLOY_CONCURRENCY 2, LOG_LEVEL info) ...');
  const liya = await startLiyaProcess(databaseUrl, cleanup);
  const pid = liya.child.pid!;

  // The reader: a tenant with five deployed workflows.
  const readerKey = await signUpBenchTenant(liya.url, 'Reader Corp');
  for (let i = 0; i < 5; i++) {
    await deployBenchWorkflow(liya.url, readerKey, `Reader flow ${i}`, [
      { id: 'start', step_type: 'trigger' },
      { id: 'done', step_type: 'end', config: { output: { n: i } } },
    ]);
  }
  const deployers: string[] = [];
  for (let i = 0; i < settings.tenants; i++) deployers.push(await signUpBenchTenant(liya.url, `Deployer ${i}`));
  const projects = deployers.map((_, i) => JSON.stringify({ project: projectOf(settings.intents, `tenant ${i}`) }));
  console.log(`${settings.tenants} deploying tenants, ${settings.intents} intents each (${fmt(projects[0].length / 1024 / 1024, 2)} MiB a project)`);

  // Warm-up: one deployment of the same size from a tenant of its own (the server's first deploy
  // loads and compiles its modules and schemas; that is a start-up cost, not a deployment's).
  const warmKey = await signUpBenchTenant(liya.url, 'Warm-up Corp');
  const warm0 = performance.now();
  const warmRes = await fetch(`${liya.url}/v1/deployments`, { method: 'POST', headers: { authorization: `Bearer ${warmKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ project: projectOf(settings.intents, 'warm-up') }) });
  if (warmRes.status !== 201) throw new Error(`warm-up deployment: HTTP ${warmRes.status} ${await warmRes.text()}`);
  const warmSeconds = (performance.now() - warm0) / 1000;
  console.log(`warm-up: one deployment alone in ${fmt(warmSeconds)} s`);

  // Idle: the same reads with nothing else running (a short warm-up first).
  let warm = true;
  setTimeout(() => (warm = false), 1000);
  await readLoop(liya.url, readerKey, () => !warm);
  let idleDone = false;
  setTimeout(() => (idleDone = true), settings.idleSeconds * 1000);
  const idleCpu = processCpuUs(pid);
  const idle = await readLoop(liya.url, readerKey, () => idleDone);
  const idleCpuPerRead = (processCpuUs(pid) - idleCpu) / Math.max(1, idle.latencies.length);

  // Loaded: all deployments at once, the reads going on until the last one has answered.
  let deploying = true;
  const cpuBefore = processCpuUs(pid);
  const started = performance.now();
  const reading = readLoop(liya.url, readerKey, () => !deploying);
  const deployments = await Promise.all(
    deployers.map(async (apiKey, i) => {
      const t0 = performance.now();
      const res = await fetch(`${liya.url}/v1/deployments`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: projects[i], signal: AbortSignal.timeout(600_000) });
      const body = (await res.json()) as { data?: { deployment?: { status: string } }; error?: { code: string } };
      return { status: res.status, deploymentStatus: body.data?.deployment?.status ?? body.error?.code ?? 'unknown', seconds: (performance.now() - t0) / 1000, endedAt: performance.now() };
    }),
  );
  deploying = false;
  const loaded = await reading;
  const wallSeconds = (performance.now() - started) / 1000;
  const cpuDuring = processCpuUs(pid) - cpuBefore;

  // Every deployment did its whole job.
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());
  const counts = await db.query<{ tenants: string; intents: string; versions: string }>(
    `select count(distinct i.tenant_id) as tenants, count(*) as intents, (select count(*) from intent_versions v join custom_intents c on c.id = v.intent_id) as versions
       from custom_intents i`,
  );
  const failed = deployments.filter((d) => d.status !== 201 || d.deploymentStatus !== 'deployed');
  const idleFigures = latencyFigures(idle.latencies);
  const loadedFigures = latencyFigures(loaded.latencies);
  const pass = loadedFigures.maxMs < TARGET_MS && failed.length === 0;

  console.log('');
  console.log(table(
    ['another tenant\'s GET /v1/workflows', 'reads', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'failed', 'server CPU µs/read'],
    [
      ['idle (nothing else running)', idleFigures.reads, fmt(idleFigures.p50Ms), fmt(idleFigures.p95Ms), fmt(idleFigures.p99Ms), fmt(idleFigures.maxMs), idle.failures, fmt(idleCpuPerRead, 0)],
      [`during ${settings.tenants} deployments`, loadedFigures.reads, fmt(loadedFigures.p50Ms), fmt(loadedFigures.p95Ms), fmt(loadedFigures.p99Ms), fmt(loadedFigures.maxMs), loaded.failures, '—'],
    ],
  ));
  const seconds = deployments.map((d) => d.seconds).sort((a, b) => a - b);
  console.log('');
  // The phase's CPU holds the reads too: at the idle cost per read, the rest is the deployments'.
  const deployCpuSeconds = Math.max(0, cpuDuring - loadedFigures.reads * idleCpuPerRead) / 1e6;
  console.log(
    `deployments: ${deployments.length - failed.length}/${deployments.length} deployed in ${fmt(wallSeconds)} s (each ${fmt(seconds[0])}-${fmt(seconds[seconds.length - 1])} s, queueing included); ` +
      `server CPU ${fmt(cpuDuring / 1e6)} s in all, of which about ${fmt(deployCpuSeconds / deployments.length, 2)} s a deployment (the reads at their idle cost taken out)`,
  );
  console.log(`stored: ${counts.rows[0].intents} custom intents of ${counts.rows[0].tenants} tenants, ${counts.rows[0].versions} versions`);
  // The slowest reads, when they started, and the deployment that ended nearest (its answer is the
  // largest piece of synchronous work: the plan of 1,000 creates, checked and written out).
  const slowest = loaded.latencies.map((ms, i) => ({ ms, at: loaded.startedAt[i] })).sort((a, b) => b.ms - a.ms).slice(0, 5);
  for (const read of slowest) {
    const nearest = deployments.map((d) => d.endedAt - read.at).filter((d) => d >= 0).sort((a, b) => a - b)[0];
    console.log(`  slow read: ${fmt(read.ms)} ms at +${fmt((read.at - started) / 1000, 2)} s${nearest !== undefined ? `; a deployment answered ${fmt(nearest)} ms after it started` : ''}`);
  }
  if (failed.length) console.log(`not deployed: ${JSON.stringify(failed)}`);
  console.log(`target: another tenant's reads under ${TARGET_MS} ms while they run: ${pass ? 'PASS' : 'MISS'} (max ${fmt(loadedFigures.maxMs)} ms)`);

  const results = {
    measured_at: new Date().toISOString(),
    server_source: serverSource,
    database: benchDatabase(),
    settings,
    idle: { ...idleFigures, failures: idle.failures, server_cpu_us_per_read: idleCpuPerRead },
    during_deployments: { ...loadedFigures, failures: loaded.failures },
    deployment_alone_seconds: warmSeconds,
    deployments: { wall_seconds: wallSeconds, each_seconds: seconds, failed: failed.map(({ endedAt: _e, ...d }) => d), server_cpu_seconds: cpuDuring / 1e6, cpu_seconds_per_deployment: deployCpuSeconds / deployments.length },
    stored: counts.rows[0],
    target: { max_read_ms: TARGET_MS, pass },
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  return results;
}
