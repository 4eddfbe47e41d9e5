// The eval_results table (the result of each case of a run); this module alone writes it, except
// for the statements that write a run with its results (eval-run-admission.ts) and complete or
// resume one (eval-runs.ts). The case statement writes, in one round trip, the case's result, the
// judge's usage_events and usage_counters and the case's run_steps: one case is never half written.
//
// Most statements here run on the SqlPool (the run loop on the job runner, and the API paths that
// shared it), as they did before, built with db/statements.ts; the case statement stays raw SQL.
import { sql } from 'kysely';
import { EvalResult, type IEvalResult, type IEvalRun } from '../../../db/entities/eval.js';
import { countCapped } from '../../../db/keyset.js';
import { anyId } from '../../../db/id-list.js';
import { kyselyOf } from '../../../db/kysely.js';
import { build, runBuilt } from '../../../db/statements.js';
import type { EntityManager } from '../../../db/orm.js';
import type { PageRequest } from '../../common/pagination.js';
import { monthKey } from '../../common/schemas.js';
import { boundedJson } from '../../runs/run-steps.js';
import { ADD_TO_USAGE_COUNTER_SQL, insertUsageEventsSql, quotaCrossedSql, usageRowsOf, type UsageEventInput } from '../../usage/store/usage-events.js';
import type { SqlRunner } from './eval-runs.js';

export type { IEvalResult as ResultRow } from '../../../db/entities/eval.js';

// ---- Reads through the ORM ----------------------------------------------------------------------


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

// ---- The API's statements on the SqlPool --------------------------------------------------------

/** How many errored results each run has (runs without any are absent). */
export async function countErroredResults(sql: SqlRunner, runIds: string[]): Promise<Map<string, number>> {
  if (!runIds.length) return new Map();
  const rows = await runBuilt(sql.query, erroredCountsOf(runIds));
  return new Map(rows.map((r) => [r.run_id, r.n]));
}

function erroredCountsOf(runIds: string[]) {
  return build
    .selectFrom('eval_results')
    .select([sql<string>`run_id::text`.as('run_id'), sql<number>`count(*)::int`.as('n')])
    .where(sql<boolean>`${sql.ref('run_id')} = any(${runIds}::uuid[])`)
    .where('status', '=', sql.lit('errored'))
    .groupBy('run_id');
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
  return (await runBuilt(sql.query, scoredResultsOf(runId))) as ScoredRow[];
}

function scoredResultsOf(runId: string) {
  return build
    .selectFrom('eval_results')
    .select([
      sql<string>`id::text`.as('id'), sql<string | null>`case_id::text`.as('case_id'), 'position', 'score', 'passed', 'dimension_scores', 'input', 'message', 'output',
    ])
    .where('run_id', '=', runId)
    .where('status', '=', sql.lit('scored'))
    .orderBy('position');
}

// ---- The run loop (the job runner) --------------------------------------------------------------

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
  /** The usage of the case's intent run (its model call), metered here with the judge's. */
  intentUsage: UsageEventInput[];
  judgeFailures: number;
  steps: { name: string; type: string; status: string; costUsd: number; promptTokens: number; completionTokens: number; latencyMs: number; error: string | null; startedAt: Date }[];
}

// A hot statement of the run loop, a named prepared statement on the SqlPool (one per case).
// The case's result (only while the run is running, checked under a share lock of the run's row
// that a cancel waits for, and the case not written yet) with its judge's
// calls, cost and failures (added to the pending result when the write is refused: they happened),
// the usage of the case's intent run and judge (metered whatever happens to the case: the calls
// were made) and the case's trace rows; it answers the run's status and the tenant's monthly usage
// after it (the slice's next quota check). The run's row is not written here: its counters and progress are recomputed
// from the results by updateRunCounters (eval-runs.ts), at most every few hundred milliseconds (every case
// updating one row made the cases of a run queue on its lock).
// Asynchronous commit, as an intent run's record: the statement is atomic, so a database crash can
// lose the last fraction of a second of cases (pending again, run again, their lost usage with
// them), never part of a case; waiting for the WAL flush held the tenant's usage counter row
// locked through every flush.
// Raw(other): one statement writes four tables (async commit) in one round trip per case.
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
  insert into usage_counters (tenant_id, month, requests, tokens, cost_usd) select $18, $19, $23::int, $20, $24::numeric where $22::int > 0
  ${ADD_TO_USAGE_COUNTER_SQL}),
${quotaCrossedSql('$23::int', '$20')},
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
       (select month from counter) as month, (select requests from counter)::text as requests, (select tokens from counter)::text as tokens,
       (select count(*) from spent) + (select count(*) from events) + (select count(*) from counter) + (select count(*) from steps) + (select count(*) from async_commit)
         + 0 * (select count(*) from quota_crossed) as side`;

/** What a case write answers: the run's status after it (null: the run is gone) and the tenant's month so far, when the case metered a call. */
export interface CaseWritten {
  runStatus: string | null;
  usage: { month: string; requests: number; tokens: number } | null;
}

/** Writes one case (see CASE_SQL). `check` is written as JSON when it is set. */
export async function writeCaseResult(sql: SqlRunner, run: { id: string; tenant_id: string }, resultId: string, w: CaseResultWrite): Promise<CaseWritten> {
  const judgeCost = w.judgeUsage.reduce((sum, u) => sum + (u.costUsd ?? 0), 0);
  const usage = usageRowsOf([...w.intentUsage, ...w.judgeUsage]);
  const [row] = await sql.query<{ written: number; run_status: string | null; month: string | null; requests: string | null; tokens: string | null }>(CASE_SQL, [
    resultId, run.id, w.status, w.output === undefined ? null : boundedJson(w.output), w.check ? JSON.stringify(w.check) : null,
    w.verdict?.score ?? null, w.verdict ? JSON.stringify(w.verdict.dimension_scores) : null, w.verdict?.reasoning ?? null, w.customScore, w.passed,
    Math.round(w.latencyMs), w.costUsd.toFixed(6), w.error?.slice(0, 4000) ?? null, judgeCost.toFixed(6), w.judgeUsage.length, w.judgeFailures,
    usage.json, run.tenant_id, monthKey(), usage.tokens,
    JSON.stringify(w.steps.slice(0, 4).map((s, i) => ({
      ord: i + 1, type: s.type, name: s.name, status: s.status, prompt_tokens: s.promptTokens, completion_tokens: s.completionTokens, cost_usd: s.costUsd.toFixed(6),
      latency_ms: Math.round(s.latencyMs), error: s.error?.slice(0, 4000) ?? null, started_at: s.startedAt.toISOString(),
    }))),
    w.intentUsage.length + w.judgeUsage.length, usage.requests, usage.cost.toFixed(6),
  ], 'liya_eval_case');
  return {
    runStatus: row?.run_status ?? null,
    usage: row?.month ? { month: row.month, requests: Number(row.requests), tokens: Number(row.tokens) } : null,
  };
}

/** Up to `limit` pending results of the run, in order. */
export async function listPendingResults(sql: SqlRunner, runId: string, limit: number): Promise<PendingCase[]> {
  return (await runBuilt(sql.query, pendingResultsOf(runId).limit(limit))) as PendingCase[];
}

function pendingResultsOf(runId: string) {
  return build
    .selectFrom('eval_results')
    .select([sql<string>`id::text`.as('id'), sql<string | null>`case_id::text`.as('case_id'), 'position', 'input', 'message', 'expected_output', 'output'])
    .where('run_id', '=', runId)
    .where('status', '=', sql.lit('pending'))
    .orderBy('position');
}

/** How many of the run's results are still pending. */
export async function countPendingResults(sql: SqlRunner, runId: string): Promise<number> {
  const [left] = await runBuilt(sql.query, pendingCountOf(runId));
  return left.n;
}

function pendingCountOf(runId: string) {
  return build.selectFrom('eval_results').select(sql<number>`count(*)::int`.as('n')).where('run_id', '=', runId).where('status', '=', sql.lit('pending'));
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
