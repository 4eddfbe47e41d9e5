import { z } from 'zod';
import { HISTORY_LIST_NOTE, historyPaginationSchema } from '../common/pagination.js';
import { envelope, ok, okEmpty, pageQuery, pageToLimitOffset, paginationSchema } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import {
  addCase, cloneTemplate, createDataset, deleteCase, deleteDataset, getDataset, importCases, listDatasets, listTemplates, updateCase, updateDataset,
} from './datasets.service.js';
import {
  caseId, caseSchema, createCaseInput, createDatasetInput, createSuiteInput, datasetId, datasetSchema, datasetWithCasesSchema, importCasesInput, listSuitesInput,
  suiteId, suiteSchema, templateId, templateSchema, updateCaseInput, updateDatasetInput, updateSuiteInput,
} from './evals.schemas.js';
import { createSuite, deleteSuite, getSuite, listSuites, updateSuite } from './suites.service.js';
import {
  baselineInput, compareInput, compareModelsInput, comparisonSchema, evalResultSchema, evalRunSchema, externalRunInput, listResultsInput, listRunsInput, pairwiseInput,
  pairwiseSchema, reviewId, reviewInput, reviewSchema, runId, scoreInput, scoreSchema, startSuiteRunInput,
} from './eval-runs.schemas.js';
import { cancelRun, compareModels, getRun, listResults, listRuns, listSuiteRuns, resumeRun, setBaseline, startSuiteRun } from './eval-runs.service.js';
import { comparePairwise, compareRuns, MAX_PAIRWISE_CASES } from './compare-runs.js';
import { createReview, deleteReview } from './reviews.service.js';
import { scoreResponse, startExternalRun } from './score.service.js';

const TAGS = ['Evaluations'];
const BASE = '/v1/evals';

const datasetOut = ok(z.object({ dataset: datasetSchema }));
const caseOut = ok(z.object({ case: caseSchema }));
const suiteOut = ok(z.object({ suite: suiteSchema }));
const runOut = ok(z.object({ run: evalRunSchema }));
const runsOut = ok(z.object({ runs: z.array(evalRunSchema), pagination: historyPaginationSchema }));
const RUN_START_ERRORS = ['NOT_FOUND', 'EVALS_NOT_AVAILABLE', 'EVALS_BUDGET_EXCEEDED', 'RATE_LIMITED', 'UNPROCESSABLE'] as const;

// Literal paths (datasets/templates) come before their `{id}` siblings.
export const evalsRouter = router({
  listDatasets: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/datasets`, tags: TAGS, summary: 'Datasets, newest first, with cases_count (no cases); paged by page and pageSize' } })
    .input(z.object(pageQuery))
    .output(ok(z.object({ datasets: z.array(datasetSchema), pagination: paginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listDatasets(ctx.em, ctx.tenantId, pageToLimitOffset(input.page, input.pageSize)))),

  createDataset: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/datasets`, tags: TAGS, summary: 'Create a dataset, optionally with its cases (answers cases_count, not the cases)',
        description: 'Names are unique in the tenant (case-sensitive, after trimming): a taken name is 409 DATASET_NAME_TAKEN with `details.name`.',
      },
      successStatus: 201,
      errors: ['UNPROCESSABLE', 'DATASET_NAME_TAKEN'],
    })
    .input(createDatasetInput)
    .output(datasetOut)
    .mutation(async ({ ctx, input }) => envelope(await createDataset(ctx.em, ctx.tenantId, input))),

  listTemplates: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/datasets/templates`, tags: TAGS, summary: 'Shared starter datasets for the built-in hiring intents' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ templates: z.array(templateSchema) })))
    .query(() => envelope(listTemplates())),

  cloneTemplate: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/datasets/templates/{id}/clone`, tags: TAGS, summary: 'Copy a starter dataset into your datasets (yours to edit)',
        description: 'The copy is named like the template; when you have a dataset of that name, "<name> (copy)", then "<name> (copy 2)", "<name> (copy 3)", ... (the first free one). 409 DATASET_NAME_TAKEN only when clones racing for the same names keep taking them.',
      },
      successStatus: 201,
      errors: ['NOT_FOUND', 'DATASET_NAME_TAKEN'],
    })
    .input(templateId)
    .output(datasetOut)
    .mutation(async ({ ctx, input }) => envelope(await cloneTemplate(ctx.em, ctx.tenantId, input.id))),

  getDataset: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/datasets/{id}`, tags: TAGS, summary: 'A dataset with every case, in order' }, errors: ['NOT_FOUND'] })
    .input(datasetId)
    .output(ok(z.object({ dataset: datasetWithCasesSchema })))
    .query(async ({ ctx, input }) => envelope(await getDataset(ctx.em, ctx.tenantId, input.id))),

  updateDataset: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'PATCH', path: `${BASE}/datasets/{id}`, tags: TAGS, summary: 'Rename or describe a dataset (cases have their own routes)',
        description: 'A name another of your datasets has is 409 DATASET_NAME_TAKEN (nothing is changed).',
      },
      errors: ['NOT_FOUND', 'DATASET_NAME_TAKEN'],
    })
    .input(updateDatasetInput)
    .output(datasetOut)
    .mutation(async ({ ctx, input }) => envelope(await updateDataset(ctx.em, ctx.tenantId, input.id, input))),

  deleteDataset: apiKeyProcedure('evals:write')
    .meta({
      openapi: { method: 'DELETE', path: `${BASE}/datasets/{id}`, tags: TAGS, summary: 'Delete a dataset with its cases (409 DATASET_IN_USE while a suite uses it)' },
      errors: ['NOT_FOUND', 'DATASET_IN_USE'],
    })
    .input(datasetId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteDataset(ctx.em, ctx.tenantId, input.id);
      return { success: true as const };
    }),

  importCases: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/datasets/{id}/import`, tags: TAGS, summary: 'Add cases from JSON, all or nothing',
        description: 'Every case is checked first; when any is invalid nothing is imported and the 400 lists the failing indexes in `details.failed_cases` (and the problems in `details.issues`). Cases are added after the existing ones.',
      },
      errors: ['NOT_FOUND', 'UNPROCESSABLE'],
    })
    .input(importCasesInput)
    .output(ok(z.object({ imported: z.number().int() })))
    .mutation(async ({ ctx, input }) => envelope(await importCases(ctx.em, ctx.tenantId, input.id, input.cases))),

  addCase: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'POST', path: `${BASE}/datasets/{id}/cases`, tags: TAGS, summary: 'Add one case at the end of a dataset' }, successStatus: 201, errors: ['NOT_FOUND', 'UNPROCESSABLE'] })
    .input(createCaseInput)
    .output(caseOut)
    .mutation(async ({ ctx, input }) => envelope(await addCase(ctx.em, ctx.tenantId, input.id, input))),

  updateCase: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/cases/{caseId}`, tags: TAGS, summary: 'Edit a case (results of earlier runs keep what they ran)' }, errors: ['NOT_FOUND'] })
    .input(updateCaseInput)
    .output(caseOut)
    .mutation(async ({ ctx, input }) => envelope(await updateCase(ctx.em, ctx.tenantId, input.caseId, input))),

  deleteCase: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/cases/{caseId}`, tags: TAGS, summary: 'Delete a case' }, errors: ['NOT_FOUND'] })
    .input(caseId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteCase(ctx.em, ctx.tenantId, input.caseId);
      return { success: true as const };
    }),

  listSuites: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/suites`, tags: TAGS, summary: 'Suites, newest first (filter by domain_key and intent_key); paged by page and pageSize' } })
    .input(listSuitesInput)
    .output(ok(z.object({ suites: z.array(suiteSchema), pagination: paginationSchema })))
    .query(async ({ ctx, input }) =>
      envelope(await listSuites(ctx.em, ctx.tenantId, { domain_key: input.domain_key, intent_key: input.intent_key, ...pageToLimitOffset(input.page, input.pageSize) })),
    ),

  createSuite: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/suites`, tags: TAGS, summary: 'Create a suite: one intent (fixed), one dataset, the judge rubric and an optional custom scorer',
        description: 'The intent must exist and be usable by the tenant and the dataset must be one of the tenant\'s (400 naming the field otherwise). Names are unique in the tenant (case-sensitive, after trimming): a taken name is 409 SUITE_NAME_TAKEN with `details.name`. At most one custom scorer: a CEL expression over {input, output, expected, judge}, or a webhook URL with its signing secret (write-only; the suite shows custom_scorer_webhook_secret_set).',
      },
      successStatus: 201,
      errors: ['SUITE_NAME_TAKEN'],
    })
    .input(createSuiteInput)
    .output(suiteOut)
    .mutation(async ({ ctx, input }) => envelope(await createSuite(ctx.em, ctx.deps, ctx.apiKey.tenant, input))),

  getSuite: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/suites/{id}`, tags: TAGS, summary: 'One suite' }, errors: ['NOT_FOUND'] })
    .input(suiteId)
    .output(suiteOut)
    .query(async ({ ctx, input }) => envelope(await getSuite(ctx.em, ctx.tenantId, input.id))),

  updateSuite: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'PATCH', path: `${BASE}/suites/{id}`, tags: TAGS, summary: 'Edit a suite (domain_key and intent_key are fixed; send a scorer field as null to remove it)',
        description: 'A name another of your suites has is 409 SUITE_NAME_TAKEN (nothing is changed).',
      },
      errors: ['NOT_FOUND', 'SUITE_NAME_TAKEN'],
    })
    .input(updateSuiteInput)
    .output(suiteOut)
    .mutation(async ({ ctx, input }) => envelope(await updateSuite(ctx.em, ctx.deps, ctx.tenantId, input))),

  startSuiteRun: apiKeyProcedure('evals:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/suites/{id}/run`, tags: TAGS, summary: 'Start a run of the suite (202, pending): each case runs the intent for real, then the check, the judge and the custom scorer',
        description:
          'Answers 202 with the pending run at once; poll GET /v1/evals/runs/{id} (progress 0-100, stage "case n/total"). The run works on a snapshot of the dataset. ' +
          'Plans without evaluations: 429 EVALS_NOT_AVAILABLE {plan}; this month\'s judge budget spent: 429 EVALS_BUDGET_EXCEEDED {budget_usd, used_usd, resets_at}; ' +
          'more than 30 runs a minute per tenant: 429 RATE_LIMITED with Retry-After. A run that reaches the judge budget mid-way stops judging, sets judge_cap_reached and completes with the cases it judged (the rest are `skipped`). ' +
          'Platform errors (the model provider down, the quota spent) fail the run, which can be resumed; a case\'s own errors (invalid input, a blocked answer, a judge answer that failed its schema twice, a scorer failure) mark that case errored. ' +
          'A case\'s intent run is checked, guarded, validated and metered (intent_run) like an API run, and its result and trace are its record: it opens no session, neither reads nor fills the intent cache (a cached answer would score an old model\'s), and records no intent.run.completed event and no online sample.',
      },
      successStatus: 202,
      errors: [...RUN_START_ERRORS],
    })
    .input(startSuiteRunInput)
    .output(runOut)
    .mutation(async ({ ctx, input }) => {
      ctx.res.status = 202;
      return envelope(await startSuiteRun(ctx.em, ctx.deps, ctx.scope, input.id, { model: input.model ?? null }));
    }),

  listSuiteRuns: apiKeyProcedure('evals:read')
    .meta({
      openapi: { method: 'GET', path: `${BASE}/suites/{id}/runs`, tags: TAGS, summary: 'Runs of a suite, newest first (GET /v1/evals/runs?suite_id=)', description: HISTORY_LIST_NOTE },
      errors: ['NOT_FOUND'],
    })
    .input(listRunsInput.omit({ suite_id: true }).extend({ id: z.string().max(64) }))
    .output(runsOut)
    .query(async ({ ctx, input }) => envelope(await listSuiteRuns(ctx.em, ctx.deps, ctx.tenantId, input.id, input))),

  setBaseline: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'POST', path: `${BASE}/suites/{id}/baseline`, tags: TAGS, summary: 'Pin a completed run of the suite as its baseline, or clear it with null' }, errors: ['NOT_FOUND'] })
    .input(baselineInput)
    .output(ok(z.object({ suite_id: z.string(), baseline_run_id: z.string().nullable() })))
    .mutation(async ({ ctx, input }) => envelope(await setBaseline(ctx.em, ctx.deps, ctx.tenantId, input.id, input.run_id))),

  compareModels: apiKeyProcedure('evals:run')
    .meta({
      openapi: { method: 'POST', path: `${BASE}/suites/{id}/compare-models`, tags: TAGS, summary: 'Start two runs of the suite, the intent on model_a and on model_b (202); compare them when both completed' },
      successStatus: 202,
      errors: [...RUN_START_ERRORS],
    })
    .input(compareModelsInput)
    .output(ok(z.object({ runs: z.array(evalRunSchema) })))
    .mutation(async ({ ctx, input }) => {
      ctx.res.status = 202;
      return envelope(await compareModels(ctx.em, ctx.deps, ctx.scope, input.id, input));
    }),

  startExternalRun: apiKeyProcedure('evals:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/runs`, tags: TAGS, summary: 'Score responses produced elsewhere as a run (202, execution_mode external_output; no intent runs)',
        description: 'Each case\'s response is checked against its expected_output and judged like a suite run\'s (rubric and pass_threshold, default 4). Gated like suite runs.',
      },
      successStatus: 202,
      errors: ['EVALS_NOT_AVAILABLE', 'EVALS_BUDGET_EXCEEDED', 'RATE_LIMITED'],
    })
    .input(externalRunInput)
    .output(runOut)
    .mutation(async ({ ctx, input }) => {
      ctx.res.status = 202;
      return envelope(await startExternalRun(ctx.em, ctx.deps, ctx.scope, input));
    }),

  score: apiKeyProcedure('evals:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/score`, tags: TAGS, summary: 'Score one response now: the check of expected_output, then the judge (no intent runs, no run is stored)',
        description: 'Metered against the monthly judge budget like runs. passed: the check passed (or there was none) and the score reached pass_threshold (default 4).',
      },
      errors: ['EVALS_NOT_AVAILABLE', 'EVALS_BUDGET_EXCEEDED', 'OUTPUT_INVALID', 'LLM_PROVIDER_ERROR', 'LLM_UNAVAILABLE'],
    })
    .input(scoreInput)
    .output(ok(scoreSchema))
    .mutation(async ({ ctx, input }) => envelope(await scoreResponse(ctx.em, ctx.deps, ctx.scope, input))),

  listRuns: apiKeyProcedure('evals:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/runs`, tags: TAGS, summary: 'Evaluation runs, newest first (filter by suite_id)',
        description: `A suite_id that cannot be a suite matches nothing; a cursor from GET /v1/evals/suites/{id}/runs continues here too. ${HISTORY_LIST_NOTE}`,
      },
    })
    .input(listRunsInput)
    .output(runsOut)
    .query(async ({ ctx, input }) => envelope(await listRuns(ctx.em, ctx.deps, ctx.tenantId, input.suite_id, input))),

  getRun: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/runs/{id}`, tags: TAGS, summary: 'One run: status, progress, stage, scores, judge spend' }, errors: ['NOT_FOUND'] })
    .input(runId)
    .output(runOut)
    .query(async ({ ctx, input }) => envelope(await getRun(ctx.em, ctx.deps, ctx.tenantId, input.id))),

  listResults: apiKeyProcedure('evals:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/runs/{id}/results`, tags: TAGS, summary: 'The run\'s cases in order, with output, check, scores, judge reasoning and reviews',
        description: `In case position order (ascending). ${HISTORY_LIST_NOTE}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(listResultsInput)
    .output(ok(z.object({ results: z.array(evalResultSchema), pagination: historyPaginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listResults(ctx.em, ctx.tenantId, input.id, input))),

  compareRuns: apiKeyProcedure('evals:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/runs/{id}/compare`, tags: TAGS, summary: 'Compare this run with another, case by case: mean difference, 95% bootstrap interval, Wilcoxon signed-rank p-value, wins/losses/ties, per dimension',
        description: 'Pairs the cases scored in both runs (by dataset case; cases without one, inline cases and a live window\'s samples, by position where both runs hold the same input). Runs that share no case (a live window and a suite run, two windows of different days) are compared as two samples instead (pairing "unpaired": the difference of the means with a bootstrap resampling each run on its own, a two-sided Mann-Whitney U p-value; over 200,000 scores in all, 422 UNPROCESSABLE). The interval is a percentile bootstrap of the mean difference (10,000 resamples, seed 42: the same runs always give the same numbers). The p-value is a two-sided Wilcoxon signed-rank test with Pratt\'s handling of zero differences and a continuity correction (exact distribution up to 50 pairs without ties or zeros, else the normal approximation; p_value_method says which). Over 100 pairs (or scores) the statistics are computed on the server\'s shared worker-thread pool, off the request thread; when that pool already has 16 tasks waiting the answer is 429 CONCURRENCY_LIMIT with Retry-After.',
      },
      errors: ['NOT_FOUND', 'CONCURRENCY_LIMIT', 'UNPROCESSABLE'],
    })
    .input(compareInput)
    .output(ok(comparisonSchema))
    .query(async ({ ctx, input }) => envelope(await compareRuns(ctx.em, ctx.deps, ctx.tenantId, input.id, input.against))),

  comparePairwise: apiKeyProcedure('evals:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/runs/{id}/compare-pairwise`, tags: TAGS, summary: 'Head-to-head judging of the shared cases: both answers shown twice, in both orders; a win counts only when both orders agree',
        description: `Synchronous; at most ${MAX_PAIRWISE_CASES} shared scored cases (422 otherwise). Judge calls are metered against the monthly judge budget; when it runs out, judging stops (judge_cap_reached). position_disagreements counts the cases where the two orders named different winners.`,
      },
      errors: ['NOT_FOUND', 'EVALS_NOT_AVAILABLE', 'EVALS_BUDGET_EXCEEDED', 'UNPROCESSABLE'],
    })
    .input(pairwiseInput)
    .output(ok(pairwiseSchema))
    .mutation(async ({ ctx, input }) => envelope(await comparePairwise(ctx.em, ctx.deps, ctx.scope, input.id, input.against))),

  createReview: apiKeyProcedure('evals:write')
    .meta({
      openapi: { method: 'POST', path: `${BASE}/results/{resultId}/reviews`, tags: TAGS, summary: 'Review one result: agree, override (corrected_score 1-5 required) or flag' },
      successStatus: 201,
      errors: ['NOT_FOUND'],
    })
    .input(reviewInput)
    .output(ok(z.object({ review: reviewSchema })))
    .mutation(async ({ ctx, input }) => envelope(await createReview(ctx.em, ctx.tenantId, ctx.actor, input.resultId, input))),

  deleteReview: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/reviews/{id}`, tags: TAGS, summary: 'Delete a review' }, errors: ['NOT_FOUND'] })
    .input(reviewId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteReview(ctx.em, ctx.tenantId, input.id);
      return { success: true as const };
    }),

  cancelRun: apiKeyProcedure('evals:run')
    .meta({
      openapi: { method: 'POST', path: `${BASE}/runs/{id}/cancel`, tags: TAGS, summary: 'Cancel a pending, running or failed run (cooperative: cases in flight are not written); a cancelled run is answered as it is' },
      errors: ['NOT_FOUND', 'RUN_NOT_CANCELLABLE'],
    })
    .input(runId)
    .output(runOut)
    .mutation(async ({ ctx, input }) => envelope(await cancelRun(ctx.em, ctx.deps, ctx.tenantId, input.id))),

  resumeRun: apiKeyProcedure('evals:run')
    .meta({
      openapi: { method: 'POST', path: `${BASE}/runs/{id}/resume`, tags: TAGS, summary: 'Continue a failed run: scored cases are kept, the others run again (idempotent)' },
      errors: ['NOT_FOUND', 'EVAL_RUN_NOT_RESUMABLE', 'EVALS_NOT_AVAILABLE', 'EVALS_BUDGET_EXCEEDED'],
    })
    .input(runId)
    .output(runOut)
    .mutation(async ({ ctx, input }) => envelope(await resumeRun(ctx.em, ctx.deps, ctx.scope, input.id))),

  deleteSuite: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/suites/{id}`, tags: TAGS, summary: 'Delete a suite with its runs and their results' }, errors: ['NOT_FOUND'] })
    .input(suiteId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteSuite(ctx.em, ctx.tenantId, input.id);
      return { success: true as const };
    }),
});
