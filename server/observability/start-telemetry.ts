// Installs what the operator enabled behind the telemetry seam (telemetry.ts), once per process, from
// openRuntime: the API process and `liya worker` alike. Metrics (prom-client) and tracing
// (OpenTelemetry) each add their part here; what is off is never loaded.
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Orm } from '../../db/orm.js';
import type { SqlPool } from '../../db/sql-pool.js';
import type { AppConfig } from '../config.js';
import type { MetricsEndpoint } from './metrics-endpoint.js';
import { readOrmPool, selectIngestionBacklog, selectJobQueueDepth, selectOnlineEvalReadings } from './store/scrape-readings.js';
import { installTelemetry, type TelemetryEvents, type Tracer } from './telemetry.js';
import type { BreakerReading } from '../llm/target-health.js';

export interface TelemetryDeps {
  config: AppConfig;
  log: Logger;
  orm: Orm;
  sql: SqlPool;
  /** graphile-worker's pool. */
  jobPool: Pool;
  /** The model providers' breakers in this process. */
  breakers: () => BreakerReading[];
}

let apiPortMetrics: MetricsEndpoint | null = null;

/** /metrics as the API port serves it: only with METRICS_TOKEN and no METRICS_PORT (null otherwise). */
export const metricsOnApiPort = (): MetricsEndpoint | null => apiPortMetrics;

/** Metrics are on when they have somewhere protected to go: a listener of their own, or a token. */
const metricsEnabled = (config: AppConfig) => config.METRICS_PORT !== undefined || config.METRICS_TOKEN !== undefined;

/** Traces are on when an OTLP endpoint is set, unless OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says otherwise. */
const tracingEnabled = (config: AppConfig) =>
  Boolean(config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || config.OTEL_EXPORTER_OTLP_ENDPOINT) && !config.OTEL_SDK_DISABLED && config.OTEL_TRACES_EXPORTER !== 'none';

async function startMetrics(deps: TelemetryDeps): Promise<{ events: TelemetryEvents; stop(): Promise<void> }> {
  const { config, log } = deps;
  const [{ createMetrics }, { createMetricsEndpoint, listenForScrapes }] = await Promise.all([import('./metrics.js'), import('./metrics-endpoint.js')]);
  const metrics = createMetrics({
    tenantLabels: config.METRICS_TENANT_LABELS,
    sources: {
      jobQueue: async () =>
        (await selectJobQueueDepth(deps.orm.em.fork())).map((row) => ({
          task: row.task, ready: row.ready, scheduled: row.scheduled, running: row.running, failed: row.failed, oldestReadySeconds: row.oldest_ready_seconds,
        })),
      ingestionBacklog: async () => {
        const row = await selectIngestionBacklog(deps.orm.em.fork());
        return { pending: row.pending, running: row.running, oldestPendingSeconds: row.oldest_pending_seconds };
      },
      pools: async () => {
        const jobs = deps.jobPool;
        return [
          { pool: 'orm', ...(await readOrmPool(deps.orm.em.fork())) },
          { pool: 'sql', ...deps.sql.connections() },
          { pool: 'jobs', total: jobs.totalCount, idle: jobs.idleCount, waiting: jobs.waitingCount, max: jobs.options.max ?? 10 },
        ];
      },
      onlineEvals: async () => {
        const row = await selectOnlineEvalReadings(deps.orm.em.fork());
        return { firing: row.firing, ok: row.ok, queued: row.queued, oldestQueuedSeconds: row.oldest_queued_seconds };
      },
      breakers: async () => deps.breakers(),
      onReadFailed: (reading, err) => log.warn({ err, reading }, 'a metrics reading failed; its series are left out of this scrape'),
    },
  });
  const endpoint = createMetricsEndpoint(metrics, config.METRICS_TOKEN);
  if (config.METRICS_PORT === undefined) {
    apiPortMetrics = endpoint;
    return { events: metrics.events, stop: async () => void (apiPortMetrics = null) };
  }
  const listener = await listenForScrapes(endpoint, { host: config.METRICS_HOST, port: config.METRICS_PORT, log });
  log.info({ url: listener.url, token: Boolean(config.METRICS_TOKEN) }, 'metrics served');
  if (!config.METRICS_TOKEN && !['127.0.0.1', '::1', 'localhost'].includes(config.METRICS_HOST)) {
    log.warn({ host: config.METRICS_HOST }, 'metrics are served beyond this machine without METRICS_TOKEN');
  }
  return { events: metrics.events, stop: () => listener.close() };
}

/**
 * Installs metrics and tracing as configured; the returned function uninstalls them (a cleanup of
 * openRuntime). Called before the HTTP app is built: its request hook exists only when metrics count requests.
 */
export async function startTelemetry(deps: TelemetryDeps): Promise<() => Promise<void>> {
  const events: TelemetryEvents[] = [];
  const stops: (() => Promise<void>)[] = [];
  try {
    if (metricsEnabled(deps.config)) {
      const metrics = await startMetrics(deps);
      events.push(metrics.events);
      stops.push(metrics.stop);
    }
    let tracer: Tracer | null = null;
    if (tracingEnabled(deps.config)) {
      const tracing = (await import('./tracing.js')).startTracing(deps.config, deps.log);
      tracer = tracing.tracer;
      stops.push(tracing.shutdown);
    }
    installTelemetry({ events, tracer });
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
  return async () => {
    installTelemetry({});
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => deps.log.warn({ err }, 'stopping telemetry failed'));
  };
}
