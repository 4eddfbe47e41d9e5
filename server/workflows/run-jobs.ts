// What the job runner does for workflow runs: continue a run (a queued run's start, a wait's end,
// a run whose process died), deliver an async run's callback, and find runs to recover.
import type { AppDeps } from '../deps.js';
import { postSignedWebhook } from '../net/signed-webhook.js';
import { continueTrace, observeStep } from '../observability/telemetry.js';
import { PROCESS_ID, staleAfterMs } from '../runs/process-identity.js';
import { executeWorkflowRun, FINAL_STATUSES, MAX_RUN_CRASHES } from './engine/run-workflow.js';
import { claimRun, toStoredRun } from './engine/run-start.js';
import type { RunTarget, StoredRun } from './engine/run-types.js';
import { scopeFromRow } from '../tenants/tenant-scope.js';
import { callbackSecretOf, decryptWebhookSecret } from './webhook-secrets.js';
import { stepsOfRun } from './version-steps.js';
import { getWorkflowRun } from './workflow-runs.service.js';
import { findRunCallback } from './store/run-reads.js';
import { failCrashedRun as failCrashedRunRow, failGivenUpRun, failRunOfInactiveTenant, queueOrphanedRuns } from './store/run-recovery.js';
import { wakeRun } from './store/run-waits.js';
import type { JobPayload, workflowCallbackJob, workflowContinueJob } from '../jobs/contracts.js';

type ContinuePayload = JobPayload<typeof workflowContinueJob>;

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
    // Each wake ends its wait only if the run still waits for exactly that (a decision, a callback or a
    // cancel may have come first), storing how the step goes on with the switch back to running.
    await wakeRun(deps.sql, { runId: payload.run_id, tenantId: payload.tenant_id, wake: payload.wake, seq: payload.seq ?? 0, approvalId: payload.approval_id ?? null });
  }
  const claimed = await claimRun(deps.sql, payload.tenant_id, payload.run_id, deps.config.HEARTBEAT_MS);
  if (!claimed) return;
  if (claimed.crashes > MAX_RUN_CRASHES) {
    await failCrashedRun(deps, payload, claimed.crashes);
    return;
  }
  const scope = scopeFromRow(claimed, claimed.environment_id);
  if (!scope) {
    await failRunOfInactiveTenant(deps.sql, payload.run_id);
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
  await failCrashedRunRow(deps.sql, { runId: payload.run_id, tenantId: payload.tenant_id, crashes, ownerId: PROCESS_ID });
}

/**
 * The continue job's last attempt ended in an unexpected error: the run fails instead of staying
 * `running` (holding a concurrency slot, and skipped by recovery while the used-up job keeps its
 * key). It fails at the step it was about to run, so it can be retried from there; its callback is
 * queued like any final run's.
 */
export async function giveUpWorkflowRun(deps: AppDeps, payload: { run_id: string; tenant_id: string }, err: unknown): Promise<void> {
  deps.log.error({ err, run: payload.run_id }, 'workflow run gave up after its last attempt');
  await failGivenUpRun(deps.sql, payload.run_id, payload.tenant_id);
}

/**
 * POSTs a final run to its callback_url as a Standard Webhooks message signed with the workflow's
 * secret, through the SSRF-safe client. A failure throws: the job runner retries with backoff.
 */
export async function deliverRunCallback(deps: AppDeps, payload: JobPayload<typeof workflowCallbackJob>): Promise<void> {
  const row = await findRunCallback(deps.sql, payload.tenant_id, payload.run_id);
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
  const callbackUrl = row.callback_url;
  // Each attempt is a span in the trace of the run's end (saved with the job, as this may be another
  // process), so the receiver's traceparent joins the run's trace as every other outbound call does.
  await continueTrace(payload.trace_context, () =>
    observeStep('workflow callback', { 'liya.run.id': payload.run_id, 'liya.tenant.id': payload.tenant_id, 'liya.run.status': run.status }, async (span) => {
      // Signed with the derived callback secret: under the webhook secret itself, the callback re-posted
      // to the workflow's webhook URL would be a valid delivery and start a run.
      const res = await postSignedWebhook(deps.outbound, callbackUrl, callbackSecretOf(secret), { id: messageId, body, timeoutMs: deps.config.OUTBOUND_TIMEOUT_MS });
      span.setAttributes({ 'http.response.status_code': res.status });
      await res.body?.cancel().catch(() => undefined);
      if (res.status < 200 || res.status >= 300) throw new Error(`the callback URL answered HTTP ${res.status}`);
    }),
  );
}

/**
 * Runs left running by a process that stopped (crash, kill -9) get a job that continues them. Also
 * queued runs whose job is gone. A job key per run keeps it to one job.
 */
export async function recoverOrphanedRuns(deps: AppDeps): Promise<number> {
  const rows = await queueOrphanedRuns(deps.sql, staleAfterMs(deps.config.HEARTBEAT_MS) / 1000 / 2, staleAfterMs(deps.config.HEARTBEAT_MS) / 1000);
  if (rows.length) deps.log.warn({ runs: rows.length, by: PROCESS_ID }, 'workflow runs of stopped processes queued to continue');
  return rows.length;
}
