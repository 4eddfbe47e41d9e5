// POST /v1/workflows/{workflowIdOrKey}/run/stream: a run as Server-Sent Events. Unlike an agent
// run, a workflow run does not stop when the client leaves: it goes on and is read later.
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../deps.js';
import { registerSseRoute } from '../http/sse-route.js';
import type { WorkflowRunResult } from './workflows.schemas.js';
import { startRun } from './workflow-runs.service.js';
import { readIdempotencyKey } from './idempotency.js';
import { AppError } from '../errors.js';
import { runWorkflowInput } from './workflows.schemas.js';

export const WORKFLOW_STREAM_PATH = '/v1/workflows/{workflowIdOrKey}/run/stream';

const FINAL_EVENT: Record<WorkflowRunResult['status'], string> = {
  completed: 'run.completed',
  needs_input: 'run.waiting',
  waiting: 'run.waiting',
  awaiting_approval: 'run.awaiting_approval',
  running: 'run.failed',
  rejected: 'run.failed',
  cancelled: 'run.failed',
  failed: 'run.failed',
};

export function registerWorkflowStream(app: FastifyInstance, deps: AppDeps): void {
  registerSseRoute(app, deps, {
    path: WORKFLOW_STREAM_PATH,
    permission: 'workflows:run',
    schema: runWorkflowInput,
    bodyLimit: 25 * 1024 * 1024,
    // The run starts inside prepare, so refusals (404, attachments, input) are JSON; its events are
    // queued until the stream is open.
    async prepare(em, scope, input, req) {
      const { workflowIdOrKey, ...request } = input;
      if (request.mode === 'async') {
        throw new AppError('INVALID_INPUT', 'The request is invalid', { issues: [{ path: 'mode', message: 'a stream runs synchronously; use POST …/run for async runs', code: 'invalid_value' }] });
      }
      const idempotencyKey = readIdempotencyKey(req.headers);
      const queued: { event: string; data: unknown }[] = [];
      let sink: ((event: string, data: unknown) => void) | null = null;
      let started!: () => void;
      const startedPromise = new Promise<void>((resolve) => (started = resolve));
      const outcome = startRun(em, deps, { tenantId: scope.tenantId, environmentId: scope.environmentId, tenant: scope.tenant, plan: scope.plan }, workflowIdOrKey, request, {
        mode: 'live',
        triggeredBy: 'stream',
        idempotencyKey,
        beforeStart: () => started(),
        onEvent: (e) => (sink ? sink(e.event, e.data) : queued.push({ event: e.event, data: e.data })),
      });
      // Refusals come before the run starts; after that the stream carries everything.
      await Promise.race([startedPromise, outcome]);
      // A replayed run (repeated Idempotency-Key) never starts: its stored trace is streamed.
      const result = outcome.then((o) => {
        if (o.kind !== 'result') throw new Error('a stream run cannot be queued');
        if (o.result.idempotent_replay) {
          for (const step of o.result.trace) (sink ?? ((e, d) => queued.push({ event: e, data: d })))('step.completed', step);
        }
        return o.result;
      });
      return {
        result,
        attach: (send: (event: string, data: unknown) => void) => {
          for (const e of queued.splice(0)) send(e.event, e.data);
          sink = send;
        },
      };
    },
    async stream(_em, prepared, sse, req) {
      prepared.attach((event, data) => sse.send(event, data));
      try {
        const result = await prepared.result;
        sse.send(FINAL_EVENT[result.status], result);
      } catch (err) {
        req.log.error({ err }, 'workflow run failed');
        sse.send('run.failed', { status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'The run failed unexpectedly' } });
      }
    },
  });
}
