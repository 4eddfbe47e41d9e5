// The eval_reviews table (people's verdicts on single results); this module alone writes it.
import { EvalReview, type IEvalResult, type IEvalReview } from '../../../db/entities/eval.js';
import type { EntityManager } from '../../../db/orm.js';

export type { IEvalReview as ReviewRow } from '../../../db/entities/eval.js';

export async function insertReview(
  em: EntityManager,
  values: { tenantId: string; result: IEvalResult; reviewerId: string; verdict: 'agree' | 'override' | 'flag'; correctedScore: number | null; note: string | null },
): Promise<IEvalReview> {
  const review = em.create(EvalReview, {
    tenant: values.tenantId,
    result: values.result,
    reviewerId: values.reviewerId,
    verdict: values.verdict,
    correctedScore: values.correctedScore,
    note: values.note,
  });
  await em.flush();
  return review;
}

export async function findTenantReview(em: EntityManager, tenantId: string, id: string): Promise<IEvalReview | null> {
  return em.findOne(EvalReview, { id, tenant: tenantId });
}

export async function deleteTenantReview(em: EntityManager, tenantId: string, id: string): Promise<void> {
  await em.nativeDelete(EvalReview, { id, tenant: tenantId });
}

/** The reviews of the results, oldest first (none when there are no results). */
export async function listReviewsOfResults(em: EntityManager, resultIds: string[]): Promise<IEvalReview[]> {
  return resultIds.length ? em.find(EvalReview, { result: { $in: resultIds } }, { orderBy: { createdAt: 'asc' } }) : [];
}
