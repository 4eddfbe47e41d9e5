import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isoRequired } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, type ValidationIssue } from '../errors.js';
import { protectMcpHeaders } from './mcp-headers.js';
import { describeEffectiveConfig } from './agent-runtime-config.js';
import type { AgentDto, CreateAgentInput, ToolsConfig, UpdateAgentInput, MemoryConfig } from './agents.schemas.js';
import { AGENT_INPUT_SCHEMA } from './agents.schemas.js';
import { findUnknownDomainKeys, findUnknownIntentIds, findUnknownWorkflowIds } from './agent-references.js';
import {
  addAgent, findAgent as findAgentRow, flushAgentChanges, flushAgentInsert, listActiveAgents, refreshAgent, transitionAgentStatus, type AgentRow,
} from './store/agents.js';
import { allowancesForPlan } from '../tenants/plan-limits.js';
import { readTenantModelSettings } from '../tenants/tenant-records.js';

export function assertAgentsEnabled(plan: string): void {
  if (!allowancesForPlan(plan).agents) {
    throw new AppError('FEATURE_NOT_ENABLED', 'Agentic tool calling is not enabled on this plan', { feature: 'agents', plan });
  }
}

export const agentEndpoint = (agentKey: string) => `/v1/agents/${agentKey}/run`;

export function toAgentDto(agent: AgentRow, tenantId: string): AgentDto {
  return {
    id: agent.id,
    tenant_id: tenantId,
    agent_key: agent.agentKey,
    name: agent.name,
    description: agent.description ?? null,
    goal: agent.goal,
    system_instructions: agent.systemInstructions ?? null,
    model: agent.model ?? null,
    fallback_models: agent.fallbackModels ?? null,
    temperature: agent.temperature == null ? null : Number(agent.temperature),
    status: agent.status,
    intent_ids: agent.intentIds,
    workflow_ids: agent.workflowIds,
    action_ids: agent.actionIds,
    knowledge_domain_keys: agent.knowledgeDomainKeys,
    tools_config: maskToolsConfig(agent.toolsConfig as ToolsConfig | null),
    memory_config: agent.memoryConfig ?? null,
    behavior_config: agent.behaviorConfig ?? null,
    guardrail_policy_id: agent.guardrailPolicyId ?? null,
    created_at: isoRequired(agent.createdAt),
    updated_at: isoRequired(agent.updatedAt),
  };
}

function maskToolsConfig(config: ToolsConfig | null): Record<string, unknown> | null {
  if (!config?.mcp_servers) return config;
  return {
    ...config,
    mcp_servers: config.mcp_servers.map((server) =>
      server.headers ? { ...server, headers: Object.fromEntries(Object.keys(server.headers).map((name) => [name, '***'])) } : server,
    ),
  };
}

async function findAgent(em: EntityManager, tenantId: string, agentKey: string): Promise<AgentRow> {
  const agent = await findAgentRow(em, tenantId, agentKey);
  if (!agent) throw new AppError('NOT_FOUND', `Agent "${agentKey}" not found`, { agent_key: agentKey });
  return agent;
}

type References = Pick<CreateAgentInput, 'intent_ids' | 'workflow_ids' | 'knowledge_domain_keys' | 'action_ids' | 'tools_config' | 'memory_config'>;

/**
 * Every id and key an agent names must be the tenant's own (another tenant's id is as unknown as
 * a missing one); tool settings must fit together. One 400 lists every problem.
 */
async function checkReferences(em: EntityManager, tenantId: string, refs: References): Promise<void> {
  const issues: ValidationIssue[] = [];
  const unknown = async (field: string, ids: string[] | undefined, find: (ids: string[]) => Promise<string[]>) => {
    if (!ids?.length) return;
    const missing = await find([...new Set(ids)]);
    if (missing.length) issues.push({ path: field, message: `unknown ${field.replace(/_/g, ' ').replace(/s$/, '')}s: ${missing.join(', ')}`, code: 'unknown_reference' });
  };
  await unknown('intent_ids', refs.intent_ids, (ids) => findUnknownIntentIds(em, tenantId, ids));
  await unknown('workflow_ids', refs.workflow_ids, (ids) => findUnknownWorkflowIds(em, tenantId, ids));
  await unknown('knowledge_domain_keys', refs.knowledge_domain_keys, (ids) => findUnknownDomainKeys(em, tenantId, ids));
  for (const [i, id] of (refs.action_ids ?? []).entries()) {
    if (!/^[A-Za-z0-9_:./-]{1,200}$/.test(id)) issues.push({ path: `action_ids.${i}`, message: 'not a valid action id', code: 'invalid_format' });
  }
  const tools = refs.tools_config?.enabled_platform_tools ?? [];
  if (tools.includes('send_email') && !refs.tools_config?.notify_email) {
    issues.push({ path: 'tools_config.notify_email', message: 'send_email needs tools_config.notify_email (the only recipient it may write to)', code: 'missing_setting' });
  }
  const memory = refs.memory_config as MemoryConfig | null | undefined;
  if ((tools.includes('remember') || tools.includes('recall')) && memory?.persistent_memory !== true) {
    issues.push({ path: 'tools_config.enabled_platform_tools', message: 'remember and recall need memory_config.persistent_memory: true', code: 'missing_setting' });
  }
  if (issues.length) throw invalidInput('The agent refers to things that do not exist or do not fit together', issues);
}

export async function createAgent(em: EntityManager, deps: AppDeps, tenantId: string, plan: string, actor: Actor, input: CreateAgentInput): Promise<{ agent: AgentDto }> {
  assertAgentsEnabled(plan);
  await checkReferences(em, tenantId, input);
  const toolsConfig = input.tools_config ? await protectMcpHeaders(em, deps, tenantId, input.agent_key, input.tools_config, null) : null;
  const agent = addAgent(em, {
    tenantId,
    agentKey: input.agent_key,
    name: input.name,
    description: input.description ?? null,
    goal: input.goal,
    systemInstructions: input.system_instructions ?? null,
    model: input.model ?? null,
    fallbackModels: input.fallback_models ?? null,
    temperature: input.temperature ?? null,
    intentIds: input.intent_ids ?? [],
    workflowIds: input.workflow_ids ?? [],
    actionIds: input.action_ids ?? [],
    knowledgeDomainKeys: input.knowledge_domain_keys ?? [],
    toolsConfig: toolsConfig as Record<string, unknown> | null,
    memoryConfig: (input.memory_config as Record<string, unknown> | undefined) ?? null,
    behaviorConfig: (input.behavior_config as Record<string, unknown> | undefined) ?? null,
  });
  recordAudit(em, tenantId, actor, { action: 'agent.create', targetType: 'agent', targetId: input.agent_key });
  const { taken } = await flushAgentInsert(em);
  if (taken) throw new AppError('AGENT_KEY_TAKEN', `An agent with the key "${input.agent_key}" already exists`, { agent_key: input.agent_key });
  return { agent: toAgentDto(agent, tenantId) };
}

export async function listAgents(em: EntityManager, tenantId: string) {
  const agents = await listActiveAgents(em, tenantId);
  return {
    agents: agents.map((a) => ({
      agent: a.agentKey,
      displayName: a.name,
      description: a.description ?? null,
      goal: a.goal,
      status: a.status,
      endpoint: agentEndpoint(a.agentKey),
      method: 'POST' as const,
      inputSchema: structuredClone(AGENT_INPUT_SCHEMA) as Record<string, unknown>,
    })),
    total: agents.length,
  };
}

export async function getAgent(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string): Promise<{ agent: AgentDto }> {
  const agent = await findAgent(em, tenantId, agentKey);
  const { defaultModel, modelFallbacks } = await readTenantModelSettings(em, tenantId);
  return { agent: { ...toAgentDto(agent, tenantId), effective_runtime_config: describeEffectiveConfig(agent, defaultModel, deps.config, modelFallbacks) } };
}

export async function updateAgent(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, input: UpdateAgentInput): Promise<{ agent: AgentDto }> {
  const { agentKey, ...fields } = input;
  const agent = await findAgent(em, tenantId, agentKey);
  if (fields.status === 'active') {
    throw new AppError('DEPLOY_REQUIRED', 'An agent becomes active only through POST /v1/agents/{agentKey}/deploy', { agent_key: agentKey });
  }
  if (fields.status === 'error') throw invalidInput('The request is invalid', [{ path: 'status', message: 'error is set by the platform, not by an update', code: 'invalid_value' }]);
  // The settings checked together are the ones the agent will have after the update.
  await checkReferences(em, tenantId, {
    intent_ids: fields.intent_ids,
    workflow_ids: fields.workflow_ids,
    knowledge_domain_keys: fields.knowledge_domain_keys,
    action_ids: fields.action_ids,
    tools_config: fields.tools_config !== undefined ? fields.tools_config : (agent.toolsConfig as ToolsConfig | null),
    memory_config: fields.memory_config !== undefined ? fields.memory_config : (agent.memoryConfig as MemoryConfig | null),
  });
  const changed: string[] = [];
  const set = <K extends keyof AgentRow>(field: string, key: K, value: AgentRow[K] | undefined) => {
    if (value === undefined) return;
    agent[key] = value;
    changed.push(field);
  };
  set('name', 'name', fields.name);
  set('description', 'description', fields.description);
  set('goal', 'goal', fields.goal);
  set('system_instructions', 'systemInstructions', fields.system_instructions);
  set('model', 'model', fields.model);
  set('fallback_models', 'fallbackModels', fields.fallback_models);
  set('temperature', 'temperature', fields.temperature);
  set('status', 'status', fields.status);
  set('intent_ids', 'intentIds', fields.intent_ids);
  set('workflow_ids', 'workflowIds', fields.workflow_ids);
  set('action_ids', 'actionIds', fields.action_ids);
  set('knowledge_domain_keys', 'knowledgeDomainKeys', fields.knowledge_domain_keys);
  if (fields.tools_config !== undefined) {
    const protectedConfig = fields.tools_config
      ? await protectMcpHeaders(em, deps, tenantId, agentKey, fields.tools_config, agent.toolsConfig as ToolsConfig | null)
      : null;
    set('tools_config', 'toolsConfig', protectedConfig as Record<string, unknown> | null);
  }
  set('memory_config', 'memoryConfig', fields.memory_config as Record<string, unknown> | null | undefined);
  set('behavior_config', 'behaviorConfig', fields.behavior_config as Record<string, unknown> | null | undefined);
  if (changed.length) {
    agent.updatedAt = new Date();
    recordAudit(em, tenantId, actor, { action: 'agent.update', targetType: 'agent', targetId: agentKey, details: { fields: changed } });
  }
  await flushAgentChanges(em);
  return { agent: toAgentDto(agent, tenantId) };
}

/**
 * Moves the agent to `to` unless it is already there; only the request that made the change is
 * audited, however many arrive together (one conditional UPDATE decides).
 */
async function transitionAgent(em: EntityManager, tenantId: string, actor: Actor, agentKey: string, to: 'active' | 'inactive', action: string): Promise<{ agent: AgentDto }> {
  const agent = await findAgent(em, tenantId, agentKey);
  const from = agent.status;
  const changed = await transitionAgentStatus(em, tenantId, agent.id, to);
  if (changed) {
    recordAudit(em, tenantId, actor, { action, targetType: 'agent', targetId: agentKey, ...(to === 'active' ? { details: { from } } : {}) });
    await flushAgentChanges(em);
  }
  await refreshAgent(em, agent);
  return { agent: toAgentDto(agent, tenantId) };
}

/** draft or inactive -> active (audited); deploying an active agent changes nothing. */
export async function deployAgent(em: EntityManager, tenantId: string, plan: string, actor: Actor, agentKey: string): Promise<{ agent: AgentDto }> {
  const agent = await findAgent(em, tenantId, agentKey);
  if (agent.status !== 'active') assertAgentsEnabled(plan);
  return transitionAgent(em, tenantId, actor, agentKey, 'active', 'agent.deploy');
}

/** Soft delete: the agent, its runs and sessions stay readable; it can be deployed again. */
export async function deleteAgent(em: EntityManager, tenantId: string, actor: Actor, agentKey: string): Promise<{ agent: AgentDto }> {
  return transitionAgent(em, tenantId, actor, agentKey, 'inactive', 'agent.delete');
}

/** The agent row by key for the tenant (any status), or 404. */
export async function requireAgent(em: EntityManager, tenantId: string, agentKey: string): Promise<AgentRow> {
  return findAgent(em, tenantId, agentKey);
}
