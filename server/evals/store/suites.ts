// The eval_suites table (what to evaluate on which dataset, and how to score it); this module alone writes it.
import { EvalSuite, type IEvalDataset, type IEvalSuite } from '../../../db/entities/eval.js';
import type { EntityManager } from '../../../db/orm.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { IEvalSuite as SuiteRow } from '../../../db/entities/eval.js';

/** The suite's settings as they are written (the dataset as its loaded row). */
export interface SuiteValues {
  name: string;
  dataset: IEvalDataset;
  judgeRubric: string | null;
  passThreshold: number;
  customScorerExpression: string | null;
  customScorerLabel: string | null;
  customScorerWebhookUrl: string | null;
  customScorerWebhookSecret: string | null;
  /** The judge's fallback chain (null: the tenant's, then the platform's). */
  fallbackModels: string[] | null;
}

export async function findTenantSuite(em: EntityManager, tenantId: string, id: string): Promise<IEvalSuite | null> {
  return em.findOne(EvalSuite, { id, tenant: tenantId });
}

const SUITE_ORDER = { createdAt: 'desc', id: 'asc' } as const;

function suitesWhere(tenantId: string, filter: { domainKey?: string; intentKey?: string }): Record<string, unknown> {
  const where: Record<string, unknown> = { tenant: tenantId };
  if (filter.domainKey) where.domainKey = filter.domainKey;
  if (filter.intentKey) where.intentKey = filter.intentKey;
  return where;
}

/** The tenant's suites, newest first, optionally of one domain and intent. */
export async function listTenantSuites(em: EntityManager, tenantId: string, filter: { domainKey?: string; intentKey?: string }): Promise<IEvalSuite[]> {
  return em.find(EvalSuite, suitesWhere(tenantId, filter), { orderBy: SUITE_ORDER });
}

/** A page of the tenant's suites, newest first, optionally of one domain and intent, and how many match. */
export async function listTenantSuitesPage(
  em: EntityManager,
  tenantId: string,
  filter: { domainKey?: string; intentKey?: string; limit: number; offset: number },
): Promise<[IEvalSuite[], number]> {
  return em.findAndCount(EvalSuite, suitesWhere(tenantId, filter), { orderBy: SUITE_ORDER, limit: filter.limit, offset: filter.offset });
}

/** Up to 20 of the tenant's suites evaluating on the dataset (their id and name). */
export async function listSuitesOnDataset(em: EntityManager, tenantId: string, dataset: IEvalDataset): Promise<{ id: string; name: string }[]> {
  return em.find(EvalSuite, { tenant: tenantId, dataset }, { fields: ['id', 'name'], limit: 20 });
}

// A suite's name is unique in its tenant (db/migrations/...120000_eval_unique_names).
const NAME_UNIQUE = 'eval_suites_tenant_id_name_unique';

/** Writes `em`'s changes; false when the write was refused because the tenant has a suite of that name. */
async function flushUnlessNameTaken(em: EntityManager): Promise<boolean> {
  try {
    await em.flush();
    return true;
  } catch (err) {
    if (isUniqueViolation(err, NAME_UNIQUE)) return false;
    throw err;
  }
}

/** A new suite, written now; null when the tenant has a suite of that name. */
export async function insertSuite(
  em: EntityManager,
  values: SuiteValues & { id: string; tenantId: string; domainKey: string; intentKey: string },
): Promise<IEvalSuite | null> {
  const { tenantId, ...rest } = values;
  const suite = em.create(EvalSuite, { ...rest, tenant: tenantId });
  return (await flushUnlessNameTaken(em)) ? suite : null;
}

/**
 * Writes the given settings of a loaded suite (absent ones stay as they are); `nameTaken` (and
 * nothing written) when another of the tenant's suites has the new name.
 */
export async function updateSuiteFields(em: EntityManager, suite: IEvalSuite, changes: Partial<SuiteValues>): Promise<{ nameTaken: boolean }> {
  for (const [key, value] of Object.entries(changes) as [keyof SuiteValues, unknown][]) {
    if (value !== undefined) (suite as unknown as Record<string, unknown>)[key] = value;
  }
  return { nameTaken: !(await flushUnlessNameTaken(em)) };
}

/** Pins a run as the suite's baseline, or clears it (null). */
export async function setSuiteBaseline(em: EntityManager, suite: IEvalSuite, runId: string | null): Promise<void> {
  suite.baselineRunId = runId;
  await em.flush();
}

export async function deleteTenantSuite(em: EntityManager, tenantId: string, id: string): Promise<void> {
  await em.nativeDelete(EvalSuite, { id, tenant: tenantId });
}
