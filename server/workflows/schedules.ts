// Schedule triggers. Each active schedule workflow has one pending job (job key per workflow) at
// its next tick. The tick's job records the tick (unique per workflow and time, so any number of
// processes start it once), queues the run and plans the next tick from now: after downtime the
// late job makes one catch-up run, not one per missed tick.
import { Cron } from 'croner';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { workflowScheduleJob } from '../jobs/contracts.js';
import { enqueue, enqueueWith, removeJob } from '../jobs/job-queue.js';
import { loadTenantScope } from '../tenants/tenant-scope.js';
import { createQueuedRun } from './run-admission.js';
import type { StepDef } from './step-types.js';
import { loadVersionSteps } from './version-steps.js';
import { findScheduledWorkflow, type IWorkflow } from './store/workflows.js';

/** The first tick strictly after `after`, or null when the expression has none. */
export function nextTick(cron: string, timezone: string | undefined, after: Date): Date | null {
  return new Cron(cron, { paused: true, timezone }).nextRun(after);
}

const scheduleOf = (steps: StepDef[] | null) => {
  const trigger = steps?.find((s) => s.step_type === 'trigger');
  if (trigger?.config.trigger_subtype !== 'schedule' || typeof trigger.config.cron !== 'string') return null;
  return { cron: trigger.config.cron, timezone: typeof trigger.config.timezone === 'string' ? trigger.config.timezone : undefined };
};

/** Plans (or removes) the workflow's next tick after a deploy, toggle, live change or delete; in the caller's transaction. */
export async function syncWorkflowSchedule(em: EntityManager, workflow: IWorkflow, deleted = false): Promise<void> {
  const schedule = !deleted && workflow.isActive ? scheduleOf(workflow.liveSteps as StepDef[] | null) : null;
  const next = schedule ? nextTick(schedule.cron, schedule.timezone, new Date()) : null;
  if (!next) {
    await removeJob(em, workflowScheduleJob, workflow.id);
    return;
  }
  await enqueue(em, workflowScheduleJob, { workflow_id: workflow.id, tenant_id: workflow.tenant.id, tick: next.toISOString() }, { runAt: next });
}

/** The job of one tick: start its run (once), then plan the next tick. */
export async function runScheduleTick(deps: AppDeps, payload: { workflow_id: string; tenant_id: string; tick: string }): Promise<void> {
  const workflow = await findScheduledWorkflow(deps.sql, payload.workflow_id, payload.tenant_id);
  const schedule = workflow?.is_active && workflow.live_version !== null ? scheduleOf(workflow.live_steps as StepDef[] | null) : null;
  if (!workflow || !schedule) return;
  const tick = new Date(payload.tick);
  // The next tick is planned before this one's run is started: a run that cannot start (this job
  // failing all its attempts) must not stop the schedule. A retry plans the same next tick again.
  const next = nextTick(schedule.cron, schedule.timezone, new Date(Math.max(Date.now(), tick.getTime())));
  if (next) {
    await enqueueWith(deps.sql, workflowScheduleJob, { workflow_id: workflow.id, tenant_id: payload.tenant_id, tick: next.toISOString() }, { runAt: next });
  }
  const scope = await loadTenantScope(deps.sql, payload.tenant_id);
  if (scope) {
    const steps = await loadVersionSteps(deps, payload.tenant_id, workflow.id, workflow.live_version!);
    const outcome = await createQueuedRun(
      deps,
      { scope, workflow: { id: workflow.id, key: workflow.workflow_key }, steps, version: workflow.live_version, stateScope: 'live' },
      { scheduled_at: tick.toISOString(), fired_at: new Date().toISOString() },
      {
        triggeredBy: 'schedule', environmentId: null, limit: workflow.max_concurrent_runs,
        guard: { tick: { workflowId: workflow.id, tickAt: tick } },
      },
    );
    if (outcome.status === 'limited') deps.log.warn({ workflow: workflow.workflow_key, tick: payload.tick }, 'schedule tick skipped: the workflow is at max_concurrent_runs');
  }
}
