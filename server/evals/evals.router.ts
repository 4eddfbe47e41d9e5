import { z } from 'zod';
import { envelope, ok, okEmpty } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import {
  addCase, cloneTemplate, createDataset, deleteCase, deleteDataset, getDataset, importCases, listDatasets, listTemplates, updateCase, updateDataset,
} from './datasets.service.js';
import {
  caseId, caseSchema, createCaseInput, createDatasetInput, createSuiteInput, datasetId, datasetSchema, datasetWithCasesSchema, importCasesInput, listSuitesInput,
  suiteId, suiteSchema, templateId, templateSchema, updateCaseInput, updateDatasetInput, updateSuiteInput,
} from './evals.schemas.js';
import { createSuite, deleteSuite, getSuite, listSuites, updateSuite } from './suites.service.js';

const TAGS = ['Evaluations'];
const BASE = '/v1/evals';

const datasetOut = ok(z.object({ dataset: datasetSchema }));
const caseOut = ok(z.object({ case: caseSchema }));
const suiteOut = ok(z.object({ suite: suiteSchema }));

// Literal paths (datasets/templates) come before their `{id}` siblings.
export const evalsRouter = router({
  listDatasets: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: `${BASE}/datasets`, tags: TAGS, summary: 'Datasets, newest first, with cases_count (no cases)' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ datasets: z.array(datasetSchema) })))
    .query(async ({ ctx }) => envelope(await listDatasets(ctx.em, ctx.tenantId))),

  createDataset: apiKeyProcedure
    .meta({
      openapi: { method: 'POST', path: `${BASE}/datasets`, tags: TAGS, summary: 'Create a dataset, optionally with its cases (answers cases_count, not the cases)' },
      successStatus: 201,
      errors: ['UNPROCESSABLE'],
    })
    .input(createDatasetInput)
    .output(datasetOut)
    .mutation(async ({ ctx, input }) => envelope(await createDataset(ctx.em, ctx.tenantId, input))),

  listTemplates: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: `${BASE}/datasets/templates`, tags: TAGS, summary: 'Shared starter datasets for the built-in hiring intents' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ templates: z.array(templateSchema) })))
    .query(() => envelope(listTemplates())),

  cloneTemplate: apiKeyProcedure
    .meta({
      openapi: { method: 'POST', path: `${BASE}/datasets/templates/{id}/clone`, tags: TAGS, summary: 'Copy a starter dataset into your datasets (yours to edit)' },
      successStatus: 201,
      errors: ['NOT_FOUND'],
    })
    .input(templateId)
    .output(datasetOut)
    .mutation(async ({ ctx, input }) => envelope(await cloneTemplate(ctx.em, ctx.tenantId, input.id))),

  getDataset: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: `${BASE}/datasets/{id}`, tags: TAGS, summary: 'A dataset with every case, in order' }, errors: ['NOT_FOUND'] })
    .input(datasetId)
    .output(ok(z.object({ dataset: datasetWithCasesSchema })))
    .query(async ({ ctx, input }) => envelope(await getDataset(ctx.em, ctx.tenantId, input.id))),

  updateDataset: apiKeyProcedure
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/datasets/{id}`, tags: TAGS, summary: 'Rename or describe a dataset (cases have their own routes)' }, errors: ['NOT_FOUND'] })
    .input(updateDatasetInput)
    .output(datasetOut)
    .mutation(async ({ ctx, input }) => envelope(await updateDataset(ctx.em, ctx.tenantId, input.id, input))),

  deleteDataset: apiKeyProcedure
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

  importCases: apiKeyProcedure
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

  addCase: apiKeyProcedure
    .meta({ openapi: { method: 'POST', path: `${BASE}/datasets/{id}/cases`, tags: TAGS, summary: 'Add one case at the end of a dataset' }, successStatus: 201, errors: ['NOT_FOUND', 'UNPROCESSABLE'] })
    .input(createCaseInput)
    .output(caseOut)
    .mutation(async ({ ctx, input }) => envelope(await addCase(ctx.em, ctx.tenantId, input.id, input))),

  updateCase: apiKeyProcedure
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/cases/{caseId}`, tags: TAGS, summary: 'Edit a case (results of earlier runs keep what they ran)' }, errors: ['NOT_FOUND'] })
    .input(updateCaseInput)
    .output(caseOut)
    .mutation(async ({ ctx, input }) => envelope(await updateCase(ctx.em, ctx.tenantId, input.caseId, input))),

  deleteCase: apiKeyProcedure
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/cases/{caseId}`, tags: TAGS, summary: 'Delete a case' }, errors: ['NOT_FOUND'] })
    .input(caseId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteCase(ctx.em, ctx.tenantId, input.caseId);
      return { success: true as const };
    }),

  listSuites: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: `${BASE}/suites`, tags: TAGS, summary: 'Suites, newest first (filter by domain_key and intent_key)' } })
    .input(listSuitesInput)
    .output(ok(z.object({ suites: z.array(suiteSchema) })))
    .query(async ({ ctx, input }) => envelope(await listSuites(ctx.em, ctx.tenantId, input))),

  createSuite: apiKeyProcedure
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/suites`, tags: TAGS, summary: 'Create a suite: one intent (fixed), one dataset, the judge rubric and an optional custom scorer',
        description: 'The intent must exist and be usable by the tenant and the dataset must be one of the tenant\'s (400 naming the field otherwise). At most one custom scorer: a CEL expression over {input, output, expected, judge}, or a webhook URL with its signing secret (write-only; the suite shows custom_scorer_webhook_secret_set).',
      },
      successStatus: 201,
    })
    .input(createSuiteInput)
    .output(suiteOut)
    .mutation(async ({ ctx, input }) => envelope(await createSuite(ctx.em, ctx.deps, ctx.apiKey.tenant, input))),

  getSuite: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: `${BASE}/suites/{id}`, tags: TAGS, summary: 'One suite' }, errors: ['NOT_FOUND'] })
    .input(suiteId)
    .output(suiteOut)
    .query(async ({ ctx, input }) => envelope(await getSuite(ctx.em, ctx.tenantId, input.id))),

  updateSuite: apiKeyProcedure
    .meta({
      openapi: { method: 'PATCH', path: `${BASE}/suites/{id}`, tags: TAGS, summary: 'Edit a suite (domain_key and intent_key are fixed; send a scorer field as null to remove it)' },
      errors: ['NOT_FOUND'],
    })
    .input(updateSuiteInput)
    .output(suiteOut)
    .mutation(async ({ ctx, input }) => envelope(await updateSuite(ctx.em, ctx.deps, ctx.tenantId, input))),

  deleteSuite: apiKeyProcedure
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/suites/{id}`, tags: TAGS, summary: 'Delete a suite with its runs and their results' }, errors: ['NOT_FOUND'] })
    .input(suiteId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteSuite(ctx.em, ctx.tenantId, input.id);
      return { success: true as const };
    }),
});
