import { z } from 'zod';
import { WORKFLOW_RUN_STATUSES, WORKFLOW_STATUSES } from '../../db/column-values.js';
import { bodyBoolean, bodyInt, bodyNumber, noCoerce } from '../common/schemas.js';
import { isUuid, keyPattern } from '../common/schemas.js';
import { STEP_TYPES } from './step-types.js';

/** Most steps one workflow may have. */
export const MAX_STEPS = 200;

const stepRef = z.string().min(1).max(100);

export const stepInputSchema = z
  .object({
    id: stepRef
      .optional()
      .describe('A persisted step id, or a client-chosen id. Client-chosen ids that match ^[A-Za-z][A-Za-z0-9_]{0,63}$ are kept as the step id (templates and expressions refer to steps by id); others are replaced by a generated id'),
    step_type: z.enum(STEP_TYPES),
    name: z.string().max(200).nullable().optional(),
    action_id: z.string().max(100).nullable().optional().describe('Required when step_type is action: an id from GET /v1/workflows/actions'),
    config: noCoerce(z.record(z.string(), z.unknown()))
      .optional()
      .describe(
        'Per step type; see the workflow decisions in the API description. Keys a step type does not know are dropped, not refused. ' +
          'May be left out where nothing is required: a trigger without trigger_subtype is manual, an end step without output ends the run with output null, ' +
          'an ai_intent step without input runs the intent on the run\'s input',
      ),
    position_x: bodyNumber(-1e9, 1e9).nullable().optional(),
    position_y: bodyNumber(-1e9, 1e9).nullable().optional(),
    guidance: z.string().max(5000).nullable().optional(),
    on_success_ref: stepRef.nullable().optional().describe('The `id` of another step of the same request'),
    on_failure_ref: stepRef.nullable().optional().describe('The `id` of another step of the same request'),
  })
  .meta({ id: 'StepInput' });
export type StepInput = z.infer<typeof stepInputSchema>;

const stepsField = z.array(stepInputSchema).max(MAX_STEPS);

/**
 * Words that follow /v1/workflows/ in fixed paths (GET /v1/workflows/actions, GET …/runs/{runId},
 * POST …/approvals/{approvalId}/decision) or may some day (events): a workflow with one of them as
 * its key could not be reached by key. Keys made from a name get a `-workflow` suffix instead.
 */
export const RESERVED_WORKFLOW_KEYS: ReadonlySet<string> = new Set(['actions', 'approvals', 'events', 'runs']);

export const workflowKeyInput = keyPattern
  .refine((k) => !RESERVED_WORKFLOW_KEYS.has(k), { message: `is reserved for the paths under /v1/workflows (${[...RESERVED_WORKFLOW_KEYS].join(', ')})` })
  .refine((k) => !isUuid(k), { message: 'cannot have the shape of a workflow id (a UUID)' })
  .describe(`Lower-case letters, digits, - and _; not ${[...RESERVED_WORKFLOW_KEYS].join(', ')} (path words under /v1/workflows), nor a UUID (read as a workflow id)`);

export const createWorkflowInput = z
  .object({
    name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe(`The workflow_key is made from it (lower-case, - between words; a short suffix when taken; \`-workflow\` added to ${[...RESERVED_WORKFLOW_KEYS].join(', ')})`),
    description: z.string().max(5000).nullable().optional(),
    steps: stepsField.optional(),
  })
  .meta({ id: 'CreateWorkflowRequest' });
export type CreateWorkflowInput = z.infer<typeof createWorkflowInput>;

export const workflowRef = z.object({ workflowIdOrKey: z.string().max(100) });

export const updateWorkflowInput = workflowRef
  .extend({
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().max(5000).nullable().optional(),
    workflow_key: workflowKeyInput.optional(),
    steps: stepsField.optional().describe('Upsert by id: an existing id edits that step, a new id adds one, an existing step not sent is deleted'),
    as_draft: bodyBoolean().optional().describe('On a deployed workflow: keep the step changes as an unpublished draft (default false: the live definition changes at once)'),
    max_concurrent_runs: bodyInt(1, 10_000).nullable().optional(),
  })
  .meta({ id: 'UpdateWorkflowRequest' });
export type UpdateWorkflowInput = z.infer<typeof updateWorkflowInput>;

export const stepSchema = z
  .object({
    id: z.string(),
    step_type: z.enum(STEP_TYPES),
    name: z.string().nullable(),
    action_id: z.string().nullable(),
    action_name: z.string().nullable(),
    config: z.record(z.string(), z.unknown()),
    position_x: z.number().nullable(),
    position_y: z.number().nullable(),
    step_order: z.number().int(),
    guidance: z.string().nullable(),
    on_success_step_id: z.string().nullable(),
    on_failure_step_id: z.string().nullable(),
  })
  .meta({ id: 'Step' });
export type WorkflowStep = z.infer<typeof stepSchema>;

export const workflowSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    name: z.string(),
    workflow_key: z.string(),
    description: z.string().nullable(),
    is_active: z.boolean(),
    status: z.enum(WORKFLOW_STATUSES),
    trigger_type: z.string(),
    trigger_config: z
      .object({ slug: z.string().nullable().describe('Webhook workflows: the slug of /webhooks/workflows/<slug> (minted on the first deploy)'), has_secret: z.boolean() })
      .nullable(),
    max_concurrent_runs: z.number().int().nullable(),
    version: z.number().int().nullable().describe('The live (last deployed) version; null before the first deploy'),
    has_draft: z.boolean().describe('Whether unpublished step changes exist (always true before the first deploy)'),
    draft_steps: z.array(stepSchema).nullable().describe('The unpublished steps, when there are any'),
    created_at: z.string(),
    updated_at: z.string(),
    steps: z.array(stepSchema).describe('The live steps; before the first deploy, the draft steps'),
  })
  .meta({ id: 'Workflow' });
export type WorkflowDto = z.infer<typeof workflowSchema>;

export const workflowListItemSchema = workflowSchema
  .omit({ draft_steps: true })
  .extend({ endpoint: z.string(), method: z.literal('POST') })
  .meta({ id: 'WorkflowListItem' });
export type WorkflowListItem = z.infer<typeof workflowListItemSchema>;

export const workflowVersionSchema = z
  .object({
    version: z.number().int(),
    name: z.string(),
    description: z.string().nullable(),
    steps_count: z.number().int(),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'WorkflowVersion' });
export type WorkflowVersion = z.infer<typeof workflowVersionSchema>;

export const actionSchema = z
  .object({ id: z.string(), name: z.string(), description: z.string(), config_schema: z.record(z.string(), z.unknown()) })
  .meta({ id: 'WorkflowAction' });

export const runWorkflowInput = workflowRef
  .extend({
    input: noCoerce(z.record(z.string(), z.unknown())).default({}).describe('The trigger payload (`{{trigger.x}}`); `attachments` entries `{file_name, file_base64}` are read into text first'),
    conversation_id: z.string().max(64).optional().describe('The conversation of a run waiting for input: that run continues with input.message'),
    mode: z.enum(['sync', 'async']).optional().describe('sync (default): answer when the run ends or waits. async: answer 202 {run_id, status} at once; a job runs it'),
    callback_url: z
      .string()
      .max(2048)
      .refine((v) => /^https?:\/\/[^\s]+$/i.test(v) && URL.canParse(v), 'must be an http(s) URL')
      .optional()
      .describe('With mode async: the final run is POSTed here (Standard Webhooks, signed with the workflow\'s callback_secret, derived from its webhook secret), retried 5 times with backoff'),
  })
  .meta({ id: 'WorkflowRunRequest' });
export type RunWorkflowInput = z.infer<typeof runWorkflowInput>;

export const traceEntrySchema = z
  .object({
    step_id: z.string().nullable(),
    step_type: z.string(),
    name: z.string(),
    status: z.string().describe('completed, failed or needs_input'),
    input: z.unknown(),
    output: z.unknown(),
    error: z.string().nullable(),
    started_at: z.string(),
    completed_at: z.string(),
  })
  .meta({ id: 'WorkflowTraceEntry' });
export type TraceEntry = z.infer<typeof traceEntrySchema>;

export const workflowRunResultSchema = z
  .object({
    run_id: z.string(),
    conversation_id: z.string(),
    status: z.enum(WORKFLOW_RUN_STATUSES),
    output: z.unknown().describe('The end step\'s output (or the last step\'s)'),
    trace: z.array(traceEntrySchema),
    approval_id: z.string().optional().describe('While the run is awaiting_approval: the approval to decide'),
    resume_at: z.string().optional().describe('While the run waits in a delay: when it continues'),
    idempotent_replay: z.boolean().optional().describe('true when a repeated Idempotency-Key answered the first run'),
  })
  .meta({ id: 'WorkflowRunResult' });
export type WorkflowRunResult = z.infer<typeof workflowRunResultSchema>;

const CALLBACK_SECRET_DOC =
  'callback_secret verifies the run callbacks (Standard Webhooks POSTs to an async run\'s callback_url); they are never signed with the webhook secret itself, ' +
  'so a callback cannot be replayed to the webhook URL. It is derived from the webhook secret: "whsec_" + base64(HMAC-SHA256(key: the webhook secret\'s ' +
  'key bytes, i.e. the base64 after "whsec_" decoded; message: "liya/run-callback/v1")), so a receiver may also compute it. Shown once, like the webhook secret.';

export const deployResultSchema = z
  .object({
    workflow: workflowSchema,
    webhook_url: z.string().optional().describe('First deploy of a webhook-triggered workflow: where to POST signed deliveries'),
    webhook_secret: z.string().optional().describe('First deploy of a webhook-triggered workflow: the Standard Webhooks secret that signs deliveries (shown once)'),
    callback_secret: z.string().optional().describe(`With webhook_secret. ${CALLBACK_SECRET_DOC}`),
  })
  .meta({ id: 'WorkflowDeployResult' });
export type WorkflowDeployResult = z.infer<typeof deployResultSchema>;

export const rotateSecretResultSchema = z
  .object({
    webhook_url: z.string(),
    webhook_secret: z.string().describe('The new Standard Webhooks secret that signs deliveries (shown once)'),
    callback_secret: z.string().describe(`Derived from the new webhook_secret; signs run callbacks from now on. ${CALLBACK_SECRET_DOC}`),
    previous_secret_valid_until: z.string().describe('Deliveries signed with the previous secret are accepted until then'),
  })
  .meta({ id: 'RotateWebhookSecretResult' });

export const runAcceptedSchema = z
  .object({
    run_id: z.string(),
    status: z.enum(WORKFLOW_RUN_STATUSES),
    idempotent_replay: z.boolean().optional(),
    webhook_secret: z.string().optional().describe('Minted by the first async run with a callback_url of a workflow without a secret: shown this once'),
    callback_secret: z.string().optional().describe(`Shown with a minted webhook_secret. ${CALLBACK_SECRET_DOC}`),
  })
  .meta({ id: 'WorkflowRunAccepted' });

export const workflowRunSummarySchema = z
  .object({
    run_id: z.string(),
    conversation_id: z.string(),
    version: z.number().int().nullable().describe('null for a builder test run'),
    scope: z.enum(['live', 'test']),
    status: z.enum(WORKFLOW_RUN_STATUSES),
    triggered_by: z.string(),
    output: z.unknown(),
    error: z.record(z.string(), z.unknown()).nullable(),
    steps: z.number().int(),
    can_retry: z.boolean(),
    can_cancel: z.boolean(),
    approval_id: z.string().nullable().describe('While awaiting_approval: the approval to decide'),
    resume_at: z.string().nullable().describe('While waiting in a delay: when the run continues'),
    started_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .meta({ id: 'WorkflowRunSummary' });
export type WorkflowRunSummary = z.infer<typeof workflowRunSummarySchema>;

export const workflowRunDetailSchema = workflowRunSummarySchema
  .extend({ workflow_id: z.string(), workflow_key: z.string(), input: z.record(z.string(), z.unknown()), trace: z.array(traceEntrySchema) })
  .meta({ id: 'WorkflowRunDetail' });
export type WorkflowRunDetail = z.infer<typeof workflowRunDetailSchema>;

export const stateScopeQuery = z.enum(['live', 'test']).default('live');

export const stateEntrySchema = z
  .object({ key: z.string(), value: z.unknown(), expires_at: z.string().nullable(), updated_at: z.string() })
  .meta({ id: 'WorkflowStateEntry' });

export const runRef = z.object({ workflowId: z.string().max(100), runId: z.string().max(64) });

export const approvalSchema = z
  .object({
    id: z.string(),
    run_id: z.string(),
    workflow_id: z.string(),
    workflow_key: z.string(),
    step_id: z.string(),
    loop_index: z.number().int().nullable().describe('The loop iteration, for an approval inside a loop body'),
    status: z.enum(['pending', 'approved', 'rejected', 'timed_out', 'cancelled']),
    message: z.string(),
    comment: z.string().nullable(),
    decided_by: z.string().nullable(),
    decided_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'WorkflowApproval' });

export const decideApprovalInput = z
  .object({
    approvalId: z.string().max(64),
    decision: z.enum(['approve', 'reject']),
    comment: z.string().max(5000).nullable().optional(),
  })
  .meta({ id: 'ApprovalDecisionRequest' });

export const rotateSecretInput = workflowRef.extend({ grace_period_seconds: bodyInt(0, 3600).default(300) }).meta({ id: 'RotateWebhookSecretRequest' });

export const eventInput = z
  .object({
    name: z.string().trim().min(1).max(200).describe('Every active workflow whose trigger is event with this event_name runs'),
    payload: noCoerce(z.record(z.string(), z.unknown())).default({}).describe('The trigger input of the runs'),
  })
  .meta({ id: 'EventRequest' });
