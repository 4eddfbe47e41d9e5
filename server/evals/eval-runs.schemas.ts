import { z } from 'zod';
import { EVAL_RESULT_STATUSES, EVAL_RUN_STATUSES, EVAL_VERDICTS } from '../../db/entities/eval.js';

const dimensions = z.record(z.string(), z.number());

export const evalRunSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    suite_id: z.string().nullable(),
    name: z.string().nullable(),
    domain_key: z.string().nullable(),
    intent_key: z.string().nullable(),
    execution_mode: z.enum(['liya_intent', 'external_output']),
    triggered_by: z.enum(['dashboard', 'api']),
    status: z.enum(EVAL_RUN_STATUSES),
    stage: z.string().nullable().describe('While running: "case <done>/<total>"'),
    progress: z.number().int().describe('0-100'),
    mean_score: z.number().nullable().describe('Mean judge score (1-5) of the scored cases'),
    dimension_scores: dimensions.nullable().describe('Mean of each judge dimension over the scored cases'),
    cases_total: z.number().int(),
    cases_done: z.number().int().describe('Cases scored or errored so far'),
    cases_passed: z.number().int(),
    cases_errored: z.number().int(),
    pass_threshold: z.number(),
    started_at: z.string(),
    completed_at: z.string().nullable(),
    error: z.record(z.string(), z.unknown()).nullable(),
    judge_total_cost_usd: z.number().nullable(),
    judge_model: z.string().nullable(),
    judge_calls: z.number().int().nullable(),
    judge_failures: z.number().int().nullable(),
    judge_cap_reached: z.boolean(),
    model_override: z.string().nullable(),
  })
  .meta({ id: 'EvalRun' });
export type EvalRunDto = z.infer<typeof evalRunSchema>;

export const reviewSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    run_result_id: z.string(),
    reviewer_id: z.string(),
    verdict: z.enum(EVAL_VERDICTS),
    corrected_score: z.number().nullable(),
    note: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'EvalReview' });
export type ReviewDto = z.infer<typeof reviewSchema>;

export const evalResultSchema = z
  .object({
    id: z.string(),
    run_id: z.string(),
    case_id: z.string().nullable(),
    position: z.number().int(),
    status: z.enum(EVAL_RESULT_STATUSES).describe('pending (not run yet), scored, errored, or skipped (the judge budget ran out first)'),
    input: z.record(z.string(), z.unknown()),
    message: z.string().nullable(),
    output: z.unknown().nullable(),
    expected_output: z.unknown().nullable(),
    passed: z.boolean().nullable(),
    score: z.number().nullable(),
    dimension_scores: dimensions.nullable(),
    check: z
      .object({ kind: z.enum(['none', 'substring', 'partial_match']), passed: z.boolean().nullable(), detail: z.string().optional() })
      .nullable(),
    judge_reasoning: z.string().nullable(),
    custom_score: z.number().nullable(),
    latency_ms: z.number().int().nullable(),
    cost_usd: z.number(),
    error: z.string().nullable(),
    reviews: z.array(reviewSchema),
  })
  .meta({ id: 'EvalResult' });
export type EvalResultDto = z.infer<typeof evalResultSchema>;

export const runId = z.object({ id: z.string().max(64) });

export const startSuiteRunInput = z
  .object({
    id: z.string().max(64),
    model: z.string().trim().min(1).max(200).optional().describe('Run the intent on this model instead of its own (stored as model_override)'),
  })
  .strict()
  .meta({ id: 'StartEvalRunRequest' });

export const listRunsInput = z.object({
  suite_id: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).default(50).transform((n) => Math.min(n, 200)),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
});

export const listResultsInput = runId.extend({
  limit: z.coerce.number().int().min(1).default(1000).transform((n) => Math.min(n, 5000)),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
});

export const baselineInput = z
  .object({
    id: z.string().max(64),
    run_id: z.string().max(64).nullable().describe('A completed run of this suite, or null to clear the baseline'),
  })
  .strict()
  .meta({ id: 'SetEvalBaselineRequest' });
