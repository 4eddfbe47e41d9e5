// Comparing two runs of 5,000 shared cases: the statistics (10,000 bootstrap resamples per judge
// dimension, Wilcoxon) run on the shared worker-thread pool, so GET /health/live keeps answering
// while they run, and the answer is exactly what the statistics module computes for the same pairs.
// A small comparison stays on the main thread (a thread hop would cost more than the numbers).
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeWorkerPool, runPoolTask, workerPoolCompleted } from '../../server/common/worker-pool.js';
import { compareStatistics, compareStatisticsTask, computeCompareStatistics, type CompareStatisticsInput } from '../../server/evals/compare-statistics.js';
import { JUDGE_DIMENSIONS } from '../../server/evals/judge.js';
import { comparePaired, passRateDiff, type PairedScores } from '../../server/evals/statistics.js';
import { compareUnpairedSeries } from '../../server/evals/unpaired-statistics.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring, expectAnsweredDuring } from '../support/health-watch.js';
import { startTestServer, type TestServer } from '../support/server.js';

const CASES = 5_000;

let t: TestServer;
let owner: SignedUpTenant;

interface SeededCase {
  caseId: string;
  score: number;
  passed: boolean;
  dimensions: Record<string, number>;
}

/** A small deterministic generator, so a failure can be reproduced. */
function lcg(seed: number) {
  let state = seed >>> 0;
  return () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296);
}

function seedCases(caseIds: string[], seed: number): SeededCase[] {
  const next = lcg(seed);
  const score = () => 1 + Math.floor(next() * 5);
  return caseIds.map((caseId, i) => {
    const dimensions: Record<string, number> = {};
    // Some results lack a dimension (an older judge), so the dimensions pair different numbers of cases.
    for (const [d, dim] of JUDGE_DIMENSIONS.entries()) if ((i + d) % 97 !== 0) dimensions[dim] = score();
    const s = score();
    return { caseId, score: s, passed: s >= 4, dimensions };
  });
}

/** A completed run with its scored results, written straight to the tables (as the run loop leaves them). */
async function insertRun(cases: SeededCase[]): Promise<string> {
  const runId = randomUUID();
  await t.sql(
    `insert into eval_runs (id, tenant_id, name, domain_key, intent_key, execution_mode, triggered_by, status, progress, cases_total, cases_done, started_at, updated_at, completed_at)
     values ($1, $2, 'seeded', 'hiring', 'resume-analysis', 'liya_intent', 'api', 'completed', 100, $3, $3, now(), now(), now())`,
    [runId, owner.tenantId, cases.length],
  );
  await t.sql(
    `insert into eval_results (tenant_id, run_id, case_id, position, status, input, output, score, passed, dimension_scores, created_at, completed_at)
     select $1, $2, c.case_id, c.position, 'scored', jsonb_build_object('user_id', 'user-' || c.position, 'resume_text', 'Resume ' || c.position || ': Go and PostgreSQL for many years, led a team of five.'),
            jsonb_build_object('summary', 'A candidate with a solid backend record', 'fit', c.score), c.score, c.passed, c.dimensions, now(), now()
       from unnest($3::uuid[], $4::int[], $5::float8[], $6::bool[], $7::jsonb[]) as c(case_id, position, score, passed, dimensions)`,
    [owner.tenantId, runId, cases.map((c) => c.caseId), cases.map((_, i) => i), cases.map((c) => c.score), cases.map((c) => c.passed), cases.map((c) => JSON.stringify(c.dimensions))],
  );
  return runId;
}

/** The compare answer the statistics module gives for these cases, run directly on this thread. */
function expectedComparison(a: SeededCase[], b: SeededCase[]) {
  const overall = comparePaired(a.map((c, i): PairedScores => ({ caseId: c.caseId, a: c.score, b: b[i].score })));
  const perDimension = Object.fromEntries(
    JUDGE_DIMENSIONS.map((dim) => {
      const pairs = a.flatMap((c, i): PairedScores[] => (dim in c.dimensions && dim in b[i].dimensions ? [{ caseId: c.caseId, a: c.dimensions[dim], b: b[i].dimensions[dim] }] : []));
      const { test: _test, p_value_method: _method, ...fields } = comparePaired(pairs);
      return [dim, fields];
    }),
  );
  return {
    pairing: 'paired',
    n_a: a.length,
    n_b: b.length,
    n_shared: overall.n_shared,
    mean_diff: overall.mean_diff,
    ci95: overall.ci95,
    p_value: overall.p_value,
    test: overall.test,
    p_value_method: overall.p_value_method,
    wins: overall.wins,
    losses: overall.losses,
    ties: overall.ties,
    pass_rate_diff: passRateDiff(a.map((c) => c.passed), b.map((c) => c.passed)),
    per_dimension: perDimension,
  };
}

const statisticsOf = ({ run_id: _r, against: _a, cases: _c, ...rest }: Record<string, unknown>) => rest;

beforeAll(async () => {
  t = await startTestServer();
  owner = await signupTenant(t.api, { companyName: 'Compare off loop' });
});
afterAll(() => t?.close());

// A hang guard of 300 s: on a machine two CPU hogs share, 10,000 resamples of 5,000 pairs (on the
// pool and again here for the expected numbers) take close to the suite's default of 120 s.
describe('compare of 5,000 shared cases', () => {
  let a: SeededCase[];
  let b: SeededCase[];
  let runA: string;
  let runB: string;

  beforeAll(async () => {
    const caseIds = Array.from({ length: CASES }, () => randomUUID());
    a = seedCases(caseIds, 1);
    b = seedCases(caseIds, 2);
    runA = await insertRun(a);
    runB = await insertRun(b);
  });

  it('answers the statistics module\'s numbers, computed on the pool while /health/live keeps answering', { timeout: 300_000 }, async () => {
    const expected = expectedComparison(a, b);
    const compare = () => t.api.get(`/v1/evals/runs/${runA}/compare?against=${runB}`, { headers: bearer(owner.apiKey) });

    // The first compare starts the pool's thread; its answer must already be the right one.
    const first = await compare();
    expect(first.status, first.text).toBe(200);
    expect(statisticsOf(first.body.data)).toEqual(expected);
    expect(first.body.data.cases).toHaveLength(CASES);

    // Off the event loop: the pool's counter says the statistics ran on its thread, and /health/live
    // requests sent while the compare was under way were answered before it finished (a loop held by
    // the computation answers none until it lets go, then at most one).
    const completed = workerPoolCompleted();
    const watched = await answeredDuring(t.url, compare, 20);
    const res = watched.result;
    const pooled = workerPoolCompleted() - completed;
    const summary = `compare of ${CASES} cases: ${watched.answeredDuring} answers of /health/live while it ran, ${watched.failures} failures; ${pooled} pool tasks`;
    console.info(summary);
    expect(res.status, res.text).toBe(200);
    expect(statisticsOf(res.body.data)).toEqual(expected);
    expect(pooled, summary).toBe(1);
    expectAnsweredDuring(watched);
  });

  it('the other way round gives the mirrored numbers', { timeout: 300_000 }, async () => {
    const res = await t.api.get(`/v1/evals/runs/${runB}/compare?against=${runA}`, { headers: bearer(owner.apiKey) });
    expect(res.status, res.text).toBe(200);
    expect(statisticsOf(res.body.data)).toEqual(expectedComparison(b, a));
  });
});

describe('compare of a few shared cases', () => {
  it('is computed on the main thread, with the same numbers', async () => {
    const caseIds = Array.from({ length: 12 }, () => randomUUID());
    const a = seedCases(caseIds, 3);
    const b = seedCases(caseIds, 4);
    const [runA, runB] = [await insertRun(a), await insertRun(b)];
    const completed = workerPoolCompleted();
    const res = await t.api.get(`/v1/evals/runs/${runA}/compare?against=${runB}`, { headers: bearer(owner.apiKey) });
    expect(res.status, res.text).toBe(200);
    expect(statisticsOf(res.body.data)).toEqual(expectedComparison(a, b));
    expect(workerPoolCompleted()).toBe(completed);
  });
});

describe('compare of two runs without a shared case', () => {
  it('compares them as samples on the pool, with the unpaired statistics module\'s numbers', { timeout: 300_000 }, async () => {
    const a = seedCases(Array.from({ length: 2_000 }, () => randomUUID()), 5);
    const b = seedCases(Array.from({ length: 1_500 }, () => randomUUID()), 6);
    const [runA, runB] = [await insertRun(a), await insertRun(b)];
    const completed = workerPoolCompleted();
    const res = await t.api.get(`/v1/evals/runs/${runA}/compare?against=${runB}`, { headers: bearer(owner.apiKey) });
    expect(res.status, res.text).toBe(200);
    expect(workerPoolCompleted() - completed).toBe(1);
    const dimension = (cases: SeededCase[], dim: string) => cases.filter((c) => dim in c.dimensions).map((c) => c.dimensions[dim]!);
    const [overall, ...dims] = compareUnpairedSeries([
      { a: a.map((c) => c.score), b: b.map((c) => c.score) },
      ...JUDGE_DIMENSIONS.map((dim) => ({ a: dimension(a, dim), b: dimension(b, dim) })),
    ]);
    const rate = (cases: SeededCase[]) => cases.filter((c) => c.passed).length / cases.length;
    expect(res.body.data).toMatchObject({
      pairing: 'unpaired', n_a: 2_000, n_b: 1_500, n_shared: 0, cases: [], mean_diff: overall!.mean_diff, ci95: overall!.ci95, p_value: overall!.p_value,
      test: 'mann_whitney_u', pass_rate_diff: rate(a) - rate(b),
    });
    JUDGE_DIMENSIONS.forEach((dim, i) => expect(res.body.data.per_dimension[dim]).toMatchObject({ mean_diff: dims[i]!.mean_diff, ci95: dims[i]!.ci95, p_value: dims[i]!.p_value }));
  });
});

describe('the pool', () => {
  const input = (n: number): CompareStatisticsInput => ({
    keys: Array.from({ length: n }, (_, i) => `case-${i}`),
    overall: { a: Float64Array.from({ length: n }, (_, i) => 1 + (i % 5)), b: Float64Array.from({ length: n }, (_, i) => 1 + ((i * 3) % 5)) },
    dimensions: [],
    passedA: new Uint8Array(n),
    passedB: new Uint8Array(n).fill(1),
  });

  it('lets the task under way finish with its result; the next task starts a new pool', async () => {
    await compareStatistics(input(200)); // the pool and its thread are up
    const large = input(3_000);
    const running = compareStatistics(large);
    // An idle thread is waiting: the pool posts the task to it within this turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    await closeWorkerPool();
    expect(await running).toEqual(computeCompareStatistics(large));
    expect(workerPoolCompleted()).toBe(0); // no pool now
    expect(await compareStatistics(input(200))).toEqual(computeCompareStatistics(input(200)));
    expect(workerPoolCompleted()).toBe(1);
    await closeWorkerPool();
  });

  it('refuses a task over its contract\'s size cap (422) without sending it to a thread', async () => {
    const tooLarge = input(compareStatisticsTask.maxSize + 1);
    await expect(runPoolTask(compareStatisticsTask, tooLarge)).rejects.toMatchObject({ code: 'UNPROCESSABLE', status: 422 });
    expect(workerPoolCompleted()).toBe(0);
  });
});

describe('the compiled JavaScript', () => {
  it('computes a large comparison on the pool from dist/ (no TypeScript loader), with the inline numbers', () => {
    const url = (file: string) => JSON.stringify(pathToFileURL(path.join(inject('liyaDist'), 'server', file)).href);
    const script = `
      const { workerPoolCompleted, closeWorkerPool } = await import(${url('common/worker-pool.js')});
      const { compareStatistics, computeCompareStatistics, COMPARE_INLINE_MAX_PAIRS } = await import(${url('evals/compare-statistics.js')});
      const n = COMPARE_INLINE_MAX_PAIRS + 1;
      const series = (k) => ({ a: Float64Array.from({ length: n }, (_, i) => 1 + ((i * k) % 5)), b: Float64Array.from({ length: n }, (_, i) => 1 + ((i * (k + 2)) % 5)) });
      const input = { keys: Array.from({ length: n }, (_, i) => 'case-' + i), overall: series(3), dimensions: [], passedA: new Uint8Array(n).fill(1), passedB: new Uint8Array(n) };
      const pooled = await compareStatistics(input);
      const same = JSON.stringify(pooled) === JSON.stringify(computeCompareStatistics(input));
      console.log(JSON.stringify({ same, completed: workerPoolCompleted(), n: pooled.overall.n_shared }));
      await closeWorkerPool();
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ same: true, completed: 1 });
  });
});
