// The one seam between the engines and the operator's tools. Engines call the observe* functions
// below at their few instrumentation points (a request, a run, a step, a model call, a tool call, a
// guardrail verdict, an outbound call); the metrics (prom-client) and tracing (OpenTelemetry) modules
// register what they do with them at boot, and both are absent unless enabled, so with telemetry off
// an instrumentation point costs a function call and an AsyncLocalStorage frame per run.
//
// The run context (tenant, run, kind) lives in an AsyncLocalStorage, so every log line written while
// serving a run can carry it (server/logger.ts reads logContext()).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';

export type RunKind = 'intent' | 'agent' | 'workflow' | 'eval';
export type Attributes = Record<string, string | number | boolean | undefined>;

export interface RunInfo {
  kind: RunKind;
  tenantId: string;
  runId: string;
  /** The intent (`domain/intent`), agent key, workflow key or eval suite name. */
  name?: string | null;
}

export interface ModelCallInfo {
  provider: string;
  /** The model asked for (gen_ai.request.model). */
  model: string;
  operation: 'chat' | 'embeddings';
  tenantId: string;
}

/** What a finished model call reports (gen_ai.response.model, gen_ai.usage.*). */
export interface ModelCallUsage {
  responseModel?: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  finishReason?: string | null;
}

export interface ToolCallInfo {
  name: string;
  /** platform, mcp, workflow, intent, knowledge */
  kind: string;
}

/** A span the observed function may add to (no-op when tracing is off). */
export interface SpanHandle {
  setAttributes(attributes: Attributes): void;
}

/** The finished request, run, call or verdict, as metrics count them. */
export interface TelemetryEvents {
  httpRequest?(request: { method: string; route: string; status: number; durationMs: number }): void;
  runEnded?(run: RunInfo & { outcome: string; durationMs: number }): void;
  modelCallEnded?(call: ModelCallInfo & Partial<ModelCallUsage> & { outcome: 'ok' | 'error'; durationMs: number }): void;
  toolCallEnded?(call: ToolCallInfo & { outcome: 'ok' | 'error'; durationMs: number }): void;
  guardrailVerdict?(verdict: { stage: 'pre_llm' | 'post_llm'; outcome: string; tenantId?: string }): void;
  /** A call served by a route's fallback instead of its primary target. */
  modelFallback?(fallback: { fromProvider: string; fromModel: string; toProvider: string; toModel: string; reason: string }): void;
  /** A target's breaker opened or closed in this process. */
  breakerChanged?(change: { provider: string; credential: string; state: 'open' | 'closed' }): void;
  /**
   * One attempt to deliver an event to a subscription: delivered, retrying (failed, tried again
   * later) or failed (out of attempts). `lagMs`: from the change's commit to the first attempt.
   */
  eventDeliveryAttempted?(attempt: { type: string; outcome: 'delivered' | 'retrying' | 'failed'; lagMs?: number }): void;
  /** Sampled production runs the online intake moved: into a live window (scored) or past the daily cap (capped). */
  onlineSamplesTaken?(taken: { scored: number; capped: number }): void;
  /** An online evaluation monitor fired or resolved. */
  monitorChanged?(change: { state: 'firing' | 'ok' }): void;
}

/** Spans and propagation, as tracing makes them. */
export interface Tracer {
  /** Runs `fn` inside a new span, child of the active one; ends it (with the error, if any). */
  span<T>(name: string, attributes: Attributes, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** The active trace id, for log lines. */
  traceId(): string | undefined;
  /** W3C trace context headers (traceparent, tracestate) of the active span, for outbound calls. */
  outboundHeaders(): Record<string, string>;
  /** Runs `fn` with the trace context `saved` (outboundHeaders of an earlier span) as its parent. */
  continueTrace<T>(saved: Record<string, string>, fn: () => Promise<T>): Promise<T>;
  /** The HTTP server's side: a span per request (absent: requests make no span of their own). */
  http?: HttpServerTracing;
}

/** What the HTTP host calls so each request is a server span, parent of everything the request does. */
export interface HttpServerTracing {
  /** Runs `handle` inside the request's span (continuing the caller's W3C traceparent); the span ends with the response. */
  serve(req: IncomingMessage, res: ServerResponse, handle: (req: IncomingMessage, res: ServerResponse) => void): void;
  /**
   * The route template the request matched (`/v1/agents/:agentKey/run`), which names its span. A
   * probe's span (health checks, metric scrapes: one every few seconds) is dropped, not exported.
   */
  setRoute(req: IncomingMessage, route: string, probe: boolean): void;
}

const sinks: TelemetryEvents[] = [];
let tracer: Tracer | null = null;

/** Boot wires what is enabled: metrics and/or tracing. */
export function installTelemetry(parts: { events?: TelemetryEvents[]; tracer?: Tracer | null }): void {
  sinks.splice(0, sinks.length, ...(parts.events ?? []));
  tracer = parts.tracer ?? null;
}

/** Tells every installed sink of one event (a sink that throws is ignored). */
export function emitTelemetry<K extends keyof TelemetryEvents>(event: K, payload: Parameters<NonNullable<TelemetryEvents[K]>>[0]): void {
  for (const sink of sinks) {
    try {
      (sink[event] as ((p: typeof payload) => void) | undefined)?.(payload);
    } catch {
      // A metric that cannot be recorded never fails the work it describes.
    }
  }
}

const NO_SPAN: SpanHandle = { setAttributes: () => undefined };
const inSpan = <T>(name: string, attributes: Attributes, fn: (span: SpanHandle) => Promise<T>): Promise<T> =>
  tracer ? tracer.span(name, attributes, fn) : fn(NO_SPAN);

const runContext = new AsyncLocalStorage<RunInfo>();

/** The run being served, if any. */
export const currentRun = (): RunInfo | undefined => runContext.getStore();

/** Fields every log line written now carries: tenant_id and run_id while serving a run, trace_id when tracing. */
export function logContext(): Record<string, string> | undefined {
  const run = runContext.getStore();
  const traceId = tracer?.traceId();
  if (!run && !traceId) return undefined;
  return { ...(run ? { tenant_id: run.tenantId, run_id: run.runId, run_kind: run.kind } : {}), ...(traceId ? { trace_id: traceId } : {}) };
}

/** A thrown error's outcome label: its error code in lower case (a bounded set), else `error`. */
const failureOutcome = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z_]{1,40}$/.test(code) ? code.toLowerCase() : 'error';
};

/**
 * Serves (a slice of) a run: its context for logs and a span `<kind> run`. No metric: a run served
 * in several slices (an evaluation) reports its end once, with recordRunEnded.
 */
export function withRunContext<T>(run: RunInfo, fn: (span: SpanHandle) => Promise<T>): Promise<T> {
  return runContext.run(run, () =>
    inSpan(`${run.kind} run`, { 'liya.run.kind': run.kind, 'liya.run.id': run.runId, 'liya.tenant.id': run.tenantId, 'liya.run.name': run.name ?? undefined }, fn),
  );
}

/** A run ended: its outcome (completed, failed, ...) and how long it took from its start. */
export function recordRunEnded(run: RunInfo, outcome: string, durationMs: number): void {
  emitTelemetry('runEnded', { ...run, outcome, durationMs });
}

/**
 * Serves a whole run: withRunContext, and on the way out its outcome and duration (`outcomeOf`
 * reads the result: completed, failed, waiting, ...; a throw is its error code).
 */
export async function observeRun<T>(run: RunInfo, fn: () => Promise<T>, outcomeOf: (result: T) => string): Promise<T> {
  const started = performance.now();
  return withRunContext(run, async (span) => {
    let outcome = 'error';
    try {
      const result = await fn();
      outcome = outcomeOf(result);
      return result;
    } catch (err) {
      outcome = failureOutcome(err);
      throw err;
    } finally {
      span.setAttributes({ 'liya.run.outcome': outcome });
      recordRunEnded(run, outcome, performance.now() - started);
    }
  });
}

/** One step of a run (a workflow step, an agent's model turn): a span. */
export function observeStep<T>(name: string, attributes: Attributes, fn: (span: SpanHandle) => Promise<T>): Promise<T> {
  return inSpan(name, attributes, fn);
}

/**
 * One provider call, with the GenAI semantic conventions: span `<operation> <model>` with
 * gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, and from `report` the response
 * model and gen_ai.usage.input_tokens / output_tokens; metrics count it with its tokens and cost.
 */
export async function observeModelCall<T>(call: ModelCallInfo, fn: (report: (usage: ModelCallUsage) => void) => Promise<T>): Promise<T> {
  const started = performance.now();
  const attributes: Attributes = {
    'gen_ai.operation.name': call.operation,
    'gen_ai.provider.name': call.provider,
    'gen_ai.system': call.provider,
    'gen_ai.request.model': call.model,
  };
  return inSpan(`${call.operation} ${call.model}`, attributes, async (span) => {
    let usage: ModelCallUsage | undefined;
    let outcome: 'ok' | 'error' = 'error';
    try {
      const result = await fn((reported) => {
        usage = reported;
        span.setAttributes({
          'gen_ai.response.model': reported.responseModel,
          'gen_ai.usage.input_tokens': reported.inputTokens,
          'gen_ai.usage.output_tokens': reported.outputTokens,
          'gen_ai.response.finish_reasons': reported.finishReason ?? undefined,
          'liya.cost_usd': reported.costUsd,
        });
      });
      outcome = 'ok';
      return result;
    } finally {
      emitTelemetry('modelCallEnded', { ...call, ...usage, outcome, durationMs: performance.now() - started });
    }
  });
}

/** One tool call of an agent (gen_ai.operation.name execute_tool). */
export async function observeToolCall<T>(call: ToolCallInfo, fn: () => Promise<T>, failed: (result: T) => boolean = () => false): Promise<T> {
  const started = performance.now();
  return inSpan(`execute_tool ${call.name}`, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': call.name, 'liya.tool.kind': call.kind }, async (span) => {
    let outcome: 'ok' | 'error' = 'error';
    try {
      const result = await fn();
      outcome = failed(result) ? 'error' : 'ok';
      span.setAttributes({ 'liya.tool.outcome': outcome });
      return result;
    } finally {
      emitTelemetry('toolCallEnded', { ...call, outcome, durationMs: performance.now() - started });
    }
  });
}

/** A guardrail scan's verdict: passed, redacted, flagged or blocked. */
export function observeGuardrail(stage: 'pre_llm' | 'post_llm', outcome: string): void {
  emitTelemetry('guardrailVerdict', { stage, outcome, tenantId: currentRun()?.tenantId });
}

/** Sampled production runs moved by the online intake: `scored` into live windows, `capped` past a rule's daily cap. */
export function observeOnlineSamples(scored: number, capped: number): void {
  if (scored || capped) emitTelemetry('onlineSamplesTaken', { scored, capped });
}

/** A monitor fired or resolved. */
export function observeMonitorChange(state: 'firing' | 'ok'): void {
  emitTelemetry('monitorChanged', { state });
}

/** Whether anything counts HTTP requests (the host adds its response hook only then: the hot path stays as it is). */
export const httpRequestsObserved = (): boolean => sinks.some((sink) => sink.httpRequest);

/** A finished HTTP request, by route template (never the raw path: ids would explode the label set). */
export function observeHttpRequest(request: { method: string; route: string; status: number; durationMs: number }): void {
  emitTelemetry('httpRequest', request);
}

/** Headers an outbound call carries so the receiver joins the trace (empty when tracing is off). */
export function outboundTraceHeaders(): Record<string, string> {
  return tracer?.outboundHeaders() ?? {};
}

/**
 * The active span's W3C trace context, for work that goes on later, perhaps in another process (a
 * run's callback, from the job queue): continueTrace takes it up there. Null when tracing is off.
 */
export function traceContextToSave(): Record<string, string> | null {
  const headers = tracer?.outboundHeaders();
  return headers?.traceparent ? headers : null;
}

/**
 * Runs `fn` inside the trace `saved` (from traceContextToSave), so its spans and outbound calls
 * continue it; as it is when tracing is off or nothing was saved (its spans then start a trace).
 */
export function continueTrace<T>(saved: Record<string, string> | null | undefined, fn: () => Promise<T>): Promise<T> {
  return tracer && saved ? tracer.continueTrace(saved, fn) : fn();
}

/** The HTTP server's tracing when tracing is on (the host wraps its request handler only then: the hot path stays as it is). */
export const httpServerTracing = (): HttpServerTracing | undefined => tracer?.http;
