// POST /v1/agents/{agentKey}/run/stream: the run endpoint as Server-Sent Events.
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../deps.js';
import { registerSseRoute } from '../http/sse-route.js';
import { runAgentInput } from './agents.schemas.js';
import { executeAgentRun, prepareAgentRun } from './run-agent.js';

export const AGENT_STREAM_PATH = '/v1/agents/{agentKey}/run/stream';

export function registerAgentStream(app: FastifyInstance, deps: AppDeps): void {
  registerSseRoute(app, deps, {
    path: AGENT_STREAM_PATH,
    permission: 'agents:run',
    schema: runAgentInput,
    prepare: (em, scope, input) => prepareAgentRun(em, deps, { tenantId: scope.tenantId, environmentId: scope.environmentId, tenant: scope.tenant, plan: scope.plan }, input),
    async stream(em, prepared, sse, req) {
      // The run sends its last event (run.completed or run.failed) itself, with the numbers it
      // stored, also when it throws; what threw is only logged here.
      await executeAgentRun(em, deps, prepared, { onEvent: (e) => sse.send(e.event, e.data), signal: sse.signal }).catch((err: unknown) => req.log.error({ err }, 'agent run failed'));
    },
  });
}
