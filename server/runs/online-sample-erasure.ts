// Erasing one end user: their runs queued for online evaluation and not yet scored go (a scored
// sample is an eval result, which the evaluations feature anonymises).
import type { EntityManager } from '../../db/orm.js';
import { deleteUserOnlineSamples } from './store/online-samples.js';

/** Deletes the tenant's queued samples whose input's `user_id` is the end user; how many. */
export function forgetOnlineSamplesOf(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  return deleteUserOnlineSamples(em, tenantId, userId);
}
