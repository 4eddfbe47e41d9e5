// One way of recording what a run did, for every kind of run (agents now; workflows and
// evaluations use the same rows): a step row per model or tool call with its tokens, cost,
// latency and error, written together with the usage events of that step when the step ends,
// before the next step starts. A crash loses at most the step in flight.
import type { SqlPool } from '../../db/sql-pool.js';
import { isoRequired, monthKey } from '../common/schemas.js';
import { jsonSize } from './json-size.js';
import { ADD_TO_USAGE_COUNTER_SQL, insertUsageEventsSql, usageRowsOf, type UsageEventInput } from '../usage/usage.service.js';

export type RunKind = 'agent' | 'workflow' | 'eval';

export interface RunStepRecord {
  tenantId: string;
  runKind: RunKind;
  runId: string;
  index: number;
  type: string;
  name: string;
  /** The workflow step this row is the result of (workflow runs). */
  stepId?: string | null;
  status: string;
  input: unknown;
  output: unknown;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  latencyMs: number;
  error: string | null;
  startedAt: Date;
  completedAt: Date;
  /** Usage events of the step (model calls), written in the same statement. */
  usage?: UsageEventInput[];
}

/** Longest JSON kept per step input or output; a longer value is stored as a truncated preview. */
export const STEP_VALUE_MAX_CHARS = 64 * 1024;

/** The value itself when its JSON is at most STEP_VALUE_MAX_CHARS long, else a preview of it (its size measured without building huge JSON). */
export function boundedValue(value: unknown): unknown {
  const size = jsonSize(value === undefined ? null : value, PREVIEW_SOURCE_MAX_CHARS);
  if (size <= STEP_VALUE_MAX_CHARS) return value === undefined ? null : value;
  // Serialised only when it is not far larger than the preview: a huge value is described, not copied.
  if (size > PREVIEW_SOURCE_MAX_CHARS) return { truncated: true, chars: `more than ${PREVIEW_SOURCE_MAX_CHARS}`, preview: null };
  const text = JSON.stringify(value);
  return { truncated: true, chars: text.length, preview: text.slice(0, STEP_VALUE_MAX_CHARS) };
}

/** A larger value is not serialised for its preview. */
const PREVIEW_SOURCE_MAX_CHARS = 16 * STEP_VALUE_MAX_CHARS;

export function boundedJson(value: unknown): string {
  return JSON.stringify(boundedValue(value));
}

// Asynchronous commit, like the run rows: see server/agents/agent-run-record.ts.
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
  returning 1
)
select (select count(*) from step) + (select count(*) from async_commit) as written`;

/**
 * Writes one step (and its usage) in one statement. Idempotent per (run, index): a step written
 * twice (a retried job) is kept once, and its usage is counted once.
 */
export async function recordRunStep(sql: SqlPool, step: RunStepRecord): Promise<void> {
  const usage = step.usage ?? [];
  const { requests, tokens, cost, json } = usageRowsOf(usage);
  await sql.query(
    STEP_SQL,
    [
      step.tenantId, step.runKind, step.runId, step.index, step.type, step.name.slice(0, 200), step.status,
      boundedJson(step.input), boundedJson(step.output), step.promptTokens, step.completionTokens, step.costUsd.toFixed(6),
      Math.round(step.latencyMs), step.error?.slice(0, 4000) ?? null, step.startedAt, step.completedAt,
      json, monthKey(), requests, tokens, cost.toFixed(6), usage.length > 0, step.stepId ?? null,
    ],
    'liya_run_step',
  );
}

export interface TraceStep {
  index: number;
  step_id: string | null;
  type: string;
  name: string;
  status: string;
  input: unknown;
  output: unknown;
  tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
  latency_ms: number;
  started_at: string;
  completed_at: string;
  error: string | null;
}

interface StepRow {
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
export async function readRunSteps(sql: SqlPool, tenantId: string, runKind: RunKind, runId: string): Promise<TraceStep[]> {
  const rows = await sql.query<StepRow>(
    `select index, step_id, type, name, status, input, output, prompt_tokens, completion_tokens, cost_usd::text as cost_usd, latency_ms, error, started_at, completed_at
       from run_steps where tenant_id = $1 and run_kind = $2 and run_id = $3 order by index`,
    [tenantId, runKind, runId],
  );
  return rows.map((r) => ({
    index: r.index,
    step_id: r.step_id,
    type: r.type,
    name: r.name,
    status: r.status,
    input: r.input,
    output: r.output,
    tokens: r.prompt_tokens + r.completion_tokens,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    cost_usd: Number(r.cost_usd),
    latency_ms: r.latency_ms,
    started_at: isoRequired(r.started_at),
    completed_at: isoRequired(r.completed_at),
    error: r.error,
  }));
}
