// GET /metrics on the API port: registered only when metrics are enabled with METRICS_TOKEN and no
// METRICS_PORT (otherwise the path is an unknown route, 404 ROUTE_NOT_FOUND like any other).
import type { FastifyInstance } from 'fastify';
import { PROBE_ROUTE_CONFIG } from '../http/request-log.js';
import { sendError } from '../http/send-error.js';
import { metricsOnApiPort } from './start-telemetry.js';

export function registerMetricsRoute(app: FastifyInstance) {
  const endpoint = metricsOnApiPort();
  if (!endpoint) return;
  // Scraped every few seconds: its request lines log at debug, as the health probes' do.
  app.get('/metrics', { config: PROBE_ROUTE_CONFIG }, async (req, reply) => {
    const refusal = endpoint.refusal(req.headers.authorization);
    if (refusal) return sendError(req, reply, refusal);
    const body = await endpoint.scrape();
    return reply.type(endpoint.contentType).send(body);
  });
}
