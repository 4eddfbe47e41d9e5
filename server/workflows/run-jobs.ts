// What the job runner does for workflow runs: continue a run (a queued run's start, a wait's end,
// a run whose process died), deliver an async run's callback, and find runs to recover.
import type { AppDeps } from '../deps.js';
import { postSignedWebhook } from '../net/signed-webhook.js';
import { PROCESS_ID, staleAfterMs } from '../runs/process-identity.js';
import { claimRun, executeWorkflowRun, FINAL_STATUSES, MAX_RUN_CRASHES, toStoredRun } from './engine/run-workflow.js';
import type { RunTarget, StoredRun } from './engine/run-types.js';
import { scopeFromRow } from '../tenants/tenant-scope.js';
import { callbackSecretOf, decryptWebhookSecret } from './webhook-secrets.js';
import { stepsOfRun } from './version-steps.js';
import { getWorkflowRun } from './workflow-runs.service.js';

export interface ContinuePayload {
  run_id: string;
  tenant_id: string;
  /** Set by a wait's own job: the delay ended, or the approval's or callback's time ran out. */
  wake?: 'delay' | 'approval' | 'callback';
  seq?: number;
  approval_id?: string | null;
}

// Each wake ends its wait only if the run still waits for exactly that (a decision, a callback or a
// cancel may have come first), storing how the step goes on with the switch back to running.
const WAKE_SQL: Record<NonNullable<ContinuePayload['wake']>, string> = {
  delay: `update workflow_runs set status = 'running', wait_kind = null, owner_id = null, updated_at = now(),
                 resume = jsonb_build_object('step_id', next_step_id, 'kind', 'delay', 'data', jsonb_build_object('resume_at', resume_at)), resume_at = null
           where id = $1 and tenant_id = $2 and status = 'waiting' and wait_kind = 'delay' and $3::int is not null`,
  approval: `with a as (update workflow_approvals set status = 'timed_out', decided_at = now() where id = $4::uuid and run_id = $1 and status = 'pending' returning id)
             update workflow_runs set status = 'running', wait_kind = null, approval_id = null, owner_id = null, updated_at = now(),
                    resume = jsonb_build_object('step_id', next_step_id, 'kind', 'approval', 'data', jsonb_build_object('timed_out', true, 'approval_id', $4::text))
              where id = $1 and tenant_id = $2 and status = 'awaiting_approval' and approval_id = $4::uuid and exists (select 1 from a) and $3::int is not null`,
  callback: `update workflow_runs set status = 'running', wait_kind = null, owner_id = null, updated_at = now(), callback_seq = callback_seq + 1,
                    resume = jsonb_build_object('step_id', next_step_id, 'kind', 'callback', 'data', jsonb_build_object('timed_out', true))
              where id = $1 and tenant_id = $2 and status = 'waiting' and wait_kind = 'callback' and callback_seq = $3::int`,
};

// Runs this process is executing now. A claim succeeds for runs this process already owns, so two
// jobs for one run in the same process (a queued run's job and a recovery job) must not both go on.
const executing = new Set<string>();

/** Ends the wait the job was planned for (if it still stands), then runs the run on if nobody alive has it. */
export async function continueRunJob(deps: AppDeps, payload: ContinuePayload): Promise<void> {
  if (executing.has(payload.run_id)) return;
  executing.add(payload.run_id);
  try {
    await continueRun(deps, payload);
  } finally {
    executing.delete(payload.run_id);
  }
}

/**
 * A queued run this process has just written, owned by it (local-runs.ts): executed from what the
 * intake already holds, without a claim. A fenced step write stops it if another process took it.
 */
export async function executeOwnedRun(deps: AppDeps, target: RunTarget, run: StoredRun): Promise<void> {
  if (executing.has(run.id)) return;
  executing.add(run.id);
  try {
    await executeWorkflowRun(deps.orm.em.fork(), deps, target, run);
  } finally {
    executing.delete(run.id);
  }
}

async function continueRun(deps: AppDeps, payload: ContinuePayload): Promise<void> {
  if (payload.wake) {
    const params = [payload.run_id, payload.tenant_id, payload.seq ?? 0];
    await deps.sql.query(WAKE_SQL[payload.wake], payload.wake === 'approval' ? [...params, payload.approval_id ?? null] : params);
  }
  const claimed = await claimRun(deps.sql, payload.tenant_id, payload.run_id, deps.config.HEARTBEAT_MS);
  if (!claimed) return;
  if (claimed.crashes > MAX_RUN_CRASHES) {
    await failCrashedRun(deps, payload, claimed.crashes);
    return;
  }
  const scope = scopeFromRow(claimed, claimed.environment_id);
  if (!scope) {
    await deps.sql.query(
      `update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(), error = '{"code":"TENANT_INACTIVE","message":"The tenant is inactive"}'::jsonb where id = $1`,
      [payload.run_id],
    );
    return;
  }
  const steps = await stepsOfRun(deps, payload.tenant_id, claimed.workflow_id, claimed);
  await executeWorkflowRun(deps.orm.em.fork(), deps, {
    scope, workflow: { id: claimed.workflow_id, key: claimed.workflow_key }, steps, version: claimed.version, stateScope: claimed.scope,
  }, toStoredRun(claimed));
}

/**
 * A poison run: processes died executing it (out of memory, killed) more often than
 * MAX_RUN_CRASHES. It fails at the step it was on, with its callback queued like any final run's,
 * and is never continued again by recovery; a person can retry it.
 */
async function failCrashedRun(deps: AppDeps, payload: { run_id: string; tenant_id: string }, crashes: number): Promise<void> {
  deps.log.error({ run: payload.run_id, crashes }, 'workflow run failed: the processes executing it stopped too often');
  await deps.sql.query(
    `with failed as (
       update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(),
              error = jsonb_build_object('code', 'RUN_CRASHED', 'step_id', next_step_id, 'crashes', $3::int,
                                         'message', 'The process executing this run stopped ' || $3::int || ' times while running it; it is not continued again (retry it to try once more)')
        where id = $1 and tenant_id = $2 and status = 'running' and owner_id = $4
       returning id, callback_url)
     select graphile_worker.add_job('workflow_callback', json_build_object('run_id', id::text, 'tenant_id', $2::text), max_attempts => 6, job_key => 'wf-callback:' || id::text)
       from failed where callback_url is not null`,
    [payload.run_id, payload.tenant_id, crashes, PROCESS_ID],
  );
}

/**
 * The continue job's last attempt ended in an unexpected error: the run fails instead of staying
 * `running` (holding a concurrency slot, and skipped by recovery while the used-up job keeps its
 * key). It fails at the step it was about to run, so it can be retried from there; its callback is
 * queued like any final run's.
 */
export async function giveUpWorkflowRun(deps: AppDeps, payload: { run_id: string; tenant_id: string }, err: unknown): Promise<void> {
  deps.log.error({ err, run: payload.run_id }, 'workflow run gave up after its last attempt');
  await deps.sql.query(
    `with failed as (
       update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(),
              error = jsonb_build_object('code', 'INTERNAL_ERROR', 'message', 'The run stopped after repeated unexpected errors; retry it to continue', 'step_id', next_step_id)
        where id = $1 and tenant_id = $2 and status = 'running'
       returning id, callback_url)
     select graphile_worker.add_job('workflow_callback', json_build_object('run_id', id::text, 'tenant_id', $2::text), max_attempts => 6, job_key => 'wf-callback:' || id::text)
       from failed where callback_url is not null`,
    [payload.run_id, payload.tenant_id],
  );
}

/**
 * POSTs a final run to its callback_url as a Standard Webhooks message signed with the workflow's
 * secret, through the SSRF-safe client. A failure throws: the job runner retries with backoff.
 */
export async function deliverRunCallback(deps: AppDeps, payload: { run_id: string; tenant_id: string }): Promise<void> {
  const [row] = await deps.sql.query<{ workflow_id: string; callback_url: string | null; status: string; webhook_secret: string | null }>(
    `select r.workflow_id::text, r.callback_url, r.status, w.webhook_secret from workflow_runs r join workflows w on w.id = r.workflow_id where r.id = $1 and r.tenant_id = $2`,
    [payload.run_id, payload.tenant_id],
  );
  if (!row?.callback_url || !FINAL_STATUSES.includes(row.status as never)) return;
  const em = deps.orm.em.fork();
  const secret = row.webhook_secret ? await decryptWebhookSecret(em, deps, payload.tenant_id, row.workflow_id, row.webhook_secret) : null;
  if (!secret) {
    deps.log.warn({ run: payload.run_id }, 'run callback not sent: the workflow has no readable secret');
    return;
  }
  const { run } = await getWorkflowRun(em, deps, payload.tenant_id, row.workflow_id, payload.run_id);
  const body = JSON.stringify({ type: `workflow.run.${run.status}`, timestamp: new Date().toISOString(), data: run });
  // One message per final result (a retried run ends again): deliveries of it share the id, so a
  // receiver drops a repeat by it.
  const messageId = `msg_run_${payload.run_id}_${Date.parse(run.completed_at ?? '') || 0}`;
  // Signed with the derived callback secret: under the webhook secret itself, the callback re-posted
  // to the workflow's webhook URL would be a valid delivery and start a run.
  const res = await postSignedWebhook(deps.outbound, row.callback_url, callbackSecretOf(secret), { id: messageId, body, timeoutMs: deps.config.OUTBOUND_TIMEOUT_MS });
  await res.body?.cancel().catch(() => undefined);
  if (res.status < 200 || res.status >= 300) throw new Error(`the callback URL answered HTTP ${res.status}`);
}

/**
 * Runs left running by a process that stopped (crash, kill -9) get a job that continues them. Also
 * queued runs whose job is gone. A job key per run keeps it to one job.
 */
export async function recoverOrphanedRuns(deps: AppDeps): Promise<number> {
  const rows = await deps.sql.query<{ id: string }>(
    `with orphans as (
       select r.id, r.tenant_id from workflow_runs r
        where r.status = 'running' and r.updated_at < now() - make_interval(secs => $1)
          and (r.owner_id is null
               or not exists (select 1 from worker_heartbeats h where h.worker_id = r.owner_id and h.last_seen_at > now() - make_interval(secs => $2)))
          and not exists (select 1 from graphile_worker._private_jobs j where j.key = 'wf-run:' || r.id::text)
        limit 500)
     select id::text, graphile_worker.add_job('workflow_continue', json_build_object('run_id', id::text, 'tenant_id', tenant_id::text), max_attempts => 10,
                                              job_key => 'wf-run:' || id::text, job_key_mode => 'preserve_run_at') is not null as queued
       from orphans`,
    [staleAfterMs(deps.config.HEARTBEAT_MS) / 1000 / 2, staleAfterMs(deps.config.HEARTBEAT_MS) / 1000],
  );
  if (rows.length) deps.log.warn({ runs: rows.length, by: PROCESS_ID }, 'workflow runs of stopped processes queued to continue');
  return rows.length;
}
