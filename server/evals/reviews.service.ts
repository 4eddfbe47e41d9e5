// People's verdicts on single results: agree with the judge, override its score (corrected_score
// 1-5 required), or flag the case; each review is kept with the result it is about.
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { isUuid } from '../common/schemas.js';
import { invalidInput, notFound } from '../errors.js';
import { toReviewDto } from './eval-runs.service.js';
import { findTenantResult } from './store/eval-results.js';
import { deleteTenantReview, findTenantReview, insertReview } from './store/reviews.js';

export interface ReviewInput {
  verdict: 'agree' | 'override' | 'flag';
  corrected_score?: number | null;
  note?: string | null;
}

export async function createReview(em: EntityManager, tenantId: string, actor: Actor, resultId: string, input: ReviewInput) {
  const result = isUuid(resultId) ? await findTenantResult(em, tenantId, resultId) : null;
  if (!result) throw notFound('Result');
  const corrected = input.corrected_score ?? null;
  if (input.verdict === 'override' && corrected === null) {
    throw invalidInput('An override needs corrected_score (1-5)', [{ path: 'corrected_score', message: 'required when verdict is override' }]);
  }
  if (input.verdict !== 'override' && corrected !== null) {
    throw invalidInput('corrected_score belongs to an override only', [{ path: 'corrected_score', message: `not allowed with verdict ${input.verdict}` }]);
  }
  const review = await insertReview(em, {
    tenantId,
    result,
    reviewerId: actor.id ? `${actor.type}:${actor.id}` : actor.name,
    verdict: input.verdict,
    correctedScore: corrected,
    note: input.note ?? null,
  });
  return { review: toReviewDto(review, tenantId) };
}

export async function deleteReview(em: EntityManager, tenantId: string, reviewId: string) {
  const review = isUuid(reviewId) ? await findTenantReview(em, tenantId, reviewId) : null;
  if (!review) throw notFound('Review');
  await deleteTenantReview(em, tenantId, review.id);
}
