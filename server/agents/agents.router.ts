import { z } from 'zod';
import { HISTORY_LIST_NOTE, historyPageQuery, historyPaginationSchema } from '../common/pagination.js';
import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { getAgentRun, getAgentTranscript, listAgentRuns, listAgentSessions } from './agent-runs.service.js';
import {
  agentKeyParam, agentListItemSchema, agentRunDetailSchema, agentRunResultSchema, agentSchema, createAgentInput, listRunsInput, runAgentInput,
  runsPageSchema, sessionRowSchema, transcriptSchema, updateAgentInput,
} from './agents.schemas.js';
import { createAgent, deleteAgent, deployAgent, getAgent, listAgents, updateAgent } from './agents.service.js';
import { executeAgentRun, prepareAgentRun } from './run-agent.js';

const TAGS = ['Agents'];
const BASE = '/v1/agents';
// CONCURRENCY_LIMIT: a message over 64 K characters is scanned on the shared worker-thread pool, which takes at most 16 waiting tasks.
const RUN_ERRORS = ['NOT_FOUND', 'AGENT_NOT_ACTIVE', 'FEATURE_NOT_ENABLED', 'SESSION_EXPIRED', 'QUOTA_EXCEEDED', 'LLM_NOT_CONFIGURED', 'CONCURRENCY_LIMIT'] as const;

const agentOut = ok(z.object({ agent: agentSchema }));

export const agentsRouter = router({
  list: apiKeyProcedure('agents:read')
    .meta({ openapi: { method: 'GET', path: BASE, tags: TAGS, summary: 'Active agents, with their run endpoint and input schema' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ agents: z.array(agentListItemSchema), total: z.number().int() })))
    .query(async ({ ctx }) => envelope(await listAgents(ctx.em, ctx.tenantId))),

  create: apiKeyProcedure('agents:write')
    .meta({
      openapi: {
        method: 'POST', path: BASE, tags: TAGS, summary: 'Create an agent (draft)',
        description: 'Every intent id, workflow id and knowledge domain key must be the tenant\'s own; unknown ones are a 400 naming them.',
      },
      successStatus: 201,
      errors: ['AGENT_KEY_TAKEN', 'FEATURE_NOT_ENABLED'],
    })
    .input(createAgentInput)
    .output(agentOut)
    .mutation(async ({ ctx, input }) => envelope(await createAgent(ctx.em, ctx.deps, ctx.tenantId, ctx.apiKey.plan, ctx.actor, input))),

  get: apiKeyProcedure('agents:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{agentKey}`, tags: TAGS, summary: 'One agent, with its effective runtime configuration' }, errors: ['NOT_FOUND'] })
    .input(agentKeyParam)
    .output(agentOut)
    .query(async ({ ctx, input }) => envelope(await getAgent(ctx.em, ctx.deps, ctx.tenantId, input.agentKey))),

  update: apiKeyProcedure('agents:write')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/{agentKey}`, tags: TAGS, summary: 'Update an agent (agent_key never changes; status active only by deploy)' }, errors: ['NOT_FOUND', 'DEPLOY_REQUIRED'] })
    .input(updateAgentInput)
    .output(agentOut)
    .mutation(async ({ ctx, input }) => envelope(await updateAgent(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input))),

  deploy: apiKeyProcedure('agents:write')
    .meta({
      openapi: { method: 'POST', path: `${BASE}/{agentKey}/deploy`, tags: TAGS, summary: 'Activate an agent (audited); an active agent stays as it is' },
      errors: ['NOT_FOUND', 'FEATURE_NOT_ENABLED'],
    })
    .input(agentKeyParam)
    .output(agentOut)
    .mutation(async ({ ctx, input }) => envelope(await deployAgent(ctx.em, ctx.tenantId, ctx.apiKey.plan, ctx.actor, input.agentKey))),

  remove: apiKeyProcedure('agents:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{agentKey}`, tags: TAGS, summary: 'Soft delete: the agent becomes inactive (runs and sessions stay readable)' }, errors: ['NOT_FOUND'] })
    .input(agentKeyParam)
    .output(agentOut)
    .mutation(async ({ ctx, input }) => envelope(await deleteAgent(ctx.em, ctx.tenantId, ctx.actor, input.agentKey))),

  run: apiKeyProcedure('agents:run')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/{agentKey}/run`, tags: TAGS, summary: 'Run an active agent (one turn of a conversation)',
        description:
          'Answers 200 once the run has ended, whatever its status: completed, needs_input (the model asked the user; `output` is the question), ' +
          'max_steps_reached, budget_exhausted (the next model call could have passed behavior_config.max_cost_usd), guardrail_blocked ' +
          '(`output` is the fallback), or failed (the model provider failed, also by cutting its answer off; `output` is behavior_config.fallback ' +
          'and the run\'s `error` in GET …/runs/{runId} has the provider\'s code and reason). ' +
          'The same run as Server-Sent Events: POST /v1/agents/{agentKey}/run/stream.',
      },
      errors: [...RUN_ERRORS],
    })
    .input(runAgentInput)
    .output(ok(agentRunResultSchema))
    .mutation(async ({ ctx, input }) => {
      const prepared = await prepareAgentRun(ctx.em, ctx.deps, ctx.scope, input);
      return envelope(await executeAgentRun(ctx.em, ctx.deps, prepared));
    }),

  runs: apiKeyProcedure('runs:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/{agentKey}/runs`, tags: TAGS, summary: 'The agent\'s runs, newest first',
        description: `Filters: \`status\`, \`session_id\` (one that cannot be a session matches nothing). ${HISTORY_LIST_NOTE}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(listRunsInput)
    .output(ok(runsPageSchema))
    .query(async ({ ctx, input }) =>
      envelope(await listAgentRuns(ctx.em, ctx.deps, ctx.tenantId, input.agentKey, { status: input.status, sessionId: input.session_id }, input)),
    ),

  runDetail: apiKeyProcedure('runs:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{agentKey}/runs/{runId}`, tags: TAGS, summary: 'One run with its step-by-step trace' }, errors: ['NOT_FOUND'] })
    .input(agentKeyParam.extend({ runId: z.string().max(64) }))
    .output(ok(z.object({ run: agentRunDetailSchema })))
    .query(async ({ ctx, input }) => envelope(await getAgentRun(ctx.em, ctx.deps, ctx.tenantId, input.agentKey, input.runId))),

  sessions: apiKeyProcedure('runs:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/{agentKey}/sessions`, tags: TAGS, summary: 'The agent\'s conversations (one row each), latest activity first',
        description: `A conversation with new activity moves to the front, so a walk by cursor meanwhile may pass over it. ${HISTORY_LIST_NOTE}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(agentKeyParam.extend(historyPageQuery))
    .output(ok(z.object({ sessions: z.array(sessionRowSchema), pagination: historyPaginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listAgentSessions(ctx.em, ctx.deps, ctx.tenantId, input.agentKey, input))),

  transcript: apiKeyProcedure('runs:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{agentKey}/sessions/{sessionId}/transcript`, tags: TAGS, summary: 'Every turn of a conversation, oldest first' }, errors: ['NOT_FOUND'] })
    .input(agentKeyParam.extend({ sessionId: z.string().max(64) }))
    .output(ok(transcriptSchema))
    .query(async ({ ctx, input }) => envelope(await getAgentTranscript(ctx.em, ctx.deps, ctx.tenantId, input.agentKey, input.sessionId))),
});
