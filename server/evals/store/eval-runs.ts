// The eval_runs and eval_results tables (a run and the results of its cases); this module alone
// writes them. Its run-admitting statements also queue the run's job (graphile_worker.add_job) and,
// for an external_output run, insert its inline eval_cases; the case statement also writes the
// judge's usage_events and usage_counters and the case's run_steps; a resume deletes the run_steps
// of the cases that run again.
//
// Most statements here run on the SqlPool (the run loop on the job runner, and the API paths that
// shared it), as they did before: they stay raw SQL, where Kysely is not available.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { EvalResult, EvalRun, type IEvalResult, type IEvalRun, type IEvalSuite } from '../../../db/entities/eval.js';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import { anyId } from '../../../db/id-list.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { PageRequest } from '../../common/pagination.js';
import { monthKey } from '../../common/schemas.js';
import { boundedJson } from '../../runs/run-steps.js';
import { TENANT_RUNTIME_COLUMNS, type TenantRuntimeRow } from '../../tenants/tenant-runtime.js';
import { ADD_TO_USAGE_COUNTER_SQL, insertUsageEventsSql, usageRowsOf, type UsageEventInput } from '../../usage/store/usage-events.js';
import { evalRunJob } from '../../jobs/contracts.js';
import { addJobSql, removeJobSql } from '../../jobs/store/job-queue.js';

export type { IEvalResult as ResultRow, IEvalRun as RunRow } from '../../../db/entities/eval.js';

/** The SqlPool, or the query function of one of its transactions (as `{ query }`). */
export type SqlRunner = Pick<SqlPool, 'query'>;

// ---- Reads through the ORM ----------------------------------------------------------------------

export async function findTenantRun(em: EntityManager, tenantId: string, id: string): Promise<IEvalRun | null> {
  return em.findOne(EvalRun, { id, tenant: tenantId });
}

/**
 * The run as the database has it now: what the identity map holds is forgotten first (the run was
 * changed by a statement the ORM did not see).
 */
export async function reloadTenantRun(em: EntityManager, tenantId: string, id: string): Promise<IEvalRun | null> {
  em.clear();
  return findTenantRun(em, tenantId, id);
}

/** A run of the suite (of the tenant). */
export async function findSuiteRun(em: EntityManager, tenantId: string, suite: IEvalSuite, runId: string): Promise<IEvalRun | null> {
  return em.findOne(EvalRun, { id: runId, tenant: tenantId, suite });
}

/** The tenant's runs, of one suite when given (an equality its index begins with). */
function tenantRuns(em: EntityManager, tenantId: string, suiteId: string | undefined) {
  return kyselyOf(em)
    .selectFrom('eval_runs')
    .where('tenant_id', '=', tenantId)
    .$if(suiteId !== undefined, (qb) => qb.where('suite_id', '=', suiteId!));
}

/**
 * A page of the tenant's runs (optionally of one suite), newest first (ties by id), and one more when
 * there is a next page; on (tenant_id[, suite_id], started_at desc, id desc), from the offset or the
 * cursor. Each run comes with its exact sort key (`cursorKey`).
 */
export async function listTenantRuns(em: EntityManager, tenantId: string, suiteId: string | undefined, page: PageRequest): Promise<{ run: IEvalRun; cursorKey: string }[]> {
  const rows = await newestFirstPage(tenantRuns(em, tenantId, suiteId).selectAll(), 'started_at', page).execute();
  return rows.map(({ cursor_key, ...columns }) => ({ run: em.map(EvalRun, columns), cursorKey: cursor_key }));
}

/** How many runs `listTenantRuns` pages through, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countTenantRuns(em: EntityManager, tenantId: string, suiteId: string | undefined, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), tenantRuns(em, tenantId, suiteId).select(sql.lit(1).as('one')), cap);
}

/**
 * A page of the run's results in position order, and one more when there is a next page; on the
 * unique (run_id, position), from the offset or after the cursor's position.
 */
export async function listRunResults(em: EntityManager, run: IEvalRun, page: PageRequest): Promise<IEvalResult[]> {
  const where = page.after ? { run, position: { $gt: Number(page.after.key) } } : { run };
  return em.find(EvalResult, where, { orderBy: { position: 'asc' }, limit: page.limit + 1, offset: page.offset });
}

/** How many results the run has, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countRunResults(em: EntityManager, run: IEvalRun, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), kyselyOf(em).selectFrom('eval_results').where('run_id', '=', run.id).select(sql.lit(1).as('one')), cap);
}

export async function findTenantResult(em: EntityManager, tenantId: string, id: string): Promise<IEvalResult | null> {
  return em.findOne(EvalResult, { id, tenant: tenantId });
}

/** A run entity from a row of eval_runs' columns (as a statement returned them). */
export function runFromRow(em: EntityManager, columns: Record<string, unknown>): IEvalRun {
  return em.map(EvalRun, columns);
}

// ---- The API's statements on the SqlPool --------------------------------------------------------

/** How many errored results each run has (runs without any are absent). */
export async function countErroredResults(sql: SqlRunner, runIds: string[]): Promise<Map<string, number>> {
  if (!runIds.length) return new Map();
  // Raw: SqlPool (see the header).
  const rows = await sql.query<{ run_id: string; n: number }>(
    `select run_id::text, count(*)::int as n from eval_results where run_id = any($1::uuid[]) and status = 'errored' group by run_id`,
    [runIds],
  );
  return new Map(rows.map((r) => [r.run_id, r.n]));
}

/** A run-admitting statement's row: the inserted run's columns plus how many cases and jobs it wrote. */
export type AdmittedRunRow = Record<string, unknown> & { admitted_cases: number; queued: number };

/**
 * Holds the tenant's run-admission lock until the transaction ends: admissions of one tenant, on any
 * process, run one after another.
 */
export async function lockRunAdmission(tx: SqlRunner, tenantId: string): Promise<void> {
  // Raw: an advisory lock.
  await tx.query('select pg_advisory_xact_lock(hashtextextended($1::text, 20261124))', [tenantId]);
}

/** How many runs the tenant started with API keys in the last minute, and when the oldest of them started. */
export async function countRecentApiRuns(tx: SqlRunner, tenantId: string): Promise<{ n: number; oldest: Date | null }> {
  // Raw: it runs in the admission's SqlPool transaction.
  const [recent] = await tx.query<{ n: number; oldest: Date | null }>(
    `select count(*)::int as n, min(started_at) as oldest from eval_runs where tenant_id = $1 and triggered_by = 'api' and started_at > now() - interval '60 seconds'`,
    [tenantId],
  );
  return recent;
}

// Raw: it queues the job with graphile_worker.add_job, in the statement that writes the run.
// The run, one pending result per case of the dataset (a snapshot: editing a case later does not
// change a run) and its job, in one statement; nothing when the dataset has no cases.
const START_RUN_SQL = `
with cases as (
  select id, input, message, expected_output, row_number() over (order by position, created_at, id) - 1 as position
    from eval_cases where dataset_id = $4 and tenant_id = $2),
run as (
  insert into eval_runs (id, tenant_id, suite_id, name, domain_key, intent_key, execution_mode, triggered_by, status, progress, cases_total, cases_passed,
                         cases_done, environment_id, judge_rubric, pass_threshold, judge_total_cost_usd, judge_model, judge_calls, judge_failures,
                         judge_cap_reached, model_override, custom_scorer_expression, custom_scorer_webhook_url, custom_scorer_webhook_secret, judge_fallback_models,
                         started_at, updated_at)
  select $1, $2, $3, $5, $6, $7, 'liya_intent', $8, 'pending', 0, (select count(*) from cases), 0, 0, $9, $10, $11, 0, $12, 0, 0, false, $13,
         s.custom_scorer_expression, s.custom_scorer_webhook_url, s.custom_scorer_webhook_secret, s.fallback_models, now(), now()
    from eval_suites s
   where s.id = $3 and exists (select 1 from cases)
  returning *),
results as (
  insert into eval_results (id, tenant_id, run_id, case_id, position, status, input, message, expected_output, cost_usd, created_at)
  select gen_random_uuid(), $2, (select id from run), id, position, 'pending', input, message, expected_output, 0, now() from cases
   where exists (select 1 from run)
  returning 1),
job as (select ${addJobSql(evalRunJob, { run_id: '$1::text', tenant_id: '$2::text' })} from run)
select run.*, (select count(*) from results)::int as admitted_cases, (select count(*) from job)::int as queued
  from (select 1) one left join run on true`;

/** A suite run's settings, taken when it starts (a later suite edit does not change the run). */
interface SuiteRunValues {
  tenantId: string;
  suiteId: string;
  datasetId: string | null;
  name: string;
  domainKey: string;
  intentKey: string;
  triggeredBy: 'api' | 'dashboard';
  environmentId: string | null;
  judgeRubric: string | null;
  passThreshold: number;
  judgeModel: string;
  modelOverride: string | null;
}

/**
 * Writes a suite's run (pending), its pending results and its job, in the admission's transaction.
 * `admitted_cases` is 0 (and nothing is written) when the dataset has no cases.
 */
export async function insertSuiteRun(tx: SqlRunner, v: SuiteRunValues): Promise<AdmittedRunRow> {
  const [row] = await tx.query<AdmittedRunRow>(START_RUN_SQL, [
    randomUUID(), v.tenantId, v.suiteId, v.datasetId, v.name, v.domainKey, v.intentKey, v.triggeredBy, v.environmentId,
    v.judgeRubric, v.passThreshold, v.judgeModel, v.modelOverride,
  ]);
  return row;
}

// Raw: it queues the job with graphile_worker.add_job, in the statement that writes the run.
// The run, its inline cases (no dataset) and their results with the supplied responses, and the job,
// in one statement.
const START_EXTERNAL_SQL = `
with cases as (
  select (c ->> 'ord')::int as position, c -> 'input' as input, c -> 'response' as response, c -> 'expected_output' as expected
    from jsonb_array_elements($3::jsonb) as c),
run as (
  insert into eval_runs (id, tenant_id, suite_id, name, execution_mode, triggered_by, status, progress, cases_total, cases_passed, cases_done, environment_id,
                         judge_rubric, pass_threshold, judge_total_cost_usd, judge_model, judge_calls, judge_failures, judge_cap_reached, started_at, updated_at)
  values ($1, $2, null, $4, 'external_output', $5, 'pending', 0, (select count(*) from cases), 0, 0, $6, $7, $8, 0, $9, 0, 0, false, now(), now())
  returning *),
inline as (
  insert into eval_cases (id, tenant_id, dataset_id, position, input, message, expected_output, notes, created_at)
  select gen_random_uuid(), $2, null, position, input, null, nullif(expected, 'null'::jsonb), null, now() from cases
  returning id, position),
results as (
  insert into eval_results (id, tenant_id, run_id, case_id, position, status, input, message, output, expected_output, cost_usd, created_at)
  select gen_random_uuid(), $2, (select id from run), i.id, c.position, 'pending', c.input, null, c.response, nullif(c.expected, 'null'::jsonb), 0, now()
    from cases c join inline i on i.position = c.position
  returning 1),
job as (select ${addJobSql(evalRunJob, { run_id: '$1::text', tenant_id: '$2::text' })} from run)
select run.*, (select count(*) from results)::int as admitted_cases, (select count(*) from job)::int as queued from run`;

/** An external_output run's settings and its cases, each with the supplied response. */
interface ExternalRunValues {
  id: string;
  tenantId: string;
  cases: { ord: number; input: Record<string, unknown>; response: unknown; expected_output: unknown }[];
  name: string | null;
  triggeredBy: 'api';
  environmentId: string | null;
  judgeRubric: string | null;
  passThreshold: number;
  judgeModel: string;
}

/** Writes an external_output run (pending), its inline cases, their results and its job, in the admission's transaction. */
export async function insertExternalRun(tx: SqlRunner, v: ExternalRunValues): Promise<AdmittedRunRow> {
  const [row] = await tx.query<AdmittedRunRow>(START_EXTERNAL_SQL, [
    v.id, v.tenantId, JSON.stringify(v.cases), v.name, v.triggeredBy, v.environmentId, v.judgeRubric, v.passThreshold, v.judgeModel,
  ]);
  return row;
}

// Raw: it queues the job with graphile_worker.add_job, in the statement that writes the run.
// A deployment gate's run: a liya_intent run of inline cases (copied from the project's dataset) on a
// draft intent definition, with its job, in one statement.
const START_GATE_SQL = `
with cases as (
  select (c ->> 'ord')::int as position, c -> 'input' as input, c ->> 'message' as message, c -> 'expected_output' as expected
    from jsonb_array_elements($3::jsonb) as c),
run as (
  insert into eval_runs (id, tenant_id, suite_id, name, domain_key, intent_key, execution_mode, triggered_by, status, progress, cases_total, cases_passed, cases_done,
                         environment_id, judge_rubric, pass_threshold, judge_total_cost_usd, judge_model, judge_calls, judge_failures, judge_cap_reached,
                         custom_scorer_expression, intent_definition, model_override, judge_fallback_models, started_at, updated_at)
  values ($1, $2, null, $4, $5, $6, 'liya_intent', 'api', 'pending', 0, (select count(*) from cases), 0, 0, $7, $8, $9, 0, $10, 0, 0, false, $11, $12::jsonb, $13, $14::jsonb,
          now(), now())
  returning *),
inline as (
  insert into eval_cases (id, tenant_id, dataset_id, position, input, message, expected_output, notes, created_at)
  select gen_random_uuid(), $2, null, position, input, message, nullif(expected, 'null'::jsonb), null, now() from cases
  returning id, position),
results as (
  insert into eval_results (id, tenant_id, run_id, case_id, position, status, input, message, expected_output, cost_usd, created_at)
  select gen_random_uuid(), $2, (select id from run), i.id, c.position, 'pending', c.input, c.message, nullif(c.expected, 'null'::jsonb), 0, now()
    from cases c join inline i on i.position = c.position
  returning 1),
job as (select ${addJobSql(evalRunJob, { run_id: '$1::text', tenant_id: '$2::text' })} from run)
select run.*, (select count(*) from results)::int as admitted_cases, (select count(*) from job)::int as queued from run`;

/** A deployment gate run's settings: its cases and the draft intent it runs (null: the live one). */
export interface GateRunValues {
  id: string;
  tenantId: string;
  cases: { ord: number; input: Record<string, unknown>; message: string | null; expected_output: unknown }[];
  name: string;
  domainKey: string;
  intentKey: string;
  environmentId: string | null;
  judgeRubric: string | null;
  passThreshold: number;
  judgeModel: string;
  customScorerExpression: string | null;
  intentDefinition: Record<string, unknown> | null;
  /** The one model the run's intent calls (a gate over a chain runs each model alone); null: the intent's route. */
  modelOverride: string | null;
  /** The suite's judge fallbacks (null: the tenant's, then the platform's). */
  judgeFallbackModels: string[] | null;
}

/** Writes a gate run (pending), its inline cases, their results and its job, in the admission's transaction. */
export async function insertGateRun(tx: SqlRunner, v: GateRunValues): Promise<AdmittedRunRow> {
  const [row] = await tx.query<AdmittedRunRow>(START_GATE_SQL, [
    v.id, v.tenantId, JSON.stringify(v.cases), v.name, v.domainKey, v.intentKey, v.environmentId, v.judgeRubric, v.passThreshold, v.judgeModel,
    v.customScorerExpression, v.intentDefinition === null ? null : JSON.stringify(v.intentDefinition), v.modelOverride,
    v.judgeFallbackModels === null ? null : JSON.stringify(v.judgeFallbackModels),
  ]);
  return row;
}

/**
 * Cancels the run when it is pending, running or failed; false when it was not (it changed nothing).
 * The status changes once the case writes in flight are committed (they hold the run's row in share
 * mode), and the counters are then set from the results, in a second statement that sees them.
 */
export async function cancelActiveRun(sql: SqlPool, runId: string, tenantId: string): Promise<boolean> {
  // Raw: SqlPool (see the header).
  return sql.transaction(async (query) => {
    const rows = await query(
      `update eval_runs set status = 'cancelled', stage = null, completed_at = now(), updated_at = now()
        where id = $1 and tenant_id = $2 and status in ('pending', 'running', 'failed') returning 1`,
      [runId, tenantId],
    );
    if (!rows.length) return false;
    await query(`update eval_runs r set ${COUNTERS_FROM_RESULTS} where r.id = $1`, [runId]);
    return true;
  });
}

/** Drops the run's queued job, if there is one (best effort: errors are ignored). */
export async function removeRunJob(sql: SqlRunner, runId: string): Promise<void> {
  // Raw: a graphile_worker function.
  await sql.query(`select ${removeJobSql(evalRunJob, '$1::text')}`, [runId]).catch(() => undefined);
}

/**
 * Puts a failed run back in the queue: the run pending again, its errored and skipped results
 * pending (with their trace rows deleted), and its job. Changes nothing unless the run was failed.
 */
export async function resumeFailedRun(sql: SqlRunner, runId: string, tenantId: string): Promise<void> {
  // Raw: it queues the job with graphile_worker.add_job, in the statement that resets the run.
  await sql.query(
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
     select ${addJobSql(evalRunJob, { run_id: 'id::text', tenant_id: '$2::text' })} from run`,
    [runId, tenantId],
  );
}

// ---- Comparing runs -----------------------------------------------------------------------------

/** A scored result as a comparison reads it. */
export interface ScoredRow {
  id: string;
  case_id: string | null;
  position: number;
  score: number;
  passed: boolean | null;
  dimension_scores: Record<string, number> | null;
  input: unknown;
  message: string | null;
  output: unknown;
}

/** The run's scored results in order. */
export async function listScoredResults(sql: SqlRunner, runId: string): Promise<ScoredRow[]> {
  // Raw: SqlPool (see the header).
  return sql.query<ScoredRow>(
    `select id::text, case_id::text, position, score, passed, dimension_scores, input, message, output from eval_results where run_id = $1 and status = 'scored' order by position`,
    [runId],
  );
}

// ---- The run loop (the job runner) --------------------------------------------------------------

/** A run as a slice claims it: its settings, its tenant's plan and runtime settings, and the tenant's provider keys. */
export interface ClaimedRun {
  id: string;
  tenant_id: string;
  suite_id: string | null;
  name: string | null;
  started_at: Date;
  execution_mode: 'liya_intent' | 'external_output';
  domain_key: string | null;
  intent_key: string | null;
  environment_id: string | null;
  judge_rubric: string | null;
  pass_threshold: number;
  judge_model: string;
  /** The judge's fallbacks as the suite had them when the run started (null: the tenant's, then the platform's). */
  judge_fallback_models: string[] | null;
  model_override: string | null;
  billing_plan: string;
  custom_scorer_expression: string | null;
  custom_scorer_webhook_url: string | null;
  custom_scorer_webhook_secret: string | null;
  /** A deployment gate's draft intent (run instead of the live one). */
  intent_definition: Record<string, unknown> | null;
  /** The tenant's encrypted provider keys by provider, read once per slice for the judge's calls. */
  provider_keys: Record<string, string> | null;
}

/** A pending result: the case a slice scores. */
export interface PendingCase {
  id: string;
  case_id: string | null;
  position: number;
  input: Record<string, unknown>;
  message: string | null;
  expected_output: unknown;
  /** external_output runs: the supplied response. */
  output: unknown;
}

/** What a scored (or errored, or skipped) case writes. */
export interface CaseResultWrite {
  status: 'scored' | 'errored' | 'skipped';
  output: unknown;
  check: unknown;
  verdict: { score: number; dimension_scores: Record<string, number>; reasoning: string } | null;
  customScore: number | null;
  passed: boolean | null;
  latencyMs: number;
  costUsd: number;
  error: string | null;
  judgeUsage: UsageEventInput[];
  judgeFailures: number;
  steps: { name: string; type: string; status: string; costUsd: number; promptTokens: number; completionTokens: number; latencyMs: number; error: string | null; startedAt: Date }[];
}

// Raw: a hot statement of the run loop, a named prepared statement on the SqlPool (one per case).
// The case's result (only while the run is running, checked under a share lock of the run's row
// that a cancel waits for, and the case not written yet) with its judge's
// calls, cost and failures (added to the pending result when the write is refused: they happened),
// the judge's usage (metered whatever happens to the case) and the case's trace rows; it answers
// the run's status. The run's row is not written here: its counters and progress are recomputed
// from the results by RUN_COUNTERS_SQL, at most every few hundred milliseconds (every case
// updating one row made the cases of a run queue on its lock).
// Asynchronous commit, as an intent run's record: the statement is atomic, so a database crash can
// lose the last fraction of a second of cases (pending again, run again, their lost usage with
// them), never part of a case; waiting for the WAL flush held the tenant's usage counter row
// locked through every flush.
const CASE_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
res as (
  update eval_results set status = $3, output = $4::jsonb, "check" = $5::jsonb, score = $6, dimension_scores = $7::jsonb, judge_reasoning = $8,
         custom_score = $9, passed = $10, latency_ms = $11, cost_usd = $12, error = $13, completed_at = now(),
         judge_calls = judge_calls + $15, judge_cost_usd = judge_cost_usd + $14, judge_failures = judge_failures + $16
   where id = $1 and status = 'pending' and exists (select 1 from eval_runs where id = $2 and status = 'running' for share)
  returning position),
spent as (
  update eval_results set judge_calls = judge_calls + $15, judge_cost_usd = judge_cost_usd + $14, judge_failures = judge_failures + $16
   where id = $1 and $15 > 0 and not exists (select 1 from res)
  returning 1),
events as (${insertUsageEventsSql('$17')}),
counter as (
  insert into usage_counters (tenant_id, month, requests, tokens, cost_usd) select $18, $19, 0, $20, $14 where $15 > 0
  ${ADD_TO_USAGE_COUNTER_SQL}
  returning 1),
steps as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens, cost_usd,
                         latency_ms, error, started_at, completed_at)
  select gen_random_uuid(), $18, 'eval', $2, (select position from res) * 4 + s.ord - 1, s.type, s.name, $1::text, s.status, null, null, s.prompt_tokens,
         s.completion_tokens, s.cost_usd, s.latency_ms, s.error, s.started_at, now()
    from jsonb_to_recordset($21::jsonb) as s(ord int, type text, name text, status text, prompt_tokens int, completion_tokens int, cost_usd numeric,
         latency_ms int, error text, started_at timestamptz)
   where exists (select 1 from res)
  on conflict (run_id, index) do nothing
  returning 1)
select (select count(*) from res)::int as written, (select status from eval_runs where id = $2) as run_status,
       (select count(*) from spent) + (select count(*) from events) + (select count(*) from counter) + (select count(*) from steps) + (select count(*) from async_commit) as side`;

// The run's counters as its results have them (SET clauses over eval_runs aliased r): cases done
// (scored or errored), passed, and the judge's calls, cost and failures. A statement that sets
// them is exact whatever was written before, so it may run at any time, any number of times.
const COUNTERS_FROM_RESULTS = `
  (cases_done, cases_passed, judge_calls, judge_total_cost_usd, judge_failures) = (
    select count(*) filter (where x.status in ('scored', 'errored')), count(*) filter (where x.passed), coalesce(sum(x.judge_calls), 0),
           coalesce(sum(x.judge_cost_usd), 0), coalesce(sum(x.judge_failures), 0)
      from eval_results x where x.run_id = r.id)`;

// Raw: the run loop's statement on the SqlPool (see the header), a named prepared statement.
// A running run's counters, progress (under 100 until it completes) and stage, from its results.
const RUN_COUNTERS_SQL = `
update eval_runs r set cases_done = x.done, cases_passed = x.passed, judge_calls = x.calls, judge_total_cost_usd = x.cost, judge_failures = x.failures,
       progress = least(99, floor(100.0 * x.done / greatest(r.cases_total, 1))::int),
       stage = 'case ' || x.done || '/' || r.cases_total || coalesce(', ' || $2::text, ''), updated_at = now()
  from (select count(*) filter (where status in ('scored', 'errored'))::int as done, count(*) filter (where passed)::int as passed,
               coalesce(sum(judge_calls), 0)::int as calls, coalesce(sum(judge_cost_usd), 0) as cost, coalesce(sum(judge_failures), 0)::int as failures
          from eval_results where run_id = $1) x
 where r.id = $1 and r.status = 'running'
returning r.status`;

/**
 * Sets a running run's counters, progress and stage from its results, the stage followed by `note`
 * when one is given (e.g. "waiting for the provider (rate limited)"); answers its status (null: it
 * is not running any more, and nothing was written).
 */
export async function updateRunCounters(sql: SqlRunner, runId: string, note: string | null = null): Promise<string | null> {
  const [row] = await sql.query<{ status: string }>(RUN_COUNTERS_SQL, [runId, note], 'liya_eval_run_counters');
  return row?.status ?? null;
}

/**
 * Sets the counters of a run that was cancelled or failed while its cases were being written, once
 * they all are: a case whose write began before the run stopped is counted.
 */
export async function settleRunCounters(sql: SqlRunner, runId: string): Promise<void> {
  // Raw: SqlPool (see the header).
  await sql.query(`update eval_runs r set ${COUNTERS_FROM_RESULTS}, updated_at = now() where r.id = $1 and r.status in ('cancelled', 'failed')`, [runId]);
}

/**
 * Writes one case (see CASE_SQL) and answers the run's status after it (null: the run is gone).
 * `check` is written as JSON when it is set.
 */
export async function writeCaseResult(sql: SqlRunner, run: { id: string; tenant_id: string }, resultId: string, w: CaseResultWrite): Promise<string | null> {
  const judgeCost = w.judgeUsage.reduce((sum, u) => sum + (u.costUsd ?? 0), 0);
  const usage = usageRowsOf(w.judgeUsage);
  const [row] = await sql.query<{ written: number; run_status: string | null }>(CASE_SQL, [
    resultId, run.id, w.status, w.output === undefined ? null : boundedJson(w.output), w.check ? JSON.stringify(w.check) : null,
    w.verdict?.score ?? null, w.verdict ? JSON.stringify(w.verdict.dimension_scores) : null, w.verdict?.reasoning ?? null, w.customScore, w.passed,
    Math.round(w.latencyMs), w.costUsd.toFixed(6), w.error?.slice(0, 4000) ?? null, judgeCost.toFixed(6), w.judgeUsage.length, w.judgeFailures,
    usage.json, run.tenant_id, monthKey(), usage.tokens,
    JSON.stringify(w.steps.slice(0, 4).map((s, i) => ({
      ord: i + 1, type: s.type, name: s.name, status: s.status, prompt_tokens: s.promptTokens, completion_tokens: s.completionTokens, cost_usd: s.costUsd.toFixed(6),
      latency_ms: Math.round(s.latencyMs), error: s.error?.slice(0, 4000) ?? null, started_at: s.startedAt.toISOString(),
    }))),
  ], 'liya_eval_case');
  return row?.run_status ?? null;
}

// Raw: the run loop's statements run on the SqlPool (see the header); this one also reads tenants
// and tenant_provider_keys, with the shared TENANT_RUNTIME_COLUMNS list.
const CLAIM_SQL = `
update eval_runs r set status = 'running', stage = coalesce(r.stage, 'starting'), updated_at = now()
  from tenants t
 where r.id = $1 and r.tenant_id = $2 and t.id = r.tenant_id and r.status in ('pending', 'running')
returning r.id::text, r.tenant_id::text, r.suite_id::text, r.name, r.started_at, r.execution_mode, r.domain_key, r.intent_key, r.environment_id::text, r.judge_rubric,
          r.pass_threshold, r.judge_model, r.judge_fallback_models, r.model_override, t.plan as billing_plan, ${TENANT_RUNTIME_COLUMNS},
          r.custom_scorer_expression, r.custom_scorer_webhook_url, r.custom_scorer_webhook_secret, r.intent_definition,
          (select jsonb_object_agg(k.provider, k.encrypted_key) from tenant_provider_keys k where k.tenant_id = r.tenant_id) as provider_keys`;

/** Claims a pending or running run for a slice (running, stage "starting" if none); undefined when it is neither. */
export async function claimRun(sql: SqlRunner, runId: string, tenantId: string): Promise<(ClaimedRun & TenantRuntimeRow) | undefined> {
  const [run] = await sql.query<ClaimedRun & TenantRuntimeRow>(CLAIM_SQL, [runId, tenantId]);
  return run;
}

/** Fails a pending or running run with the error (a JSON object); other runs are left as they are. */
export async function markRunFailed(sql: SqlRunner, runId: string, error: { code: string; message: string }): Promise<void> {
  // Raw: SqlPool (see the header).
  await sql.query(
    `update eval_runs r set status = 'failed', stage = null, completed_at = now(), updated_at = now(), error = $2::jsonb, ${COUNTERS_FROM_RESULTS}
      where r.id = $1 and r.status in ('pending', 'running')`,
    [runId, JSON.stringify(error)],
  );
}

/**
 * Completes a running run whose cases are all written: means over the scored cases, progress 100;
 * with `capReached`, the cases still pending are skipped first.
 */
export async function completeRun(sql: SqlRunner, runId: string, capReached: boolean): Promise<void> {
  // Raw: SqlPool (see the header), and a multi-CTE statement building jsonb.
  await sql.query(
    `with skipped as (update eval_results set status = 'skipped', completed_at = now(),
                             error = 'JUDGE_CAP_REACHED: the monthly judge budget ran out before this case was judged'
                       where run_id = $1 and status = 'pending' and $2::boolean returning 1),
          scored as (select score, dimension_scores from eval_results where run_id = $1 and status = 'scored')
     update eval_runs r set status = 'completed', stage = null, progress = 100, completed_at = now(), updated_at = now(),
            judge_cap_reached = judge_cap_reached or $2::boolean, ${COUNTERS_FROM_RESULTS},
            mean_score = (select avg(score) from scored),
            dimension_scores = (select case when count(*) = 0 then null else jsonb_build_object(
                'correctness', avg((dimension_scores ->> 'correctness')::float), 'completeness', avg((dimension_scores ->> 'completeness')::float),
                'relevance', avg((dimension_scores ->> 'relevance')::float), 'safety', avg((dimension_scores ->> 'safety')::float)) end from scored)
      where r.id = $1 and r.status = 'running' and (select count(*) from skipped) >= 0`,
    [runId, capReached],
  );
}

/** Up to `limit` pending results of the run, in order. */
export async function listPendingResults(sql: SqlRunner, runId: string, limit: number): Promise<PendingCase[]> {
  // Raw: SqlPool (see the header).
  return sql.query<PendingCase>(
    `select id::text, case_id::text, position, input, message, expected_output, output from eval_results where run_id = $1 and status = 'pending' order by position limit $2`,
    [runId, limit],
  );
}

/** How many of the run's results are still pending. */
export async function countPendingResults(sql: SqlRunner, runId: string): Promise<number> {
  // Raw: SqlPool (see the header).
  const [left] = await sql.query<{ n: number }>(`select count(*)::int as n from eval_results where run_id = $1 and status = 'pending'`, [runId]);
  return left.n;
}

/**
 * Whether any job is ready to run that no worker has picked up: a run's slice then gives its job
 * slot back at the end of its turn.
 */
export async function isJobWaiting(sql: SqlRunner): Promise<boolean> {
  // Raw: graphile_worker's own table, which no entity maps (on the SqlPool of the run loop).
  const [row] = await sql.query<{ waiting: boolean }>(
    `select exists (select 1 from graphile_worker._private_jobs where is_available = true and run_at <= now()) as waiting`,
  );
  return row.waiting;
}

/** The tenant's results whose input's `user_id` is the end user. */
export async function listUserResultIds(em: EntityManager, tenantId: string, userId: string): Promise<string[]> {
  const rows = await kyselyOf(em).selectFrom('eval_results').select('id').where('tenant_id', '=', tenantId).where(sql<string>`input ->> 'user_id'`, '=', userId).execute();
  return rows.map((r) => r.id);
}

/**
 * Anonymises the tenant's results `ids`: what the case sent and got back (input, message, output,
 * expected output, the check, the judge's reasoning, the error) is dropped; the scores, verdict,
 * latency and cost stay, so the run's statistics and comparisons still add up. A case not scored
 * yet is skipped (a run in progress then writes nothing for it). How many.
 */
export async function anonymiseResults(em: EntityManager, tenantId: string, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const result = await kyselyOf(em)
    .updateTable('eval_results')
    .set({
      input: sql`'{}'::jsonb`,
      message: null,
      output: null,
      expected_output: null,
      check: null,
      judge_reasoning: null,
      error: null,
      status: sql`case when status = 'pending' then 'skipped' else status end`,
      completed_at: sql`coalesce(completed_at, now())`,
    })
    .where('tenant_id', '=', tenantId)
    .where(anyId('id', ids))
    .executeTakeFirst();
  return Number(result.numUpdatedRows ?? 0n);
}
