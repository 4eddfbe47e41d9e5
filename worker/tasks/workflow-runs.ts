import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { workflowCallbackJob, workflowContinueJob, workflowScheduleJob } from '../../server/jobs/contracts.js';
import { continueRunJob, deliverRunCallback, giveUpWorkflowRun } from '../../server/workflows/run-jobs.js';
import { runScheduleTick } from '../../server/workflows/schedules.js';

// Malformed payloads are dropped, not retried.
export const workflowContinueTask = (deps: AppDeps): Task => async (raw, helpers) => {
  const parsed = workflowContinueJob.payload.safeParse(raw);
  if (!parsed.success) return;
  try {
    await continueRunJob(deps, parsed.data);
  } catch (err) {
    // graphile-worker keeps a job that used up its attempts but runs it no more.
    if (helpers.job.attempts >= helpers.job.max_attempts) await giveUpWorkflowRun(deps, parsed.data, err);
    throw err;
  }
};

export const workflowCallbackTask = (deps: AppDeps): Task => async (raw) => {
  const parsed = workflowCallbackJob.payload.safeParse(raw);
  if (parsed.success) await deliverRunCallback(deps, parsed.data);
};

export const workflowScheduleTask = (deps: AppDeps): Task => async (raw) => {
  const parsed = workflowScheduleJob.payload.safeParse(raw);
  if (parsed.success) await runScheduleTick(deps, parsed.data);
};
