import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { executeEvalRun, giveUpEvalRun } from '../../server/evals/run-eval.js';
import { evalRunJob } from '../../server/jobs/contracts.js';
import { jobKeyOf } from '../../server/jobs/job-queue.js';

// One time slice of an evaluation run; the next slice is a new job under the same key (this job
// is still locked, so graphile-worker adds a fresh one rather than replacing it).
export const evalRunTask = (deps: AppDeps): Task => async (raw, helpers) => {
  const parsed = evalRunJob.payload.safeParse(raw);
  if (!parsed.success) return; // malformed payloads are dropped, not retried
  const payload = parsed.data;
  try {
    await executeEvalRun(deps, payload, {
      requeue: async () => {
        await helpers.addJob(evalRunJob.task, payload, { jobKey: jobKeyOf(evalRunJob, payload), maxAttempts: evalRunJob.maxAttempts });
      },
    });
  } catch (err) {
    // graphile-worker keeps a job that used up its attempts but runs it no more.
    if (helpers.job.attempts >= helpers.job.max_attempts) await giveUpEvalRun(deps, payload.run_id, err);
    throw err;
  }
};
