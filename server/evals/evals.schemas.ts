import { z } from 'zod';
import { bodyNumber, noCoerce, pageQuery } from '../common/schemas.js';
import { fallbackModelsSchema } from '../llm/llm.schemas.js';

/** Most cases one create or import request may carry. */
export const MAX_CASES_PER_REQUEST = 5000;
/** Most cases one dataset may hold. */
export const MAX_CASES_PER_DATASET = 20_000;

/** A JSON object field of a body (no coercion inside). */
export const jsonObject = noCoerce(z.record(z.string(), z.unknown()));

/** expected_output: a string (a substring check) or an object (a partial deep-equality check). */
export const expectedOutputField = noCoerce(z.union([z.string().min(1).max(20_000), z.record(z.string(), z.unknown())]))
  .nullable()
  .optional()
  .describe('A string: the output must contain it (case-sensitive); an object: partial deep equality with the output (every key given must match, recursively; arrays must match element by element). Checked before the judge');

export const caseInput = z
  .object({
    input: jsonObject.describe('The intent request input (as for the intent run endpoint)'),
    message: z.string().max(20_000).nullable().optional(),
    expected_output: expectedOutputField,
    notes: z.string().max(5000).nullable().optional(),
  })
  .meta({ id: 'EvalCaseInput' });
export type CaseInput = z.infer<typeof caseInput>;

export const caseSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    dataset_id: z.string().nullable(),
    input: z.record(z.string(), z.unknown()),
    message: z.string().nullable(),
    expected_output: z.unknown().nullable(),
    notes: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'EvalCase' });
export type CaseDto = z.infer<typeof caseSchema>;

export const datasetSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    cases_count: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'EvalDataset' });
export type DatasetDto = z.infer<typeof datasetSchema>;

export const datasetWithCasesSchema = datasetSchema.extend({ cases: z.array(caseSchema) }).meta({ id: 'EvalDatasetWithCases' });

export const datasetId = z.object({ id: z.string().max(64) });
export const caseId = z.object({ caseId: z.string().max(64) });

export const createDatasetInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    description: z.string().max(5000).nullable().optional(),
    cases: z.array(caseInput).max(MAX_CASES_PER_REQUEST).optional(),
  })
  .meta({ id: 'CreateEvalDatasetRequest' });
export type CreateDatasetInput = z.infer<typeof createDatasetInput>;

export const updateDatasetInput = datasetId
  .extend({
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().max(5000).nullable().optional(),
  })
  .meta({ id: 'UpdateEvalDatasetRequest' });

export const importCasesInput = datasetId
  .extend({
    // Each case is checked by the service, so a 400 can name every failing case by its index.
    cases: noCoerce(z.array(z.unknown()).min(1).max(MAX_CASES_PER_REQUEST)).describe(`1-${MAX_CASES_PER_REQUEST} cases, each an EvalCaseInput`),
  })
  .meta({ id: 'ImportEvalCasesRequest' });

export const createCaseInput = datasetId.extend(caseInput.shape).meta({ id: 'CreateEvalCaseRequest' });

export const updateCaseInput = caseId
  .extend({
    input: jsonObject.optional(),
    message: z.string().max(20_000).nullable().optional(),
    expected_output: expectedOutputField,
    notes: z.string().max(5000).nullable().optional(),
  })
  .meta({ id: 'UpdateEvalCaseRequest' });

export const templateSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    domain_key: z.string(),
    intent_key: z.string(),
    cases_count: z.number().int(),
  })
  .meta({ id: 'EvalDatasetTemplate' });

export const templateId = z.object({ id: z.string().max(200) });

// ---- Suites -------------------------------------------------------------------------------------

export const suiteSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    name: z.string(),
    domain_key: z.string(),
    intent_key: z.string(),
    dataset_id: z.string(),
    judge_rubric: z.string().nullable(),
    pass_threshold: z.number(),
    custom_scorer_expression: z.string().nullable(),
    custom_scorer_label: z.string().nullable(),
    custom_scorer_webhook_url: z.string().nullable(),
    custom_scorer_webhook_secret_set: z.boolean(),
    fallback_models: z.array(z.string()).nullable().describe('The judge\'s fallback chain (null: the tenant\'s, then the platform\'s LLM_FALLBACK_MODELS)'),
    baseline_run_id: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'EvalSuite' });
export type SuiteDto = z.infer<typeof suiteSchema>;

const scorerFields = {
  fallback_models: fallbackModelsSchema
    .nullable()
    .optional()
    .describe('Models that serve the judge, in order, when its model (EVAL_JUDGE_MODEL) fails or cools down; null: the tenant\'s chain, then the platform\'s; []: never fall back. The intent under evaluation keeps its own chain'),
  judge_rubric: z.string().max(20_000).nullable().optional().describe('What the judge should look for in this intent\'s answers, added to the default rubric'),
  pass_threshold: bodyNumber(1, 5).optional().describe('A case passes when its check passes and its judge score reaches this (1-5, default 4)'),
  custom_scorer_expression: z
    .string()
    .trim()
    .min(1)
    .max(5000)
    .nullable()
    .optional()
    .describe('CEL over {input, output, expected, judge} giving a number or a boolean (stored as custom_score; true = 1, false = 0)'),
  custom_scorer_label: z.string().max(100).nullable().optional(),
  custom_scorer_webhook_url: z
    .string()
    .max(2000)
    .nullable()
    .optional()
    .describe('An http(s) URL that gets each case as a Standard Webhooks POST signed with custom_scorer_webhook_secret and answers {score: number}'),
  custom_scorer_webhook_secret: z
    .string()
    .min(8)
    .max(500)
    .nullable()
    .optional()
    .describe(
      'Write-only; required with custom_scorer_webhook_url. Any secret of 8 to 500 characters without control characters. A Standard Webhooks secret (whsec_ followed by base64) signs with its base64-decoded bytes (at least 8); any other secret signs with its UTF-8 bytes (400 INVALID_INPUT otherwise)',
    ),
};

export const createSuiteInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    domain_key: z.string().min(1).max(100),
    intent_key: z.string().min(1).max(100),
    dataset_id: z.string().max(64),
    ...scorerFields,
  })
  .meta({ id: 'CreateEvalSuiteRequest' });
export type CreateSuiteInput = z.infer<typeof createSuiteInput>;

export const suiteId = z.object({ id: z.string().max(64) });

export const updateSuiteInput = suiteId
  .extend({
    name: z.string().trim().min(1).max(200).optional(),
    dataset_id: z.string().max(64).optional(),
    ...scorerFields,
  })
  .meta({ id: 'UpdateEvalSuiteRequest' });
export type UpdateSuiteInput = z.infer<typeof updateSuiteInput>;

export const listSuitesInput = z.object({ domain_key: z.string().max(100).optional(), intent_key: z.string().max(100).optional(), ...pageQuery });
