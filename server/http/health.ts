import type { FastifyInstance } from 'fastify';
import { pingDatabase } from '../../db/ping.js';
import type { AppDeps } from '../deps.js';
import { PROBE_ROUTE_CONFIG } from './request-log.js';

const DB_CHECK_TIMEOUT_MS = 2000;

async function checkDatabase(deps: AppDeps): Promise<boolean> {
  const probe = pingDatabase(deps.orm.em).then(() => true, () => false);
  const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), DB_CHECK_TIMEOUT_MS).unref());
  return Promise.race([probe, timeout]);
}

/** Liveness and readiness probes (raw routes: no auth, no tRPC; their request lines log at debug). */
export function registerHealth(app: FastifyInstance, deps: AppDeps) {
  app.get('/health/live', { config: PROBE_ROUTE_CONFIG }, async () => ({ success: true, data: { status: 'ok' } }));

  app.get('/health/ready', { config: PROBE_ROUTE_CONFIG }, async (_req, reply) => {
    const [db, engine] = await Promise.all([checkDatabase(deps), Promise.resolve(deps.engineReady())]);
    if (db && engine) return { success: true, data: { status: 'ready', engine, db } };
    void reply.code(503);
    return {
      success: false,
      data: { status: 'not_ready', engine, db },
      error: { code: 'NOT_READY', message: `Not ready: ${[!db && 'database', !engine && 'engine'].filter(Boolean).join(' and ')} unavailable` },
    };
  });
}
