import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';
import { EVAL_RUN_STATUSES, EVAL_RESULT_STATUSES, EVAL_VERDICTS } from '../column-values.js';

/** A tenant's named set of evaluation cases (the name is unique in the tenant: projects key datasets by it). */
export const EvalDataset = defineEntity({
  name: 'EvalDataset',
  tableName: 'eval_datasets',
  indexes: [{ properties: ['tenant', 'createdAt'] }],
  uniques: [{ properties: ['tenant', 'name'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    name: p.string().length(200),
    description: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IEvalDataset = InferEntity<typeof EvalDataset>;

/**
 * One case: the intent input (and message), and optionally what the output must hold. A case with
 * no dataset belongs to one external_output run (its inline cases).
 */
export const EvalCase = defineEntity({
  name: 'EvalCase',
  tableName: 'eval_cases',
  indexes: [{ properties: ['dataset', 'position'] }, { properties: ['tenant'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    dataset: () => p.manyToOne(EvalDataset).deleteRule('cascade').nullable(),
    /** Order within the dataset (creation order; imports append). */
    position: p.integer().default(0),
    input: p.json<Record<string, unknown>>(),
    message: p.text().nullable(),
    /** A string: the output must contain it; an object: partial deep equality with the output. */
    expectedOutput: p.json<unknown>().nullable(),
    notes: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IEvalCase = InferEntity<typeof EvalCase>;

/** What to evaluate (one intent, fixed at creation) on which dataset, and how to score it; named uniquely in the tenant. */
export const EvalSuite = defineEntity({
  name: 'EvalSuite',
  tableName: 'eval_suites',
  indexes: [{ properties: ['tenant', 'domainKey', 'intentKey'] }],
  uniques: [{ properties: ['tenant', 'name'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    name: p.string().length(200),
    domainKey: p.string().length(100),
    intentKey: p.string().length(100),
    dataset: () => p.manyToOne(EvalDataset).deleteRule('restrict'),
    /** What the judge is told to look for, beyond the default rubric. */
    judgeRubric: p.text().nullable(),
    /** A case passes when its check passes and its judge score reaches this (1-5). */
    passThreshold: p.double().default(4),
    customScorerExpression: p.text().nullable(),
    customScorerLabel: p.string().length(100).nullable(),
    customScorerWebhookUrl: p.text().nullable(),
    /** Signs the scorer webhook's requests; encrypted at rest, never shown. */
    customScorerWebhookSecret: p.text().nullable(),
    /** Models that serve, in order, when the judge's model fails or cools down (null: the tenant's, then the platform's). */
    fallbackModels: p.json<string[]>().nullable(),
    /** No foreign key: a run references its suite, and a suite's runs go with it. */
    baselineRunId: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IEvalSuite = InferEntity<typeof EvalSuite>;


/**
 * One evaluation run. Its cases are eval_results rows, each written when the case is scored, so a
 * run interrupted anywhere continues with the cases not scored yet.
 */
export const EvalRun = defineEntity({
  name: 'EvalRun',
  tableName: 'eval_runs',
  indexes: [
    // The list, newest first, paged by keyset, with and without its suite filter.
    { name: 'eval_runs_tenant_id_suite_id_started_at_id_index', expression: `create index "eval_runs_tenant_id_suite_id_started_at_id_index" on "eval_runs" ("tenant_id", "suite_id", "started_at" desc, "id" desc)` },
    { name: 'eval_runs_tenant_id_started_at_id_index', expression: `create index "eval_runs_tenant_id_started_at_id_index" on "eval_runs" ("tenant_id", "started_at" desc, "id" desc)` },
    // One live window per online rule and UTC day.
    { name: 'eval_runs_online_window_unique', expression: `create unique index "eval_runs_online_window_unique" on "eval_runs" ("online_rule_id", "window_day")` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    suite: () => p.manyToOne(EvalSuite).deleteRule('cascade').nullable(),
    name: p.string().length(200).nullable(),
    domainKey: p.string().length(100).nullable(),
    intentKey: p.string().length(100).nullable(),
    executionMode: p.enum(['liya_intent', 'external_output', 'online'] as const),
    triggeredBy: p.enum(['dashboard', 'api', 'online'] as const),
    status: p.enum(EVAL_RUN_STATUSES).default('pending'),
    stage: p.string().length(200).nullable(),
    progress: p.integer().default(0),
    meanScore: p.double().nullable(),
    dimensionScores: p.json<Record<string, number>>().nullable(),
    casesTotal: p.integer().default(0),
    casesPassed: p.integer().default(0),
    /** Cases scored or errored so far (progress). */
    casesDone: p.integer().default(0),
    /** The environment of the key that started it (usage of its intent calls is booked there). */
    environmentId: p.uuid().nullable(),
    /** The scoring settings the run started with (a later suite edit does not change a run). */
    judgeRubric: p.text().nullable(),
    passThreshold: p.double().default(4),
    customScorerExpression: p.text().nullable(),
    customScorerWebhookUrl: p.text().nullable(),
    /** Encrypted, as on the suite (the same context: it decrypts for the suite's id). */
    customScorerWebhookSecret: p.text().nullable(),
    judgeTotalCostUsd: p.decimal('number').precision(14).scale(6).default(0),
    judgeModel: p.string().length(200).nullable(),
    /** The suite's judge fallbacks when the run started (null: the tenant's, then the platform's). */
    judgeFallbackModels: p.json<string[]>().nullable(),
    judgeCalls: p.integer().default(0),
    judgeFailures: p.integer().default(0),
    judgeCapReached: p.boolean().default(false),
    modelOverride: p.string().length(200).nullable(),
    /** A deployment's gate: the intent definition to run instead of the live one (a draft). */
    intentDefinition: p.json<Record<string, unknown>>().nullable(),
    error: p.json<Record<string, unknown>>().nullable(),
    /** A live window: the online rule whose samples of one UTC day (windowDay) it scores. */
    onlineRuleId: p.uuid().nullable(),
    windowDay: p.string().columnType('date').nullable(),
    /** Samples of the day past the rule's daily cap (not scored). */
    samplesCapped: p.integer().default(0),
    startedAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    completedAt: p.datetime().nullable(),
  },
});
export type IEvalRun = InferEntity<typeof EvalRun>;


/** One case of a run: what the intent answered and how it scored (the target of reviews). */
export const EvalResult = defineEntity({
  name: 'EvalResult',
  tableName: 'eval_results',
  uniques: [{ properties: ['run', 'position'] }],
  indexes: [{ properties: ['tenant'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    run: () => p.manyToOne(EvalRun).deleteRule('cascade'),
    /** The case it came from (no foreign key: editing or deleting a case leaves old results as they were). */
    caseId: p.uuid().nullable(),
    position: p.integer(),
    status: p.enum(EVAL_RESULT_STATUSES).default('pending'),
    input: p.json<Record<string, unknown>>(),
    message: p.text().nullable(),
    output: p.json<unknown>().nullable(),
    expectedOutput: p.json<unknown>().nullable(),
    passed: p.boolean().nullable(),
    score: p.double().nullable(),
    dimensionScores: p.json<Record<string, number>>().nullable(),
    check: p.json<Record<string, unknown>>().nullable(),
    judgeReasoning: p.text().nullable(),
    customScore: p.double().nullable(),
    latencyMs: p.integer().nullable(),
    costUsd: p.decimal('number').precision(14).scale(6).default(0),
    /** The judge's calls, cost and failures on this case, over every attempt: the run's counters sum them. */
    judgeCalls: p.integer().default(0),
    judgeCostUsd: p.decimal('number').precision(14).scale(6).default(0),
    judgeFailures: p.integer().default(0),
    error: p.text().nullable(),
    /** A live window's case: the production run it scores (intent message, agent run or workflow run and step). */
    sourceKind: p.string().columnType('text').nullable(),
    sourceId: p.string().length(100).nullable(),
    sourceLatencyMs: p.integer().nullable(),
    sourceCostUsd: p.decimal('number').precision(14).scale(6).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    completedAt: p.datetime().nullable(),
  },
});
export type IEvalResult = InferEntity<typeof EvalResult>;


/** A person's verdict on one result. */
export const EvalReview = defineEntity({
  name: 'EvalReview',
  tableName: 'eval_reviews',
  indexes: [{ properties: ['result'] }, { properties: ['tenant'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    result: () => p.manyToOne(EvalResult).deleteRule('cascade'),
    reviewerId: p.string().length(320),
    verdict: p.enum(EVAL_VERDICTS),
    correctedScore: p.double().nullable(),
    note: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IEvalReview = InferEntity<typeof EvalReview>;
