// The HTTP server fastify listens on when tracing is on: fastify's hooks run around steps of a
// request, never around all of it, so the span that must be the parent of everything a request does
// wraps node's request handler itself (fastify's `serverFactory`).
import http from 'node:http';
import type { FastifyServerFactory } from 'fastify';
import type { HttpServerTracing } from './telemetry.js';

type ServerOptions = {
  http?: http.ServerOptions;
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
};

/**
 * A factory building the server exactly as fastify does without one (its `http` options, keep-alive,
 * request and connection timeouts, requests per socket), with every request served in its span.
 */
export function tracedServerFactory(tracing: HttpServerTracing): FastifyServerFactory {
  return (handler, opts) => {
    const options = opts as ServerOptions;
    const server = http.createServer(options.http ?? {}, (req, res) => tracing.serve(req, res, handler));
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  };
}
