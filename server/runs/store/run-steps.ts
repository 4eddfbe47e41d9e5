// The run_steps rows written one step at a time (agent runs, through server/runs/run-steps.ts) and
// the trace read of every kind of run. Workflow and evaluation runs write their steps inside their
// own run statements (server/workflows/store, server/evals/store). Erasing one end user reads the
// runs their runs started from the steps' outputs and deletes those runs' steps (in its transaction).
import { sql } from 'kysely';
import { build, runBuilt } from '../../../db/statements.js';
import { anyId } from '../../../db/id-list.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { monthKey } from '../../common/schemas.js';
import { ADD_TO_USAGE_COUNTER_SQL, insertUsageEventsSql, quotaCrossedSql, usageRowsOf, type UsageEventInput } from '../../usage/store/usage-events.js';

// Asynchronous commit, like the run rows: see server/agents/agent-run-record.ts.
// Raw(other): a hot statement on the SqlPool (a named prepared statement) that writes the step, its usage
// events and the monthly counter in one round trip.
const STEP_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
step as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at, step_id)
  values (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12, $13, $14, $15, $16, $23)
  on conflict (run_id, index) do nothing
  returning 1
),
events as (${insertUsageEventsSql('$17', 'where exists (select 1 from step)')}
),
counter as (
  insert into usage_counters (tenant_id, month, requests, tokens, cost_usd)
  select $1, $18, $19, $20, $21 where $22 and exists (select 1 from step)
  ${ADD_TO_USAGE_COUNTER_SQL}
),
${quotaCrossedSql('$19', '$20')}
select (select count(*) from step) + (select count(*) from async_commit) + 0 * (select count(*) from quota_crossed) as written`;

/** One step row as stored: input and output already serialised JSON, cost a decimal string. */
export interface NewRunStep {
  tenantId: string;
  runKind: string;
  runId: string;
  index: number;
  type: string;
  name: string;
  status: string;
  inputJson: string;
  outputJson: string;
  promptTokens: number;
  completionTokens: number;
  costUsd: string;
  latencyMs: number;
  error: string | null;
  startedAt: Date;
  completedAt: Date;
  stepId: string | null;
  usage: UsageEventInput[];
}

/**
 * Writes one step and its usage events (and moves the monthly counter) in one statement; a step
 * already there for (run, index) is kept, and its usage is not counted again.
 */
export async function insertRunStep(sql: SqlPool, step: NewRunStep): Promise<void> {
  const { requests, tokens, cost, json } = usageRowsOf(step.usage);
  await sql.query(
    STEP_SQL,
    [
      step.tenantId, step.runKind, step.runId, step.index, step.type, step.name, step.status,
      step.inputJson, step.outputJson, step.promptTokens, step.completionTokens, step.costUsd,
      step.latencyMs, step.error, step.startedAt, step.completedAt,
      json, monthKey(), requests, tokens, cost.toFixed(6), step.usage.length > 0, step.stepId,
    ],
    'liya_run_step',
  );
}

export interface RunStepRow {
  index: number;
  step_id: string | null;
  type: string;
  name: string;
  status: string;
  input: unknown;
  output: unknown;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: string;
  latency_ms: number;
  error: string | null;
  started_at: Date;
  completed_at: Date;
}

/** A run's steps in order (the tenant is part of the lookup: another tenant's run has none). */
export async function selectRunSteps(sql: SqlPool, tenantId: string, runKind: string, runId: string): Promise<RunStepRow[]> {
  return (await runBuilt(sql, runStepsOf(tenantId, runKind, runId))) as RunStepRow[];
}

function runStepsOf(tenantId: string, runKind: string, runId: string) {
  return build
    .selectFrom('run_steps')
    .select([
      'index', 'step_id', 'type', 'name', 'status', 'input', 'output', 'prompt_tokens', 'completion_tokens', sql<string>`cost_usd::text`.as('cost_usd'), 'latency_ms',
      'error', 'started_at', 'completed_at',
    ])
    .where('tenant_id', '=', tenantId)
    .where('run_kind', '=', runKind)
    .where('run_id', '=', runId)
    .orderBy('index');
}

/**
 * The ids the steps of these runs name as `run_id` or `session_id` in their output: the runs (and
 * agent sessions) a step started — an agent's workflow tool, a workflow's ai_agent step.
 */
export async function listStepOutputRefs(em: EntityManager, tenantId: string, runKind: string, runIds: string[]): Promise<string[]> {
  if (!runIds.length) return [];
  // Raw(other): a lateral over two JSON fields of each step, kept to well-formed uuids.
  const { rows } = await sql<{ ref: string }>`
    select distinct r.ref from run_steps s
      cross join lateral (values (s.output ->> 'run_id'), (s.output ->> 'session_id')) as r(ref)
     where s.tenant_id = ${tenantId} and s.run_kind = ${runKind} and s.run_id = any(${runIds}::uuid[])
       and jsonb_typeof(s.output) = 'object' and r.ref ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`.execute(kyselyOf(em));
  return rows.map((r) => r.ref);
}

/** Deletes the steps of these runs of the tenant; how many. */
export async function deleteStepsOfRuns(em: EntityManager, tenantId: string, runKind: string, runIds: string[]): Promise<number> {
  if (!runIds.length) return 0;
  const result = await kyselyOf(em).deleteFrom('run_steps').where('tenant_id', '=', tenantId).where('run_kind', '=', runKind).where(anyId('run_id', runIds)).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
