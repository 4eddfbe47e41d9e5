import { z } from 'zod';
import { EVAL_RESULT_STATUSES, EVAL_RUN_STATUSES } from '../../db/column-values.js';
import { EVAL_VERDICTS } from '../../db/column-values.js';
import { historyPageQuery } from '../common/pagination.js';
import { bodyNumber, noCoerce } from '../common/schemas.js';
import { expectedOutputField, jsonObject, MAX_CASES_PER_REQUEST } from './evals.schemas.js';

const dimensions = z.record(z.string(), z.number());

export const evalRunSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    suite_id: z.string().nullable(),
    name: z.string().nullable(),
    domain_key: z.string().nullable(),
    intent_key: z.string().nullable(),
    execution_mode: z.enum(['liya_intent', 'external_output', 'online']).describe('online: a live window, the sampled production runs of one online rule and UTC day'),
    triggered_by: z.enum(['dashboard', 'api', 'online']),
    status: z.enum(EVAL_RUN_STATUSES),
    stage: z.string().nullable().describe('While running: "case <done>/<total>", followed by ", waiting for the provider (rate limited)" (or another reason) while its cases wait out a provider failure'),
    progress: z.number().int().describe('0-100. While running, progress, stage and the case counters are recomputed from the stored results at most every 250 ms (so they may trail the newest case by that much); they are exact whenever the status changes'),
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
    judge_fallback_models: z.array(z.string()).nullable().describe('The judge\'s fallback chain, as the suite had it when the run started (null: the tenant\'s, then the platform\'s)'),
    judge_calls: z.number().int().nullable(),
    judge_failures: z.number().int().nullable(),
    judge_cap_reached: z.boolean(),
    model_override: z.string().nullable(),
    online_rule_id: z.string().nullable().describe('A live window: its online rule (null once the rule is deleted, and for other runs)'),
    window_day: z.string().nullable().describe('A live window: its UTC day (YYYY-MM-DD)'),
    samples_capped: z.number().int().describe('A live window: samples of the day past the rule\'s daily_cap, not scored'),
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
    source: z
      .object({
        kind: z.string().describe('intent (the message id), workflow_step (<run id>/<step id>) or agent (the agent run id)'),
        id: z.string(),
        latency_ms: z.number().int().nullable().describe('The production run\'s latency'),
        cost_usd: z.number().nullable().describe('The production run\'s model cost'),
      })
      .nullable()
      .describe('A live window\'s case, or a replay of one: the production run it scores'),
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
  .meta({ id: 'StartEvalRunRequest' });

export const listRunsInput = z.object({ suite_id: z.string().max(64).optional(), ...historyPageQuery });

export const listResultsInput = runId.extend(historyPageQuery);

export const baselineInput = z
  .object({
    id: z.string().max(64),
    run_id: z.string().max(64).nullable().describe('A completed run of this suite, or null to clear the baseline'),
  })
  .meta({ id: 'SetEvalBaselineRequest' });

export const compareInput = z.object({ id: z.string().max(64), against: z.string().max(64).optional().describe('The run to compare with (required)') });

const intervalSchema = z.tuple([z.number(), z.number()]).nullable();

export const comparisonSchema = z
  .object({
    run_id: z.string(),
    against: z.string(),
    pairing: z
      .enum(['paired', 'unpaired'])
      .describe(
        'paired: the statistics are over the cases both runs scored (paired by dataset case; cases without one by position, only where both runs hold the same input, as a window and its replay do). unpaired: the runs share no case (a live window and a suite run, two windows of different days), so each run\'s scores are a sample of their own: mean_diff is the difference of the means, ci95 a bootstrap resampling each run on its own (seeds 42 and 43), p_value a two-sided Mann-Whitney U test (tie-corrected normal approximation, continuity correction), and n_shared, wins, losses, ties and cases are empty. An unpaired comparison of more than 200,000 scores over the five series (two runs of 20,000 cases) answers 422 UNPROCESSABLE',
      ),
    n_a: z.number().int().describe('Cases this run scored'),
    n_b: z.number().int().describe('Cases the other run scored'),
    n_shared: z.number().int().describe('Cases scored in both runs (paired by dataset case; cases without one by position where the input is the same); 0 when unpaired'),
    mean_diff: z.number().nullable().describe('Mean of (this run - against) judge scores over the shared cases; unpaired: mean of this run minus mean of the other'),
    ci95: intervalSchema.describe('95% percentile bootstrap interval of mean_diff (10,000 resamples, seed 42); null under 2 pairs (unpaired: under 2 scores in either run)'),
    p_value: z.number().nullable().describe('Two-sided Wilcoxon signed-rank test (Pratt zero handling, continuity correction); null under 2 pairs, 1 when nothing changed. Unpaired: two-sided Mann-Whitney U; null under 2 scores in either run, 1 when every score is the same'),
    test: z.string().describe('wilcoxon_signed_rank_pratt (paired) or mann_whitney_u (unpaired)'),
    p_value_method: z.enum(['exact', 'normal_approx']).nullable(),
    wins: z.number().int(),
    losses: z.number().int(),
    ties: z.number().int(),
    pass_rate_diff: z.number().nullable(),
    per_dimension: z.record(
      z.string(),
      z.object({ n_shared: z.number().int(), mean_diff: z.number().nullable(), ci95: intervalSchema, p_value: z.number().nullable(), wins: z.number().int(), losses: z.number().int(), ties: z.number().int() }),
    ),
    cases: z.array(z.object({ case_id: z.string().nullable(), position: z.number().int(), score_a: z.number(), score_b: z.number() })),
  })
  .meta({ id: 'EvalComparison' });
export type EvalComparison = z.infer<typeof comparisonSchema>;

export const pairwiseInput = z.object({ id: z.string().max(64), against: z.string().min(1).max(64) }).meta({ id: 'ComparePairwiseRequest' });

export const pairwiseSchema = z
  .object({
    run_id: z.string(),
    against: z.string(),
    n_shared: z.number().int(),
    judged: z.number().int(),
    judge_failures: z.number().int(),
    judge_cap_reached: z.boolean(),
    wins: z.number().int().describe('Both orders preferred this run'),
    losses: z.number().int().describe('Both orders preferred the other run'),
    ties: z.number().int().describe('The orders disagreed, or both said tie'),
    win_rate: z.number().nullable(),
    position_disagreements: z.number().int().describe('Cases where the two orders named different winners (position bias)'),
    cases: z.array(z.object({ case_id: z.string().nullable(), position: z.number().int(), first_order: z.string(), second_order: z.string(), outcome: z.enum(['win', 'loss', 'tie', 'error']) })),
  })
  .meta({ id: 'EvalPairwiseComparison' });

export const reviewInput = z
  .object({
    resultId: z.string().max(64),
    verdict: z.enum(EVAL_VERDICTS),
    corrected_score: bodyNumber(1, 5).nullable().optional().describe('Required (1-5) when verdict is override; not allowed otherwise'),
    note: z.string().max(5000).nullable().optional(),
  })
  .meta({ id: 'CreateEvalReviewRequest' });

export const reviewId = z.object({ id: z.string().max(64) });


export const scoreInput = z
  .object({
    input: jsonObject.nullable().optional(),
    response: noCoerce(z.union([z.string().min(1).max(200_000), z.record(z.string(), z.unknown()), z.array(z.unknown())])).describe('The answer to score (text or JSON)'),
    expected_output: expectedOutputField,
    rubric: z.string().max(20_000).nullable().optional(),
    pass_threshold: bodyNumber(1, 5).optional().describe('Default 4'),
  })
  .meta({ id: 'EvalScoreRequest' });

export const scoreSchema = z
  .object({
    score: z.number(),
    passed: z.boolean(),
    dimension_scores: z.record(z.string(), z.number()),
    reasoning: z.string(),
    check: z.object({ kind: z.enum(['none', 'substring', 'partial_match']), passed: z.boolean().nullable(), detail: z.string().optional() }),
  })
  .meta({ id: 'EvalScore' });

export const externalRunInput = z
  .object({
    name: z.string().trim().min(1).max(200).nullable().optional(),
    cases: z
      .array(
        z
          .object({
            input: jsonObject,
            response: noCoerce(z.union([z.string().max(200_000), z.record(z.string(), z.unknown()), z.array(z.unknown())])),
            expected_output: expectedOutputField,
          }),
      )
      .min(1)
      .max(MAX_CASES_PER_REQUEST),
    rubric: z.string().max(20_000).nullable().optional(),
    pass_threshold: bodyNumber(1, 5).optional(),
  })
  .meta({ id: 'CreateExternalEvalRunRequest' });

export const compareModelsInput = z
  .object({ id: z.string().max(64), model_a: z.string().trim().min(1).max(200), model_b: z.string().trim().min(1).max(200) })
  .meta({ id: 'CompareModelsRequest' });
