// The evaluations feature's part of erasing one end user. A case whose input names them is
// deleted: its input is their data (a resume, a message), so a case with the id alone replaced
// would still hold them; a curated dataset loses that case. A result of a run is anonymised
// instead: what was sent and answered goes, the scores stay, so a run's statistics, its
// comparison with other runs and a deployment gate's record still add up.
import type { EntityManager } from '../../db/orm.js';
import { deleteUserCases } from './store/datasets.js';
import { anonymiseResults, listUserResultIds } from './store/eval-results.js';

/** Deletes the tenant's eval cases whose input's `user_id` is the end user; how many. */
export function deleteUserEvalCases(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  return deleteUserCases(em, tenantId, userId);
}

/** The tenant's eval results whose input's `user_id` is the end user. */
export function listUserEvalResults(em: EntityManager, tenantId: string, userId: string): Promise<string[]> {
  return listUserResultIds(em, tenantId, userId);
}

/** Anonymises those results; how many. */
export function anonymiseEvalResults(em: EntityManager, tenantId: string, ids: string[]): Promise<number> {
  return anonymiseResults(em, tenantId, ids);
}
