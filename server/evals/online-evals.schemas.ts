import { z } from 'zod';
import { noCoerce } from '../common/schemas.js';
import { expectedOutputField } from './evals.schemas.js';

const scalar = z.union([z.string().max(500), z.number(), z.boolean(), z.null()]);

export const onlineTargetSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('intent'), domain_key: z.string().min(1).max(100), intent_key: z.string().min(1).max(100) }),
    z.object({ kind: z.literal('agent'), agent_key: z.string().min(1).max(100) }),
    z.object({ kind: z.literal('workflow_step'), workflow_key: z.string().min(1).max(100), step_id: z.string().min(1).max(100) }),
  ])
  .meta({ id: 'OnlineEvalTarget' });
export type OnlineTarget = z.infer<typeof onlineTargetSchema>;

const filterField = noCoerce(z.record(z.string().min(1).max(100), z.union([scalar, z.array(scalar).min(1).max(50)])))
  .refine((f) => Object.keys(f).length <= 20, 'at most 20 keys')
  .describe('Metadata the run must carry to be sampled: each key equal to the value, or to one of the values a list gives (intent runs: the request\'s metadata). Absent or null: any run');

export const onlineRuleSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    suite_id: z.string().describe('The suite whose scorers score the samples: its judge rubric, pass threshold and custom scorer (expression or webhook)'),
    target: onlineTargetSchema,
    sample_rate: z.number().describe('The share of matching runs scored, 0-1'),
    filter: z.record(z.string(), z.unknown()).nullable(),
    expected_output: z.unknown().nullable().describe('A check every sampled output gets, as a case\'s expected_output (null: none)'),
    daily_cap: z.number().int().describe('Samples scored per UTC day at most; the rest are counted on the day\'s window as samples_capped'),
    enabled: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'OnlineEvalRule' });
export type OnlineRuleDto = z.infer<typeof onlineRuleSchema>;

export const createOnlineRuleInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    suite_id: z.string().max(64),
    target: onlineTargetSchema.optional().describe('Default: the suite\'s intent'),
    sample_rate: noCoerce(z.number().min(0).max(1)).default(0.1),
    filter: filterField.nullable().optional(),
    expected_output: expectedOutputField,
    daily_cap: noCoerce(z.number().int().min(1).max(100_000)).default(1000),
    enabled: noCoerce(z.boolean()).default(true),
  })
  .meta({ id: 'CreateOnlineEvalRuleRequest' });
export type CreateOnlineRuleInput = z.infer<typeof createOnlineRuleInput>;

export const ruleId = z.object({ ruleId: z.string().max(64) });

export const updateOnlineRuleInput = ruleId
  .extend({
    name: z.string().trim().min(1).max(200).optional(),
    suite_id: z.string().max(64).optional(),
    sample_rate: noCoerce(z.number().min(0).max(1)).optional(),
    filter: filterField.nullable().optional(),
    expected_output: expectedOutputField,
    daily_cap: noCoerce(z.number().int().min(1).max(100_000)).optional(),
    enabled: noCoerce(z.boolean()).optional(),
  })
  .meta({ id: 'UpdateOnlineEvalRuleRequest' });
export type UpdateOnlineRuleInput = z.infer<typeof updateOnlineRuleInput>;

export const MONITOR_METRIC_NAMES = ['mean_score', 'pass_rate', 'check_failure_rate', 'cost_usd', 'latency_ms'] as const;

export const monitorSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    rule_id: z.string(),
    metric: z.enum(MONITOR_METRIC_NAMES),
    dimension: z.string().nullable(),
    direction: z.enum(['below', 'above']),
    threshold: z.number(),
    window_minutes: z.number().int(),
    window_samples: z.number().int().nullable(),
    min_samples: z.number().int(),
    confidence: z.number(),
    enabled: z.boolean(),
    state: z.enum(['ok', 'firing']),
    last_value: z.number().nullable().describe('The metric over the window at the last judgement'),
    last_bound: z.number().nullable().describe('The confidence bound the last judgement compared with the threshold'),
    last_samples: z.number().int(),
    evaluated_at: z.string().nullable(),
    changed_at: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'EvalMonitor' });
export type MonitorDto = z.infer<typeof monitorSchema>;

export const createMonitorInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    rule_id: z.string().max(64),
    metric: z.enum(MONITOR_METRIC_NAMES).describe('mean_score (judge, 1-5; or one judge dimension), pass_rate, check_failure_rate (the rule\'s expected_output check), cost_usd and latency_ms (of the production run)'),
    dimension: z.enum(['correctness', 'completeness', 'relevance', 'safety']).nullable().optional().describe('mean_score only: this judge dimension instead of the overall score'),
    direction: z.enum(['below', 'above']).optional().describe('Alert when the metric is below (default for mean_score and pass_rate) or above (default for the others) the threshold'),
    threshold: noCoerce(z.number().finite()),
    window_minutes: noCoerce(z.number().int().min(1).max(10_080)).default(60),
    window_samples: noCoerce(z.number().int().min(10).max(10_000)).nullable().optional().describe('Judge on the most recent samples of the window only'),
    min_samples: noCoerce(z.number().int().min(5).max(10_000)).default(30),
    confidence: noCoerce(z.number().min(0.5).max(0.9999)).default(0.95),
    enabled: noCoerce(z.boolean()).default(true),
  })
  .meta({ id: 'CreateEvalMonitorRequest' });
export type CreateMonitorInput = z.infer<typeof createMonitorInput>;

export const monitorId = z.object({ monitorId: z.string().max(64) });

export const updateMonitorInput = monitorId
  .extend({
    name: z.string().trim().min(1).max(200).optional(),
    threshold: noCoerce(z.number().finite()).optional(),
    window_minutes: noCoerce(z.number().int().min(1).max(10_080)).optional(),
    window_samples: noCoerce(z.number().int().min(10).max(10_000)).nullable().optional(),
    min_samples: noCoerce(z.number().int().min(5).max(10_000)).optional(),
    confidence: noCoerce(z.number().min(0.5).max(0.9999)).optional(),
    enabled: noCoerce(z.boolean()).optional(),
  })
  .meta({ id: 'UpdateEvalMonitorRequest' });
export type UpdateMonitorInput = z.infer<typeof updateMonitorInput>;

export const monitorChangeSchema = z
  .object({ state: z.enum(['ok', 'firing']), value: z.number().nullable(), bound: z.number().nullable(), samples: z.number().int(), threshold: z.number(), at: z.string() })
  .meta({ id: 'EvalMonitorChange' });

export const onlineBudgetSchema = z
  .object({
    monthly_usd: z.number().describe('The cap in force: the tenant\'s own, else the plan\'s default'),
    own_monthly_usd: z.number().nullable().describe('The cap the tenant set (null: the plan\'s default applies)'),
    plan_default_usd: z.number(),
    spent_usd: z.number().describe('Online judge spend this UTC month'),
    plan_judge_budget_usd: z.number().nullable().describe('The plan\'s monthly budget for all judging, offline and online (null: unlimited)'),
    plan_judge_spent_usd: z.number(),
    resets_at: z.string().describe('When this month\'s spend starts again from 0 (UTC)'),
  })
  .meta({ id: 'OnlineJudgeBudget' });

export const setOnlineBudgetInput = z
  .object({ monthly_usd: noCoerce(z.number().min(0).max(1_000_000)).nullable().describe('null: back to the plan\'s default') })
  .meta({ id: 'SetOnlineJudgeBudgetRequest' });
