// The eval_datasets and eval_cases tables (a tenant's datasets and their cases); this module alone
// writes them, except the inline cases of external_output and gate runs, which
// store/eval-run-admission.ts inserts in the run's own statement.
import { sql } from 'kysely';
import { EvalCase, EvalDataset, type IEvalCase, type IEvalDataset } from '../../../db/entities/eval.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { IEvalCase as CaseRow, IEvalDataset as DatasetRow } from '../../../db/entities/eval.js';

/** A case as it is written: its input, message, expected output and notes. */
export interface NewCase {
  input: Record<string, unknown>;
  message: string | null;
  expectedOutput: unknown;
  notes: string | null;
}

export async function findTenantDataset(em: EntityManager, tenantId: string, id: string): Promise<IEvalDataset | null> {
  return em.findOne(EvalDataset, { id, tenant: tenantId });
}

const DATASET_ORDER = { createdAt: 'desc', id: 'asc' } as const;

export async function listTenantDatasets(em: EntityManager, tenantId: string): Promise<IEvalDataset[]> {
  return em.find(EvalDataset, { tenant: tenantId }, { orderBy: DATASET_ORDER });
}

/** The names of the tenant's datasets that start with `prefix` (as typed: no pattern characters). */
export async function listDatasetNamesStartingWith(em: EntityManager, tenantId: string, prefix: string): Promise<string[]> {
  const rows = await kyselyOf(em)
    .selectFrom('eval_datasets')
    .select('name')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`starts_with(name, ${prefix})`)
    .execute();
  return rows.map((r) => r.name);
}

// A dataset's name is unique in its tenant (db/migrations/...120000_eval_unique_names).
const NAME_UNIQUE = 'eval_datasets_tenant_id_name_unique';

/** A page of the tenant's datasets, newest first, and how many it has. */
export async function listTenantDatasetsPage(em: EntityManager, tenantId: string, page: { limit: number; offset: number }): Promise<[IEvalDataset[], number]> {
  return em.findAndCount(EvalDataset, { tenant: tenantId }, { orderBy: DATASET_ORDER, limit: page.limit, offset: page.offset });
}

/** How many cases each of the datasets holds (datasets without cases are absent). */
export async function countDatasetCases(em: EntityManager, datasetIds: string[]): Promise<Map<string, number>> {
  if (datasetIds.length === 0) return new Map();
  const rows = await kyselyOf(em)
    .selectFrom('eval_cases')
    .select(['dataset_id', sql<number>`count(*)::int`.as('n')])
    .where('dataset_id', 'in', datasetIds)
    .groupBy('dataset_id')
    .execute();
  return new Map(rows.map((r) => [String(r.dataset_id), r.n]));
}

/** The dataset's cases in order. */
export async function listDatasetCases(em: EntityManager, dataset: IEvalDataset): Promise<IEvalCase[]> {
  return em.find(EvalCase, { dataset }, { orderBy: { position: 'asc', createdAt: 'asc' } });
}

function stageCases(em: EntityManager, tenantId: string, dataset: IEvalDataset, firstPosition: number, cases: NewCase[]): IEvalCase[] {
  return cases.map((c, i) =>
    em.create(EvalCase, {
      tenant: tenantId,
      dataset,
      position: firstPosition + i,
      input: c.input,
      message: c.message,
      expectedOutput: c.expectedOutput,
      notes: c.notes,
    }),
  );
}

/** A new dataset with its first cases (positions from 0), written now; null when the tenant has a dataset of that name. */
export async function insertDatasetWithCases(
  em: EntityManager,
  values: { id: string; tenantId: string; name: string; description: string | null },
  cases: NewCase[],
): Promise<{ dataset: IEvalDataset; cases: IEvalCase[] } | null> {
  const dataset = em.create(EvalDataset, { id: values.id, tenant: values.tenantId, name: values.name, description: values.description });
  const staged = stageCases(em, values.tenantId, dataset, 0, cases);
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err, NAME_UNIQUE)) return null;
    throw err;
  }
  return { dataset, cases: staged };
}

/**
 * Locks the dataset row and answers how many cases it holds and its last position (-1: none). Call
 * it in the transaction that appends: it holds the lock until it commits.
 */
export async function lockDatasetForAppend(em: EntityManager, datasetId: string): Promise<{ n: number; last: number }> {
  // The dataset row is locked first, so imports and additions to one dataset count and number
  // their cases one after another (the caller's transaction holds the lock until it commits). The
  // count is a statement of its own: one that waited for the lock must see what the holder wrote.
  const db = kyselyOf(em);
  await db.selectFrom('eval_datasets').select(sql<number>`1`.as('one')).where('id', '=', datasetId).forUpdate().execute();
  return db
    .selectFrom('eval_cases')
    .select([sql<number>`count(*)::int`.as('n'), sql<number>`coalesce(max(position), -1)::int`.as('last')])
    .where('dataset_id', '=', datasetId)
    .executeTakeFirstOrThrow();
}

/**
 * Adds cases to the dataset from `firstPosition` on and marks it updated; the cases are inserted when
 * the caller's transaction commits (after the update, as before).
 */
export async function appendDatasetCases(em: EntityManager, tenantId: string, datasetId: string, firstPosition: number, cases: NewCase[]): Promise<IEvalCase[]> {
  const staged = stageCases(em, tenantId, em.getReference(EvalDataset, datasetId), firstPosition, cases);
  await em.nativeUpdate(EvalDataset, { id: datasetId }, { updatedAt: new Date() });
  return staged;
}

/** Writes the changes; `nameTaken` (and nothing written) when another of the tenant's datasets has the new name. */
export async function updateDatasetFields(em: EntityManager, dataset: IEvalDataset, changes: { name?: string; description?: string | null }): Promise<{ nameTaken: boolean }> {
  if (changes.name !== undefined) dataset.name = changes.name;
  if (changes.description !== undefined) dataset.description = changes.description;
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err, NAME_UNIQUE)) return { nameTaken: true };
    throw err;
  }
  return { nameTaken: false };
}

export async function deleteTenantDataset(em: EntityManager, tenantId: string, id: string): Promise<void> {
  await em.nativeDelete(EvalDataset, { id, tenant: tenantId });
}

/** A case of one of the tenant's datasets (inline cases of external_output runs are not found). */
export async function findTenantDatasetCase(em: EntityManager, tenantId: string, caseId: string): Promise<IEvalCase | null> {
  return em.findOne(EvalCase, { id: caseId, tenant: tenantId, dataset: { $ne: null } });
}

export async function updateCaseFields(em: EntityManager, found: IEvalCase, changes: Partial<NewCase>): Promise<void> {
  if (changes.input !== undefined) found.input = changes.input;
  if (changes.message !== undefined) found.message = changes.message;
  if (changes.expectedOutput !== undefined) found.expectedOutput = changes.expectedOutput;
  if (changes.notes !== undefined) found.notes = changes.notes;
  await em.flush();
}

export async function deleteTenantCase(em: EntityManager, tenantId: string, caseId: string): Promise<void> {
  await em.nativeDelete(EvalCase, { id: caseId, tenant: tenantId });
}

/** Deletes the tenant's cases (in datasets, and inline cases of runs) whose input's `user_id` is the end user; how many. */
export async function deleteUserCases(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('eval_cases').where('tenant_id', '=', tenantId).where(sql<string>`input ->> 'user_id'`, '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
