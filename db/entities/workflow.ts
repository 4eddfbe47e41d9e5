import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

export const WORKFLOW_STATUSES = ['draft', 'active', 'inactive', 'error'] as const;

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

export const WORKFLOW_RUN_STATUSES = ['running', 'completed', 'needs_input', 'awaiting_approval', 'waiting', 'rejected', 'cancelled', 'failed'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/**
 * One run of a workflow. The run is its own record of progress: `next_step_id` is where it goes on,
 * and every finished step is a run_steps row written together with that pointer, so any process
 * can continue a run from what is stored.
 */
export const WorkflowRun = defineEntity({
  name: 'WorkflowRun',
  tableName: 'workflow_runs',
  indexes: [{ properties: ['tenant', 'workflow', 'startedAt'] }, { properties: ['conversationId'] }],
  properties: {
    id: p.uuid().primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    workflow: () => p.manyToOne(Workflow).deleteRule('cascade'),
    /** The deployed version run; null for a builder test run (its steps are in `definition`). */
    version: p.integer().nullable(),
    definition: p.json<unknown[]>().nullable(),
    scope: p.enum(['live', 'test'] as const),
    conversationId: p.uuid(),
    status: p.enum(WORKFLOW_RUN_STATUSES).default('running'),
    triggeredBy: p.string().length(32),
    input: p.json<Record<string, unknown>>(),
    output: p.json<unknown>().nullable(),
    nextStepId: p.string().length(100).nullable(),
    stepsDone: p.integer().default(0),
    error: p.json<Record<string, unknown>>().nullable(),
    startedAt: p.datetime(),
    updatedAt: p.datetime(),
    completedAt: p.datetime().nullable(),
  },
});
export type IWorkflowRun = InferEntity<typeof WorkflowRun>;

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
