// Prometheus metrics (prom-client): a TelemetryEvents sink that counts what the engines report
// (requests, runs, model and tool calls, guardrail verdicts), gauges read when Prometheus scrapes
// (job queue, ingestion backlog, database pools) and prom-client's process metrics. Loaded only when
// metrics are enabled (start-telemetry.ts), so a server without them never loads prom-client.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TelemetryEvents } from './telemetry.js';

/** One database pool's connections at scrape time. */
export interface PoolReading {
  /** orm (MikroORM), sql (the hot-path pool), jobs (graphile-worker). */
  pool: string;
  total: number;
  idle: number;
  /** Requests waiting for a connection. */
  waiting: number;
  max: number;
}

/** One graphile-worker task's jobs at scrape time. */
export interface JobQueueReading {
  task: string;
  /** Due and waiting for a worker. */
  ready: number;
  /** Due later (a delay, a timeout, a retry's backoff). */
  scheduled: number;
  /** Locked by a worker. */
  running: number;
  /** Out of attempts; kept by graphile-worker until removed. */
  failed: number;
  /** How long the oldest ready job has waited since it was due (0 when none is). */
  oldestReadySeconds: number;
}

export interface IngestionBacklogReading {
  pending: number;
  running: number;
  /** How long the oldest pending ingestion job has waited (0 when none is). */
  oldestPendingSeconds: number;
}

/** One model provider target's breaker at scrape time (its credential as platform or tenant, never the key). */
export interface BreakerGaugeReading {
  provider: string;
  credential: string;
  state: 'closed' | 'open' | 'half_open';
}

/** What the gauges read at scrape time (the database's answers come through a store module). */
export interface ScrapeSources {
  /** The model providers' breakers this process knows (its own and those other processes opened). */
  breakers(): Promise<BreakerGaugeReading[]>;
  jobQueue(): Promise<JobQueueReading[]>;
  ingestionBacklog(): Promise<IngestionBacklogReading>;
  pools(): Promise<PoolReading[]>;
  /** Online evaluation: enabled monitors firing and ok, and the sampled runs waiting for the intake. */
  onlineEvals(): Promise<{ firing: number; ok: number; queued: number; oldestQueuedSeconds: number }>;
  /** A reading that failed (the database away, a timeout): its gauges are left empty for that scrape. */
  onReadFailed(what: string, err: unknown): void;
}

export interface MetricsOptions {
  /** Adds per-tenant counters (runs, model tokens and cost) labelled tenant_id. Off by default: one series per tenant. */
  tenantLabels: boolean;
  sources: ScrapeSources;
}

export interface Metrics {
  events: TelemetryEvents;
  /** The Prometheus text exposition. */
  scrape(): Promise<string>;
  contentType: string;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600];
const MODEL_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120];
const TOOL_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** A scrape-time reading slower than this is given up (Prometheus' own scrape timeout is 10 s by default). */
const READ_TIMEOUT_MS = 2000;

/** Most distinct values one free-form label (a model name) takes; later ones are counted as `other`. */
const MAX_LABEL_VALUES = 200;

/** Most model names one tenant adds to the model label; its later new names are counted as `other`. */
const MODEL_NAMES_PER_TENANT = 20;

/**
 * A label that could take any value (a provider name, from the configuration a tenant's model
 * references pick from) is capped, so it cannot grow the series without bound.
 */
function boundedLabel(limit: number): (value: string | undefined) => string {
  const seen = new Set<string>();
  return (value) => {
    const v = value || 'unknown';
    if (seen.has(v)) return v;
    if (seen.size >= limit) return 'other';
    seen.add(v);
    return v;
  };
}

/**
 * The model label, bounded per tenant: each tenant adds at most `perTenant` names to it, so one
 * tenant trying model names one after another uses up its own share, never the labels other
 * tenants' models need. A name already labelled (the default model, one another tenant added) is
 * reported as itself for every tenant: it adds no series. The process-wide cap stays as a backstop
 * against many tenants doing so at once.
 */
function modelLabel(perTenant = MODEL_NAMES_PER_TENANT, limit = MAX_LABEL_VALUES): (tenantId: string, value: string | undefined) => string {
  const labelled = new Set<string>();
  // Names added by each tenant: a count per tenant the process has served.
  const added = new Map<string, number>();
  return (tenantId, value) => {
    const v = value || 'unknown';
    if (labelled.has(v)) return v;
    const count = added.get(tenantId) ?? 0;
    if (count >= perTenant || labelled.size >= limit) return 'other';
    labelled.add(v);
    added.set(tenantId, count + 1);
    return v;
  };
}

const seconds = (ms: number) => Math.max(0, ms) / 1000;

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  // Standard names (process_*, nodejs_*), which ready-made Node.js dashboards expect: CPU, memory,
  // file descriptors, heap, GC and event-loop lag.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const httpRequests = new Counter({ name: 'liya_http_requests_total', help: 'HTTP requests answered, by method, route template and status code.', labelNames: ['method', 'route', 'status'] as const, registers });
  const httpDuration = new Histogram({ name: 'liya_http_request_duration_seconds', help: 'Time to answer an HTTP request (until the response is sent; a stream until it ends), by method and route template.', labelNames: ['method', 'route'] as const, buckets: HTTP_BUCKETS, registers });

  const runs = new Counter({ name: 'liya_runs_total', help: 'Runs ended, by kind (intent, agent, workflow, eval) and outcome (completed, failed, waiting, cached, an error code, ...). A workflow run that waits and resumes counts once per slice it ran.', labelNames: ['kind', 'outcome'] as const, registers });
  const runDuration = new Histogram({ name: 'liya_run_duration_seconds', help: 'Run duration by kind and outcome (a waiting workflow run: the slice until it waited).', labelNames: ['kind', 'outcome'] as const, buckets: RUN_BUCKETS, registers });

  const modelCalls = new Counter({ name: 'liya_model_calls_total', help: 'Model provider calls, by provider, requested model, operation (chat, embeddings) and outcome (ok, error).', labelNames: ['provider', 'model', 'operation', 'outcome'] as const, registers });
  const modelDuration = new Histogram({ name: 'liya_model_call_duration_seconds', help: 'Model provider call duration (a streamed answer until its last chunk), by provider, model and operation.', labelNames: ['provider', 'model', 'operation'] as const, buckets: MODEL_BUCKETS, registers });
  const modelTokens = new Counter({ name: 'liya_model_tokens_total', help: 'Tokens the providers reported, by provider, model and type (input, output).', labelNames: ['provider', 'model', 'type'] as const, registers });
  const modelCost = new Counter({ name: 'liya_model_cost_usd_total', help: 'Cost of model calls in US dollars (at the configured prices), by provider and model.', labelNames: ['provider', 'model'] as const, registers });

  const toolCalls = new Counter({ name: 'liya_tool_calls_total', help: 'Agent tool calls, by tool kind (platform, mcp, workflow, intent, knowledge) and outcome (ok, error).', labelNames: ['kind', 'outcome'] as const, registers });
  const toolDuration = new Histogram({ name: 'liya_tool_call_duration_seconds', help: 'Agent tool call duration, by tool kind.', labelNames: ['kind'] as const, buckets: TOOL_BUCKETS, registers });

  const guardrails = new Counter({ name: 'liya_guardrail_verdicts_total', help: 'Guardrail scans, by stage (pre_llm, post_llm) and outcome (passed, flagged, redacted, blocked).', labelNames: ['stage', 'outcome'] as const, registers });

  const tenantRuns = options.tenantLabels
    ? new Counter({ name: 'liya_tenant_runs_total', help: 'Runs ended, per tenant, kind and outcome (METRICS_TENANT_LABELS).', labelNames: ['tenant_id', 'kind', 'outcome'] as const, registers })
    : null;
  const tenantTokens = options.tenantLabels
    ? new Counter({ name: 'liya_tenant_model_tokens_total', help: 'Model tokens per tenant and type (input, output) (METRICS_TENANT_LABELS).', labelNames: ['tenant_id', 'type'] as const, registers })
    : null;
  const tenantCost = options.tenantLabels
    ? new Counter({ name: 'liya_tenant_model_cost_usd_total', help: 'Cost of model calls in US dollars per tenant (METRICS_TENANT_LABELS).', labelNames: ['tenant_id'] as const, registers })
    : null;

  const fallbacks = new Counter({ name: 'liya_model_fallbacks_total', help: 'Model calls served by a fallback target instead of the primary, by the primary\'s provider, the serving provider and why (rate_limited, server_error, timeout, circuit_open, ...).', labelNames: ['from_provider', 'to_provider', 'reason'] as const, registers });
  const breakerChanges = new Counter({ name: 'liya_model_breaker_transitions_total', help: 'Model provider breakers this process opened or closed, by provider, credential (platform, tenant) and state.', labelNames: ['provider', 'credential', 'state'] as const, registers });
  const breakerStates = new Gauge({ name: 'liya_model_breakers', help: 'Model provider targets (provider and credential) by breaker state (closed, open, half_open), as this process sees them (breakers are shared by every process). Read at scrape time.', labelNames: ['provider', 'credential', 'state'] as const, registers });
  const eventDeliveries = new Counter({ name: 'liya_event_deliveries_total', help: 'Attempts to deliver an event to a subscription, by event type and outcome (delivered; retrying: failed, tried again later; failed: out of attempts).', labelNames: ['type', 'outcome'] as const, registers });
  const eventLag = new Histogram({ name: 'liya_event_delivery_lag_seconds', help: 'From the change that recorded an event to its first delivery attempt, by event type.', labelNames: ['type'] as const, buckets: HTTP_BUCKETS, registers });
  const queueJobs = new Gauge({ name: 'liya_job_queue_jobs', help: 'Background jobs (graphile-worker) by task and state: ready (due, waiting for a worker), scheduled (due later), running, failed (out of attempts). Read at scrape time.', labelNames: ['task', 'state'] as const, registers });
  const queueOldest = new Gauge({ name: 'liya_job_queue_oldest_ready_age_seconds', help: 'How long the oldest ready job of each task has waited since it was due (0: none waiting). Read at scrape time.', labelNames: ['task'] as const, registers });
  const ingestion = new Gauge({ name: 'liya_ingestion_jobs', help: 'Document ingestion backlog: jobs pending or running. Read at scrape time.', labelNames: ['status'] as const, registers });
  const ingestionOldest = new Gauge({ name: 'liya_ingestion_oldest_pending_age_seconds', help: 'How long the oldest pending ingestion job has waited (0: none). Read at scrape time.', registers });
  const poolConnections = new Gauge({ name: 'liya_db_pool_connections', help: 'Database pool connections by pool (orm, sql, jobs) and state (idle, in_use).', labelNames: ['pool', 'state'] as const, registers });
  const poolWaiting = new Gauge({ name: 'liya_db_pool_waiting_requests', help: 'Requests waiting for a connection of the pool.', labelNames: ['pool'] as const, registers });
  const poolMax = new Gauge({ name: 'liya_db_pool_max_connections', help: 'The most connections the pool opens.', labelNames: ['pool'] as const, registers });

  const onlineSamples = new Counter({ name: 'liya_online_eval_samples_total', help: 'Sampled production runs the online intake took, by outcome: scored (added to a live window) or capped (past the rule\'s daily cap).', labelNames: ['outcome'] as const, registers });
  const monitorChanges = new Counter({ name: 'liya_eval_monitor_transitions_total', help: 'Online evaluation monitors that fired or resolved, by the state they entered (firing, ok).', labelNames: ['state'] as const, registers });
  const monitorStates = new Gauge({ name: 'liya_eval_monitors', help: 'Enabled online evaluation monitors by state (firing, ok), every tenant. Read at scrape time.', labelNames: ['state'] as const, registers });
  const samplesQueued = new Gauge({ name: 'liya_online_eval_samples_queued', help: 'Sampled production runs waiting for the online intake (the scoring backlog before the windows). Read at scrape time.', registers });
  const samplesOldest = new Gauge({ name: 'liya_online_eval_samples_oldest_age_seconds', help: 'How long the oldest queued sample has waited (0: none). Read at scrape time.', registers });

  const provider = boundedLabel(50);
  const model = modelLabel();
  const { sources } = options;

  const events: TelemetryEvents = {
    httpRequest({ method, route, status, durationMs }) {
      httpRequests.inc({ method, route, status: String(status) });
      httpDuration.observe({ method, route }, seconds(durationMs));
    },
    runEnded({ kind, outcome, durationMs, tenantId }) {
      runs.inc({ kind, outcome });
      runDuration.observe({ kind, outcome }, seconds(durationMs));
      tenantRuns?.inc({ tenant_id: tenantId, kind, outcome });
    },
    modelCallEnded(call) {
      const labels = { provider: provider(call.provider), model: model(call.tenantId, call.model) };
      modelCalls.inc({ ...labels, operation: call.operation, outcome: call.outcome });
      modelDuration.observe({ ...labels, operation: call.operation }, seconds(call.durationMs));
      const input = Math.max(0, call.inputTokens ?? 0);
      const output = Math.max(0, call.outputTokens ?? 0);
      const cost = Math.max(0, call.costUsd ?? 0);
      // A failed call reports nothing: no series of zeros for it.
      if (input) modelTokens.inc({ ...labels, type: 'input' }, input);
      if (output) modelTokens.inc({ ...labels, type: 'output' }, output);
      if (cost) modelCost.inc(labels, cost);
      if (input) tenantTokens?.inc({ tenant_id: call.tenantId, type: 'input' }, input);
      if (output) tenantTokens?.inc({ tenant_id: call.tenantId, type: 'output' }, output);
      if (cost) tenantCost?.inc({ tenant_id: call.tenantId }, cost);
    },
    toolCallEnded({ kind, outcome, durationMs }) {
      toolCalls.inc({ kind, outcome });
      toolDuration.observe({ kind }, seconds(durationMs));
    },
    guardrailVerdict({ stage, outcome }) {
      guardrails.inc({ stage, outcome });
    },
    modelFallback({ fromProvider, toProvider, reason }) {
      fallbacks.inc({ from_provider: provider(fromProvider), to_provider: provider(toProvider), reason });
    },
    breakerChanged({ provider: name, credential, state }) {
      breakerChanges.inc({ provider: provider(name), credential, state });
    },
    eventDeliveryAttempted({ type, outcome, lagMs }) {
      // The type is one of the catalogue's: a bounded label.
      eventDeliveries.inc({ type, outcome });
      if (lagMs !== undefined) eventLag.observe({ type }, seconds(lagMs));
    },
    onlineSamplesTaken({ scored, capped }) {
      if (scored) onlineSamples.inc({ outcome: 'scored' }, scored);
      if (capped) onlineSamples.inc({ outcome: 'capped' }, capped);
    },
    monitorChanged({ state }) {
      monitorChanges.inc({ state });
    },
  };

  /** Reads one source; on failure its gauges stay empty for this scrape (a stale value would mislead). */
  const read = async <T>(what: string, reading: () => Promise<T>, apply: (value: T) => void, gauges: Gauge<string>[]) => {
    for (const gauge of gauges) gauge.reset();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${READ_TIMEOUT_MS} ms`)), READ_TIMEOUT_MS);
    });
    try {
      apply(await Promise.race([reading(), timeout]));
    } catch (err) {
      sources.onReadFailed(what, err);
    } finally {
      clearTimeout(timer);
    }
  };

  const collect = async () => {
    await Promise.all([
      read('job queue', sources.jobQueue, (tasks) => {
        for (const t of tasks) {
          for (const state of ['ready', 'scheduled', 'running', 'failed'] as const) queueJobs.set({ task: t.task, state }, t[state]);
          queueOldest.set({ task: t.task }, t.oldestReadySeconds);
        }
      }, [queueJobs, queueOldest]),
      read('ingestion backlog', sources.ingestionBacklog, (backlog) => {
        ingestion.set({ status: 'pending' }, backlog.pending);
        ingestion.set({ status: 'running' }, backlog.running);
        ingestionOldest.set(backlog.oldestPendingSeconds);
      }, [ingestion, ingestionOldest]),
      read('model provider breakers', sources.breakers, (readings) => {
        const counts = new Map<string, { provider: string; credential: string; state: string; n: number }>();
        for (const r of readings) {
          const labels = { provider: provider(r.provider), credential: r.credential, state: r.state };
          const id = `${labels.provider}\n${labels.credential}\n${labels.state}`;
          const seen = counts.get(id);
          if (seen) seen.n += 1;
          else counts.set(id, { ...labels, n: 1 });
        }
        for (const c of counts.values()) breakerStates.set({ provider: c.provider, credential: c.credential, state: c.state }, c.n);
      }, [breakerStates]),
      read('online evaluation', sources.onlineEvals, (online) => {
        monitorStates.set({ state: 'firing' }, online.firing);
        monitorStates.set({ state: 'ok' }, online.ok);
        samplesQueued.set(online.queued);
        samplesOldest.set(online.oldestQueuedSeconds);
      }, [monitorStates, samplesQueued, samplesOldest]),
      read('database pools', sources.pools, (pools) => {
        for (const p of pools) {
          poolConnections.set({ pool: p.pool, state: 'idle' }, p.idle);
          poolConnections.set({ pool: p.pool, state: 'in_use' }, Math.max(0, p.total - p.idle));
          poolWaiting.set({ pool: p.pool }, p.waiting);
          poolMax.set({ pool: p.pool }, p.max);
        }
      }, [poolConnections, poolWaiting, poolMax]),
    ]);
    return registry.metrics();
  };

  // Scrapes that arrive together (two Prometheus replicas) share one reading: each would otherwise
  // reset the gauges while the other is reading them.
  let inflight: Promise<string> | null = null;
  return {
    events,
    contentType: registry.contentType,
    scrape: () => (inflight ??= collect().finally(() => (inflight = null))),
  };
}
