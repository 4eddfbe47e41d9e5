// POST /v1/agents/{agentKey}/run/stream: the run endpoint as Server-Sent Events. A raw route,
// because a stream cannot go through the JSON procedure layer. Everything that can refuse the
// run (auth, body, agent, quota, session) answers a JSON envelope before the stream opens.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../deps.js';
import { AppError, errorBody } from '../errors.js';
import { authenticateApiKey } from '../keys/authenticate-api-key.js';
import { openSse } from '../http/sse.js';
import { rejectNulInUrl } from '../http/reject-nul.js';
import { runAgentInput } from './agents.schemas.js';
import { executeAgentRun, prepareAgentRun, type PreparedAgentRun } from './run-agent.js';

export const AGENT_STREAM_PATH = '/v1/agents/{agentKey}/run/stream';

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (err instanceof AppError) return reply.code(err.status).headers(err.headers ?? {}).send(errorBody(err.code, err.message, err.details));
  req.log.error({ err }, 'unhandled error');
  return reply.code(500).send(errorBody('INTERNAL_ERROR', 'An internal error occurred', { request_id: req.id }));
}

export function registerAgentStream(app: FastifyInstance, deps: AppDeps): void {
  app.post(AGENT_STREAM_PATH.replace('{agentKey}', ':agentKey'), async (req, reply) => {
    const params = req.params as { agentKey: string };
    let prepared: PreparedAgentRun;
    const em = deps.orm.em.fork();
    try {
      rejectNulInUrl(params, req.query as Record<string, unknown>);
      const scope = await authenticateApiKey(deps, req.headers);
      const body = req.body === undefined ? {} : req.body;
      if (!isPlainObject(body)) {
        throw new AppError('INVALID_INPUT', 'The request body must be a JSON object', { issues: [{ path: '(body)', message: 'expected a JSON object' }] });
      }
      const parsed = runAgentInput.safeParse({ ...body, agentKey: params.agentKey });
      if (!parsed.success) {
        throw new AppError('INVALID_INPUT', 'The request is invalid', {
          issues: parsed.error.issues.map((i) => ({ path: i.path.length ? i.path.join('.') : '(body)', message: i.message, code: i.code })),
        });
      }
      prepared = await prepareAgentRun(em, deps, { tenantId: scope.tenantId, environmentId: scope.environmentId, tenant: scope.tenant, plan: scope.plan }, parsed.data);
    } catch (err) {
      return sendError(req, reply, err);
    }

    const stream = openSse(req, reply);
    try {
      const result = await executeAgentRun(em, deps, prepared, { onEvent: (e) => stream.send(e.event, e.data), signal: stream.signal });
      stream.send(result.status === 'completed' || result.status === 'needs_input' ? 'run.completed' : 'run.failed', result);
    } catch (err) {
      req.log.error({ err }, 'agent run failed');
      stream.send('run.failed', { run_id: prepared.runId, session_id: prepared.sessionId, status: 'failed', output: '', steps: 0, total_cost: 0, total_latency_ms: 0 });
    } finally {
      stream.close();
    }
  });
}
