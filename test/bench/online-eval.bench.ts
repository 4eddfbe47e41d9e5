// Online evaluation on the run path: what sampling 10% of intent runs adds to a run, at the intent
// bench's saturating load (16 connections, the career-path intent on POST /v1/run, the fake provider
// at 0 ms in a thread of this process), and whether scoring keeps up.
//
// Liya runs as users run it (`liya start`, its own process, default log level), with WORKER=0 so
// that the API process does only runs: scoring is the job runner's, and on one machine of two cores
// a job runner in the same process would measure the judge's CPU, not the run's path. Each round
// measures the same load with the rule off and on (PATCH enabled), in alternating order, and the
// added latency is the on arm minus the off arm of the same round. The baseline is the same Liya
// with the rule off: the fastest honest way to run the same intent here is the run without sampling.
//
// The rounds at 16 connections cannot resolve 0.05 ms (their latency is ~20 ms and moves by more
// from one arm to the next), so a paired phase follows at 1 connection, where a run's latency is its
// own path: BENCH_ONLINE_PAIRED_ROUNDS short off/on pairs in alternating order, the added latency
// being the mean of the pairs' differences with its standard error. Its CPU (the API process and
// PostgreSQL's, from /proc, summed over every pair) gives what sampling adds at saturation, where a
// run's latency is connections x CPU per run / cores (Little's law on a CPU-bound server).
//
// The pairs cannot resolve 0.05 ms on a small machine either (a run's latency moves by a
// millisecond from one second to the next), so the run path's own additions are then measured
// where they happen, in this process against the same database: the sampling decision
// (pickOnlineRules, the rule on against off, per call over 100,000 calls) and the run record's
// statement with the sample row against without (BENCH_ONLINE_STATEMENT_PAIRS alternating pairs on
// one connection, each a real run's record: a new session, its two messages, one usage event; the
// mean of the pairs' differences with its standard error). The run does nothing else: the job
// runners look for queued samples every ONLINE_INTAKE_POLL_MS (one read of the queue and, with
// samples, the intake's job write). What sampling adds to an average run is the decision's
// difference plus the rate times the statement's; it is CPU, so at saturation it counts
// connections / cores times. The look is the job runner's, like the scoring itself: it is timed
// too and reported beside (its CPU a second, and what it would add to a run at saturation were it
// counted on a machine the runs share), not added to the run's path.
//
// Then `liya worker` starts in its own process and the load goes on with sampling on for
// BENCH_ONLINE_BACKLOG_SECONDS: the queued samples and the windows' unscored cases are read every
// 500 ms. Scoring keeps up when the backlog stays bounded (no upward trend through the phase) and
// drains once the load stops. Reported, never asserted: target added latency within 0.05 ms.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { ensureDatabase } from '../../db/orm.js';
import { createSqlPool } from '../../db/sql-pool.js';
import { writeRunRecord } from '../../server/intents/store/run-record.js';
import { ONLINE_INTAKE_POLL_MS } from '../../server/evals/online-intake.js';
import { enqueueWith } from '../../server/jobs/job-queue.js';
import { onlineEvalIntakeJob } from '../../server/jobs/contracts.js';
import { forgetSamplingRules, pickOnlineRules } from '../../server/runs/online-sampling.js';
import { listTenantsWithSamples } from '../../server/runs/online-sample-records.js';
import { startFakeLlmThread } from './fake-llm-thread.js';
import {
  callJson, type Cleanup, fmt, measure, postgresCpuUs, processCpuUs, signUpBenchTenant, sourceHash, startLiyaProcess, startLiyaWorkerProcess, table, tenantIdOf, withDatabase, type LoadFigures,
} from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'online-eval.json');
const DATABASE = 'liya_bench_online';
const ADMIN_SECRET = 'bench-admin-secret-0123456789abcdef';
const PROVIDER_KEY = 'sk-bench-platform';
const TARGET_ADDED_MS = 0.05;

export interface OnlineEvalSettings {
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  rounds: number;
  rate: number;
  backlogSeconds: number;
  /** Off/on pairs at 1 connection. */
  pairedRounds: number;
  /** Seconds each arm of a pair is measured. */
  pairedSeconds: number;
  /** Run record statements with and without the sample, in alternating pairs. */
  statementPairs: number;
}

interface Arm {
  round: number;
  sampling: 'off' | 'on';
  figures: LoadFigures;
  /** Runs answered in the arm, warm-up included (what the CPU and the samples are counted over). */
  runs: number;
  /** The API process's CPU (from /proc) per run, in µs. */
  apiCpuUsPerRun: number;
  /** Samples queued during the arm (on: about rate × runs; off: none). */
  samples: number;
}

export async function runOnlineEvalBench(adminUrl: string, cleanup: Cleanup, settings: OnlineEvalSettings) {
  const serverSource = await sourceHash();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);
  const fake = await startFakeLlmThread();
  cleanup.add('fake provider', () => fake.close());
  const env = { ADMIN_SECRET, OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: PROVIDER_KEY, DEFAULT_MODEL: 'gpt-4o-mini' };
  const liya = await startLiyaProcess(databaseUrl, cleanup, { ...env, WORKER: '0' });
  const apiKey = await signUpBenchTenant(liya.url, 'Online Bench');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());
  const tenantId = await tenantIdOf(db, apiKey);
  const auth = { authorization: `Bearer ${apiKey}` };
  const ok = async (method: string, route: string, body?: unknown, headers: Record<string, string> = auth) => {
    const res = await callJson(liya.url, method, route, headers, body);
    if (res.status >= 300) throw new Error(`${method} ${route}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  };
  // Enterprise: no monthly quota stops the load; the judge budget is the plan's (unlimited) and the online cap raised.
  await ok('PATCH', `/admin/tenants/${tenantId}`, { billingPlan: 'enterprise' }, { 'x-admin-secret': ADMIN_SECRET });
  const dataset = await ok('POST', '/v1/evals/datasets', { name: 'Bench', cases: [{ input: { user_id: 'u', current_role: 'Analyst' } }] });
  const suite = await ok('POST', '/v1/evals/suites', { name: 'Bench', domain_key: 'hiring', intent_key: 'career-path', dataset_id: dataset.dataset.id });
  const rule = (await ok('POST', '/v1/evals/online', { name: 'Bench 10%', suite_id: suite.suite.id, sample_rate: settings.rate, daily_cap: 100_000, enabled: false })).rule;
  await ok('POST', '/v1/evals/online-budget', { monthly_usd: 100_000 });
  const setSampling = (on: boolean) => ok('PATCH', `/v1/evals/online/${rule.id}`, { enabled: on });
  const queued = async () => Number((await db.query<{ n: string }>('select count(*)::text as n from online_eval_samples where tenant_id = $1', [tenantId])).rows[0].n);
  const load = {
    url: `${liya.url}/v1/run`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, connections: settings.connections,
    warmupSeconds: settings.warmupSeconds, durationSeconds: settings.durationSeconds, idReplacement: true,
    body: JSON.stringify({ domain: 'hiring', intent: 'career-path', input: { user_id: 'bench-user', current_role: 'Data analyst, four years of SQL (run [<id>])' } }),
  };

  const arms: Arm[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const order: ('off' | 'on')[] = round % 2 ? ['off', 'on'] : ['on', 'off'];
    for (const sampling of order) {
      await setSampling(sampling === 'on');
      const samplesBefore = await queued();
      const cpuBefore = processCpuUs(liya.child.pid!);
      console.log(`round ${round}, sampling ${sampling}: warm-up ${settings.warmupSeconds}s, then ${settings.durationSeconds}s measured ...`);
      const { figures, warmup } = await measure(load);
      const cpu = processCpuUs(liya.child.pid!) - cpuBefore;
      const runs = figures.totalRequests + warmup.totalRequests;
      arms.push({ round, sampling, figures, runs, apiCpuUsPerRun: cpu / Math.max(1, runs), samples: (await queued()) - samplesBefore });
    }
  }

  // The paired phase, at 1 connection (see the head of this file).
  const pgPort = new URL(adminUrl).port;
  const pairs: { round: number; offMs: number; onMs: number; off: PairedArm; on: PairedArm }[] = [];
  console.log(`paired: ${settings.pairedRounds} off/on pairs at 1 connection, ${settings.pairedSeconds}s each arm ...`);
  for (let round = 1; round <= settings.pairedRounds; round++) {
    const order: ('off' | 'on')[] = round % 2 ? ['off', 'on'] : ['on', 'off'];
    const arm: Partial<Record<'off' | 'on', PairedArm>> = {};
    for (const sampling of order) {
      await setSampling(sampling === 'on');
      const samplesBefore = await queued();
      const apiBefore = processCpuUs(liya.child.pid!);
      const pgBefore = postgresCpuUs(pgPort);
      const { figures, warmup } = await measure({ ...load, connections: 1, warmupSeconds: 1, durationSeconds: settings.pairedSeconds });
      const pgAfter = postgresCpuUs(pgPort);
      arm[sampling] = {
        latencyAvgMs: figures.latencyAvgMs,
        runs: figures.totalRequests,
        // The CPU is read around the warm-up too: it is divided by every run of the arm.
        cpuRuns: figures.totalRequests + warmup.totalRequests,
        apiCpuUs: processCpuUs(liya.child.pid!) - apiBefore,
        pgCpuUs: pgBefore !== null && pgAfter !== null ? pgAfter - pgBefore : null,
        samples: (await queued()) - samplesBefore,
      };
    }
    pairs.push({ round, offMs: arm.off!.latencyAvgMs, onMs: arm.on!.latencyAvgMs, off: arm.off!, on: arm.on! });
  }
  const paired = summarisePairs(pairs, settings.connections);
  console.log(table(['pair', 'off mean ms', 'on mean ms', 'added ms', 'sampled'], pairs.map((p) => [p.round, fmt(p.offMs, 3), fmt(p.onMs, 3), fmt(p.onMs - p.offMs, 3), `${p.on.samples}`])));
  console.log(`paired at 1 connection: added ${fmt(paired.addedMs, 3)} ± ${fmt(paired.standardErrorMs, 3)} ms (mean ± standard error of ${pairs.length} pairs; 95% upper bound ${fmt(paired.upper95Ms, 3)} ms)`);
  console.log(`CPU per run, off > on: API ${fmt(paired.apiCpuUs.off, 0)} > ${fmt(paired.apiCpuUs.on, 0)} µs, PostgreSQL ${paired.pgCpuUs ? `${fmt(paired.pgCpuUs.off, 0)} > ${fmt(paired.pgCpuUs.on, 0)} µs` : 'not readable'}; at ${settings.connections} connections on ${paired.cores} cores that is ${fmt(paired.projectedSaturatedMs, 3)} ms added a run`);

  // The run path's parts (see the head of this file).
  console.log(`parts: the sampling decision (100,000 calls each way) and ${settings.statementPairs} pairs of run record statements ...`);
  const parts = await measureRunPathParts(databaseUrl, db, tenantId, rule.id, setSampling, settings.statementPairs);
  // The job runner's look is per second, not per run: its share of a run is its cost a second over
  // the runs a second (the paired on arms' rate at 1 connection, the rounds' on arms' at saturation).
  const looksPerSec = 1000 / ONLINE_INTAKE_POLL_MS;
  const onRate = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / Math.max(1, xs.length);
  const pairedRunsPerSec = onRate(pairs.map((p) => p.on.runs / settings.pairedSeconds));
  const saturatedRunsPerSec = onRate(arms.filter((a) => a.sampling === 'on').map((a) => a.figures.reqPerSec));
  const lookShareUs = { paired: (parts.lookUs * looksPerSec) / pairedRunsPerSec, saturated: (parts.lookUs * looksPerSec) / saturatedRunsPerSec };
  const partsAdded = parts.pickUs.on - parts.pickUs.off + settings.rate * parts.statement.addedUs;
  const partsUpper = parts.pickUs.on - parts.pickUs.off + settings.rate * parts.statement.upper95Us;
  const partsSaturated = (settings.connections / os.availableParallelism()) * partsAdded;
  const lookSaturatedMs = ((settings.connections / os.availableParallelism()) * lookShareUs.saturated) / 1000;
  console.log(`  sampling decision: ${fmt(parts.pickUs.off, 2)} µs a run with the rule off, ${fmt(parts.pickUs.on, 2)} µs on`);
  console.log(`  run record statement: ${fmt(parts.statement.offUs, 0)} µs without the sample, ${fmt(parts.statement.onUs, 0)} µs with it: +${fmt(parts.statement.addedUs, 1)} ± ${fmt(parts.statement.standardErrorUs, 1)} µs a sampled run (mean ± standard error of ${parts.statement.pairs} pairs)`);
  console.log(`  the job runner's look for queued samples (every ${ONLINE_INTAKE_POLL_MS} ms, not on the run's path): ${fmt(parts.lookUs, 0)} µs of CPU each (${fmt(parts.lookWallUs, 0)} µs of time), ${fmt((100 * parts.lookUs * looksPerSec) / 1e6, 2)}% of a core; counted on the runs' machine, ${fmt(lookShareUs.paired, 2)} µs a run at 1 connection (${fmt(pairedRunsPerSec)} runs/s), ${fmt(lookShareUs.saturated, 2)} µs at ${settings.connections} (${fmt(saturatedRunsPerSec)} runs/s), ${fmt(lookSaturatedMs, 4)} ms of latency at saturation`);
  console.log(`  added to an average run at ${settings.rate * 100}%: ${fmt(partsAdded / 1000, 4)} ms (95% upper bound ${fmt(partsUpper / 1000, 4)} ms); at ${settings.connections} connections on ${os.availableParallelism()} cores ${fmt(partsSaturated / 1000, 4)} ms`);

  // Scoring: the job runner in its own process, under the same load with sampling on.
  await setSampling(true);
  const worker = startLiyaWorkerProcess(databaseUrl, cleanup, env);
  const unscoredNow = async () => Number((await db.query<{ n: string }>(
    `select count(*)::text as n from eval_results x join eval_runs r on r.id = x.run_id where r.online_rule_id = $1 and x.status = 'pending'`, [rule.id])).rows[0].n);
  // The samples of the latency rounds are scored first: the phase starts from an empty backlog.
  const drainStarted = Date.now();
  while ((await queued()) + (await unscoredNow()) > 0) {
    if (Date.now() - drainStarted > 600_000) throw new Error('the latency rounds\' samples were not scored within 10 minutes');
    await sleep(500);
  }
  console.log(`the latency rounds' samples scored in ${fmt((Date.now() - drainStarted) / 1000)} s`);
  const backlog: { at: number; queued: number; unscored: number }[] = [];
  const started = Date.now();
  const readBacklog = async () => {
    const unscored = Number((await db.query<{ n: string }>(
      `select count(*)::text as n from eval_results x join eval_runs r on r.id = x.run_id where r.online_rule_id = $1 and x.status = 'pending'`, [rule.id])).rows[0].n);
    backlog.push({ at: (Date.now() - started) / 1000, queued: await queued(), unscored });
  };
  let sampling = true;
  const watcher = (async () => {
    while (sampling) {
      await readBacklog();
      await sleep(500);
    }
  })();
  const scoredBefore = Number((await db.query<{ n: string }>(`select count(*)::text as n from eval_results x join eval_runs r on r.id = x.run_id where r.online_rule_id = $1 and x.status <> 'pending'`, [rule.id])).rows[0].n);
  console.log(`backlog: liya worker started; ${settings.backlogSeconds}s of load with sampling on ...`);
  const under = await measure({ ...load, warmupSeconds: 1, durationSeconds: settings.backlogSeconds });
  const loadEnded = (Date.now() - started) / 1000;
  let drainedAt: number | null = null;
  for (let i = 0; i < 240 && drainedAt === null; i++) {
    const last = backlog.at(-1);
    if (last && last.at > loadEnded && last.queued === 0 && last.unscored === 0) drainedAt = last.at;
    await sleep(500);
  }
  sampling = false;
  await watcher;
  worker.kill('SIGTERM');
  const scored = Number((await db.query<{ n: string }>(`select count(*)::text as n from eval_results x join eval_runs r on r.id = x.run_id where r.online_rule_id = $1 and x.status <> 'pending'`, [rule.id])).rows[0].n) - scoredBefore;

  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const rounds = Array.from({ length: settings.rounds }, (_, i) => {
    const off = arms.find((a) => a.round === i + 1 && a.sampling === 'off')!;
    const on = arms.find((a) => a.round === i + 1 && a.sampling === 'on')!;
    return {
      round: i + 1,
      addedMeanMs: on.figures.latencyAvgMs - off.figures.latencyAvgMs,
      addedP50Ms: on.figures.latencyP50Ms - off.figures.latencyP50Ms,
      addedCpuUs: on.apiCpuUsPerRun - off.apiCpuUsPerRun,
      runsPerSecRatio: on.figures.reqPerSec / off.figures.reqPerSec,
      sampledShare: on.samples / Math.max(1, on.runs),
    };
  });
  const during = backlog.filter((b) => b.at <= loadEnded);
  const half = Math.floor(during.length / 2);
  const total = (b: { queued: number; unscored: number }) => b.queued + b.unscored;
  const summary = {
    addedMeanMs: mean(rounds.map((r) => r.addedMeanMs)),
    addedP50Ms: mean(rounds.map((r) => r.addedP50Ms)),
    addedCpuUsPerRun: mean(rounds.map((r) => r.addedCpuUs)),
    targetAddedMs: TARGET_ADDED_MS,
    paired,
    parts: { ...parts, lookShareUs, lookSaturatedMs, addedMsPerRun: partsAdded / 1000, upper95MsPerRun: partsUpper / 1000, saturatedMsPerRun: partsSaturated / 1000 },
    backlog: {
      arrivalPerSec: (under.figures.totalRequests * settings.rate) / settings.backlogSeconds,
      scoredPerSec: scored / Math.max(1, (drainedAt ?? backlog.at(-1)!.at)),
      maxFirstHalf: Math.max(0, ...during.slice(0, half).map(total)),
      maxSecondHalf: Math.max(0, ...during.slice(half).map(total)),
      drainedSecondsAfterLoad: drainedAt === null ? null : drainedAt - loadEnded,
      runsPerSecUnderScoring: under.figures.reqPerSec,
    },
  };

  console.log(table(['round', 'sampling', 'runs/s', 'mean ms', 'p50 ms', 'p99 ms', 'API CPU µs/run', 'sampled'], arms.map((a) => [
    a.round, a.sampling, fmt(a.figures.reqPerSec), fmt(a.figures.latencyAvgMs, 3), fmt(a.figures.latencyP50Ms, 2), fmt(a.figures.latencyP99Ms, 2), fmt(a.apiCpuUsPerRun, 0),
    a.sampling === 'on' ? `${a.samples} (${fmt((100 * a.samples) / Math.max(1, a.runs))}%)` : String(a.samples),
  ])));
  console.log(table(['round', 'added mean ms', 'added p50 ms', 'added API CPU µs/run', 'runs/s on/off'], rounds.map((r) => [r.round, fmt(r.addedMeanMs, 3), fmt(r.addedP50Ms, 3), fmt(r.addedCpuUs, 0), fmt(r.runsPerSecRatio, 3)])));
  console.log(`added latency, mean of ${settings.rounds} rounds: mean ${fmt(summary.addedMeanMs, 3)} ms, p50 ${fmt(summary.addedP50Ms, 3)} ms (target within ${TARGET_ADDED_MS} ms); API CPU ${fmt(summary.addedCpuUsPerRun, 0)} µs a run`);
  console.log(`scoring: ${fmt(summary.backlog.arrivalPerSec)} samples/s arrived, ${fmt(summary.backlog.scoredPerSec)}/s scored; backlog max ${summary.backlog.maxFirstHalf} (first half) and ${summary.backlog.maxSecondHalf} (second half) of the load; drained ${summary.backlog.drainedSecondsAfterLoad === null ? 'not within 2 min' : `${fmt(summary.backlog.drainedSecondsAfterLoad)} s`} after it`);

  const within = partsUpper / 1000 <= TARGET_ADDED_MS && partsSaturated / 1000 <= TARGET_ADDED_MS;
  console.log(`target: added latency within ${TARGET_ADDED_MS} ms, by the path's parts (95% upper bound ${fmt(partsUpper / 1000, 4)} ms at 1 connection, ${fmt(partsSaturated / 1000, 4)} ms at ${settings.connections}): ${within ? 'PASS' : 'MISS'}` +
    ` (end to end, not resolvable here: paired ${fmt(paired.addedMs, 3)} ± ${fmt(paired.standardErrorMs, 3)} ms, rounds at ${settings.connections} connections ${fmt(summary.addedMeanMs, 3)} ms)`);

  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify({ bench: 'online-eval', at: new Date().toISOString(), serverSource, settings, arms, rounds, pairs, summary, backlog }, null, 2)}\n`);
  return summary;
}

interface PairedArm {
  latencyAvgMs: number;
  /** Runs measured (the latency's). */
  runs: number;
  /** Runs of the arm, warm-up included (the CPU's). */
  cpuRuns: number;
  apiCpuUs: number;
  pgCpuUs: number | null;
  samples: number;
}

/**
 * The pairs' added latency (mean of on - off, its standard error and a 95% upper bound, t with n - 1
 * degrees of freedom approximated by 2.1 for n >= 10), and the CPU per run of each arm over all pairs
 * with what it adds at `connections` on this machine's cores.
 */
function summarisePairs(pairs: { offMs: number; onMs: number; off: PairedArm; on: PairedArm }[], connections: number) {
  const diffs = pairs.map((p) => p.onMs - p.offMs);
  const n = diffs.length;
  const addedMs = diffs.reduce((a, b) => a + b, 0) / Math.max(1, n);
  const variance = n > 1 ? diffs.reduce((a, d) => a + (d - addedMs) ** 2, 0) / (n - 1) : 0;
  const standardErrorMs = Math.sqrt(variance / Math.max(1, n));
  const t = n >= 10 ? 2.1 : n >= 5 ? 2.8 : 4.3;
  const perRun = (side: 'off' | 'on', cpu: (a: PairedArm) => number | null) => {
    let total = 0;
    let runs = 0;
    for (const p of pairs) {
      const value = cpu(p[side]);
      if (value === null) return null;
      total += value;
      runs += p[side].cpuRuns;
    }
    return total / Math.max(1, runs);
  };
  const api = { off: perRun('off', (a) => a.apiCpuUs)!, on: perRun('on', (a) => a.apiCpuUs)! };
  const pgOff = perRun('off', (a) => a.pgCpuUs);
  const pgOn = perRun('on', (a) => a.pgCpuUs);
  const pgCpuUs = pgOff !== null && pgOn !== null ? { off: pgOff, on: pgOn } : null;
  const cores = os.availableParallelism();
  const addedCpuUs = api.on - api.off + (pgCpuUs ? pgCpuUs.on - pgCpuUs.off : 0);
  return {
    pairs: n, addedMs, standardErrorMs, upper95Ms: addedMs + t * standardErrorMs,
    apiCpuUs: api, pgCpuUs, addedCpuUsPerRun: addedCpuUs, cores,
    projectedSaturatedMs: (connections * addedCpuUs) / cores / 1000,
  };
}

/**
 * The run path's additions, measured in this process: the sampling decision per call with the rule
 * on and off, and the run record statement with and without its sample row (alternating pairs on
 * one connection, after 200 pairs of warm-up). The pairs' samples are deleted afterwards.
 */
async function measureRunPathParts(databaseUrl: string, db: pg.Client, tenantId: string, ruleId: string, setSampling: (on: boolean) => Promise<unknown>, pairs: number) {
  const pool = createSqlPool(databaseUrl, 1, pino({ level: 'silent' }));
  try {
    const target = { kind: 'intent', domain: 'hiring', intent: 'career-path' } as const;
    const pickUs = async (on: boolean) => {
      await setSampling(on);
      forgetSamplingRules(tenantId);
      await pickOnlineRules(pool, tenantId, target, undefined);
      const n = 100_000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await pickOnlineRules(pool, tenantId, target, undefined);
      return ((performance.now() - t0) * 1000) / n;
    };
    const pick = { off: await pickUs(false), on: await pickUs(true) };
    await setSampling(false);
    // A real run's turn, as the load stored it.
    const turnOf = async (role: string) => (await db.query<{ content: unknown }>('select content from session_messages where tenant_id = $1 and role = $2 limit 1', [tenantId, role])).rows[0]?.content ?? {};
    const [userContent, assistantContent] = [await turnOf('user'), await turnOf('assistant')];
    const write = (sampled: boolean, i: number) => writeRunRecord(pool, {
      tenantId,
      usage: [{ tenantId, environmentId: null, kind: 'intent_run', domain: 'hiring', intent: 'career-path', model: 'gpt-4o-mini', promptTokens: 120, completionTokens: 80, costUsd: 0.0001, latencyMs: 3, status: 'ok' }],
      session: { id: randomUUID(), tenantId, userId: 'bench-user', domain: 'hiring', intent: 'career-path', isNew: true },
      turn: { intent: 'career-path', userContent, assistantContent, model: 'gpt-4o-mini', tokens: 200, costUsd: 0.0001, latencyMs: 3, cached: false },
      cache: null, intentEvent: false,
      online: sampled ? { ruleIds: [ruleId], sourceKind: 'intent', sourceId: `bench-parts-${i}` } : null,
    }, randomUUID());
    const timed = async (sampled: boolean, i: number) => {
      const t0 = performance.now();
      await write(sampled, i);
      return (performance.now() - t0) * 1000;
    };
    for (let i = 0; i < 200; i++) await timed(i % 2 === 0, -1 - i);
    const diffs: number[] = [];
    let off = 0;
    let on = 0;
    for (let i = 0; i < pairs; i++) {
      const first = i % 2 === 0;
      const a = await timed(first, i);
      const b = await timed(!first, i);
      const [withSample, without] = first ? [a, b] : [b, a];
      on += withSample;
      off += without;
      diffs.push(withSample - without);
    }
    await db.query(`delete from online_eval_samples where tenant_id = $1 and source_id like 'bench-parts-%'`, [tenantId]);
    // The job runner's look (pollOnlineSamples): the tenants with queued samples, and the intake's
    // job write for each (one here; the same keyed job, replaced). Timed the same way, one after another.
    await db.query(`insert into online_eval_samples (tenant_id, rule_id, source_kind, source_id, input) values ($1, $2, 'intent', 'bench-look', '{}')`, [tenantId, ruleId]);
    const look = async () => {
      for (const tenant of await listTenantsWithSamples(pool, new Date(), 1000)) await enqueueWith(pool, onlineEvalIntakeJob, { tenant_id: tenant });
    };
    for (let i = 0; i < 100; i++) await look();
    // Its CPU, not its time: the job write's commit waits for the WAL flush, which is not CPU. This
    // process's and PostgreSQL's CPU over the looks (nothing else runs meanwhile: the API process is idle).
    const looks = 2000;
    const pgPort = new URL(databaseUrl).port;
    const pgBefore = postgresCpuUs(pgPort);
    const cpuBefore = process.cpuUsage();
    const k0 = performance.now();
    for (let i = 0; i < looks; i++) await look();
    const lookWallUs = ((performance.now() - k0) * 1000) / looks;
    const cpu = process.cpuUsage(cpuBefore);
    const pgAfter = postgresCpuUs(pgPort);
    const lookUs = (cpu.user + cpu.system + (pgBefore !== null && pgAfter !== null ? pgAfter - pgBefore : lookWallUs * looks)) / looks;
    await db.query(`delete from online_eval_samples where tenant_id = $1 and source_id = 'bench-look'`, [tenantId]);
    const mean = diffs.reduce((x, y) => x + y, 0) / diffs.length;
    const sd = Math.sqrt(diffs.reduce((x, d) => x + (d - mean) ** 2, 0) / Math.max(1, diffs.length - 1));
    const standardErrorUs = sd / Math.sqrt(diffs.length);
    return {
      pickUs: pick,
      lookUs,
      lookWallUs,
      statement: { pairs, offUs: off / pairs, onUs: on / pairs, addedUs: mean, standardErrorUs, upper95Us: mean + 1.96 * standardErrorUs },
    };
  } finally {
    await pool.end();
  }
}
