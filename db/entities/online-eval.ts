import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { EvalSuite } from './eval.js';
import { Tenant } from './tenant.js';

export const ONLINE_TARGET_KINDS = ['intent', 'agent', 'workflow_step'] as const;
export const MONITOR_METRICS = ['mean_score', 'pass_rate', 'check_failure_rate', 'cost_usd', 'latency_ms'] as const;
export const MONITOR_DIRECTIONS = ['below', 'above'] as const;
export const MONITOR_STATES = ['ok', 'firing'] as const;

/**
 * Which production runs are scored, and by which suite's scorers: a target (an intent, an agent, or
 * a workflow's ai_intent step), a sampling rate, a filter on the run's metadata and a daily cap.
 */
export const OnlineEvalRule = defineEntity({
  name: 'OnlineEvalRule',
  tableName: 'online_eval_rules',
  uniques: [{ properties: ['tenant', 'name'] }],
  indexes: [
    {
      name: 'online_eval_rules_target_index',
      expression: `create index "online_eval_rules_target_index" on "online_eval_rules" ("tenant_id", "target_kind", "domain_key", "intent_key") where "enabled"`,
    },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    name: p.string().length(200),
    suite: () => p.manyToOne(EvalSuite).deleteRule('cascade'),
    targetKind: p.enum(ONLINE_TARGET_KINDS),
    domainKey: p.string().length(100).nullable(),
    intentKey: p.string().length(100).nullable(),
    agentKey: p.string().length(100).nullable(),
    workflowKey: p.string().length(100).nullable(),
    stepId: p.string().length(100).nullable(),
    /** The share of matching runs scored, 0-1. */
    sampleRate: p.double(),
    /** Metadata keys and the values a run must carry to be sampled (every one; null: any run). */
    filter: p.json<Record<string, unknown>>().nullable(),
    /** The check every sampled output gets (as a case's expected_output); null: no check. */
    expectedOutput: p.json<unknown>().nullable(),
    /** Samples scored per UTC day at most; the rest are counted as capped. */
    dailyCap: p.integer(),
    enabled: p.boolean().default(true),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IOnlineEvalRule = InferEntity<typeof OnlineEvalRule>;

/**
 * A sampled production run waiting to be scored: written by the run's own statement, taken by the
 * scoring job. The row is a queue entry on the run's hot path, so it carries no foreign keys (each
 * would be a lookup and a row lock in every sampled run's statement) and one index, its primary key
 * (tenant, a rising id): deleting a rule deletes its samples, the intake drops any left of a rule
 * gone, and a tenant's deletion removes its rows by tenant_id (server/tenants/tenant-archive.ts).
 */
export const OnlineEvalSample = defineEntity({
  name: 'OnlineEvalSample',
  tableName: 'online_eval_samples',
  properties: {
    tenant: () => p.manyToOne(Tenant).primary().createForeignKeyConstraint(false),
    id: p.bigint().primary().autoincrement(),
    rule: () => p.manyToOne(OnlineEvalRule).createForeignKeyConstraint(false),
    sourceKind: p.string().columnType('text'),
    sourceId: p.string().length(100),
    /** The run's input as the model saw it (after the guardrails' redaction). */
    input: p.json<Record<string, unknown>>(),
    /** The answer as the caller got it (after the post_llm guardrails). */
    output: p.json<unknown>().nullable(),
    latencyMs: p.integer().default(0),
    costUsd: p.decimal('number').precision(14).scale(6).default(0),
    createdAt: p.datetime().defaultRaw('now()'),
  },
});

/**
 * A watch over a rule's scored samples: a metric over a sliding window, judged against a threshold
 * on a time-uniform confidence bound, with a minimum sample count (server/evals/monitor-statistics.ts).
 */
export const EvalMonitor = defineEntity({
  name: 'EvalMonitor',
  tableName: 'eval_monitors',
  uniques: [{ properties: ['tenant', 'name'] }],
  indexes: [{ properties: ['rule'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    rule: () => p.manyToOne(OnlineEvalRule).deleteRule('cascade'),
    name: p.string().length(200),
    metric: p.enum(MONITOR_METRICS),
    /** mean_score only: a judge dimension instead of the overall score. */
    dimension: p.string().length(50).nullable(),
    direction: p.enum(MONITOR_DIRECTIONS),
    threshold: p.double(),
    windowMinutes: p.integer(),
    /** The most recent samples of the window to judge on (null: all of them). */
    windowSamples: p.integer().nullable(),
    minSamples: p.integer(),
    confidence: p.double(),
    enabled: p.boolean().default(true),
    state: p.enum(MONITOR_STATES).default('ok'),
    lastValue: p.double().nullable(),
    lastBound: p.double().nullable(),
    lastN: p.integer().default(0),
    evaluatedAt: p.datetime().nullable(),
    changedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IEvalMonitor = InferEntity<typeof EvalMonitor>;

/** A monitor's state change (fired, resolved), with the figures it was decided on. */
export const EvalMonitorChange = defineEntity({
  name: 'EvalMonitorChange',
  tableName: 'eval_monitor_changes',
  indexes: [{ name: 'eval_monitor_changes_monitor_id_at_index', expression: `create index "eval_monitor_changes_monitor_id_at_index" on "eval_monitor_changes" ("monitor_id", "at" desc, "id" desc)` }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    monitor: () => p.manyToOne(EvalMonitor).deleteRule('cascade'),
    state: p.enum(MONITOR_STATES),
    value: p.double().nullable(),
    bound: p.double().nullable(),
    n: p.integer(),
    threshold: p.double(),
    at: p.datetime().defaultRaw('now()'),
  },
});
