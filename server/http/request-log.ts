// Fastify's per-request log lines, except that health probes log at debug: a load balancer or an
// orchestrator polls them every few seconds, which at info would bury every other request.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** Route `config` of a health probe. */
export const PROBE_ROUTE_CONFIG = { probe: true } as const;

const isProbe = (request: FastifyRequest) => (request.routeOptions.config as { probe?: boolean } | undefined)?.probe === true;

export class ProbeAwareLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (!isProbe(request)) return super.incomingRequest(request, reply, metadata);
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    // A failing probe answers with an error of its own, which stays at the level fastify gives it.
    if (error || !isProbe(request)) return super.requestCompleted(error, request, reply, metadata);
    if (!this.isLogDisabled(request)) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
