import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';
import { WORKFLOW_STATUSES, WORKFLOW_RUN_STATUSES, APPROVAL_STATUSES } from '../column-values.js';


/**
 * A workflow: its live definition (the last deployed steps, what runs use) and, apart from it,
 * unpublished draft steps. A workflow never deployed has only draft steps.
 */
export const Workflow = defineEntity({
  name: 'Workflow',
  tableName: 'workflows',
  uniques: [{ properties: ['tenant', 'workflowKey'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    workflowKey: p.string().length(100),
    name: p.string().length(200),
    description: p.text().nullable(),
    status: p.enum(WORKFLOW_STATUSES).default('draft'),
    isActive: p.boolean().default(false),
    triggerType: p.string().length(32).default('manual'),
    maxConcurrentRuns: p.integer().nullable(),
    liveVersion: p.integer().nullable(),
    liveSteps: p.json<unknown[]>().nullable(),
    draftSteps: p.json<unknown[]>().nullable(),
    /** The live trigger's event_name (event-triggered workflows), so POST /v1/events finds them by index. */
    triggerEvent: p.string().length(200).nullable(),
    /** `/webhooks/workflows/<slug>`: minted on the first deploy of a webhook workflow, never regenerated. */
    webhookSlug: p.string().length(64).nullable().unique(),
    /** The signing secret (`whsec_...`), encrypted at rest; also signs async-run callbacks. */
    webhookSecret: p.text().nullable(),
    /** After a rotation: the old secret, accepted until `previousSecretValidUntil`. */
    previousWebhookSecret: p.text().nullable(),
    previousSecretValidUntil: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IWorkflow = InferEntity<typeof Workflow>;

/** An immutable deployed definition; every run records the version it used. */
export const WorkflowVersion = defineEntity({
  name: 'WorkflowVersion',
  tableName: 'workflow_versions',
  uniques: [{ properties: ['workflow', 'version'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    workflow: () => p.manyToOne(Workflow).deleteRule('cascade'),
    version: p.integer(),
    name: p.string().length(200),
    description: p.text().nullable(),
    steps: p.json<unknown[]>(),
    createdBy: p.string().length(320).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});


/**
 * One run of a workflow. The run is its own record of progress: `next_step_id` is where it goes on,
 * and every finished step is a run_steps row written together with that pointer, so any process
 * can continue a run from what is stored.
 */
export const WorkflowRun = defineEntity({
  name: 'WorkflowRun',
  tableName: 'workflow_runs',
  indexes: [
    // The list, newest first, paged by keyset, with and without its status filter.
    { name: 'workflow_runs_tenant_id_workflow_id_started_at_id_index', expression: `create index "workflow_runs_tenant_id_workflow_id_started_at_id_index" on "workflow_runs" ("tenant_id", "workflow_id", "started_at" desc, "id" desc)` },
    { name: 'workflow_runs_tenant_id_workflow_id_status_started_at_id_index', expression: `create index "workflow_runs_tenant_id_workflow_id_status_started_at_id_index" on "workflow_runs" ("tenant_id", "workflow_id", "status", "started_at" desc, "id" desc)` },
    { properties: ['conversationId'] },
    // Erasing one end user: the runs whose input names them (db/migrations/...140400_erasure).
    {
      name: 'workflow_runs_tenant_id_input_user_id_index',
      expression: `create index "workflow_runs_tenant_id_input_user_id_index" on "workflow_runs" ("tenant_id", ("input" ->> 'user_id')) where "input" ? 'user_id'`,
    },
    // Counting a workflow's active runs (max_concurrent_runs).
    { properties: ['workflow', 'status'] },
    // Finding running runs to recover. No index may hold a column every step write changes
    // (updated_at, next_step_id, steps_done): those writes then stay HOT updates (no index entries).
    // The id makes a step write's owner check exact whichever index the planner takes.
    {
      name: 'workflow_runs_running_owner_index',
      expression: `create index "workflow_runs_running_owner_index" on "workflow_runs" ("owner_id", "id") where "status" = 'running'`,
    },
  ],
  properties: {
    id: p.uuid().primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    workflow: () => p.manyToOne(Workflow).deleteRule('cascade'),
    /** The deployed version run; null for a builder test run (its steps are in `definition`). */
    version: p.integer().nullable(),
    definition: p.json<unknown[]>().nullable(),
    scope: p.enum(['live', 'test'] as const),
    conversationId: p.uuid(),
    /** The environment of the key that started it (usage of steps run later, by a job, is booked there). */
    environmentId: p.uuid().nullable(),
    status: p.enum(WORKFLOW_RUN_STATUSES).default('running'),
    triggeredBy: p.string().length(32),
    input: p.json<Record<string, unknown>>(),
    output: p.json<unknown>().nullable(),
    nextStepId: p.string().length(100).nullable(),
    stepsDone: p.integer().default(0),
    /** Step executions, loop iterations included: what the plan's run_steps limit counts. */
    executions: p.integer().default(0),
    /** 1, or deeper when another run started this one (an agent's workflow tool): the plan's nesting_depth. */
    depth: p.smallint().default(1),
    /** Times a process died while executing the run; past a few the run fails instead of being continued again. */
    crashes: p.smallint().default(0),
    error: p.json<Record<string, unknown>>().nullable(),
    /** The process executing the run (its heartbeat id); a running run whose owner is gone is recovered. */
    ownerId: p.string().length(64).nullable(),
    /** What a paused run waits for: input, approval, delay or callback. */
    waitKind: p.string().length(16).nullable(),
    approvalId: p.uuid().nullable(),
    resumeAt: p.datetime().nullable(),
    /**
     * How the paused step goes on (an answer, a decision, a callback body), stored with the switch
     * back to running, so a process that dies before the step's row is written loses nothing.
     */
    resume: p.json<Record<string, unknown>>().nullable(),
    /** Callback URLs are per wait: the n-th wait_for_callback of the run answers to token n. */
    callbackSeq: p.integer().default(0),
    callbackKey: p.string().length(64).nullable(),
    /** A callback that arrived before the run reached its wait_for_callback step. */
    earlyCallback: p.json<Record<string, unknown>>().nullable(),
    /** Async runs: where the final run is POSTed (signed). */
    callbackUrl: p.text().nullable(),
    startedAt: p.datetime(),
    updatedAt: p.datetime(),
    completedAt: p.datetime().nullable(),
  },
});

/** Values a workflow saves between runs (set_state / get_state), per scope (live or test). */
export const WorkflowState = defineEntity({
  name: 'WorkflowState',
  tableName: 'workflow_state',
  uniques: [{ properties: ['workflow', 'scope', 'key'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    workflow: () => p.manyToOne(Workflow).deleteRule('cascade'),
    scope: p.enum(['live', 'test'] as const),
    key: p.string().length(200),
    value: p.json<unknown>(),
    expiresAt: p.datetime().nullable(),
    updatedAt: p.datetime(),
  },
});


/** A run waiting at an approval step; decided once. */
export const WorkflowApproval = defineEntity({
  name: 'WorkflowApproval',
  tableName: 'workflow_approvals',
  indexes: [{ properties: ['run'] }],
  properties: {
    id: p.uuid().primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    workflow: () => p.manyToOne(Workflow).deleteRule('cascade'),
    run: () => p.manyToOne(WorkflowRun).deleteRule('cascade'),
    stepId: p.string().length(100),
    /** The loop iteration the approval belongs to (an approval inside a loop body). */
    loopIndex: p.integer().nullable(),
    message: p.text(),
    status: p.enum(APPROVAL_STATUSES).default('pending'),
    comment: p.text().nullable(),
    decidedBy: p.string().length(320).nullable(),
    decidedAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});

/**
 * Idempotency keys: per tenant and scope (a workflow's run endpoints, its webhook deliveries by
 * webhook-id, or the tenant's events). Kept 24 hours.
 */
export const IdempotencyKey = defineEntity({
  name: 'IdempotencyKey',
  tableName: 'idempotency_keys',
  uniques: [{ properties: ['tenant', 'scope', 'key'] }],
  indexes: [{ properties: ['createdAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    scope: p.string().length(100),
    key: p.string().length(255),
    requestHash: p.string().length(64),
    runId: p.uuid().nullable(),
    result: p.json<unknown>().nullable(),
    createdAt: p.datetime(),
  },
});

/** One row per schedule tick that started a run: any number of processes start a tick once. */
export const WorkflowScheduleTick = defineEntity({
  name: 'WorkflowScheduleTick',
  tableName: 'workflow_schedule_ticks',
  uniques: [{ properties: ['workflow', 'tickAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    workflow: () => p.manyToOne(Workflow).deleteRule('cascade'),
    tickAt: p.datetime(),
    runId: p.uuid().nullable(),
    createdAt: p.datetime(),
  },
});
