// What a run reads before it starts, in one round trip: the agent by key, this month's usage and
// the tenant's own provider keys (a run's added latency is mostly round trips; the ORM's entity
// loading alone cost about a millisecond of CPU per run).
import type { SqlPool } from '../../db/sql-pool.js';
import { monthKey } from '../common/schemas.js';
import type { MonthlyUsage } from '../usage/usage.service.js';
import { readAgentRunContext, type AgentRow } from './store/agents.js';

/** The agent settings a run uses. */
export type AgentSettings = Pick<
  AgentRow,
  | 'id' | 'agentKey' | 'name' | 'goal' | 'systemInstructions' | 'model' | 'fallbackModels' | 'temperature' | 'status' | 'intentIds' | 'workflowIds'
  | 'knowledgeDomainKeys' | 'toolsConfig' | 'memoryConfig' | 'behaviorConfig'
>;

export interface AgentRunContext {
  agent: AgentSettings | null;
  usedThisMonth: MonthlyUsage;
  /** The tenant's encrypted provider keys by provider name. */
  providerKeys: Record<string, string>;
}

export async function loadAgentRunContext(sql: SqlPool, tenantId: string, agentKey: string): Promise<AgentRunContext> {
  const row = await readAgentRunContext(sql, tenantId, agentKey, monthKey());
  return {
    agent: row.id
      ? {
          id: row.id,
          agentKey: row.agent_key,
          name: row.name,
          goal: row.goal,
          systemInstructions: row.system_instructions,
          model: row.model,
          fallbackModels: row.fallback_models,
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
