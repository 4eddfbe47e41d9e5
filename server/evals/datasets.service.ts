// Evaluation datasets and their cases: create (with inline cases), read, list, rename, delete,
// all-or-nothing import, one-case edits, and the shared starter templates a tenant can clone.
import { randomUUID } from 'node:crypto';
import { EvalCase, EvalDataset, EvalSuite, type IEvalCase, type IEvalDataset } from '../../db/entities/eval.js';
import type { EntityManager } from '../../db/orm.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import { AppError, notFound, type ValidationIssue } from '../errors.js';
import { caseInput, MAX_CASES_PER_DATASET, type CaseDto, type CaseInput, type CreateDatasetInput, type DatasetDto } from './evals.schemas.js';
import { EVAL_TEMPLATES, findEvalTemplate } from './templates.js';

export function toCaseDto(c: IEvalCase, tenantId: string): CaseDto {
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

const toDatasetDto = (d: IEvalDataset, tenantId: string, casesCount: number): DatasetDto => ({
  id: d.id,
  tenant_id: tenantId,
  name: d.name,
  description: d.description ?? null,
  cases_count: casesCount,
  created_at: isoRequired(d.createdAt),
  updated_at: isoRequired(d.updatedAt),
});

async function findDataset(em: EntityManager, tenantId: string, id: string): Promise<IEvalDataset> {
  const dataset = isUuid(id) ? await em.findOne(EvalDataset, { id, tenant: tenantId }) : null;
  if (!dataset) throw notFound('Dataset');
  return dataset;
}

async function countCases(em: EntityManager, datasetIds: string[]): Promise<Map<string, number>> {
  if (datasetIds.length === 0) return new Map();
  const rows: { dataset_id: string; n: number }[] = await em
    .getConnection()
    // An array literal: the ORM's raw execute would spread a JS array into separate parameters.
    .execute('select dataset_id::text, count(*)::int as n from eval_cases where dataset_id = any(?::uuid[]) group by dataset_id', [`{${datasetIds.join(',')}}`]);
  return new Map(rows.map((r) => [r.dataset_id, r.n]));
}

/** Adds cases at the end of the dataset (positions after the last one), in the caller's transaction. */
async function appendCases(em: EntityManager, tenantId: string, dataset: IEvalDataset, cases: CaseInput[], isNew = false): Promise<IEvalCase[]> {
  // The dataset row is locked first, so imports and additions to one dataset count and number
  // their cases one after another (the caller's transaction holds the lock until it commits). The
  // count is a statement of its own: one that waited for the lock must see what the holder wrote.
  if (!isNew) await em.execute('select 1 from eval_datasets where id = ? for update', [dataset.id]);
  const [{ n, last }]: { n: number; last: number }[] = isNew
    ? [{ n: 0, last: -1 }]
    : await em.execute('select count(*)::int as n, coalesce(max(position), -1)::int as last from eval_cases where dataset_id = ?', [dataset.id]);
  if (n + cases.length > MAX_CASES_PER_DATASET) {
    throw new AppError('UNPROCESSABLE', `A dataset holds at most ${MAX_CASES_PER_DATASET} cases; it has ${n} and ${cases.length} more were sent`, {
      max_cases: MAX_CASES_PER_DATASET,
      cases_count: n,
    });
  }
  return cases.map((c, i) =>
    em.create(EvalCase, {
      tenant: tenantId,
      dataset,
      position: last + 1 + i,
      input: c.input,
      message: c.message ?? null,
      expectedOutput: c.expected_output ?? null,
      notes: c.notes ?? null,
    }),
  );
}

export async function listDatasets(em: EntityManager, tenantId: string) {
  const datasets = await em.find(EvalDataset, { tenant: tenantId }, { orderBy: { createdAt: 'desc', id: 'asc' } });
  const counts = await countCases(em, datasets.map((d) => d.id));
  return { datasets: datasets.map((d) => toDatasetDto(d, tenantId, counts.get(d.id) ?? 0)) };
}

export async function createDataset(em: EntityManager, tenantId: string, input: CreateDatasetInput) {
  return em.transactional(async (tx) => {
    const dataset = tx.create(EvalDataset, { id: randomUUID(), tenant: tenantId, name: input.name, description: input.description ?? null });
    const cases = input.cases?.length ? await appendCases(tx, tenantId, dataset, input.cases, true) : [];
    await tx.flush();
    return { dataset: toDatasetDto(dataset, tenantId, cases.length) };
  });
}

export async function getDataset(em: EntityManager, tenantId: string, id: string) {
  const dataset = await findDataset(em, tenantId, id);
  const cases = await em.find(EvalCase, { dataset }, { orderBy: { position: 'asc', createdAt: 'asc' } });
  return { dataset: { ...toDatasetDto(dataset, tenantId, cases.length), cases: cases.map((c) => toCaseDto(c, tenantId)) } };
}

export async function updateDataset(em: EntityManager, tenantId: string, id: string, input: { name?: string; description?: string | null }) {
  const dataset = await findDataset(em, tenantId, id);
  if (input.name !== undefined) dataset.name = input.name;
  if (input.description !== undefined) dataset.description = input.description;
  await em.flush();
  const counts = await countCases(em, [dataset.id]);
  return { dataset: toDatasetDto(dataset, tenantId, counts.get(dataset.id) ?? 0) };
}

/** Deletes a dataset with its cases; one a suite evaluates on is kept (409 DATASET_IN_USE). */
export async function deleteDataset(em: EntityManager, tenantId: string, id: string) {
  const dataset = await findDataset(em, tenantId, id);
  const suites = await em.find(EvalSuite, { tenant: tenantId, dataset }, { fields: ['id', 'name'], limit: 20 });
  if (suites.length) {
    throw new AppError('DATASET_IN_USE', 'Suites evaluate on this dataset: point them at another dataset or delete them first', {
      suites: suites.map((s) => ({ id: s.id, name: s.name })),
    });
  }
  await em.nativeDelete(EvalDataset, { id: dataset.id, tenant: tenantId });
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
    await appendCases(tx, tenantId, tx.getReference(EvalDataset, dataset.id), valid);
    await tx.nativeUpdate(EvalDataset, { id: dataset.id }, { updatedAt: new Date() });
  });
  return { imported: valid.length };
}

export async function addCase(em: EntityManager, tenantId: string, datasetId: string, input: CaseInput) {
  const dataset = await findDataset(em, tenantId, datasetId);
  const created = await em.transactional(async (tx) => {
    const [added] = await appendCases(tx, tenantId, tx.getReference(EvalDataset, dataset.id), [input]);
    await tx.nativeUpdate(EvalDataset, { id: dataset.id }, { updatedAt: new Date() });
    return added;
  });
  return { case: toCaseDto(created, tenantId) };
}

async function findCase(em: EntityManager, tenantId: string, caseId: string): Promise<IEvalCase> {
  // Inline cases of external_output runs (no dataset) are not editable here.
  const found = isUuid(caseId) ? await em.findOne(EvalCase, { id: caseId, tenant: tenantId, dataset: { $ne: null } }) : null;
  if (!found) throw notFound('Case');
  return found;
}

export async function updateCase(em: EntityManager, tenantId: string, caseId: string, input: Partial<CaseInput>) {
  const found = await findCase(em, tenantId, caseId);
  if (input.input !== undefined) found.input = input.input;
  if (input.message !== undefined) found.message = input.message;
  if (input.expected_output !== undefined) found.expectedOutput = input.expected_output;
  if (input.notes !== undefined) found.notes = input.notes;
  await em.flush();
  return { case: toCaseDto(found, tenantId) };
}

export async function deleteCase(em: EntityManager, tenantId: string, caseId: string) {
  const found = await findCase(em, tenantId, caseId);
  await em.nativeDelete(EvalCase, { id: found.id, tenant: tenantId });
}

export function listTemplates() {
  return {
    templates: EVAL_TEMPLATES.map((t) => ({ id: t.id, name: t.name, description: t.description, domain_key: t.domain_key, intent_key: t.intent_key, cases_count: t.cases.length })),
  };
}

/** A copy of a starter template as the tenant's own dataset (named like the template). */
export async function cloneTemplate(em: EntityManager, tenantId: string, templateId: string) {
  const template = findEvalTemplate(templateId);
  if (!template) throw notFound('Template');
  return createDataset(em, tenantId, {
    name: template.name,
    description: template.description,
    cases: template.cases.map((c) => ({ input: c.input, message: c.message ?? null, expected_output: c.expected_output ?? null, notes: c.notes ?? null })),
  });
}
