import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { onlineEvalIntakeJob, onlineEvalSweepJob } from '../../server/jobs/contracts.js';
import { moveOnlineSamples, ONLINE_INTAKE_POLL_MS, pollOnlineSamples, sweepOnlineSamples } from '../../server/evals/online-intake.js';
import { enqueueWith } from '../../server/jobs/job-queue.js';

export const onlineEvalIntakeTask = (deps: AppDeps): Task => async (raw) => {
  const parsed = onlineEvalIntakeJob.payload.safeParse(raw);
  if (!parsed.success) return; // malformed payloads are dropped, not retried
  const outcome = await moveOnlineSamples(deps, parsed.data.tenant_id);
  // A long backlog is moved a turn at a time: the job queues itself again behind other tenants'.
  if (outcome.more) await enqueueWith(deps.sql, onlineEvalIntakeJob, parsed.data);
};

export const onlineEvalSweepTask = (deps: AppDeps): Task => async (raw) => {
  if (!onlineEvalSweepJob.payload.safeParse(raw).success) return;
  await sweepOnlineSamples(deps);
};

/**
 * Looks for queued samples every ONLINE_INTAKE_POLL_MS and queues their tenants' intakes (a look
 * still running when the next is due is not doubled). Answers the function that stops it.
 */
export function startOnlineSamplePoll(deps: AppDeps, onError: (err: unknown) => void): () => void {
  let looking = false;
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    void pollOnlineSamples(deps).catch(onError).finally(() => (looking = false));
  }, ONLINE_INTAKE_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
