// Live windows: one eval run per online rule and UTC day (execution_mode online), whose cases are
// the rule's sampled production runs. Written by the intake (online-intake.ts) in the transaction
// that takes the samples off the queue; scored by the evaluation engine like any run.
import type { SqlRunner } from './eval-runs.js';

export interface OpenedWindow {
  id: string;
  cases_total: number;
  daily_cap: number;
  expected_output: unknown;
}

// Raw(other): an upsert on the partial unique window key that reopens a finished window, with the
// suite's scoring settings copied as a run's are when it starts (the same columns insertSuiteRun sets).
const OPEN_WINDOW_SQL = `
insert into eval_runs (id, tenant_id, suite_id, name, domain_key, intent_key, execution_mode, triggered_by, status, stage, progress, cases_total, environment_id,
                       judge_rubric, pass_threshold, custom_scorer_expression, custom_scorer_webhook_url, custom_scorer_webhook_secret, judge_model,
                       judge_fallback_models, online_rule_id, window_day, samples_capped, started_at, updated_at)
select gen_random_uuid(), r.tenant_id, s.id, left('online: ' || r.name || ' ' || $3::text, 200), s.domain_key, s.intent_key, 'online', 'online', 'running', 'starting', 0, 0, null,
       s.judge_rubric, s.pass_threshold, s.custom_scorer_expression, s.custom_scorer_webhook_url, s.custom_scorer_webhook_secret, $4::text,
       s.fallback_models, r.id, $3::date, 0, now(), now()
  from online_eval_rules r join eval_suites s on s.id = r.suite_id
 where r.id = $1 and r.tenant_id = $2
on conflict (online_rule_id, window_day) do update set updated_at = now()
returning id::text, cases_total, (select daily_cap from online_eval_rules where id = $1) as daily_cap, (select expected_output from online_eval_rules where id = $1) as expected_output`;

/** The rule's window of `day`, made (running) or as it is; undefined when the rule is gone. */
export async function openWindow(tx: SqlRunner, v: { ruleId: string; tenantId: string; day: string; judgeModel: string }): Promise<OpenedWindow | undefined> {
  const [row] = await tx.query<OpenedWindow>(OPEN_WINDOW_SQL, [v.ruleId, v.tenantId, v.day, v.judgeModel]);
  return row;
}

export interface WindowCase {
  input: Record<string, unknown>;
  output: unknown;
  source_kind: string;
  source_id: string;
  latency_ms: number;
  cost_usd: string;
}

// Raw(other): the cases from a JSON array with their positions after the window's last, and the
// window's totals, in one statement.
const ADD_CASES_SQL = `
with added as (
  insert into eval_results (id, tenant_id, run_id, case_id, position, status, input, message, output, expected_output, source_kind, source_id,
                            source_latency_ms, source_cost_usd, created_at)
  select gen_random_uuid(), $2::uuid, $1::uuid, null, $3::int + c.ord - 1, 'pending', c.input, null, c.output, $5::jsonb, c.source_kind, c.source_id,
         c.latency_ms, c.cost_usd, now()
    from jsonb_to_recordset($4::jsonb) as c(ord int, input jsonb, output jsonb, source_kind text, source_id text, latency_ms int, cost_usd numeric)
  returning 1)
update eval_runs set cases_total = cases_total + (select count(*) from added), samples_capped = samples_capped + $6::int, updated_at = now(),
       -- A finished window with new cases runs again (their job is queued beside); one given none stays as it is.
       status = case when exists (select 1 from added) then 'running' else status end,
       stage = case when exists (select 1 from added) then coalesce(stage, 'starting') else stage end,
       completed_at = case when exists (select 1 from added) then null else completed_at end,
       error = case when exists (select 1 from added) then null else error end
 where id = $1`;

/** Adds `cases` to the window after its `from` first ones, and counts `capped` samples it will not score. */
export async function addWindowCases(tx: SqlRunner, v: { runId: string; tenantId: string; from: number; cases: WindowCase[]; expected: unknown; capped: number }): Promise<void> {
  await tx.query(ADD_CASES_SQL, [v.runId, v.tenantId, v.from, JSON.stringify(v.cases.map((c, i) => ({ ...c, ord: i + 1 }))), v.expected === null || v.expected === undefined ? null : JSON.stringify(v.expected), v.capped]);
}
