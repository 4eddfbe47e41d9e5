// Evaluation runs as the API sees them: start a suite's run (202, pending; its cases and its job are
// written with it), read, list, results, cooperative cancel, resume of a failed run, and the suite's
// pinned baseline. The execution itself is run-eval.ts, on the job runner.
import { randomUUID } from 'node:crypto';
import { EvalResult, EvalReview, EvalRun, type IEvalResult, type IEvalReview, type IEvalRun, type IEvalSuite } from '../../db/entities/eval.js';
import type { SqlPool } from '../../db/sql-pool.js';
import type { EntityManager } from '../../db/orm.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import { resolveIntent } from '../intents/resolve-intent.js';
import type { TenantRuntime } from '../tenants/tenant-runtime.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { admitEvalRuns, assertEvalRunAllowed, judgeBudgetOf } from './eval-limits.js';
import type { EvalResultDto, EvalRunDto, ReviewDto } from './eval-runs.schemas.js';
import { findSuite } from './suites.service.js';

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const idOf = (ref: unknown): string | null => (ref === null || ref === undefined ? null : typeof ref === 'string' ? ref : (ref as { id: string }).id);

export function toRunDto(r: IEvalRun, tenantId: string, errored = 0): EvalRunDto {
  return {
    id: r.id,
    tenant_id: tenantId,
    suite_id: idOf(r.suite),
    name: r.name ?? null,
    domain_key: r.domainKey ?? null,
    intent_key: r.intentKey ?? null,
    execution_mode: r.executionMode,
    triggered_by: r.triggeredBy,
    status: r.status,
    stage: r.stage ?? null,
    progress: r.progress,
    mean_score: num(r.meanScore),
    dimension_scores: r.dimensionScores ?? null,
    cases_total: r.casesTotal,
    cases_done: r.casesDone,
    cases_passed: r.casesPassed,
    cases_errored: errored,
    pass_threshold: Number(r.passThreshold),
    started_at: isoRequired(r.startedAt),
    completed_at: iso(r.completedAt),
    error: r.error ?? null,
    judge_total_cost_usd: num(r.judgeTotalCostUsd),
    judge_model: r.judgeModel ?? null,
    judge_calls: r.judgeCalls,
    judge_failures: r.judgeFailures,
    judge_cap_reached: r.judgeCapReached,
    model_override: r.modelOverride ?? null,
  };
}

export const toReviewDto = (r: IEvalReview, tenantId: string): ReviewDto => ({
  id: r.id,
  tenant_id: tenantId,
  run_result_id: idOf(r.result)!,
  reviewer_id: r.reviewerId,
  verdict: r.verdict,
  corrected_score: num(r.correctedScore),
  note: r.note ?? null,
  created_at: isoRequired(r.createdAt),
});

function toResultDto(r: IEvalResult, reviews: ReviewDto[]): EvalResultDto {
  return {
    id: r.id,
    run_id: idOf(r.run)!,
    case_id: r.caseId ?? null,
    position: r.position,
    status: r.status,
    input: r.input,
    message: r.message ?? null,
    output: r.output ?? null,
    expected_output: r.expectedOutput ?? null,
    passed: r.passed ?? null,
    score: num(r.score),
    dimension_scores: r.dimensionScores ?? null,
    check: (r.check as EvalResultDto['check']) ?? null,
    judge_reasoning: r.judgeReasoning ?? null,
    custom_score: num(r.customScore),
    latency_ms: r.latencyMs ?? null,
    cost_usd: Number(r.costUsd),
    error: r.error ?? null,
    reviews,
  };
}

export async function findRun(em: EntityManager, tenantId: string, id: string): Promise<IEvalRun> {
  const run = isUuid(id) ? await em.findOne(EvalRun, { id, tenant: tenantId }) : null;
  if (!run) throw notFound('Evaluation run');
  return run;
}

async function erroredCounts(deps: AppDeps, runIds: string[]): Promise<Map<string, number>> {
  if (!runIds.length) return new Map();
  const rows = await deps.sql.query<{ run_id: string; n: number }>(
    `select run_id::text, count(*)::int as n from eval_results where run_id = any($1::uuid[]) and status = 'errored' group by run_id`,
    [runIds],
  );
  return new Map(rows.map((r) => [r.run_id, r.n]));
}

export async function getRun(em: EntityManager, deps: AppDeps, tenantId: string, id: string) {
  const run = await findRun(em, tenantId, id);
  const errored = await erroredCounts(deps, [run.id]);
  return { run: toRunDto(run, tenantId, errored.get(run.id) ?? 0) };
}

export async function listRuns(em: EntityManager, deps: AppDeps, tenantId: string, filter: { suite_id?: string; limit: number; offset: number }) {
  if (filter.suite_id !== undefined && !isUuid(filter.suite_id)) return { runs: [], pagination: { total: 0, limit: filter.limit, offset: filter.offset } };
  const where = filter.suite_id !== undefined ? { tenant: tenantId, suite: filter.suite_id } : { tenant: tenantId };
  const [runs, total] = await em.findAndCount(EvalRun, where, { orderBy: { startedAt: 'desc', id: 'asc' }, limit: filter.limit, offset: filter.offset });
  const errored = await erroredCounts(deps, runs.map((r) => r.id));
  return { runs: runs.map((r) => toRunDto(r, tenantId, errored.get(r.id) ?? 0)), pagination: { total, limit: filter.limit, offset: filter.offset } };
}

export async function listResults(em: EntityManager, tenantId: string, id: string, page: { limit: number; offset: number }) {
  const run = await findRun(em, tenantId, id);
  const [results, total] = await em.findAndCount(EvalResult, { run }, { orderBy: { position: 'asc' }, limit: page.limit, offset: page.offset });
  const reviews = results.length ? await em.find(EvalReview, { result: { $in: results.map((r) => r.id) } }, { orderBy: { createdAt: 'asc' } }) : [];
  const byResult = new Map<string, ReviewDto[]>();
  for (const review of reviews) {
    const key = idOf(review.result)!;
    byResult.set(key, [...(byResult.get(key) ?? []), toReviewDto(review, tenantId)]);
  }
  return { results: results.map((r) => toResultDto(r, byResult.get(r.id) ?? [])), pagination: { total, limit: page.limit, offset: page.offset } };
}

/** A run-admitting statement's row: the inserted run's columns plus how many cases and jobs it wrote. */
export type AdmittedRunRow = Record<string, unknown> & { admitted_cases: number; queued: number };

/**
 * The run as it was admitted, from the inserting statement's own row: the job runner may already be
 * working on it by the time a read would reach it, and the 202 promises the pending run.
 */
export function admittedRun(em: EntityManager, tenantId: string, row: AdmittedRunRow) {
  const { admitted_cases: _cases, queued: _queued, ...columns } = row;
  return { run: toRunDto(em.map(EvalRun, columns), tenantId, 0) };
}

// The run, one pending result per case of the dataset (a snapshot: editing a case later does not
// change a run) and its job, in one statement; nothing when the dataset has no cases.
const START_RUN_SQL = `
with cases as (
  select id, input, message, expected_output, row_number() over (order by position, created_at, id) - 1 as position
    from eval_cases where dataset_id = $4 and tenant_id = $2),
run as (
  insert into eval_runs (id, tenant_id, suite_id, name, domain_key, intent_key, execution_mode, triggered_by, status, progress, cases_total, cases_passed,
                         cases_done, environment_id, judge_rubric, pass_threshold, judge_total_cost_usd, judge_model, judge_calls, judge_failures,
                         judge_cap_reached, model_override, custom_scorer_expression, custom_scorer_webhook_url, custom_scorer_webhook_secret, started_at, updated_at)
  select $1, $2, $3, $5, $6, $7, 'liya_intent', $8, 'pending', 0, (select count(*) from cases), 0, 0, $9, $10, $11, 0, $12, 0, 0, false, $13,
         s.custom_scorer_expression, s.custom_scorer_webhook_url, s.custom_scorer_webhook_secret, now(), now()
    from eval_suites s
   where s.id = $3 and exists (select 1 from cases)
  returning *),
results as (
  insert into eval_results (id, tenant_id, run_id, case_id, position, status, input, message, expected_output, cost_usd, created_at)
  select gen_random_uuid(), $2, (select id from run), id, position, 'pending', input, message, expected_output, 0, now() from cases
   where exists (select 1 from run)
  returning 1),
job as (select graphile_worker.add_job('eval_run', json_build_object('run_id', $1::text, 'tenant_id', $2::text), max_attempts => 25, job_key => 'eval-run:' || $1::text) from run)
select run.*, (select count(*) from results)::int as admitted_cases, (select count(*) from job)::int as queued
  from (select 1) one left join run on true`;

/** The judge's model: EVAL_JUDGE_MODEL, else the platform's default model. */
export const judgeModelOf = (deps: AppDeps) => deps.config.EVAL_JUDGE_MODEL ?? deps.config.DEFAULT_MODEL;

/**
 * Starts a suite's run: 202 with the pending run. Gated by the plan, the monthly judge budget and
 * the rate limit; the suite's intent must still be runnable and its dataset must have cases.
 */
export async function startSuiteRun(em: EntityManager, deps: AppDeps, scope: TenantScope, suiteId: string, options: { model?: string | null; triggeredBy?: 'api' | 'dashboard' } = {}) {
  const suite = await runnableSuite(em, scope, suiteId);
  const row = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, 1, (query) => insertSuiteRun(query, deps, scope, suite, options));
  return admittedRun(em, scope.tenantId, row);
}

/** The suite, when its intent can still run (else 422 with the reason). */
async function runnableSuite(em: EntityManager, scope: TenantScope, suiteId: string) {
  const suite = await findSuite(em, scope.tenantId, suiteId);
  judgeBudgetOf(scope.plan);
  try {
    await resolveIntent(em, scope.tenant, suite.domainKey, suite.intentKey);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    throw new AppError('UNPROCESSABLE', `The suite's intent ${suite.domainKey}/${suite.intentKey} cannot run: ${err.message}`, { code: err.code });
  }
  return suite;
}

async function insertSuiteRun(query: SqlPool['query'], deps: AppDeps, scope: TenantScope, suite: IEvalSuite, options: { model?: string | null; triggeredBy?: 'api' | 'dashboard' }) {
  const [row] = await query<AdmittedRunRow>(START_RUN_SQL, [
    randomUUID(), scope.tenantId, suite.id, idOf(suite.dataset), suite.name, suite.domainKey, suite.intentKey, options.triggeredBy ?? 'api', scope.environmentId,
    suite.judgeRubric ?? null, Number(suite.passThreshold), judgeModelOf(deps), options.model ?? null,
  ]);
  if (row.admitted_cases === 0) throw invalidInput("The suite's dataset has no cases", [{ path: 'dataset_id', message: 'the dataset has no cases' }]);
  return row;
}

/**
 * Cooperative cancel: the run stops at its next case. Cancelling a cancelled run answers it as it
 * is; a completed run cannot be cancelled (409).
 */
export async function cancelRun(em: EntityManager, deps: AppDeps, tenantId: string, id: string) {
  const run = await findRun(em, tenantId, id);
  const rows = await deps.sql.query(
    `update eval_runs set status = 'cancelled', stage = null, completed_at = now(), updated_at = now()
      where id = $1 and tenant_id = $2 and status in ('pending', 'running', 'failed') returning 1`,
    [run.id, tenantId],
  );
  if (!rows.length) {
    em.clear();
    const now = await getRun(em, deps, tenantId, run.id);
    if (now.run.status === 'cancelled') return now;
    throw new AppError('RUN_NOT_CANCELLABLE', `The run is ${now.run.status}; only pending, running and failed runs can be cancelled`, { status: now.run.status });
  }
  await deps.sql.query(`select graphile_worker.remove_job('eval-run:' || $1::text)`, [run.id]).catch(() => undefined);
  em.clear();
  return getRun(em, deps, tenantId, run.id);
}

/**
 * Continues a failed run: cases already scored are kept, the others (errored, skipped, never run)
 * run again. Idempotent: a run already resumed (pending or running) is answered as it is.
 */
export async function resumeRun(em: EntityManager, deps: AppDeps, scope: TenantScope, id: string) {
  const run = await findRun(em, scope.tenantId, id);
  if (run.status === 'pending' || run.status === 'running') return getRun(em, deps, scope.tenantId, run.id);
  if (run.status !== 'failed') {
    throw new AppError('EVAL_RUN_NOT_RESUMABLE', `The run is ${run.status}; only a failed run can be resumed`, { status: run.status });
  }
  await assertEvalRunAllowed(deps.sql, scope.tenantId, scope.plan);
  await deps.sql.query(
    // Only the resume that switches the run from failed resets its cases: a second, concurrent one
    // changes nothing (it must not put a case a worker just wrote back in the queue).
    `with run as (
       update eval_runs r set status = 'pending', error = null, completed_at = null, judge_cap_reached = false, updated_at = now(),
              cases_done = (select count(*) from eval_results x where x.run_id = r.id and x.status = 'scored')
        where id = $1 and tenant_id = $2 and status = 'failed' returning id),
     reset as (
       update eval_results set status = 'pending', error = null, output = null, passed = null, score = null, dimension_scores = null, "check" = null,
              judge_reasoning = null, custom_score = null, latency_ms = null, cost_usd = 0, completed_at = null
        where run_id = (select id from run) and status in ('errored', 'skipped')
       returning id),
     -- The trace rows of the cases that run again go with them: their new rows take the same places.
     traces as (
       delete from run_steps where run_kind = 'eval' and run_id = (select id from run) and step_id in (select id::text from reset))
     select graphile_worker.add_job('eval_run', json_build_object('run_id', id::text, 'tenant_id', $2::text), max_attempts => 25, job_key => 'eval-run:' || id::text) from run`,
    [run.id, scope.tenantId],
  );
  em.clear();
  return getRun(em, deps, scope.tenantId, run.id);
}

/** Pins a completed run of the suite as its baseline, or clears it (null). */
export async function setBaseline(em: EntityManager, deps: AppDeps, tenantId: string, suiteId: string, runId: string | null) {
  const suite = await findSuite(em, tenantId, suiteId);
  if (runId !== null) {
    const run = isUuid(runId) ? await em.findOne(EvalRun, { id: runId, tenant: tenantId, suite }) : null;
    if (!run) throw invalidInput('run_id is not a run of this suite', [{ path: 'run_id', message: `no run ${runId} of this suite` }]);
    if (run.status !== 'completed') throw invalidInput('Only a completed run can be the baseline', [{ path: 'run_id', message: `the run is ${run.status}` }]);
  }
  suite.baselineRunId = runId;
  await em.flush();
  return { suite_id: suite.id, baseline_run_id: runId };
}

/** Two runs of the suite, the intent on model_a and on model_b (each with model_override), started together or not at all. */
export async function compareModels(em: EntityManager, deps: AppDeps, scope: TenantScope, suiteId: string, models: { model_a: string; model_b: string }) {
  const suite = await runnableSuite(em, scope, suiteId);
  const rows = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, 2, async (query) => [
    await insertSuiteRun(query, deps, scope, suite, { model: models.model_a }),
    await insertSuiteRun(query, deps, scope, suite, { model: models.model_b }),
  ]);
  return { runs: rows.map((row) => admittedRun(em, scope.tenantId, row).run) };
}
