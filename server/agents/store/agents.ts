// The agents table; this module alone writes it.
import { sql } from 'kysely';
import { Agent, type IAgent } from '../../../db/entities/agent.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { IAgent as AgentRow } from '../../../db/entities/agent.js';

/** The tenant's agent with this key (any status), or null. */
export async function findAgent(em: EntityManager, tenantId: string, agentKey: string): Promise<IAgent | null> {
  return em.findOne(Agent, { tenant: tenantId, agentKey });
}

/** The tenant's active agents by key. */
export async function listActiveAgents(em: EntityManager, tenantId: string): Promise<IAgent[]> {
  return em.find(Agent, { tenant: tenantId, status: 'active' }, { orderBy: { agentKey: 'asc' } });
}

/** Every agent of the tenant, whatever its status, by key. */
export async function listTenantAgents(em: EntityManager, tenantId: string): Promise<IAgent[]> {
  return em.find(Agent, { tenant: tenantId }, { orderBy: { agentKey: 'asc' } });
}

export interface NewAgent {
  tenantId: string;
  agentKey: string;
  name: string;
  description: string | null;
  goal: string;
  systemInstructions: string | null;
  model: string | null;
  fallbackModels: string[] | null;
  temperature: number | null;
  intentIds: string[];
  workflowIds: string[];
  actionIds: string[];
  knowledgeDomainKeys: string[];
  toolsConfig: Record<string, unknown> | null;
  memoryConfig: Record<string, unknown> | null;
  behaviorConfig: Record<string, unknown> | null;
}

/** Adds a draft agent to the unit of work; `flushAgentInsert` writes it. */
export function addAgent(em: EntityManager, values: NewAgent): IAgent {
  const { tenantId, ...fields } = values;
  return em.create(Agent, { tenant: tenantId, ...fields, status: 'draft', guardrailPolicyId: null });
}

/**
 * Writes the unit of work holding a new agent (and whatever else it holds); `taken` when the
 * tenant has an agent with this key already.
 */
export async function flushAgentInsert(em: EntityManager): Promise<{ taken: boolean }> {
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) return { taken: true };
    throw err;
  }
  return { taken: false };
}

/** Writes the pending changes of the unit of work (agent fields set on the entity and whatever else it holds). */
export async function flushAgentChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/**
 * Moves the agent to `to` unless it is there already (one conditional UPDATE, so of requests
 * arriving together only one changes it); whether this call changed it.
 */
export async function transitionAgentStatus(em: EntityManager, tenantId: string, agentId: string, to: 'active' | 'inactive'): Promise<boolean> {
  const changed = await kyselyOf(em)
    .updateTable('agents')
    .set({ status: to, updated_at: sql`now()`, ...(to === 'active' ? { deployed_at: sql`now()` } : {}) })
    .where('id', '=', agentId)
    .where('tenant_id', '=', tenantId)
    .where('status', '<>', to)
    .returning('id')
    .execute();
  return changed.length > 0;
}

/** Reloads the agent's row into the entity (after a write that went around the unit of work). */
export async function refreshAgent(em: EntityManager, agent: IAgent): Promise<void> {
  await em.refresh(agent);
}

/** The row `readAgentRunContext` returns: the agent (all null when there is none), this month's usage and the provider keys. */
export interface AgentRunContextRow {
  id: string | null;
  agent_key: string;
  name: string;
  goal: string;
  system_instructions: string | null;
  model: string | null;
  fallback_models: string[] | null;
  temperature: number | null;
  status: IAgent['status'];
  intent_ids: string[];
  workflow_ids: string[];
  knowledge_domain_keys: string[];
  tools_config: Record<string, unknown> | null;
  memory_config: Record<string, unknown> | null;
  behavior_config: Record<string, unknown> | null;
  requests: string | null;
  tokens: string | null;
  cost_usd: string | null;
  provider_keys: Record<string, string> | null;
}

// Raw(other): a hot statement on the SqlPool, run as a named prepared statement (one round trip per run
// for the agent, this month's usage_counters row and the tenant_provider_keys).
const RUN_CONTEXT_SQL = `
select a.id::text, a.agent_key, a.name, a.goal, a.system_instructions, a.model, a.fallback_models, a.temperature, a.status, a.intent_ids, a.workflow_ids,
       a.knowledge_domain_keys, a.tools_config, a.memory_config, a.behavior_config,
       c.requests::text, c.tokens::text, c.cost_usd::text,
       (select json_object_agg(k.provider, k.encrypted_key) from tenant_provider_keys k where k.tenant_id = $1) as provider_keys
  from (select 1) as one
  left join agents a on a.tenant_id = $1 and a.agent_key = $2
  left join usage_counters c on c.tenant_id = $1 and c.month = $3`;

/** What a run reads before it starts, in one round trip (always one row). */
export async function readAgentRunContext(sql: SqlPool, tenantId: string, agentKey: string, month: string): Promise<AgentRunContextRow> {
  const [row] = await sql.query<AgentRunContextRow>(RUN_CONTEXT_SQL, [tenantId, agentKey, month], 'liya_agent_run_context');
  return row;
}
