// What a run reads before it starts, in one round trip: the agent by key, this month's usage and
// the tenant's own provider keys (a run's added latency is mostly round trips; the ORM's entity
// loading alone cost about a millisecond of CPU per run).
import type { SqlPool } from '../../db/sql-pool.js';
import type { IAgent } from '../../db/entities/agent.js';
import { monthKey } from '../common/schemas.js';
import type { MonthlyUsage } from '../usage/usage.service.js';

/** The agent settings a run uses. */
export type AgentSettings = Pick<
  IAgent,
  | 'id' | 'agentKey' | 'name' | 'goal' | 'systemInstructions' | 'model' | 'temperature' | 'status' | 'intentIds' | 'workflowIds'
  | 'knowledgeDomainKeys' | 'toolsConfig' | 'memoryConfig' | 'behaviorConfig'
>;

export interface AgentRunContext {
  agent: AgentSettings | null;
  usedThisMonth: MonthlyUsage;
  /** The tenant's encrypted provider keys by provider name. */
  providerKeys: Record<string, string>;
}

interface Row {
  id: string | null;
  agent_key: string;
  name: string;
  goal: string;
  system_instructions: string | null;
  model: string | null;
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

const SQL = `
select a.id::text, a.agent_key, a.name, a.goal, a.system_instructions, a.model, a.temperature, a.status, a.intent_ids, a.workflow_ids,
       a.knowledge_domain_keys, a.tools_config, a.memory_config, a.behavior_config,
       c.requests::text, c.tokens::text, c.cost_usd::text,
       (select json_object_agg(k.provider, k.encrypted_key) from tenant_provider_keys k where k.tenant_id = $1) as provider_keys
  from (select 1) as one
  left join agents a on a.tenant_id = $1 and a.agent_key = $2
  left join usage_counters c on c.tenant_id = $1 and c.month = $3`;

export async function loadAgentRunContext(sql: SqlPool, tenantId: string, agentKey: string): Promise<AgentRunContext> {
  const [row] = await sql.query<Row>(SQL, [tenantId, agentKey, monthKey()], 'liya_agent_run_context');
  return {
    agent: row.id
      ? {
          id: row.id,
          agentKey: row.agent_key,
          name: row.name,
          goal: row.goal,
          systemInstructions: row.system_instructions,
          model: row.model,
          temperature: row.temperature,
          status: row.status,
          intentIds: row.intent_ids,
          workflowIds: row.workflow_ids,
          knowledgeDomainKeys: row.knowledge_domain_keys,
          toolsConfig: row.tools_config,
          memoryConfig: row.memory_config,
          behaviorConfig: row.behavior_config,
        }
      : null,
    usedThisMonth: { requests: Number(row.requests ?? 0), tokens: Number(row.tokens ?? 0), costUsd: Number(row.cost_usd ?? 0) },
    providerKeys: row.provider_keys ?? {},
  };
}
