// Workflow definitions: create (draft), read, list, update with step upsert and drafts, discard a
// draft, toggle, deploy (a new immutable version), versions, hard delete.
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import { AppError, type ValidationIssue } from '../errors.js';
import { actionNameOf, applyStepInputs } from './apply-step-inputs.js';
import { DEFAULT_TRIGGER_SUBTYPE, type StepDef } from './step-types.js';
import { maskStepSecrets, protectStepSecrets } from './step-secrets.js';
import { validateDefinition, type DefinitionIssue } from './validate-definition.js';
import type { AppDeps } from '../deps.js';
import { syncWorkflowSchedule } from './schedules.js';
import { callbackSecretOf, encryptWebhookSecret, newWebhookSecret, newWebhookSlug, webhookUrl } from './webhook-secrets.js';
import { RESERVED_WORKFLOW_KEYS, type CreateWorkflowInput, type UpdateWorkflowInput, type WorkflowDto } from './workflows.schemas.js';
import { findWorkflowVersions, newWorkflowVersion } from './store/workflow-versions.js';
import {
  deleteWorkflowRow, findWorkflowBy, flushWorkflowChanges, flushWorkflowChangesUnlessTaken, listLiveWorkflows, lockWorkflow, newDraftWorkflow, type IWorkflow,
} from './store/workflows.js';

// The run statuses, for the router's schemas (the router reads no store).

export const workflowEndpoint = (key: string) => `/v1/workflows/${key}/run`;

// Credentials of http_request steps are never shown (step-secrets.ts).
const toStepDto = (step: StepDef) => ({ ...maskStepSecrets(step), action_name: actionNameOf(step.action_id) });

function triggerTypeOf(steps: StepDef[] | null): string {
  const trigger = steps?.find((s) => s.step_type === 'trigger');
  const subtype = trigger?.config?.trigger_subtype;
  return typeof subtype === 'string' ? subtype : DEFAULT_TRIGGER_SUBTYPE;
}

export function toWorkflowDto(w: IWorkflow, tenantId: string): WorkflowDto {
  const live = w.liveSteps as StepDef[] | null;
  const draft = w.draftSteps as StepDef[] | null;
  return {
    id: w.id,
    tenant_id: tenantId,
    name: w.name,
    workflow_key: w.workflowKey,
    description: w.description ?? null,
    is_active: w.isActive,
    status: w.status,
    trigger_type: w.triggerType,
    trigger_config: { slug: w.webhookSlug ?? null, has_secret: w.webhookSecret !== null && w.webhookSecret !== undefined },
    max_concurrent_runs: w.maxConcurrentRuns ?? null,
    version: w.liveVersion ?? null,
    has_draft: draft !== null,
    draft_steps: draft && live ? draft.map(toStepDto) : null,
    created_at: isoRequired(w.createdAt),
    updated_at: isoRequired(w.updatedAt),
    steps: (live ?? draft ?? []).map(toStepDto),
  };
}

const definitionError = (issues: DefinitionIssue[] | ValidationIssue[], what: string) =>
  new AppError('INVALID_INPUT', what, {
    issues: issues.map((i) => ('step_id' in i ? { path: i.path, message: i.step_id ? `step "${i.step_name ?? i.step_id}" (${i.step_id}): ${i.message}` : i.message, code: i.code, step_id: i.step_id } : i)),
  });

/** By id or workflow_key; another tenant's workflow is not found. `deployedOnly`: a never-deployed workflow is 404 too. */
export async function findWorkflow(em: EntityManager, tenantId: string, idOrKey: string, deployedOnly = false): Promise<IWorkflow> {
  const workflow = await findWorkflowBy(em, tenantId, isUuid(idOrKey) ? { id: idOrKey.toLowerCase() } : { workflowKey: idOrKey });
  if (!workflow || (deployedOnly && workflow.liveVersion === null)) throw new AppError('NOT_FOUND', `Workflow "${idOrKey}" not found`, { workflow: idOrKey });
  return workflow;
}

/**
 * The key a name gives. A word of the fixed paths under /v1/workflows (`actions`, `runs`, ...) and a
 * UUID (read as a workflow id) would make the workflow unreachable by key: they get `-workflow`.
 */
function slugOf(name: string): string {
  const slug = name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60);
  if (!slug) return 'workflow';
  return RESERVED_WORKFLOW_KEYS.has(slug) || isUuid(slug) ? `${slug}-workflow` : slug;
}

/** The event name of an event trigger (kept in a column, so POST /v1/events finds the workflows). */
function triggerEventOf(steps: StepDef[] | null): string | null {
  const trigger = steps?.find((s) => s.step_type === 'trigger');
  return trigger?.config?.trigger_subtype === 'event' && typeof trigger.config.event_name === 'string' ? trigger.config.event_name : null;
}

/** The steps of a request, checked, with their credentials encrypted (against the stored steps `previous`). */
async function stepsToStore(em: EntityManager, deps: Pick<AppDeps, 'config'>, tenantId: string, previous: StepDef[] | null, inputs: CreateWorkflowInput['steps'], stage: 'draft' | 'live') {
  const { steps, issues } = applyStepInputs(previous, inputs ?? []);
  if (issues.length) throw definitionError(issues, 'The steps are invalid');
  const problems = validateDefinition(steps, stage);
  if (problems.length) throw definitionError(problems, stage === 'draft' ? 'The steps are invalid' : 'The live definition would not be valid');
  return protectStepSecrets(em, deps, tenantId, steps, previous);
}

export async function createWorkflow(em: EntityManager, deps: Pick<AppDeps, 'config'>, tenantId: string, actor: Actor, input: CreateWorkflowInput): Promise<{ workflow: WorkflowDto }> {
  const steps = await stepsToStore(em, deps, tenantId, null, input.steps, 'draft');
  const base = slugOf(input.name);
  // A taken key gets a short random suffix; a handful of tries is plenty.
  for (let attempt = 0; attempt < 5; attempt++) {
    const key = attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex')}`;
    const fork = em.fork();
    const workflow = newDraftWorkflow(fork, tenantId, { workflowKey: key, name: input.name, description: input.description ?? null, triggerType: triggerTypeOf(steps), draftSteps: steps });
    recordAudit(fork, tenantId, actor, { action: 'workflow.create', targetType: 'workflow', targetId: key });
    if (!(await flushWorkflowChangesUnlessTaken(fork)).taken) return { workflow: toWorkflowDto(workflow, tenantId) };
  }
  throw new AppError('CONFLICT', 'Could not find a free workflow_key; set one with PATCH');
}

/**
 * A draft workflow under a key chosen by the caller, written in the caller's transaction (deploys
 * as code name every workflow by its key); 409 WORKFLOW_KEY_TAKEN when the tenant has it already.
 */
export async function createWorkflowWithKey(
  em: EntityManager,
  deps: Pick<AppDeps, 'config'>,
  tenantId: string,
  actor: Actor,
  input: CreateWorkflowInput & { workflow_key: string; max_concurrent_runs?: number | null },
): Promise<{ workflow: WorkflowDto }> {
  const steps = await stepsToStore(em, deps, tenantId, null, input.steps, 'draft');
  const workflow = newDraftWorkflow(em, tenantId, { workflowKey: input.workflow_key, name: input.name, description: input.description ?? null, triggerType: triggerTypeOf(steps), draftSteps: steps });
  workflow.maxConcurrentRuns = input.max_concurrent_runs ?? null;
  recordAudit(em, tenantId, actor, { action: 'workflow.create', targetType: 'workflow', targetId: input.workflow_key });
  if ((await flushWorkflowChangesUnlessTaken(em)).taken) {
    throw new AppError('WORKFLOW_KEY_TAKEN', `A workflow with the key "${input.workflow_key}" already exists`, { workflow_key: input.workflow_key });
  }
  return { workflow: toWorkflowDto(workflow, tenantId) };
}

export async function listWorkflows(em: EntityManager, tenantId: string) {
  const rows = await listLiveWorkflows(em, tenantId);
  return rows.map((w) => {
    const { draft_steps: _d, ...dto } = toWorkflowDto(w, tenantId);
    return { ...dto, endpoint: workflowEndpoint(w.workflowKey), method: 'POST' as const };
  });
}

export async function getWorkflow(em: EntityManager, tenantId: string, idOrKey: string): Promise<{ workflow: WorkflowDto }> {
  return { workflow: toWorkflowDto(await findWorkflow(em, tenantId, idOrKey, true), tenantId) };
}

export async function updateWorkflow(em: EntityManager, deps: Pick<AppDeps, 'config'>, tenantId: string, actor: Actor, input: UpdateWorkflowInput): Promise<{ workflow: WorkflowDto }> {
  const workflow = await findWorkflow(em, tenantId, input.workflowIdOrKey);
  const deployed = workflow.liveVersion !== null;
  const changed: string[] = [];
  if (input.steps !== undefined) {
    const toDraft = !deployed || input.as_draft === true;
    const base = (toDraft ? (workflow.draftSteps ?? workflow.liveSteps) : workflow.liveSteps) as StepDef[] | null;
    // A live definition must stay runnable; a draft only needs steps that make sense one by one.
    const steps = await stepsToStore(em, deps, tenantId, base, input.steps, toDraft ? 'draft' : 'live');
    if (toDraft) {
      workflow.draftSteps = steps;
      changed.push('draft_steps');
    } else {
      // Runs record the version they use, so a change of the live steps is a version too.
      workflow.liveSteps = steps;
      workflow.liveVersion = (workflow.liveVersion ?? 0) + 1;
      workflow.triggerType = triggerTypeOf(steps);
      workflow.triggerEvent = triggerEventOf(steps);
      newWorkflowVersion(em, { tenant: tenantId, workflow, version: workflow.liveVersion, name: input.name ?? workflow.name, description: input.description !== undefined ? input.description : (workflow.description ?? null), steps, createdBy: actor.name });
      changed.push('steps');
    }
  }
  if (input.name !== undefined) (workflow.name = input.name), changed.push('name');
  if (input.description !== undefined) (workflow.description = input.description), changed.push('description');
  if (input.max_concurrent_runs !== undefined) (workflow.maxConcurrentRuns = input.max_concurrent_runs), changed.push('max_concurrent_runs');
  if (input.workflow_key !== undefined && input.workflow_key !== workflow.workflowKey) (workflow.workflowKey = input.workflow_key), changed.push('workflow_key');
  if (!deployed) workflow.triggerType = triggerTypeOf(workflow.draftSteps as StepDef[] | null);
  if (changed.length) {
    workflow.updatedAt = new Date();
    recordAudit(em, tenantId, actor, { action: 'workflow.update', targetType: 'workflow', targetId: workflow.workflowKey, details: { fields: changed } });
  }
  if ((await flushWorkflowChangesUnlessTaken(em)).taken) {
    throw new AppError('WORKFLOW_KEY_TAKEN', `A workflow with the key "${input.workflow_key}" already exists`, { workflow_key: input.workflow_key });
  }
  if (changed.includes('steps')) await syncWorkflowSchedule(em, workflow);
  return { workflow: toWorkflowDto(workflow, tenantId) };
}

/** Discards unpublished step changes of a deployed workflow; 409 NO_DRAFT when there are none. */
export async function discardDraft(em: EntityManager, tenantId: string, actor: Actor, idOrKey: string): Promise<{ workflow: WorkflowDto }> {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  if (workflow.liveVersion === null || workflow.draftSteps === null) {
    throw new AppError('NO_DRAFT', workflow.liveVersion === null ? 'The workflow was never deployed: its steps are its only definition' : 'The workflow has no unpublished changes', { workflow: idOrKey });
  }
  workflow.draftSteps = null;
  workflow.updatedAt = new Date();
  recordAudit(em, tenantId, actor, { action: 'workflow.discard_draft', targetType: 'workflow', targetId: workflow.workflowKey });
  await flushWorkflowChanges(em);
  return { workflow: toWorkflowDto(workflow, tenantId) };
}

/** Flips is_active of a deployed workflow (status label active <-> inactive); 409 DEPLOY_REQUIRED before the first deploy. */
export async function toggleWorkflow(em: EntityManager, tenantId: string, actor: Actor, idOrKey: string): Promise<{ workflow: WorkflowDto }> {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  if (workflow.liveVersion === null) throw new AppError('DEPLOY_REQUIRED', 'Deploy the workflow before switching it on or off', { workflow: idOrKey });
  workflow.isActive = !workflow.isActive;
  workflow.status = workflow.isActive ? 'active' : 'inactive';
  workflow.updatedAt = new Date();
  recordAudit(em, tenantId, actor, { action: 'workflow.toggle', targetType: 'workflow', targetId: workflow.workflowKey, details: { is_active: workflow.isActive } });
  await flushWorkflowChanges(em);
  await syncWorkflowSchedule(em, workflow);
  return { workflow: toWorkflowDto(workflow, tenantId) };
}

/**
 * Makes the draft (or, without one, the live steps again) the live definition as a new immutable
 * version, after the full validation. Audited.
 */
export async function deployWorkflow(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, idOrKey: string): Promise<{ workflow: WorkflowDto; webhook_url?: string; webhook_secret?: string; callback_secret?: string }> {
  const found = await findWorkflow(em, tenantId, idOrKey);
  return em.transactional(async (tx) => {
    // Locked: two deploys at once would otherwise both take the same version number.
    const workflow = await lockWorkflow(tx, found.id);
    const steps = (workflow.draftSteps ?? workflow.liveSteps ?? []) as StepDef[];
    // Checked as shown: a stored credential is ciphertext, longer than the value it holds.
    const problems = validateDefinition(steps.map(maskStepSecrets), 'live');
    if (problems.length) throw definitionError(problems, 'The workflow cannot be deployed');
    const version = (workflow.liveVersion ?? 0) + 1;
    newWorkflowVersion(tx, { tenant: tenantId, workflow, version, name: workflow.name, description: workflow.description ?? null, steps, createdBy: actor.name });
    workflow.liveSteps = steps;
    workflow.draftSteps = null;
    workflow.liveVersion = version;
    workflow.triggerType = triggerTypeOf(steps);
    workflow.triggerEvent = triggerEventOf(steps);
    workflow.status = 'active';
    workflow.isActive = true;
    workflow.updatedAt = new Date();
    // The first deploy of a webhook workflow mints its URL and secret; later deploys keep them.
    const minted: { webhook_url?: string; webhook_secret?: string; callback_secret?: string } = {};
    if (workflow.triggerType === 'webhook' && !workflow.webhookSlug) {
      workflow.webhookSlug = newWebhookSlug();
      minted.webhook_url = webhookUrl(deps, workflow.webhookSlug);
      if (!workflow.webhookSecret) {
        minted.webhook_secret = newWebhookSecret();
        minted.callback_secret = callbackSecretOf(minted.webhook_secret);
        workflow.webhookSecret = await encryptWebhookSecret(tx, deps, tenantId, workflow.id, minted.webhook_secret);
      }
    }
    recordAudit(tx, tenantId, actor, { action: 'workflow.deploy', targetType: 'workflow', targetId: workflow.workflowKey, details: { version } });
    await flushWorkflowChanges(tx);
    await syncWorkflowSchedule(tx, workflow);
    return { workflow: toWorkflowDto(workflow, tenantId), ...minted };
  });
}

/**
 * A new signing secret for a deployed webhook workflow; the previous one stays valid for
 * `graceSeconds` (0: at once). The new secret is shown this once. Audited.
 */
export async function rotateWebhookSecret(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, idOrKey: string, graceSeconds: number) {
  const found = await findWorkflow(em, tenantId, idOrKey);
  return em.transactional(async (tx) => {
    const workflow = await lockWorkflow(tx, found.id);
    if (workflow.liveVersion === null || workflow.triggerType !== 'webhook' || !workflow.webhookSlug) {
      throw new AppError('NOT_A_WEBHOOK_WORKFLOW', 'Only a deployed webhook-triggered workflow has a webhook secret to rotate', { workflow: idOrKey, trigger_type: workflow.triggerType });
    }
    const secret = newWebhookSecret();
    const validUntil = new Date(Date.now() + graceSeconds * 1000);
    workflow.previousWebhookSecret = graceSeconds > 0 ? workflow.webhookSecret : null;
    workflow.previousSecretValidUntil = validUntil;
    workflow.webhookSecret = await encryptWebhookSecret(tx, deps, tenantId, workflow.id, secret);
    workflow.updatedAt = new Date();
    recordAudit(tx, tenantId, actor, { action: 'workflow.webhook_secret.rotate', targetType: 'workflow', targetId: workflow.workflowKey, details: { grace_period_seconds: graceSeconds } });
    await flushWorkflowChanges(tx);
    return { webhook_url: webhookUrl(deps, workflow.webhookSlug), webhook_secret: secret, callback_secret: callbackSecretOf(secret), previous_secret_valid_until: validUntil.toISOString() };
  });
}

export async function listWorkflowVersions(em: EntityManager, tenantId: string, idOrKey: string) {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  const versions = await findWorkflowVersions(em, tenantId, workflow);
  return {
    versions: versions.map((v) => ({
      version: v.version,
      name: v.name,
      description: v.description ?? null,
      steps_count: (v.steps as unknown[]).length,
      created_by: v.createdBy ?? null,
      created_at: isoRequired(v.createdAt),
    })),
  };
}

/** Removes the workflow, its versions and (later) its runs for good. Audited. */
export async function deleteWorkflow(em: EntityManager, tenantId: string, actor: Actor, idOrKey: string): Promise<void> {
  const workflow = await findWorkflow(em, tenantId, idOrKey);
  recordAudit(em, tenantId, actor, { action: 'workflow.delete', targetType: 'workflow', targetId: workflow.workflowKey });
  await flushWorkflowChanges(em);
  await syncWorkflowSchedule(em, workflow, true);
  await deleteWorkflowRow(em, tenantId, workflow.id);
}
