import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { enforceRetention } from '../../server/maintenance/enforce-retention.js';

export const enforceRetentionTask = (deps: AppDeps): Task => async () => {
  const report = await enforceRetention(deps);
  deps.log.info({ component: 'retention', ...report }, report.skipped ? 'retention skipped: another run holds its lock' : 'retention enforced');
};
