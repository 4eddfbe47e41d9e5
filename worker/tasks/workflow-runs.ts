import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { continueRunJob, deliverRunCallback, giveUpWorkflowRun, type ContinuePayload } from '../../server/workflows/run-jobs.js';
import { runScheduleTick } from '../../server/workflows/schedules.js';

const hasIds = (payload: unknown, ...keys: string[]): boolean =>
  typeof payload === 'object' && payload !== null && keys.every((k) => typeof (payload as Record<string, unknown>)[k] === 'string');

// Malformed payloads are dropped, not retried.
export const workflowContinueTask = (deps: AppDeps): Task => async (payload, helpers) => {
  if (!hasIds(payload, 'run_id', 'tenant_id')) return;
  try {
    await continueRunJob(deps, payload as ContinuePayload);
  } catch (err) {
    // graphile-worker keeps a job that used up its attempts but runs it no more.
    if (helpers.job.attempts >= helpers.job.max_attempts) await giveUpWorkflowRun(deps, payload as ContinuePayload, err);
    throw err;
  }
};

export const workflowCallbackTask = (deps: AppDeps): Task => async (payload) => {
  if (hasIds(payload, 'run_id', 'tenant_id')) await deliverRunCallback(deps, payload as { run_id: string; tenant_id: string });
};

export const workflowScheduleTask = (deps: AppDeps): Task => async (payload) => {
  if (hasIds(payload, 'workflow_id', 'tenant_id', 'tick')) await runScheduleTick(deps, payload as { workflow_id: string; tenant_id: string; tick: string });
};
