// One way of recording what a run did, for every kind of run (agents now; workflows and
// evaluations use the same rows): a step row per model or tool call with its tokens, cost,
// latency and error, written together with the usage events of that step when the step ends,
// before the next step starts. A crash loses at most the step in flight.
import type { SqlPool } from '../../db/sql-pool.js';
import { isoRequired } from '../common/schemas.js';
import { jsonSize } from './json-size.js';
import type { UsageEventInput } from '../usage/usage.service.js';
import { insertRunStep, selectRunSteps } from './store/run-steps.js';

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

/**
 * Writes one step (and its usage) in one statement. Idempotent per (run, index): a step written
 * twice (a retried job) is kept once, and its usage is counted once.
 */
export async function recordRunStep(sql: SqlPool, step: RunStepRecord): Promise<void> {
  await insertRunStep(sql, {
    tenantId: step.tenantId, runKind: step.runKind, runId: step.runId, index: step.index, type: step.type, name: step.name.slice(0, 200), status: step.status,
    inputJson: boundedJson(step.input), outputJson: boundedJson(step.output), promptTokens: step.promptTokens, completionTokens: step.completionTokens,
    costUsd: step.costUsd.toFixed(6), latencyMs: Math.round(step.latencyMs), error: step.error?.slice(0, 4000) ?? null, startedAt: step.startedAt,
    completedAt: step.completedAt, stepId: step.stepId ?? null, usage: step.usage ?? [],
  });
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

/** A run's steps in order (the tenant is part of the lookup: another tenant's run has none). */
export async function readRunSteps(sql: SqlPool, tenantId: string, runKind: RunKind, runId: string): Promise<TraceStep[]> {
  const rows = await selectRunSteps(sql, tenantId, runKind, runId);
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
