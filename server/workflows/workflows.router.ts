import { z } from 'zod';
import { HISTORY_LIST_NOTE, historyPageQuery, historyPaginationSchema } from '../common/pagination.js';
import { envelope, ok, okEmpty } from '../common/schemas.js';
import {
  cancelRun, deleteWorkflowState, getWorkflowRun, getWorkflowRunById, listWorkflowRuns, listWorkflowState, retryRun, startRun, type StartOutcome,
} from './workflow-runs.service.js';
import { decideApproval } from './approvals.service.js';
import { readIdempotencyKey } from './idempotency.js';
import type { Context } from '../trpc.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { ACTION_CATALOG } from './step-types.js';
import {
  actionSchema, approvalSchema, createWorkflowInput, decideApprovalInput, deployResultSchema, rotateSecretInput, rotateSecretResultSchema, runAcceptedSchema, runRef, runWorkflowInput, stateEntrySchema, stateScopeQuery, updateWorkflowInput, workflowRunDetailSchema, workflowRunResultSchema,
  workflowRunSummarySchema, workflowListItemSchema, workflowRef, workflowSchema, workflowVersionSchema,
} from './workflows.schemas.js';
import {
  createWorkflow, deleteWorkflow, deployWorkflow, discardDraft, getWorkflow, listWorkflows, listWorkflowVersions, rotateWebhookSecret, toggleWorkflow, updateWorkflow,
} from './workflows.service.js';
import { WORKFLOW_RUN_STATUSES } from '../../db/column-values.js';

/** A queued (async) run answers 202 with its id; a sync one its result. */
function answerRun(ctx: Pick<Context, 'res'>, outcome: StartOutcome) {
  if (outcome.kind === 'queued') {
    ctx.res.status = 202;
    return envelope(outcome.accepted);
  }
  return envelope(outcome.result);
}

const RUN_ERRORS = ['NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_ATTACHMENT', 'ATTACHMENT_UNREADABLE', 'CONCURRENCY_LIMIT', 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_IN_PROGRESS', 'RUN_BUSY'] as const;

const TAGS = ['Workflows'];
const BASE = '/v1/workflows';
const workflowOut = ok(z.object({ workflow: workflowSchema }));

// The literal /actions path is declared before `{workflowIdOrKey}` so that route cannot swallow it.
export const workflowsRouter = router({
  actions: apiKeyProcedure('workflows:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/actions`, tags: TAGS, summary: 'The action catalog: ids for action steps, with each config\'s JSON Schema' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ actions: z.array(actionSchema) })))
    .query(() => envelope({ actions: ACTION_CATALOG.map((a) => ({ id: a.id, name: a.name, description: a.description, config_schema: a.config_schema })) })),

  decideApproval: apiKeyProcedure('workflows:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/approvals/{approvalId}/decision`, tags: TAGS, summary: 'Approve or reject: the run awaiting this approval continues',
        description: 'approve follows the step\'s on_success; reject follows on_failure when set, else the run ends rejected. The run continues on the job runner ' +
          '(the answer has its status at that moment: read it with GET …/runs/{runId}). A second decision is 409 APPROVAL_DECIDED.',
      },
      errors: ['NOT_FOUND', 'APPROVAL_DECIDED'],
    })
    .input(decideApprovalInput)
    .output(ok(z.object({ approval: approvalSchema, run: z.object({ run_id: z.string(), status: z.enum(WORKFLOW_RUN_STATUSES) }) })))
    .mutation(async ({ ctx, input }) => envelope(await decideApproval(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.approvalId, input.decision, input.comment ?? null))),

  runById: apiKeyProcedure('runs:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/runs/{runId}`, tags: TAGS, summary: 'One run by its id alone, with its workflow and step-by-step trace' }, errors: ['NOT_FOUND'] })
    .input(z.object({ runId: z.string().max(64) }))
    .output(ok(z.object({ run: workflowRunDetailSchema })))
    .query(async ({ ctx, input }) => envelope(await getWorkflowRunById(ctx.em, ctx.deps, ctx.tenantId, input.runId))),

  list: apiKeyProcedure('workflows:read')
    .meta({ openapi: { method: 'GET', path: BASE, tags: TAGS, summary: 'Deployed, active workflows with their run endpoint' } })
    .input(z.object({}).optional())
    .output(ok(z.array(workflowListItemSchema)))
    .query(async ({ ctx }) => envelope(await listWorkflows(ctx.em, ctx.tenantId))),

  create: apiKeyProcedure('workflows:write')
    .meta({ openapi: { method: 'POST', path: BASE, tags: TAGS, summary: 'Create a workflow (draft; workflow_key generated from the name)' }, successStatus: 201 })
    .input(createWorkflowInput)
    .output(workflowOut)
    .mutation(async ({ ctx, input }) => envelope(await createWorkflow(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input))),

  get: apiKeyProcedure('workflows:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{workflowIdOrKey}`, tags: TAGS, summary: 'A deployed workflow with its live steps (404 before the first deploy)' }, errors: ['NOT_FOUND'] })
    .input(workflowRef)
    .output(workflowOut)
    .query(async ({ ctx, input }) => envelope(await getWorkflow(ctx.em, ctx.tenantId, input.workflowIdOrKey))),

  update: apiKeyProcedure('workflows:write')
    .meta({
      openapi: {
        method: 'PATCH', path: `${BASE}/{workflowIdOrKey}`, tags: TAGS, summary: 'Update a workflow; steps are upserted by id',
        description: 'Before the first deploy, and with as_draft on a deployed workflow, steps go to the draft (each step checked on its own). ' +
          'Otherwise the live definition changes at once and must pass the full validation (one trigger, references, reachability, no cycles outside loops).',
      },
      errors: ['NOT_FOUND', 'WORKFLOW_KEY_TAKEN'],
    })
    .input(updateWorkflowInput)
    .output(workflowOut)
    .mutation(async ({ ctx, input }) => envelope(await updateWorkflow(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input))),

  discardDraft: apiKeyProcedure('workflows:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{workflowIdOrKey}/draft`, tags: TAGS, summary: 'Discard unpublished step changes' }, errors: ['NOT_FOUND', 'NO_DRAFT'] })
    .input(workflowRef)
    .output(workflowOut)
    .mutation(async ({ ctx, input }) => envelope(await discardDraft(ctx.em, ctx.tenantId, ctx.actor, input.workflowIdOrKey))),

  toggle: apiKeyProcedure('workflows:write')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/{workflowIdOrKey}/toggle`, tags: TAGS, summary: 'Switch a deployed workflow on or off (status label active / inactive)' }, errors: ['NOT_FOUND', 'DEPLOY_REQUIRED'] })
    .input(workflowRef)
    .output(workflowOut)
    .mutation(async ({ ctx, input }) => envelope(await toggleWorkflow(ctx.em, ctx.tenantId, ctx.actor, input.workflowIdOrKey))),

  deploy: apiKeyProcedure('workflows:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/{workflowIdOrKey}/deploy`, tags: TAGS, summary: 'Validate and publish the draft as a new version (audited)',
        description: 'The first deploy of a webhook-triggered workflow also answers webhook_url, webhook_secret and callback_secret (derived from webhook_secret; verifies run callbacks), shown once; redeploys never regenerate them.',
      },
      errors: ['NOT_FOUND'],
    })
    .input(workflowRef)
    .output(ok(deployResultSchema))
    .mutation(async ({ ctx, input }) => envelope(await deployWorkflow(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.workflowIdOrKey))),

  rotateSecret: apiKeyProcedure('workflows:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/{workflowIdOrKey}/webhook-secret/rotate`, tags: TAGS, summary: 'A new webhook signing secret (shown once); the old one stays valid for the grace period',
      },
      errors: ['NOT_FOUND', 'NOT_A_WEBHOOK_WORKFLOW'],
    })
    .input(rotateSecretInput)
    .output(ok(rotateSecretResultSchema))
    .mutation(async ({ ctx, input }) => envelope(await rotateWebhookSecret(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.workflowIdOrKey, input.grace_period_seconds))),

  versions: apiKeyProcedure('workflows:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{workflowIdOrKey}/versions`, tags: TAGS, summary: 'Deployed versions, newest first' }, errors: ['NOT_FOUND'] })
    .input(workflowRef)
    .output(ok(z.object({ versions: z.array(workflowVersionSchema) })))
    .query(async ({ ctx, input }) => envelope(await listWorkflowVersions(ctx.em, ctx.tenantId, input.workflowIdOrKey))),

  run: apiKeyProcedure('workflows:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/{workflowIdOrKey}/run`, tags: TAGS, summary: 'Run the live workflow synchronously',
        description: 'Answers 200 once the run has ended or paused, with its status and step trace; a run that fails ends `failed` (the failing step is in the trace). ' +
          'An inactive or never deployed workflow is 404. With the conversation_id of a run waiting for input (needs_input), that run continues with input.message. ' +
          'A run that reaches an approval answers awaiting_approval with approval_id; a delay or wait_for_callback answers waiting (a delay with resume_at); they continue on their own. ' +
          'mode async answers 202 {run_id, status} at once. Header Idempotency-Key (1-255 printable ASCII, kept 24 h per workflow): the same key and body answer the first run ' +
          'with idempotent_replay true (waiting up to 30 s for it to end), another body 422 IDEMPOTENCY_KEY_REUSED, a first run still going after that 409 IDEMPOTENCY_IN_PROGRESS. ' +
          'At max_concurrent_runs (runs running or waiting) 429 CONCURRENCY_LIMIT with Retry-After. ' +
          'The same run as Server-Sent Events: POST /v1/workflows/{workflowIdOrKey}/run/stream.',
      },
      errors: [...RUN_ERRORS],
      bodyLimit: 25 * 1024 * 1024,
    })
    .input(runWorkflowInput)
    .output(ok(z.union([workflowRunResultSchema, runAcceptedSchema])))
    .mutation(async ({ ctx, input }) => {
      const { workflowIdOrKey, ...request } = input;
      const idempotencyKey = readIdempotencyKey(ctx.req.headers);
      return answerRun(ctx, await startRun(ctx.em, ctx.deps, ctx.scope, workflowIdOrKey, request, { mode: 'live', triggeredBy: 'api', idempotencyKey }));
    }),

  testRun: apiKeyProcedure('workflows:write')
    .meta({
      openapi: { method: 'POST', path: `${BASE}/{workflowIdOrKey}/test-run`, tags: TAGS, summary: 'Run the draft (or the live steps) as a test: state scope test, deployed or not' },
      errors: [...RUN_ERRORS],
      bodyLimit: 25 * 1024 * 1024,
    })
    .input(runWorkflowInput)
    .output(ok(z.union([workflowRunResultSchema, runAcceptedSchema])))
    .mutation(async ({ ctx, input }) => {
      const { workflowIdOrKey, ...request } = input;
      const idempotencyKey = readIdempotencyKey(ctx.req.headers);
      return answerRun(ctx, await startRun(ctx.em, ctx.deps, ctx.scope, workflowIdOrKey, request, { mode: 'test', triggeredBy: 'test', idempotencyKey }));
    }),

  retry: apiKeyProcedure('workflows:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/{workflowId}/runs/{runId}/retry`, tags: TAGS, summary: 'Continue a failed run from its failed step (earlier outputs reused), synchronously',
        description: 'Only a failed run that saved a step (can_retry) — else 409 RUN_NOT_RETRYABLE. Counts against max_concurrent_runs like a new run.',
      },
      errors: ['NOT_FOUND', 'RUN_NOT_RETRYABLE', 'CONCURRENCY_LIMIT'],
    })
    .input(runRef)
    .output(ok(workflowRunResultSchema))
    .mutation(async ({ ctx, input }) => envelope(await retryRun(ctx.em, ctx.deps, ctx.scope, input.workflowId, input.runId))),

  cancel: apiKeyProcedure('workflows:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/{workflowId}/runs/{runId}/cancel`, tags: TAGS, summary: 'Cancel a run that waits (waiting, awaiting_approval, needs_input); its timers are removed',
        description: 'A running or finished run is 409 RUN_NOT_CANCELLABLE. A pending approval of the run becomes cancelled. Audited.',
      },
      errors: ['NOT_FOUND', 'RUN_NOT_CANCELLABLE'],
    })
    .input(runRef)
    .output(ok(z.object({ run: workflowRunSummarySchema })))
    .mutation(async ({ ctx, input }) => envelope(await cancelRun(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.workflowId, input.runId))),

  runs: apiKeyProcedure('runs:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/{workflowIdOrKey}/runs`, tags: TAGS, summary: 'The workflow\'s runs, newest first',
        description: `Filter: \`status\`. ${HISTORY_LIST_NOTE}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(workflowRef.extend({ ...historyPageQuery, status: z.enum(WORKFLOW_RUN_STATUSES).optional() }))
    .output(ok(z.object({ runs: z.array(workflowRunSummarySchema), pagination: historyPaginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listWorkflowRuns(ctx.em, ctx.deps, ctx.tenantId, input.workflowIdOrKey, input.status, input))),

  runDetail: apiKeyProcedure('runs:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{workflowIdOrKey}/runs/{runId}`, tags: TAGS, summary: 'One run with its step-by-step trace' }, errors: ['NOT_FOUND'] })
    .input(workflowRef.extend({ runId: z.string().max(64) }))
    .output(ok(z.object({ run: workflowRunDetailSchema })))
    .query(async ({ ctx, input }) => envelope(await getWorkflowRun(ctx.em, ctx.deps, ctx.tenantId, input.workflowIdOrKey, input.runId))),

  state: apiKeyProcedure('workflows:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{workflowIdOrKey}/state`, tags: TAGS, summary: 'Saved values (scope live, or test for the builder), without expired ones' }, errors: ['NOT_FOUND'] })
    .input(workflowRef.extend({ scope: stateScopeQuery }))
    .output(ok(z.object({ scope: z.enum(['live', 'test']), entries: z.array(stateEntrySchema) })))
    .query(async ({ ctx, input }) => envelope(await listWorkflowState(ctx.em, ctx.deps, ctx.tenantId, input.workflowIdOrKey, input.scope))),

  deleteState: apiKeyProcedure('workflows:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{workflowIdOrKey}/state/{key}`, tags: TAGS, summary: 'Remove one saved value (audited)' }, errors: ['NOT_FOUND', 'STATE_NOT_FOUND'] })
    .input(workflowRef.extend({ key: z.string().min(1).max(200), scope: stateScopeQuery }))
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteWorkflowState(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.workflowIdOrKey, input.key, input.scope);
      return { success: true as const };
    }),

  remove: apiKeyProcedure('workflows:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{workflowIdOrKey}`, tags: TAGS, summary: 'Delete a workflow for good, with its versions' }, errors: ['NOT_FOUND'] })
    .input(workflowRef)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteWorkflow(ctx.em, ctx.tenantId, ctx.actor, input.workflowIdOrKey);
      return { success: true as const };
    }),
});
