// The agents' side of the run ports: a workflow's ai_agent step runs an agent through this.
import type { AppDeps } from '../deps.js';
import type { AgentRunPort } from '../runs/run-ports.js';
import { executeAgentRun, prepareAgentRun } from './run-agent.js';

export function createAgentRunPort(deps: AppDeps): AgentRunPort {
  return {
    async runNested(em, scope, request, lineage) {
      const prepared = await prepareAgentRun(em, deps, scope, {
        agentKey: request.agentKey,
        input: { message: request.message, user_id: request.userId },
        ...(request.sessionId ? { session_id: request.sessionId } : {}),
      });
      return executeAgentRun(em, deps, prepared, { lineage, signal: lineage.signal ?? undefined });
    },
  };
}
