// Schedule triggers. Each active schedule workflow has one pending job (job key per workflow) at
// its next tick. The tick's job records the tick (unique per workflow and time, so any number of
// processes start it once), queues the run and plans the next tick from now: after downtime the
// late job makes one catch-up run, not one per missed tick.
import { Cron } from 'croner';
import type { EntityManager } from '../../db/orm.js';
import type { IWorkflow } from '../../db/entities/workflow.js';
import type { AppDeps } from '../deps.js';
import { enqueueJob } from '../jobs.js';
import { loadTenantScope } from '../tenants/tenant-scope.js';
import { createQueuedRun } from './run-admission.js';
import type { StepDef } from './step-types.js';
import { loadVersionSteps } from './version-steps.js';

const jobKey = (workflowId: string) => `wf-schedule:${workflowId}`;

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
    await em.execute('select graphile_worker.remove_job(?)', [jobKey(workflow.id)]);
    return;
  }
  await enqueueJob(em, 'workflow_schedule', { workflow_id: workflow.id, tenant_id: workflow.tenant.id, tick: next.toISOString() }, { runAt: next, jobKey: jobKey(workflow.id), maxAttempts: 5 });
}

/** The job of one tick: start its run (once), then plan the next tick. */
export async function runScheduleTick(deps: AppDeps, payload: { workflow_id: string; tenant_id: string; tick: string }): Promise<void> {
  const [workflow] = await deps.sql.query<{ id: string; workflow_key: string; live_version: number | null; is_active: boolean; live_steps: StepDef[] | null; max_concurrent_runs: number | null }>(
    'select id::text, workflow_key, live_version, is_active, live_steps, max_concurrent_runs from workflows where id = $1 and tenant_id = $2',
    [payload.workflow_id, payload.tenant_id],
  );
  const schedule = workflow?.is_active && workflow.live_version !== null ? scheduleOf(workflow.live_steps) : null;
  if (!workflow || !schedule) return;
  const tick = new Date(payload.tick);
  // The next tick is planned before this one's run is started: a run that cannot start (this job
  // failing all its attempts) must not stop the schedule. A retry plans the same next tick again.
  const next = nextTick(schedule.cron, schedule.timezone, new Date(Math.max(Date.now(), tick.getTime())));
  if (next) {
    await deps.sql.query(`select graphile_worker.add_job('workflow_schedule', $1::json, run_at => $2, job_key => $3, max_attempts => 5)`, [
      JSON.stringify({ workflow_id: workflow.id, tenant_id: payload.tenant_id, tick: next.toISOString() }), next, jobKey(workflow.id),
    ]);
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
        guard: { text: 'insert into workflow_schedule_ticks (workflow_id, tick_at, created_at) values ($1, $2, now()) on conflict do nothing returning 1', params: [workflow.id, tick] },
      },
    );
    if (outcome.status === 'limited') deps.log.warn({ workflow: workflow.workflow_key, tick: payload.tick }, 'schedule tick skipped: the workflow is at max_concurrent_runs');
  }
}
