import { randomUUID } from 'node:crypto';
// Evaluation runs as the API sees them: start a suite's run (202, pending; its cases and its job are
// written with it), read, list, results, cooperative cancel, resume of a failed run, and the suite's
// pinned baseline. The execution itself is run-eval.ts, on the job runner.
import type { EntityManager } from '../../db/orm.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery } from '../common/pagination.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import { resolveIntent } from '../intents/resolve-intent.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { admitEvalRuns, assertEvalRunAllowed, judgeBudgetOf } from './eval-limits.js';
import type { EvalResultDto, EvalRunDto, ReviewDto } from './eval-runs.schemas.js';
import { insertGateRun, insertSuiteRun as insertSuiteRunRow, type AdmittedRunRow, type GateRunValues } from './store/eval-run-admission.js';
import { countErroredResults, countRunResults, listRunResults, type ResultRow } from './store/eval-results.js';
import {
  cancelActiveRun, countTenantRuns, findSuiteRun, findTenantRun, listTenantRuns, reloadTenantRun, removeRunJob, resumeFailedRun, runFromRow, type RunRow, type SqlRunner,
} from './store/eval-runs.js';
import { listReviewsOfResults, type ReviewRow } from './store/reviews.js';
import { setSuiteBaseline, type SuiteRow } from './store/suites.js';
import { findSuite } from './suites.service.js';

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const idOf = (ref: unknown): string | null => (ref === null || ref === undefined ? null : typeof ref === 'string' ? ref : (ref as { id: string }).id);

export function toRunDto(r: RunRow, tenantId: string, errored = 0): EvalRunDto {
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
    judge_fallback_models: r.judgeFallbackModels ?? null,
    judge_calls: r.judgeCalls,
    judge_failures: r.judgeFailures,
    judge_cap_reached: r.judgeCapReached,
    model_override: r.modelOverride ?? null,
    online_rule_id: r.onlineRuleId ?? null,
    window_day: r.windowDay ? String(r.windowDay).slice(0, 10) : null,
    samples_capped: r.samplesCapped ?? 0,
  };
}

export const toReviewDto = (r: ReviewRow, tenantId: string): ReviewDto => ({
  id: r.id,
  tenant_id: tenantId,
  run_result_id: idOf(r.result)!,
  reviewer_id: r.reviewerId,
  verdict: r.verdict,
  corrected_score: num(r.correctedScore),
  note: r.note ?? null,
  created_at: isoRequired(r.createdAt),
});

function toResultDto(r: ResultRow, reviews: ReviewDto[]): EvalResultDto {
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
    source: r.sourceKind && r.sourceId
      ? { kind: r.sourceKind, id: r.sourceId, latency_ms: r.sourceLatencyMs ?? null, cost_usd: num(r.sourceCostUsd) }
      : null,
    reviews,
  };
}

export async function findRun(em: EntityManager, tenantId: string, id: string): Promise<RunRow> {
  const run = isUuid(id) ? await findTenantRun(em, tenantId, id) : null;
  if (!run) throw notFound('Evaluation run');
  return run;
}

async function runWithErrored(deps: AppDeps, tenantId: string, run: RunRow) {
  const errored = await countErroredResults(deps.sql, [run.id]);
  return { run: toRunDto(run, tenantId, errored.get(run.id) ?? 0) };
}

export async function getRun(em: EntityManager, deps: AppDeps, tenantId: string, id: string) {
  return runWithErrored(deps, tenantId, await findRun(em, tenantId, id));
}

/** The run as the database has it after a statement the ORM did not see changed it. */
async function reloadRun(em: EntityManager, deps: AppDeps, tenantId: string, id: string) {
  const run = await reloadTenantRun(em, tenantId, id);
  if (!run) throw notFound('Evaluation run');
  return runWithErrored(deps, tenantId, run);
}

const RUNS_LIST: HistoryList = { name: 'eval_runs', key: 'time' };
const RESULTS_LIST: HistoryList = { name: 'eval_results', key: 'position' };

export async function listRuns(em: EntityManager, deps: AppDeps, tenantId: string, suiteId: string | undefined, query: HistoryPageQuery) {
  const request = pageRequestOf(RUNS_LIST, query);
  // An id that cannot be a suite matches no run.
  const valid = suiteId === undefined || isUuid(suiteId);
  const rows = valid ? await listTenantRuns(em, tenantId, suiteId, request) : [];
  const page = await pageOfRows(RUNS_LIST, request, rows, (r) => ({ key: r.cursorKey, id: r.run.id }), async (cap) => (valid ? countTenantRuns(em, tenantId, suiteId, cap) : 0));
  const runs = page.items.map((r) => r.run);
  const errored = await countErroredResults(deps.sql, runs.map((r) => r.id));
  return { runs: runs.map((r) => toRunDto(r, tenantId, errored.get(r.id) ?? 0)), pagination: page.pagination };
}

/** The runs of one of the tenant's suites (404 when it is not one), newest first. */
export async function listSuiteRuns(em: EntityManager, deps: AppDeps, tenantId: string, suiteId: string, query: HistoryPageQuery) {
  await findSuite(em, tenantId, suiteId);
  return listRuns(em, deps, tenantId, suiteId, query);
}

export async function listResults(em: EntityManager, tenantId: string, id: string, query: HistoryPageQuery) {
  const request = pageRequestOf(RESULTS_LIST, query);
  const run = await findRun(em, tenantId, id);
  const rows = await listRunResults(em, run, request);
  const page = await pageOfRows(RESULTS_LIST, request, rows, (r) => ({ key: String(r.position), id: r.id }), (cap) => countRunResults(em, run, cap));
  const results = page.items;
  const reviews = await listReviewsOfResults(em, results.map((r) => r.id));
  const byResult = new Map<string, ReviewDto[]>();
  for (const review of reviews) {
    const key = idOf(review.result)!;
    byResult.set(key, [...(byResult.get(key) ?? []), toReviewDto(review, tenantId)]);
  }
  return { results: results.map((r) => toResultDto(r, byResult.get(r.id) ?? [])), pagination: page.pagination };
}

/**
 * The run as it was admitted, from the inserting statement's own row: the job runner may already be
 * working on it by the time a read would reach it, and the 202 promises the pending run.
 */
export function admittedRun(em: EntityManager, tenantId: string, row: AdmittedRunRow) {
  const { admitted_cases: _cases, queued: _queued, ...columns } = row;
  return { run: toRunDto(runFromRow(em, columns), tenantId, 0) };
}

/** The judge's model: EVAL_JUDGE_MODEL, else the platform's default model. */
export const judgeModelOf = (deps: AppDeps) => deps.config.EVAL_JUDGE_MODEL ?? deps.config.DEFAULT_MODEL;

/**
 * Starts a suite's run: 202 with the pending run. Gated by the plan, the monthly judge budget and
 * the rate limit; the suite's intent must still be runnable and its dataset must have cases.
 */
export async function startSuiteRun(em: EntityManager, deps: AppDeps, scope: TenantScope, suiteId: string, options: { model?: string | null; triggeredBy?: 'api' | 'dashboard' } = {}) {
  const suite = await runnableSuite(em, scope, suiteId);
  const row = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, 1, (tx) => insertSuiteRun(tx, deps, scope, suite, options));
  return admittedRun(em, scope.tenantId, row);
}

/** What a deployment gate runs: a suite of the project, its cases, and the draft intent (null: the live one). */
export type GateRunSpec = Pick<GateRunValues, 'cases' | 'name' | 'domainKey' | 'intentKey' | 'judgeRubric' | 'passThreshold' | 'customScorerExpression' | 'intentDefinition' | 'modelOverride' | 'judgeFallbackModels'>;

/**
 * Starts a deployment gate's runs, admitted together (plan, judge budget, rate limit) like a suite's
 * runs; each runs its cases on its draft intent definition.
 */
export async function startGateRuns(em: EntityManager, deps: AppDeps, scope: TenantScope, gates: GateRunSpec[]): Promise<EvalRunDto[]> {
  judgeBudgetOf(scope.plan);
  const rows = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, gates.length, async (tx) => {
    const out: AdmittedRunRow[] = [];
    for (const gate of gates) out.push(await insertGateRun(tx, { ...gate, id: randomUUID(), tenantId: scope.tenantId, environmentId: scope.environmentId, judgeModel: judgeModelOf(deps) }));
    return out;
  });
  return rows.map((row) => admittedRun(em, scope.tenantId, row).run);
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

async function insertSuiteRun(tx: SqlRunner, deps: AppDeps, scope: TenantScope, suite: SuiteRow, options: { model?: string | null; triggeredBy?: 'api' | 'dashboard' }) {
  const row = await insertSuiteRunRow(tx, {
    tenantId: scope.tenantId, suiteId: suite.id, datasetId: idOf(suite.dataset), name: suite.name, domainKey: suite.domainKey, intentKey: suite.intentKey,
    triggeredBy: options.triggeredBy ?? 'api', environmentId: scope.environmentId, judgeRubric: suite.judgeRubric ?? null, passThreshold: Number(suite.passThreshold),
    judgeModel: judgeModelOf(deps), modelOverride: options.model ?? null,
  });
  if (row.admitted_cases === 0) throw invalidInput("The suite's dataset has no cases", [{ path: 'dataset_id', message: 'the dataset has no cases' }]);
  return row;
}

/**
 * Cooperative cancel: the run stops at its next case. Cancelling a cancelled run answers it as it
 * is; a completed run cannot be cancelled (409).
 */
export async function cancelRun(em: EntityManager, deps: AppDeps, tenantId: string, id: string) {
  const run = await findRun(em, tenantId, id);
  if (!(await cancelActiveRun(deps.sql, run.id, tenantId))) {
    const now = await reloadRun(em, deps, tenantId, run.id);
    if (now.run.status === 'cancelled') return now;
    throw new AppError('RUN_NOT_CANCELLABLE', `The run is ${now.run.status}; only pending, running and failed runs can be cancelled`, { status: now.run.status });
  }
  await removeRunJob(deps.sql, run.id);
  return reloadRun(em, deps, tenantId, run.id);
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
  await resumeFailedRun(deps.sql, run.id, scope.tenantId);
  return reloadRun(em, deps, scope.tenantId, run.id);
}

/** Pins a completed run of the suite as its baseline, or clears it (null). */
export async function setBaseline(em: EntityManager, deps: AppDeps, tenantId: string, suiteId: string, runId: string | null) {
  const suite = await findSuite(em, tenantId, suiteId);
  if (runId !== null) {
    const run = isUuid(runId) ? await findSuiteRun(em, tenantId, suite, runId) : null;
    if (!run) throw invalidInput('run_id is not a run of this suite', [{ path: 'run_id', message: `no run ${runId} of this suite` }]);
    if (run.status !== 'completed') throw invalidInput('Only a completed run can be the baseline', [{ path: 'run_id', message: `the run is ${run.status}` }]);
  }
  await setSuiteBaseline(em, suite, runId);
  return { suite_id: suite.id, baseline_run_id: runId };
}

/** Two runs of the suite, the intent on model_a and on model_b (each with model_override), started together or not at all. */
export async function compareModels(em: EntityManager, deps: AppDeps, scope: TenantScope, suiteId: string, models: { model_a: string; model_b: string }) {
  const suite = await runnableSuite(em, scope, suiteId);
  const rows = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, 2, async (tx) => [
    await insertSuiteRun(tx, deps, scope, suite, { model: models.model_a }),
    await insertSuiteRun(tx, deps, scope, suite, { model: models.model_b }),
  ]);
  return { runs: rows.map((row) => admittedRun(em, scope.tenantId, row).run) };
}
