// Evaluation datasets and their cases: create (with inline cases), read, list, rename, delete,
// all-or-nothing import, one-case edits, and the shared starter templates a tenant can clone.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import { AppError, notFound, type ValidationIssue } from '../errors.js';
import { caseInput, MAX_CASES_PER_DATASET, type CaseDto, type CaseInput, type CreateDatasetInput, type DatasetDto } from './evals.schemas.js';
import {
  appendDatasetCases, countDatasetCases, deleteTenantCase, deleteTenantDataset, findTenantDataset, findTenantDatasetCase, insertDatasetWithCases, listDatasetCases,
  listDatasetNamesStartingWith, listTenantDatasetsPage, lockDatasetForAppend, updateCaseFields, updateDatasetFields, type CaseRow, type DatasetRow, type NewCase,
} from './store/datasets.js';
import { listSuitesOnDataset } from './store/suites.js';
import { EVAL_TEMPLATES, findEvalTemplate } from './templates.js';

export function toCaseDto(c: CaseRow, tenantId: string): CaseDto {
  return {
    id: c.id,
    tenant_id: tenantId,
    dataset_id: c.dataset ? (typeof c.dataset === 'string' ? c.dataset : c.dataset.id) : null,
    input: c.input,
    message: c.message ?? null,
    expected_output: c.expectedOutput ?? null,
    notes: c.notes ?? null,
    created_at: isoRequired(c.createdAt),
  };
}

const toDatasetDto = (d: DatasetRow, tenantId: string, casesCount: number): DatasetDto => ({
  id: d.id,
  tenant_id: tenantId,
  name: d.name,
  description: d.description ?? null,
  cases_count: casesCount,
  created_at: isoRequired(d.createdAt),
  updated_at: isoRequired(d.updatedAt),
});

async function findDataset(em: EntityManager, tenantId: string, id: string): Promise<DatasetRow> {
  const dataset = isUuid(id) ? await findTenantDataset(em, tenantId, id) : null;
  if (!dataset) throw notFound('Dataset');
  return dataset;
}

// Projects key datasets by name, so a name is the tenant's once (a unique index decides races).
const nameTaken = (name: string) => new AppError('DATASET_NAME_TAKEN', `A dataset named "${name}" exists already`, { name });

const newCase = (c: CaseInput): NewCase => ({ input: c.input, message: c.message ?? null, expectedOutput: c.expected_output ?? null, notes: c.notes ?? null });

/** 422 when `adding` more cases would take a dataset holding `n` past MAX_CASES_PER_DATASET. */
function assertRoomFor(n: number, adding: number) {
  if (n + adding > MAX_CASES_PER_DATASET) {
    throw new AppError('UNPROCESSABLE', `A dataset holds at most ${MAX_CASES_PER_DATASET} cases; it has ${n} and ${adding} more were sent`, {
      max_cases: MAX_CASES_PER_DATASET,
      cases_count: n,
    });
  }
}

/**
 * Adds cases at the end of the dataset (positions after the last one) and marks it updated, in the
 * caller's transaction: the dataset row is locked first, so additions to one dataset count and
 * number their cases one after another.
 */
async function appendCases(tx: EntityManager, tenantId: string, datasetId: string, cases: CaseInput[]): Promise<CaseRow[]> {
  const { n, last } = await lockDatasetForAppend(tx, datasetId);
  assertRoomFor(n, cases.length);
  return appendDatasetCases(tx, tenantId, datasetId, last + 1, cases.map(newCase));
}

export async function listDatasets(em: EntityManager, tenantId: string, page: { limit: number; offset: number }) {
  const [datasets, total] = await listTenantDatasetsPage(em, tenantId, page);
  const counts = await countDatasetCases(em, datasets.map((d) => d.id));
  return { datasets: datasets.map((d) => toDatasetDto(d, tenantId, counts.get(d.id) ?? 0)), pagination: { total, limit: page.limit, offset: page.offset } };
}

export async function createDataset(em: EntityManager, tenantId: string, input: CreateDatasetInput) {
  return em.transactional(async (tx) => {
    const cases = input.cases ?? [];
    assertRoomFor(0, cases.length);
    const created = await insertDatasetWithCases(tx, { id: randomUUID(), tenantId, name: input.name, description: input.description ?? null }, cases.map(newCase));
    if (!created) throw nameTaken(input.name);
    return { dataset: toDatasetDto(created.dataset, tenantId, created.cases.length) };
  });
}

export async function getDataset(em: EntityManager, tenantId: string, id: string) {
  const dataset = await findDataset(em, tenantId, id);
  const cases = await listDatasetCases(em, dataset);
  return { dataset: { ...toDatasetDto(dataset, tenantId, cases.length), cases: cases.map((c) => toCaseDto(c, tenantId)) } };
}

export async function updateDataset(em: EntityManager, tenantId: string, id: string, input: { name?: string; description?: string | null }) {
  const dataset = await findDataset(em, tenantId, id);
  if ((await updateDatasetFields(em, dataset, { name: input.name, description: input.description })).nameTaken) throw nameTaken(input.name ?? dataset.name);
  const counts = await countDatasetCases(em, [dataset.id]);
  return { dataset: toDatasetDto(dataset, tenantId, counts.get(dataset.id) ?? 0) };
}

/** Deletes a dataset with its cases; one a suite evaluates on is kept (409 DATASET_IN_USE). */
export async function deleteDataset(em: EntityManager, tenantId: string, id: string) {
  const dataset = await findDataset(em, tenantId, id);
  const suites = await listSuitesOnDataset(em, tenantId, dataset);
  if (suites.length) {
    throw new AppError('DATASET_IN_USE', 'Suites evaluate on this dataset: point them at another dataset or delete them first', {
      suites: suites.map((s) => ({ id: s.id, name: s.name })),
    });
  }
  await deleteTenantDataset(em, tenantId, dataset.id);
}

/**
 * Imports cases all or nothing: every case is checked first, and when any is invalid nothing is
 * written and the 400 names each failing case by its index.
 */
export async function importCases(em: EntityManager, tenantId: string, id: string, raw: unknown[]) {
  const dataset = await findDataset(em, tenantId, id);
  const valid: CaseInput[] = [];
  const failed: number[] = [];
  const issues: ValidationIssue[] = [];
  raw.forEach((item, index) => {
    const parsed = caseInput.safeParse(item);
    if (parsed.success) {
      valid.push(parsed.data);
      return;
    }
    failed.push(index);
    if (issues.length < 100) {
      for (const issue of parsed.error.issues.slice(0, 5)) issues.push({ path: ['cases', index, ...issue.path].join('.'), message: issue.message });
    }
  });
  if (failed.length) {
    throw new AppError('INVALID_INPUT', `${failed.length} of ${raw.length} cases are invalid; nothing was imported`, {
      failed_cases: failed.slice(0, 1000),
      issues,
    });
  }
  await em.transactional(async (tx) => {
    await appendCases(tx, tenantId, dataset.id, valid);
  });
  return { imported: valid.length };
}

export async function addCase(em: EntityManager, tenantId: string, datasetId: string, input: CaseInput) {
  const dataset = await findDataset(em, tenantId, datasetId);
  const created = await em.transactional(async (tx) => {
    const [added] = await appendCases(tx, tenantId, dataset.id, [input]);
    return added;
  });
  return { case: toCaseDto(created, tenantId) };
}

async function findCase(em: EntityManager, tenantId: string, caseId: string): Promise<CaseRow> {
  // Inline cases of external_output runs (no dataset) are not editable here.
  const found = isUuid(caseId) ? await findTenantDatasetCase(em, tenantId, caseId) : null;
  if (!found) throw notFound('Case');
  return found;
}

export async function updateCase(em: EntityManager, tenantId: string, caseId: string, input: Partial<CaseInput>) {
  const found = await findCase(em, tenantId, caseId);
  await updateCaseFields(em, found, { input: input.input, message: input.message, expectedOutput: input.expected_output, notes: input.notes });
  return { case: toCaseDto(found, tenantId) };
}

export async function deleteCase(em: EntityManager, tenantId: string, caseId: string) {
  const found = await findCase(em, tenantId, caseId);
  await deleteTenantCase(em, tenantId, found.id);
}

export function listTemplates() {
  return {
    templates: EVAL_TEMPLATES.map((t) => ({ id: t.id, name: t.name, description: t.description, domain_key: t.domain_key, intent_key: t.intent_key, cases_count: t.cases.length })),
  };
}

/** The first of `base`, `base (copy)`, `base (copy 2)`, ... not in `taken` (cut to the 200 characters a name may have). */
function freeCopyName(base: string, taken: Set<string>): string {
  for (let n = 0; ; n++) {
    const suffix = n === 0 ? '' : n === 1 ? ' (copy)' : ` (copy ${n})`;
    const name = base.slice(0, 200 - suffix.length) + suffix;
    if (!taken.has(name)) return name;
  }
}

/** Clones racing for one free name: each loser looks again, this many times in all. */
const CLONE_NAME_ATTEMPTS = 5;

/**
 * A copy of a starter template as the tenant's own dataset, named like the template; when the tenant
 * has a dataset of that name, "<name> (copy)", then "<name> (copy 2)", ...
 */
export async function cloneTemplate(em: EntityManager, tenantId: string, templateId: string) {
  const template = findEvalTemplate(templateId);
  if (!template) throw notFound('Template');
  const cases = template.cases.map((c) => ({ input: c.input, message: c.message ?? null, expected_output: c.expected_output ?? null, notes: c.notes ?? null }));
  for (let attempt = 1; ; attempt++) {
    const name = freeCopyName(template.name, new Set(await listDatasetNamesStartingWith(em, tenantId, template.name)));
    try {
      return await createDataset(em, tenantId, { name, description: template.description, cases });
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'DATASET_NAME_TAKEN') || attempt >= CLONE_NAME_ATTEMPTS) throw err;
    }
  }
}
