// Starting and reading workflow runs: the run, stream and test-run endpoints share startRun; the
// engine (engine/run-workflow.ts) does the rest.
import type { EntityManager } from '../../db/orm.js';
import type { WorkflowRunStatus } from '../../db/entities/workflow.js';
import type { Actor } from '../actor.js';
import type { AgentRunScope } from '../agents/run-agent.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import { readRunSteps } from '../runs/run-steps.js';
import { createWorkflowRun, executeWorkflowRun, type RunTarget, type WorkflowRunEvent, type WorkflowRunResult } from './engine/run-workflow.js';
import { deleteStateEntry, listStateEntries, type StateScope } from './engine/workflow-state.js';
import { prepareRunInput } from './run-input.js';
import type { StepDef } from './step-types.js';
import { validateDefinition } from './validate-definition.js';
import { findWorkflow } from './workflows.service.js';

export interface RunRequest {
  input: Record<string, unknown>;
  conversation_id?: string;
}

/** The steps of a deployed version, kept per (workflow, version): versions never change. */
const versionSteps = new Map<string, StepDef[]>();
const VERSION_CACHE_MAX = 500;

async function loadVersionSteps(deps: AppDeps, tenantId: string, workflowId: string, version: number): Promise<StepDef[]> {
  const cacheKey = `${workflowId}:${version}`;
  const cached = versionSteps.get(cacheKey);
  if (cached) return cached;
  const [row] = await deps.sql.query<{ steps: StepDef[] }>(
    'select steps from workflow_versions where workflow_id = $1 and version = $2 and tenant_id = $3',
    [workflowId, version, tenantId],
    'liya_workflow_version_steps',
  );
  if (!row) throw notFound('Workflow version');
  if (versionSteps.size >= VERSION_CACHE_MAX) versionSteps.delete(versionSteps.keys().next().value!);
  versionSteps.set(cacheKey, row.steps);
  return row.steps;
}

/**
 * Starts (or, with the conversation_id of a run waiting for input, continues) a run of the live
 * workflow. `test` runs the draft (or the live steps) with the test state scope.
 */
export async function startRun(
  em: EntityManager,
  deps: AppDeps,
  scope: AgentRunScope,
  idOrKey: string,
  request: RunRequest,
  options: { mode: 'live' | 'test'; triggeredBy: string; onEvent?: (e: WorkflowRunEvent) => void; beforeStart?: () => void },
): Promise<WorkflowRunResult> {
  let target: RunTarget;
  if (options.mode === 'live') {
    // The hot path: one prepared lookup of the few columns a live run needs (the steps come from the version cache).
    const [live] = await deps.sql.query<{ id: string; workflow_key: string; live_version: number }>(
      `select id::text, workflow_key, live_version from workflows
        where tenant_id = $1 and (workflow_key = $2 or ($3::uuid is not null and id = $3::uuid)) and is_active and live_version is not null`,
      [scope.tenantId, idOrKey, isUuid(idOrKey) ? idOrKey : null],
      'liya_workflow_live_lookup',
    );
    if (!live) throw new AppError('NOT_FOUND', `Workflow "${idOrKey}" not found`, { workflow: idOrKey });
    target = { scope, workflow: { id: live.id, key: live.workflow_key }, steps: await loadVersionSteps(deps, scope.tenantId, live.id, live.live_version), version: live.live_version, stateScope: 'live' };
  } else {
    const workflow = await findWorkflow(em, scope.tenantId, idOrKey);
    const steps = (workflow.draftSteps ?? workflow.liveSteps ?? []) as StepDef[];
    const problems = validateDefinition(steps, 'live');
    if (problems.length) {
      throw new AppError('INVALID_INPUT', 'The draft cannot run', {
        issues: problems.map((p) => ({ path: p.path, message: p.step_id ? `step "${p.step_name ?? p.step_id}": ${p.message}` : p.message, code: p.code, step_id: p.step_id })),
      });
    }
    target = { scope, workflow: { id: workflow.id, key: workflow.workflowKey }, steps, version: null, stateScope: 'test' };
  }
  const workflow = target.workflow;

  // The answer to a run waiting for input continues that run.
  if (request.conversation_id) {
    if (!isUuid(request.conversation_id)) throw invalidInput('The request is invalid', [{ path: 'conversation_id', message: 'not a conversation id', code: 'invalid_format' }]);
    const [paused] = await deps.sql.query<{ id: string; version: number | null; definition: StepDef[] | null }>(
      `select id::text, version, definition from workflow_runs where tenant_id = $1 and workflow_id = $2 and conversation_id = $3 and status = 'needs_input'
        order by started_at desc limit 1`,
      [scope.tenantId, workflow.id, request.conversation_id],
    );
    if (paused) {
      const message = request.input.message;
      if (typeof message !== 'string' || !message.trim()) {
        throw invalidInput('The request is invalid', [{ path: 'input.message', message: 'the run waits for an answer: send it as input.message', code: 'required' }]);
      }
      // The paused run goes on with the definition it started with.
      const steps = paused.version !== null ? await loadVersionSteps(deps, scope.tenantId, workflow.id, paused.version) : (paused.definition ?? []);
      options.beforeStart?.();
      return executeWorkflowRun(em, deps, { ...target, steps, version: paused.version }, paused.id, { onEvent: options.onEvent, resume: { message } });
    }
  }
  const input = await prepareRunInput(deps, scope, request.input);
  const created = await createWorkflowRun(deps.sql, target, input, { conversationId: request.conversation_id, triggeredBy: options.triggeredBy });
  options.beforeStart?.();
  return executeWorkflowRun(em, deps, target, created, { onEvent: options.onEvent });
}

interface RunRow {
  id: string;
  conversation_id: string;
  version: number | null;
  scope: StateScope;
  status: WorkflowRunStatus;
  triggered_by: string;
  input: Record<string, unknown>;
  output: unknown;
  error: Record<string, unknown> | null;
  steps_done: number;
  started_at: Date;
  completed_at: Date | null;
}

const RUN_COLUMNS = 'id::text, conversation_id::text, version, scope, status, triggered_by, input, output, error, steps_done, started_at, completed_at';

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
  can_retry: r.status === 'failed' && r.steps_done > 0,
  can_cancel: r.status === 'waiting',
  started_at: isoRequired(r.started_at),
  completed_at: iso(r.completed_at),
});

export async function listWorkflowRuns(em: EntityManager, deps: AppDeps, tenantId: string, idOrKey: string, status: WorkflowRunStatus | undefined, page: { limit: number; offset: number }) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const where = 'tenant_id = $1 and workflow_id = $2 and ($3::text is null or status = $3)';
  const rows = await deps.sql.query<RunRow>(`select ${RUN_COLUMNS} from workflow_runs where ${where} order by started_at desc, id limit $4 offset $5`, [tenantId, workflow.id, status ?? null, page.limit, page.offset]);
  const [count] = await deps.sql.query<{ n: string }>(`select count(*) as n from workflow_runs where ${where}`, [tenantId, workflow.id, status ?? null]);
  return { runs: rows.map(toSummary), pagination: { total: Number(count.n), limit: page.limit, offset: page.offset } };
}

export async function getWorkflowRun(em: EntityManager, deps: AppDeps, tenantId: string, idOrKey: string, runId: string) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const [row] = isUuid(runId)
    ? await deps.sql.query<RunRow>(`select ${RUN_COLUMNS} from workflow_runs where id = $1 and tenant_id = $2 and workflow_id = $3`, [runId, tenantId, workflow.id])
    : [];
  if (!row) throw notFound('Run');
  const steps = await readRunSteps(deps.sql, tenantId, 'workflow', row.id);
  return {
    run: {
      ...toSummary(row),
      workflow_id: workflow.id,
      workflow_key: workflow.workflowKey,
      input: row.input,
      trace: steps.map((s) => ({ step_id: s.step_id, step_type: s.type, name: s.name, status: s.status, input: s.input, output: s.output, error: s.error, started_at: s.started_at, completed_at: s.completed_at })),
    },
  };
}

export async function listWorkflowState(em: EntityManager, deps: AppDeps, tenantId: string, idOrKey: string, scope: StateScope) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  return { scope, entries: await listStateEntries(deps.sql, { tenantId, workflowId: workflow.id, scope }) };
}

export async function deleteWorkflowState(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, idOrKey: string, key: string, scope: StateScope) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const deleted = await deleteStateEntry(deps.sql, { tenantId, workflowId: workflow.id, scope }, key);
  if (!deleted) throw new AppError('STATE_NOT_FOUND', `No saved value "${key}" in scope ${scope}`, { key, scope });
  recordAudit(em, tenantId, actor, { action: 'workflow.state.delete', targetType: 'workflow', targetId: workflow.workflowKey, details: { key, scope } });
  await em.flush();
}
