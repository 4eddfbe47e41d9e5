// Who may read /metrics, and the listener that serves it on an address of its own (METRICS_PORT).
// The listener is plain node:http: a `liya worker` process has no HTTP app and should not load one
// for a single route, and the API process keeps its metrics off the public port.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { AppError, errorBody } from '../errors.js';
import type { Metrics } from './metrics.js';

export interface MetricsEndpoint {
  contentType: string;
  scrape(): Promise<string>;
  /** Null when the request may read the metrics, else the 401 to answer (METRICS_TOKEN set, no or another bearer token). */
  refusal(authorization: string | undefined): AppError | null;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

export function createMetricsEndpoint(metrics: Metrics, token: string | undefined): MetricsEndpoint {
  // Compared as digests of equal length: the time taken says nothing about the token.
  const expected = token ? digest(token) : null;
  return {
    contentType: metrics.contentType,
    scrape: metrics.scrape,
    refusal(authorization) {
      if (!expected) return null;
      const given = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
      if (given && timingSafeEqual(digest(given), expected)) return null;
      return new AppError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', undefined, { 'WWW-Authenticate': 'Bearer realm="metrics"' });
    },
  };
}

export interface ScrapeListener {
  url: string;
  close(): Promise<void>;
}

function sendJsonError(res: ServerResponse, err: AppError) {
  res.writeHead(err.status, { ...err.headers, 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(errorBody(err.code, err.message, err.details)));
}

/** Serves GET /metrics alone on host:port; every other path is 404 ROUTE_NOT_FOUND, as on the API port. */
export async function listenForScrapes(endpoint: MetricsEndpoint, options: { host: string; port: number; log: Logger }): Promise<ScrapeListener> {
  const { log } = options;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0].slice(0, 300);
    if (path !== '/metrics') return sendJsonError(res, new AppError('ROUTE_NOT_FOUND', `No route for ${req.method} ${path}`));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return sendJsonError(res, new AppError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on /metrics; allowed: GET, HEAD`, { allowed: ['GET', 'HEAD'] }, { allow: 'GET, HEAD' }));
    }
    const refusal = endpoint.refusal(req.headers.authorization);
    if (refusal) return sendJsonError(res, refusal);
    const body = await endpoint.scrape();
    res.writeHead(200, { 'content-type': endpoint.contentType, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err }, 'serving /metrics failed');
      if (!res.headersSent) sendJsonError(res, new AppError('INTERNAL_ERROR', 'An internal error occurred'));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => log.warn({ err }, 'metrics listener error'));
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
