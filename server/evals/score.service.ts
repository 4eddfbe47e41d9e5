// Scoring responses produced elsewhere: one response at once (`POST /v1/evals/score`, the check and
// the judge, answered directly), or a batch as an external_output run (`POST /v1/evals/runs`, 202,
// scored on the job runner like a suite's run but with no intent executed).
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { writeUsageEvents, type UsageEventInput } from '../usage/usage.service.js';
import { checkOutput } from './check-output.js';
import { admitEvalRuns, assertEvalRunAllowed } from './eval-limits.js';
import { admittedRun, judgeModelOf, type AdmittedRunRow } from './eval-runs.service.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { judgeAnswer } from './judge.js';

const DEFAULT_PASS_THRESHOLD = 4;

export interface ScoreInput {
  input?: Record<string, unknown> | null;
  response: unknown;
  expected_output?: unknown;
  rubric?: string | null;
  pass_threshold?: number;
}

/** Judges one caller-supplied response (after the check of expected_output); metered like every judge call. */
export async function scoreResponse(em: EntityManager, deps: AppDeps, scope: TenantScope, body: ScoreInput) {
  await assertEvalRunAllowed(deps.sql, scope.tenantId, scope.plan);
  const check = checkOutput(body.expected_output ?? null, body.response);
  const usage: UsageEventInput[] = [];
  try {
    const { verdict } = await judgeAnswer(em, deps, {
      tenantId: scope.tenantId, environmentId: scope.environmentId, model: judgeModelOf(deps), task: 'Answer the input as a helpful assistant would.',
      input: body.input ?? {}, message: null, expected: body.expected_output ?? null, answer: body.response, rubric: body.rubric ?? null,
      usageSink: (event) => usage.push({ ...event, countsAsRequest: false }),
    });
    const threshold = body.pass_threshold ?? DEFAULT_PASS_THRESHOLD;
    return { score: verdict.score, passed: check.passed !== false && verdict.score >= threshold, dimension_scores: verdict.dimension_scores, reasoning: verdict.reasoning, check };
  } finally {
    await em.fork().transactional((tx) => writeUsageEvents(tx, usage));
  }
}

export interface ExternalRunInput {
  name?: string | null;
  cases: { input: Record<string, unknown>; response: unknown; expected_output?: unknown }[];
  rubric?: string | null;
  pass_threshold?: number;
}

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
job as (select graphile_worker.add_job('eval_run', json_build_object('run_id', $1::text, 'tenant_id', $2::text), max_attempts => 25, job_key => 'eval-run:' || $1::text) from run)
select run.*, (select count(*) from results)::int as admitted_cases, (select count(*) from job)::int as queued from run`;

/** An external_output run: 202 with the pending run; its supplied responses are checked and judged. */
export async function startExternalRun(em: EntityManager, deps: AppDeps, scope: TenantScope, body: ExternalRunInput) {
  const id = randomUUID();
  const cases = body.cases.map((c, ord) => ({ ord, input: c.input, response: c.response ?? null, expected_output: c.expected_output ?? null }));
  const [row] = await admitEvalRuns(deps.sql, scope.tenantId, scope.plan, 1, (query) =>
    query<AdmittedRunRow>(START_EXTERNAL_SQL, [
      id, scope.tenantId, JSON.stringify(cases), body.name ?? null, 'api', scope.environmentId, body.rubric ?? null, body.pass_threshold ?? DEFAULT_PASS_THRESHOLD, judgeModelOf(deps),
    ]),
  );
  deps.log.debug({ run: id, cases: row.admitted_cases }, 'external evaluation run queued');
  return admittedRun(em, scope.tenantId, row);
}
