import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { executeEvalRun, giveUpEvalRun } from '../../server/evals/run-eval.js';

const hasIds = (payload: unknown): payload is { run_id: string; tenant_id: string } =>
  typeof payload === 'object' && payload !== null && typeof (payload as Record<string, unknown>).run_id === 'string' && typeof (payload as Record<string, unknown>).tenant_id === 'string';

// One time slice of an evaluation run; the next slice is a new job under the same key (this job
// is still locked, so graphile-worker adds a fresh one rather than replacing it).
export const evalRunTask = (deps: AppDeps): Task => async (payload, helpers) => {
  if (!hasIds(payload)) return;
  try {
    await executeEvalRun(deps, payload, {
      requeue: async () => {
        await helpers.addJob('eval_run', { run_id: payload.run_id, tenant_id: payload.tenant_id }, { jobKey: `eval-run:${payload.run_id}`, maxAttempts: 25 });
      },
    });
  } catch (err) {
    // graphile-worker keeps a job that used up its attempts but runs it no more.
    if (helpers.job.attempts >= helpers.job.max_attempts) await giveUpEvalRun(deps, payload.run_id, err);
    throw err;
  }
};
