// Starting and reading workflow runs: the run, stream and test-run endpoints share startRun; the
// engine (engine/run-workflow.ts) does the rest.
import type { WorkflowRunStatus } from '../../db/column-values.js';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { recordAudit } from '../audit/audit.service.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery } from '../common/pagination.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, isDatabaseUnavailable, notFound } from '../errors.js';
import { readRunSteps } from '../runs/run-steps.js';
import { createWorkflowRun, toStoredRun } from './engine/run-start.js';
import { executeWorkflowRun } from './engine/run-workflow.js';
import type { RunTarget, StoredRun, WorkflowRunEvent } from './engine/run-types.js';
import type { WorkflowRunResult } from './workflows.schemas.js';
import { claimOrFind, hashRequest, keyInProgress, releaseIdempotencyKey, type IdempotencyClaim } from './idempotency.js';
import { concurrencyLimit, createQueuedRun } from './run-admission.js';
import { callbackSecretOf, withMintedWebhookSecret } from './webhook-secrets.js';
import { PROCESS_ID } from '../runs/process-identity.js';
import type { RunLineage } from '../runs/run-lineage.js';
import { prepareRunInput } from './run-input.js';
import type { StepDef } from './step-types.js';
import { maskStepSecrets } from './step-secrets.js';
import { validateDefinition } from './validate-definition.js';
import { findWorkflow } from './workflows.service.js';
import { loadVersionSteps, stepsOfRun } from './version-steps.js';
import { setKeyRun } from './store/idempotency-keys.js';
import { findLiveWorkflow } from './store/run-targets.js';
import { deleteStateEntry, listStateEntries, type StateScope } from './store/workflow-state.js';
import { withinRunLimit } from './store/run-intake.js';
import {
  countRuns, findRun, findRunById, findRunResult, findRunRetryState, findRunStatus, findRunWaitingForInput, findRunWorkflowId, listRuns, runExists, type RunRow,
} from './store/run-reads.js';
import { restartFailedRun } from './store/run-recovery.js';
import { cancelWaitingRun, resumeRunWithAnswer } from './store/run-waits.js';

export interface RunRequest {
  input: Record<string, unknown>;
  conversation_id?: string;
  /** `async`: answer 202 at once, a job runs it (default `sync`). */
  mode?: 'sync' | 'async';
  /** Async runs: the final run is POSTed here, signed with the callback secret derived from the workflow's secret. */
  callback_url?: string;
}

interface ResolvedTarget {
  target: RunTarget;
  limit: number | null;
  hasSecret: boolean;
}

async function resolveTarget(em: EntityManager, deps: AppDeps, scope: TenantScope, idOrKey: string, mode: 'live' | 'test'): Promise<ResolvedTarget> {
  if (mode === 'live') {
    // The hot path: one prepared lookup of the few columns a live run needs (the steps come from the version cache).
    const live = await findLiveWorkflow(deps.sql, scope.tenantId, idOrKey, isUuid(idOrKey) ? idOrKey : null);
    if (!live) throw new AppError('NOT_FOUND', `Workflow "${idOrKey}" not found`, { workflow: idOrKey });
    return {
      target: { scope, workflow: { id: live.id, key: live.workflow_key }, steps: await loadVersionSteps(deps, scope.tenantId, live.id, live.live_version), version: live.live_version, stateScope: 'live' },
      limit: live.max_concurrent_runs,
      hasSecret: live.has_secret,
    };
  }
  const workflow = await findWorkflow(em, scope.tenantId, idOrKey);
  const steps = (workflow.draftSteps ?? workflow.liveSteps ?? []) as StepDef[];
  const problems = validateDefinition(steps.map(maskStepSecrets), 'live');
  if (problems.length) {
    throw new AppError('INVALID_INPUT', 'The draft cannot run', {
      issues: problems.map((p) => ({ path: p.path, message: p.step_id ? `step "${p.step_name ?? p.step_id}": ${p.message}` : p.message, code: p.code, step_id: p.step_id })),
    });
  }
  return { target: { scope, workflow: { id: workflow.id, key: workflow.workflowKey }, steps, version: null, stateScope: 'test' }, limit: null, hasSecret: workflow.webhookSecret !== null };
}

export type StartOutcome =
  | { kind: 'result'; result: WorkflowRunResult }
  | { kind: 'queued'; accepted: { run_id: string; status: WorkflowRunStatus; idempotent_replay?: boolean; webhook_secret?: string; callback_secret?: string } };

export interface StartOptions {
  mode: 'live' | 'test';
  triggeredBy: string;
  idempotencyKey?: string | null;
  onEvent?: (e: WorkflowRunEvent) => void;
  beforeStart?: () => void;
  /** Set when another run starts this one (an agent's workflow tool): depth, budget, deadline, cancellation. */
  lineage?: RunLineage;
}

/** How long a repeated sync request waits for the first one's run to end before 409 IDEMPOTENCY_IN_PROGRESS. */
const REPLAY_WAIT_MS = 30_000;

/**
 * Starts (or, with the conversation_id of a run waiting for input, continues) a run of the live
 * workflow. `test` runs the draft (or the live steps) with the test state scope. With an
 * Idempotency-Key a repeat answers the first run; `mode: async` queues the run and answers at once.
 */
export async function startRun(em: EntityManager, deps: AppDeps, scope: TenantScope, idOrKey: string, request: RunRequest, options: StartOptions): Promise<StartOutcome> {
  const { target, limit, hasSecret } = await resolveTarget(em, deps, scope, idOrKey, options.mode);
  const workflow = target.workflow;
  const async = request.mode === 'async';
  if (request.callback_url !== undefined && !async) {
    throw invalidInput('The request is invalid', [{ path: 'callback_url', message: 'only with "mode": "async"', code: 'invalid_value' }]);
  }
  let claim: IdempotencyClaim | null = null;
  const runId = randomUUID();
  if (options.idempotencyKey) {
    claim = {
      tenantId: scope.tenantId, scope: `${options.mode === 'test' ? 'test' : 'run'}:${workflow.id}`, key: options.idempotencyKey,
      requestHash: hashRequest({ input: request.input, conversation_id: request.conversation_id ?? null, mode: request.mode ?? 'sync', callback_url: request.callback_url ?? null }),
      runId,
    };
    const found = await claimOrFind(deps.sql, claim, async ? 5_000 : REPLAY_WAIT_MS);
    if (!found.claimed) return replayRun(deps, scope.tenantId, found.existing.runId!, claim.key, async);
  }
  try {
    return await startClaimedRun(em, deps, { target, limit, hasSecret }, request, options, runId, claim);
  } catch (err) {
    // Nothing was started: the key is free again.
    if (claim && !(await runExists(deps.sql, claim.runId!))) await releaseIdempotencyKey(deps.sql, claim).catch(() => undefined);
    throw err;
  }
}

async function replayRun(deps: AppDeps, tenantId: string, runId: string, key: string, async: boolean): Promise<StartOutcome> {
  if (async) {
    const row = (await findRunStatus(deps.sql, tenantId, runId))!;
    return { kind: 'queued', accepted: { run_id: runId, status: row.status, idempotent_replay: true } };
  }
  // The first request is still running its run: wait for it to end or pause (looking at its status
  // alone), then answer it with its steps.
  const deadline = Date.now() + REPLAY_WAIT_MS;
  for (;;) {
    const row = await findRunStatus(deps.sql, tenantId, runId);
    if (!row || row.status !== 'running') break;
    if (Date.now() > deadline) throw keyInProgress(key);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { kind: 'result', result: { ...(await loadRunResult(deps, tenantId, runId)), idempotent_replay: true } };
}

async function startClaimedRun(em: EntityManager, deps: AppDeps, resolved: ResolvedTarget, request: RunRequest, options: StartOptions, runId: string, claim: IdempotencyClaim | null): Promise<StartOutcome> {
  const { target, limit } = resolved;
  const scope = target.scope;
  const workflow = target.workflow;
  // The answer to a run waiting for input continues that run.
  if (request.conversation_id) {
    if (!isUuid(request.conversation_id)) throw invalidInput('The request is invalid', [{ path: 'conversation_id', message: 'not a conversation id', code: 'invalid_format' }]);
    const waiting = await findRunWaitingForInput(deps.sql, scope.tenantId, workflow.id, request.conversation_id);
    if (waiting) {
      const message = request.input.message;
      if (typeof message !== 'string' || !message.trim()) {
        throw invalidInput('The request is invalid', [{ path: 'input.message', message: 'the run waits for an answer: send it as input.message', code: 'required' }]);
      }
      // The answer is stored with the switch back to running, so the step goes on even if this process dies.
      const claimed = await resumeRunWithAnswer(deps.sql, { runId: waiting.id, tenantId: scope.tenantId, ownerId: PROCESS_ID, message });
      if (!claimed) throw new AppError('RUN_BUSY', 'The run already continues with another answer', { run_id: waiting.id });
      // The key answers the run this request continues, not a new one: a repeat replays it.
      if (claim) {
        claim.runId = waiting.id;
        await setKeyRun(deps.sql, claim, waiting.id);
      }
      const steps = await stepsOfRun(deps, scope.tenantId, workflow.id, claimed);
      options.beforeStart?.();
      return { kind: 'result', result: await executeSyncRun(em, deps, { ...target, steps, version: claimed.version }, toStoredRun(claimed), { onEvent: options.onEvent, lineage: options.lineage }) };
    }
  }
  const input = await prepareRunInput(deps, scope, request.input);
  const createOptions = {
    runId, conversationId: request.conversation_id, triggeredBy: options.triggeredBy, environmentId: scope.environmentId, callbackUrl: request.callback_url ?? null,
    depth: options.lineage?.depth,
  };
  if (request.mode === 'async') {
    const queue = async (minted: string | null): Promise<StartOutcome> => {
      const outcome = await createQueuedRun(deps, target, input, { ...createOptions, limit });
      if (outcome.status === 'limited') throw concurrencyLimit(limit!);
      return { kind: 'queued', accepted: { run_id: runId, status: 'running', ...(minted ? { webhook_secret: minted, callback_secret: callbackSecretOf(minted) } : {}) } };
    };
    // The callback is signed with a key derived from the workflow's secret: minted on first use,
    // shown this once with the derived key (and taken back when the run is refused, since nobody saw it).
    return request.callback_url && !resolved.hasSecret ? withMintedWebhookSecret(em, deps, scope.tenantId, workflow.id, queue) : queue(null);
  }
  let created: StoredRun | null = null;
  const admitted = await withinRunLimit(deps.sql, workflow.id, limit, async (query) => {
    created = await createWorkflowRun({ ...deps.sql, query }, target, input, createOptions);
  });
  if (!admitted) throw concurrencyLimit(limit!);
  options.beforeStart?.();
  return { kind: 'result', result: await executeSyncRun(em, deps, target, created!, { onEvent: options.onEvent, lineage: options.lineage }) };
}

/**
 * A run executed for the request that started it. When the database goes away under it, the
 * request answers 503 but the run is this (live) process's, which recovery never takes from it:
 * it is handed to the job runner (retried until the database is back) to continue from its stored step.
 */
async function executeSyncRun(em: EntityManager, deps: AppDeps, target: RunTarget, run: StoredRun, options: Parameters<typeof executeWorkflowRun>[4] = {}): Promise<WorkflowRunResult> {
  try {
    return await executeWorkflowRun(em, deps, target, run, options);
  } catch (err) {
    if (isDatabaseUnavailable(err)) deps.localRuns?.handOver([{ target, stored: run }]);
    throw err;
  }
}

/** A stored run as the run endpoints answer it (status, output, trace, and what it waits for). */
export async function loadRunResult(deps: AppDeps, tenantId: string, runId: string): Promise<WorkflowRunResult> {
  const row = await findRunResult(deps.sql, tenantId, runId);
  if (!row) throw notFound('Run');
  const steps = await readRunSteps(deps.sql, tenantId, 'workflow', runId);
  return {
    run_id: runId,
    conversation_id: row.conversation_id,
    status: row.status,
    output: row.output ?? null,
    trace: steps.map(toTraceEntry),
    ...(row.approval_id ? { approval_id: row.approval_id } : {}),
    ...(row.resume_at ? { resume_at: isoRequired(row.resume_at) } : {}),
  };
}

const toTraceEntry = (s: Awaited<ReturnType<typeof readRunSteps>>[number]) => ({
  step_id: s.step_id, step_type: s.type, name: s.name, status: s.status, input: s.input, output: s.output, error: s.error, started_at: s.started_at, completed_at: s.completed_at,
});

const CANCELLABLE: readonly WorkflowRunStatus[] = ['waiting', 'awaiting_approval', 'needs_input'];

const toSummary = (r: RunRow) => ({
  run_id: r.id,
  conversation_id: r.conversation_id,
  version: r.version,
  scope: r.scope,
  status: r.status,
  triggered_by: r.triggered_by,
  output: r.output ?? null,
  error: r.error,
  steps: r.steps_done,
  can_retry: r.status === 'failed' && r.steps_done > 0 && typeof r.error?.step_id === 'string',
  can_cancel: CANCELLABLE.includes(r.status),
  approval_id: r.approval_id,
  resume_at: iso(r.resume_at),
  started_at: isoRequired(r.started_at),
  completed_at: iso(r.completed_at),
});

const RUNS_LIST: HistoryList = { name: 'workflow_runs', key: 'time' };

export async function listWorkflowRuns(em: EntityManager, deps: AppDeps, tenantId: string, idOrKey: string, status: WorkflowRunStatus | undefined, query: HistoryPageQuery) {
  const request = pageRequestOf(RUNS_LIST, query);
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const rows = await listRuns(deps.sql, tenantId, workflow.id, status ?? null, request);
  const page = await pageOfRows(RUNS_LIST, request, rows, (r) => ({ key: r.cursor_key, id: r.id }), (cap) => countRuns(deps.sql, tenantId, workflow.id, status ?? null, cap));
  return { runs: page.items.map(toSummary), pagination: page.pagination };
}

export async function getWorkflowRun(em: EntityManager, deps: AppDeps, tenantId: string, idOrKey: string, runId: string) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const row = isUuid(runId) ? await findRun(deps.sql, tenantId, workflow.id, runId) : null;
  if (!row) throw notFound('Run');
  const steps = await readRunSteps(deps.sql, tenantId, 'workflow', row.id);
  return {
    run: {
      ...toSummary(row),
      workflow_id: workflow.id,
      workflow_key: workflow.workflowKey,
      input: row.input,
      trace: steps.map(toTraceEntry),
    },
  };
}

/** A run by its id alone (any workflow of the tenant). */
export async function getWorkflowRunById(em: EntityManager, deps: AppDeps, tenantId: string, runId: string) {
  const row = isUuid(runId) ? await findRunWorkflowId(deps.sql, tenantId, runId) : null;
  if (!row) throw notFound('Run');
  return getWorkflowRun(em, deps, tenantId, row.workflow_id, runId);
}

/**
 * Continues a failed run from its failed step (earlier steps' outputs are reused from their rows),
 * synchronously like a run. Counts against max_concurrent_runs like a new run.
 */
export async function retryRun(em: EntityManager, deps: AppDeps, scope: TenantScope, idOrKey: string, runId: string): Promise<WorkflowRunResult> {
  const workflow = await findWorkflow(em, scope.tenantId, idOrKey);
  const row = isUuid(runId) ? await findRunRetryState(deps.sql, scope.tenantId, workflow.id, runId) : null;
  if (!row) throw notFound('Run');
  if (row.status !== 'failed' || row.steps_done === 0 || typeof row.error?.step_id !== 'string') {
    throw new AppError('RUN_NOT_RETRYABLE', 'Only a failed run that saved a step can be retried', { run_id: runId, status: row.status });
  }
  let claimed: Awaited<ReturnType<typeof restartFailedRun>> | undefined;
  const admitted = await withinRunLimit(deps.sql, workflow.id, workflow.maxConcurrentRuns ?? null, async (query) => {
    claimed = await restartFailedRun(query, { runId, tenantId: scope.tenantId, ownerId: PROCESS_ID });
  });
  if (!admitted) throw concurrencyLimit(workflow.maxConcurrentRuns!);
  if (!claimed) throw new AppError('RUN_NOT_RETRYABLE', 'The run is being retried already', { run_id: runId });
  const steps = await stepsOfRun(deps, scope.tenantId, workflow.id, claimed);
  const target: RunTarget = { scope, workflow: { id: workflow.id, key: workflow.workflowKey }, steps, version: claimed.version, stateScope: claimed.scope };
  return executeSyncRun(em, deps, target, toStoredRun(claimed));
}

/** Stops a run that waits (delay, callback, approval, input): pending wake-up jobs go, a pending approval is cancelled. */
export async function cancelRun(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, idOrKey: string, runId: string) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const row = isUuid(runId) ? await cancelWaitingRun(deps.sql, tenantId, workflow.id, runId) : null;
  if (!row || row.status === null) throw notFound('Run');
  if (row.cancelled === 0) {
    throw new AppError('RUN_NOT_CANCELLABLE', `A ${row.status} run cannot be cancelled; only waiting, awaiting_approval and needs_input runs can`, { run_id: runId, status: row.status });
  }
  await em.transactional((tx) => recordAudit(tx, tenantId, actor, { action: 'workflow.run.cancel', targetType: 'workflow', targetId: workflow.workflowKey, details: { run_id: runId } }));
  const summary = (await findRunById(deps.sql, tenantId, runId))!;
  return { run: toSummary(summary) };
}

export async function listWorkflowState(em: EntityManager, deps: AppDeps, tenantId: string, idOrKey: string, scope: StateScope) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const rows = await listStateEntries(deps.sql, { tenantId, workflowId: workflow.id, scope });
  return { scope, entries: rows.map((r) => ({ key: r.key, value: r.value, expires_at: iso(r.expires_at), updated_at: isoRequired(r.updated_at) })) };
}

export async function deleteWorkflowState(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, idOrKey: string, key: string, scope: StateScope) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const deleted = await deleteStateEntry(deps.sql, { tenantId, workflowId: workflow.id, scope }, key);
  if (!deleted) throw new AppError('STATE_NOT_FOUND', `No saved value "${key}" in scope ${scope}`, { key, scope });
  await em.transactional((tx) => recordAudit(tx, tenantId, actor, { action: 'workflow.state.delete', targetType: 'workflow', targetId: workflow.workflowKey, details: { key, scope } }));
}
