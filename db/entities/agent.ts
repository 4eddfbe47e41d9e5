import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';
import { AGENT_STATUSES, AGENT_RUN_STATUSES } from '../column-values.js';

type Json = Record<string, unknown>;



/** A tenant's agent: goal, instructions, the tools it may use, and its memory and behaviour limits. */
export const Agent = defineEntity({
  name: 'Agent',
  tableName: 'agents',
  uniques: [{ properties: ['tenant', 'agentKey'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    agentKey: p.string().length(100),
    name: p.string().length(200),
    description: p.text().nullable(),
    goal: p.text(),
    systemInstructions: p.text().nullable(),
    model: p.string().length(200).nullable(),
    /** Models that serve, in order, when `model` fails or cools down (null: the tenant's, then the platform's). */
    fallbackModels: p.json<string[]>().nullable(),
    temperature: p.double().nullable(),
    status: p.enum(AGENT_STATUSES).default('draft'),
    intentIds: p.json<string[]>(),
    workflowIds: p.json<string[]>(),
    actionIds: p.json<string[]>(),
    knowledgeDomainKeys: p.json<string[]>(),
    toolsConfig: p.json<Json>().nullable(),
    memoryConfig: p.json<Json>().nullable(),
    behaviorConfig: p.json<Json>().nullable(),
    guardrailPolicyId: p.string().length(64).nullable(),
    deployedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IAgent = InferEntity<typeof Agent>;

/** One conversation with an agent; every run of it is a turn. */
export const AgentSession = defineEntity({
  name: 'AgentSession',
  tableName: 'agent_sessions',
  indexes: [
    // The list, latest activity first, paged by keyset (db/migrations/...140200_history_list_indexes).
    { name: 'agent_sessions_tenant_id_agent_id_last_activity_at_id_index', expression: `create index "agent_sessions_tenant_id_agent_id_last_activity_at_id_index" on "agent_sessions" ("tenant_id", "agent_id", "last_activity_at" desc, "id" desc)` },
    { properties: ['lastActivityAt'] },
    // Erasing one end user's conversations (db/migrations/...140400_erasure).
    { properties: ['tenant', 'userId'] },
  ],
  properties: {
    id: p.uuid().primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    agent: () => p.manyToOne(Agent).deleteRule('cascade'),
    userId: p.string().length(200).nullable(),
    status: p.enum(['active', 'needs_input', 'expired'] as const).default('active'),
    turns: p.integer().default(0),
    lastActivityAt: p.datetime(),
    createdAt: p.datetime(),
  },
});

/** The transcript: the user's messages and the agent's answers, in order. */
export const AgentMessage = defineEntity({
  name: 'AgentMessage',
  tableName: 'agent_messages',
  indexes: [{ properties: ['session', 'createdAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    session: () => p.manyToOne(AgentSession).deleteRule('cascade'),
    runId: p.uuid().nullable(),
    role: p.enum(['user', 'assistant'] as const),
    content: p.text(),
    /** Tokens of `content` as counted for the memory budget. */
    tokens: p.integer().default(0),
    createdAt: p.datetime(),
  },
});

/** One run of an agent (one turn of a session). */
export const AgentRun = defineEntity({
  name: 'AgentRun',
  tableName: 'agent_runs',
  indexes: [
    // The list, newest first, paged by keyset, for each filter (db/migrations/...140200_history_list_indexes).
    { name: 'agent_runs_tenant_id_agent_id_started_at_id_index', expression: `create index "agent_runs_tenant_id_agent_id_started_at_id_index" on "agent_runs" ("tenant_id", "agent_id", "started_at" desc, "id" desc)` },
    { name: 'agent_runs_tenant_id_agent_id_status_started_at_id_index', expression: `create index "agent_runs_tenant_id_agent_id_status_started_at_id_index" on "agent_runs" ("tenant_id", "agent_id", "status", "started_at" desc, "id" desc)` },
    { name: 'agent_runs_session_id_started_at_id_index', expression: `create index "agent_runs_session_id_started_at_id_index" on "agent_runs" ("session_id", "started_at" desc, "id" desc)` },
  ],
  properties: {
    id: p.uuid().primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    agent: () => p.manyToOne(Agent).deleteRule('cascade'),
    session: () => p.manyToOne(AgentSession).deleteRule('cascade'),
    userId: p.string().length(200).nullable(),
    status: p.enum(AGENT_RUN_STATUSES).default('running'),
    input: p.json<Json>(),
    output: p.text().nullable(),
    model: p.string().length(200).nullable(),
    steps: p.integer().default(0),
    totalTokens: p.integer().default(0),
    totalCost: p.decimal('string').precision(14).scale(6).default('0'),
    totalLatencyMs: p.integer().default(0),
    maxCostUsd: p.decimal('string').precision(14).scale(6).nullable(),
    error: p.json<Json>().nullable(),
    startedAt: p.datetime(),
    completedAt: p.datetime().nullable(),
  },
});

/**
 * The step trace of every kind of run (agent runs now; workflow and evaluation runs share it): one
 * row per model call or tool call, written when the step ends and before the next one starts.
 */
export const RunStep = defineEntity({
  name: 'RunStep',
  tableName: 'run_steps',
  uniques: [{ properties: ['runId', 'index'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    runKind: p.string().length(32),
    runId: p.uuid(),
    index: p.integer(),
    type: p.string().length(32),
    name: p.string().length(200),
    /** The workflow step this row is the result of (workflow runs only). */
    stepId: p.string().length(100).nullable(),
    status: p.string().length(32),
    input: p.json<unknown>().nullable(),
    output: p.json<unknown>().nullable(),
    promptTokens: p.integer().default(0),
    completionTokens: p.integer().default(0),
    costUsd: p.decimal('string').precision(14).scale(6).default('0'),
    latencyMs: p.integer().default(0),
    error: p.text().nullable(),
    startedAt: p.datetime(),
    completedAt: p.datetime(),
  },
});

/** What an agent keeps about one end user: preferences and remembered facts, never shared. */
export const AgentUserMemory = defineEntity({
  name: 'AgentUserMemory',
  tableName: 'agent_user_memory',
  uniques: [{ properties: ['tenant', 'agent', 'userId', 'kind', 'key'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    agent: () => p.manyToOne(Agent).deleteRule('cascade').index(),
    userId: p.string().length(200),
    kind: p.enum(['preference', 'memory'] as const),
    key: p.string().length(200),
    value: p.json<unknown>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

