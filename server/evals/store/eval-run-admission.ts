// Run admission: the statements that start an evaluation run, in the admission's transaction on
// the SqlPool (the tenant's admission lock, its recent API runs, and the three run-admitting
// inserts). Each insert writes, in one statement and one round trip, the run (eval_runs), its
// pending results (eval_results), for a run of inline cases its eval_cases, and its job
// (graphile_worker.add_job): a run is never visible without its cases or its job. They stay raw
// SQL on the SqlPool, the job's add_job call embedded in their text.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { build, runBuilt } from '../../../db/statements.js';
import { evalRunJob } from '../../jobs/contracts.js';
import { addJobSql } from '../../jobs/store/job-queue.js';
import type { SqlRunner } from './eval-runs.js';

/** A run-admitting statement's row: the inserted run's columns plus how many cases and jobs it wrote. */
export type AdmittedRunRow = Record<string, unknown> & { admitted_cases: number; queued: number };

/**
 * Holds the tenant's run-admission lock until the transaction ends: admissions of one tenant, on any
 * process, run one after another.
 */
export async function lockRunAdmission(tx: SqlRunner, tenantId: string): Promise<void> {
  // Raw(advisory-lock): the tenant's admission lock, held until the transaction ends.
  await tx.query('select pg_advisory_xact_lock(hashtextextended($1::text, 20261124))', [tenantId]);
}

/** How many runs the tenant started with API keys in the last minute, and when the oldest of them started. */
export async function countRecentApiRuns(tx: SqlRunner, tenantId: string): Promise<{ n: number; oldest: Date | null }> {
  const [recent] = await runBuilt(
    tx.query,
    build
      .selectFrom('eval_runs')
      .select([sql<number>`count(*)::int`.as('n'), sql<Date | null>`min(started_at)`.as('oldest')])
      .where('tenant_id', '=', tenantId)
      .where('triggered_by', '=', sql.lit('api'))
      .where('started_at', '>', sql<Date>`now() - interval '60 seconds'`),
  );
  return recent;
}

// Raw(graphile-worker): it queues the job with graphile_worker.add_job, in the statement that writes the run.
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

// Raw(graphile-worker): it queues the job with graphile_worker.add_job, in the statement that writes the run.
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

// Raw(graphile-worker): it queues the job with graphile_worker.add_job, in the statement that writes the run.
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
