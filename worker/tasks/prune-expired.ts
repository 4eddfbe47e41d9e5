import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { pruneExpiredRows } from '../../server/maintenance/prune-expired.js';

export const pruneExpiredTask = (deps: AppDeps): Task => async (_payload, helpers) => {
  const removed = await pruneExpiredRows(deps.orm.em.fork(), new Date(), deps.config.SESSION_TTL_SECONDS);
  helpers.logger.info(`pruned expired rows: ${JSON.stringify(removed)}`);
};
