// The eval_runs table (a run: its settings, status, counters and progress); this module alone
// writes it, except for the run-admitting statements (eval-run-admission.ts), which insert a run
// with its cases and results in one statement. Two statements here write more than the run's row,
// each in one round trip: completing a run whose judge budget ran out skips its pending
// eval_results, and a resume resets the eval_results of the cases that run again, deletes their
// run_steps and queues the run's job (graphile_worker.add_job).
//
// Most statements here run on the SqlPool (the run loop on the job runner, and the API paths that
// shared it), as they did before, built with db/statements.ts; those that complete a run (a CTE
// that skips pending results and averages the scores into jsonb), claim one with its tenant's
// runtime columns, or call graphile_worker stay raw SQL.
import { sql } from 'kysely';
import { EvalRun, type IEvalRun, type IEvalSuite } from '../../../db/entities/eval.js';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import { kyselyOf } from '../../../db/kysely.js';
import { build, runBuilt, statement } from '../../../db/statements.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { PageRequest } from '../../common/pagination.js';
import { TENANT_RUNTIME_COLUMNS, type TenantRuntimeRow } from '../../tenants/tenant-runtime.js';
import { evalRunJob } from '../../jobs/contracts.js';
import { addJobSql, removeJobSql } from '../../jobs/store/job-queue.js';

export type { IEvalRun as RunRow } from '../../../db/entities/eval.js';

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

/** The live windows of an online rule, newest day first (at most `limit`). */
export async function listRuleWindows(em: EntityManager, tenantId: string, ruleId: string, limit: number): Promise<IEvalRun[]> {
  return em.find(EvalRun, { tenant: tenantId, onlineRuleId: ruleId }, { orderBy: { windowDay: 'desc' }, limit });
}

/** How many runs `listTenantRuns` pages through, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countTenantRuns(em: EntityManager, tenantId: string, suiteId: string | undefined, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), tenantRuns(em, tenantId, suiteId).select(sql.lit(1).as('one')), cap);
}

/** A run entity from a row of eval_runs' columns (as a statement returned them). */
export function runFromRow(em: EntityManager, columns: Record<string, unknown>): IEvalRun {
  return em.map(EvalRun, columns);
}

/**
 * Cancels the run when it is pending, running or failed; false when it was not (it changed nothing).
 * The status changes once the case writes in flight are committed (they hold the run's row in share
 * mode), and the counters are then set from the results, in a second statement that sees them.
 */
export async function cancelActiveRun(sql: SqlPool, runId: string, tenantId: string): Promise<boolean> {
  return sql.transaction(async (query) => {
    const rows = await runBuilt(query, cancelOf(runId, tenantId));
    if (!rows.length) return false;
    await runBuilt(query, build.updateTable('eval_runs as r').from(resultTotalsOf(runId)).set(COUNTERS_FROM_TOTALS).where('r.id', '=', runId));
    return true;
  });
}

function cancelOf(runId: string, tenantId: string) {
  return build
    .updateTable('eval_runs')
    .set({ status: sql.lit('cancelled'), stage: sql.lit(null), completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', runId)
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`status in ('pending', 'running', 'failed')`)
    .returning(sql.lit(1).as('one'));
}

/** Drops the run's queued job, if there is one (best effort: errors are ignored). */
export async function removeRunJob(sql: SqlRunner, runId: string): Promise<void> {
  // Raw(graphile-worker): graphile_worker.remove_job.
  await sql.query(`select ${removeJobSql(evalRunJob, '$1::text')}`, [runId]).catch(() => undefined);
}

/**
 * Puts a failed run back in the queue: the run pending again, its errored and skipped results
 * pending (with their trace rows deleted), and its job. Changes nothing unless the run was failed.
 */
export async function resumeFailedRun(sql: SqlRunner, runId: string, tenantId: string): Promise<void> {
  // Raw(graphile-worker): it queues the job with graphile_worker.add_job, in the statement that resets the run.
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

// ---- The run loop (the job runner) --------------------------------------------------------------

/** A run as a slice claims it: its settings, its tenant's plan and runtime settings, and the tenant's provider keys. */
export interface ClaimedRun {
  id: string;
  tenant_id: string;
  suite_id: string | null;
  name: string | null;
  started_at: Date;
  execution_mode: 'liya_intent' | 'external_output' | 'online';
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
  /** A live window: its online rule. */
  online_rule_id: string | null;
  /** The tenant's own monthly cap on online judging (null: the plan's default). */
  online_judge_budget_usd: string | null;
}


// The run's counters as its results have them (SET clauses over eval_runs aliased r), for the raw
// statement that completes a run (resultTotalsOf is the same for the built ones): cases done
// (scored or errored), passed, and the judge's calls, cost and failures. A statement that sets
// them is exact whatever was written before, so it may run at any time, any number of times.
const COUNTERS_FROM_RESULTS = `
  (cases_done, cases_passed, judge_calls, judge_total_cost_usd, judge_failures) = (
    select count(*) filter (where x.status in ('scored', 'errored')), count(*) filter (where x.passed), coalesce(sum(x.judge_calls), 0),
           coalesce(sum(x.judge_cost_usd), 0), coalesce(sum(x.judge_failures), 0)
      from eval_results x where x.run_id = r.id)`;

/**
 * The run's totals as its results have them, as the subquery `x` of an update of eval_runs `r`:
 * cases done (scored or errored), passed, and the judge's calls, cost and failures. One aggregate
 * row, whatever the run has.
 */
function resultTotalsOf(runId: string) {
  return build
    .selectFrom('eval_results')
    .select([
      sql<number>`count(*) filter (where status in ('scored', 'errored'))::int`.as('done'),
      sql<number>`count(*) filter (where passed)::int`.as('passed'),
      sql<number>`coalesce(sum(judge_calls), 0)::int`.as('calls'),
      sql<number>`coalesce(sum(judge_cost_usd), 0)`.as('cost'),
      sql<number>`coalesce(sum(judge_failures), 0)::int`.as('failures'),
    ])
    .where('run_id', '=', runId)
    .as('x');
}

/** The run's counters set from resultTotalsOf (as COUNTERS_FROM_RESULTS does for the raw statement). */
const COUNTERS_FROM_TOTALS = {
  cases_done: sql<number>`x.done`,
  cases_passed: sql<number>`x.passed`,
  judge_calls: sql<number>`x.calls`,
  judge_total_cost_usd: sql<number>`x.cost`,
  judge_failures: sql<number>`x.failures`,
};

// A running run's counters, progress (under 100 until it completes) and stage, from its results;
// the run loop's statement on the SqlPool, a named prepared statement.
const RUN_COUNTERS = statement<{ runId: string; note: string | null }>()('liya_eval_run_counters', (p) =>
  build
    .updateTable('eval_runs as r')
    .from(resultTotalsOf(p.runId))
    .set({
      ...COUNTERS_FROM_TOTALS,
      progress: sql`least(99, floor(100.0 * x.done / greatest(r.cases_total, 1))::int)`,
      stage: sql`'case ' || x.done || '/' || r.cases_total || coalesce(', ' || ${p.note}::text, '')`,
      updated_at: sql`now()`,
    })
    .where('r.id', '=', p.runId)
    .where('r.status', '=', sql.lit('running'))
    .returning('r.status'),
);

/**
 * Sets a running run's counters, progress and stage from its results, the stage followed by `note`
 * when one is given (e.g. "waiting for the provider (rate limited)"); answers its status (null: it
 * is not running any more, and nothing was written).
 */
export async function updateRunCounters(sql: SqlRunner, runId: string, note: string | null = null): Promise<string | null> {
  const [row] = await RUN_COUNTERS.run(sql.query, { runId, note });
  return row?.status ?? null;
}

/**
 * Sets the counters of a run that was cancelled or failed while its cases were being written, once
 * they all are: a case whose write began before the run stopped is counted.
 */
export async function settleRunCounters(sql: SqlRunner, runId: string): Promise<void> {
  await runBuilt(sql.query, settleOf(runId));
}

function settleOf(runId: string) {
  return build
    .updateTable('eval_runs as r')
    .from(resultTotalsOf(runId))
    .set({ ...COUNTERS_FROM_TOTALS, updated_at: sql<Date>`now()` })
    .where('r.id', '=', runId)
    .where(sql<boolean>`r.status in ('cancelled', 'failed')`);
}

// Raw(other): the run loop's statements run on the SqlPool (see the header); this one also reads tenants
// and tenant_provider_keys, with the shared TENANT_RUNTIME_COLUMNS list.
const CLAIM_SQL = `
update eval_runs r set status = 'running', stage = coalesce(r.stage, 'starting'), completed_at = null, updated_at = now()
  from tenants t
 where r.id = $1 and r.tenant_id = $2 and t.id = r.tenant_id
   and (r.status in ('pending', 'running')
        -- A live window its last slice completed while the intake was adding cases (the completion's
        -- check ran on a snapshot from before they were committed): their job reopens it.
        or (r.execution_mode = 'online' and r.status = 'completed' and exists (select 1 from eval_results p where p.run_id = r.id and p.status = 'pending')))
returning r.id::text, r.tenant_id::text, r.suite_id::text, r.name, r.started_at, r.execution_mode, r.domain_key, r.intent_key, r.environment_id::text, r.judge_rubric,
          r.pass_threshold, r.judge_model, r.judge_fallback_models, r.model_override, t.plan as billing_plan, ${TENANT_RUNTIME_COLUMNS},
          r.custom_scorer_expression, r.custom_scorer_webhook_url, r.custom_scorer_webhook_secret, r.intent_definition,
          r.online_rule_id::text, t.online_judge_budget_usd::text,
          (select jsonb_object_agg(k.provider, k.encrypted_key) from tenant_provider_keys k where k.tenant_id = r.tenant_id) as provider_keys`;

/** Claims a pending or running run for a slice (running, stage "starting" if none); undefined when it is neither. */
export async function claimRun(sql: SqlRunner, runId: string, tenantId: string): Promise<(ClaimedRun & TenantRuntimeRow) | undefined> {
  const [run] = await sql.query<ClaimedRun & TenantRuntimeRow>(CLAIM_SQL, [runId, tenantId]);
  return run;
}

/** Fails a pending or running run with the error (a JSON object); other runs are left as they are. */
export async function markRunFailed(sql: SqlRunner, runId: string, error: { code: string; message: string }): Promise<void> {
  await runBuilt(sql.query, failOf(runId, JSON.stringify(error)));
}

function failOf(runId: string, errorJson: string) {
  return build
    .updateTable('eval_runs as r')
    .from(resultTotalsOf(runId))
    .set({
      status: sql.lit('failed'),
      stage: sql.lit(null),
      completed_at: sql<Date>`now()`,
      updated_at: sql<Date>`now()`,
      error: sql`${errorJson}::jsonb`,
      ...COUNTERS_FROM_TOTALS,
    })
    .where('r.id', '=', runId)
    .where(sql<boolean>`r.status in ('pending', 'running')`);
}

/**
 * Completes a running run whose cases are all written: means over the scored cases, progress 100;
 * with `capReached`, the cases still pending are skipped first.
 */
export async function completeRun(sql: SqlRunner, runId: string, capReached: boolean): Promise<void> {
  // Raw(other): SqlPool (see the header), and a multi-CTE statement building jsonb.
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
      where r.id = $1 and r.status = 'running' and (select count(*) from skipped) >= 0
        -- A live window may have been given new cases since its last were counted: it stays running for them.
        and ($2::boolean or not exists (select 1 from eval_results p where p.run_id = $1 and p.status = 'pending'))`,
    [runId, capReached],
  );
}

/**
 * Whether any job is ready to run that no worker has picked up: a run's slice then gives its job
 * slot back at the end of its turn.
 */
export async function isJobWaiting(sql: SqlRunner): Promise<boolean> {
  // Raw(graphile-worker): graphile_worker's own table, which no entity maps (on the SqlPool of the run loop).
  const [row] = await sql.query<{ waiting: boolean }>(
    `select exists (select 1 from graphile_worker._private_jobs where is_available = true and run_at <= now()) as waiting`,
  );
  return row.waiting;
}
