// OpenTelemetry traces: the Tracer telemetry.ts calls, on the official SDK, exported over OTLP/HTTP
// (JSON). Loaded with a dynamic import only when an OTLP endpoint is configured (start-telemetry.ts),
// so a process with tracing off carries none of the SDK.
//
// No global tracer provider, context manager or propagator is registered (only the SDK's diagnostic
// logger): the spans are made by this module alone (we instrument by hand through telemetry.ts), its
// own context manager carries the active span, and a server stopped and another started in the same
// process (tests) begin afresh.
//
// A caller's trace context is a claim anyone can make. From a caller outside TRACE_TRUSTED_NETWORKS
// its trace id is continued (so its trace and ours join up) but nothing else: its tracestate would
// ride along in every call we make to others (http_request steps, callbacks, MCP servers, model
// providers), and its "not sampled" flag would switch off the tracing of our own work.
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import {
  createContextKey, diag, DiagLogLevel, defaultTextMapGetter, defaultTextMapSetter, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace,
  type Attributes as OtelAttributes, type Context, type Span,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { parseKeyPairsIntoRecord, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, RandomIdGenerator, TraceIdRatioBasedSampler, TracerProvider, type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import {
  ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME,
  ATTR_URL_PATH, ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { AppConfig } from '../config.js';
import { redactText, redactUrl } from '../logger.js';
import { PROCESS_ID } from '../runs/process-identity.js';
import type { Attributes, HttpServerTracing, Tracer } from './telemetry.js';

/** How long a stopping process waits for its last spans to be taken by the collector. */
const SHUTDOWN_MS = 5000;

type TracingConfig = Pick<
  AppConfig,
  | 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_SERVICE_NAME' | 'OTEL_RESOURCE_ATTRIBUTES'
  | 'OTEL_TRACES_SAMPLER' | 'OTEL_TRACES_SAMPLER_ARG' | 'OTEL_BSP_SCHEDULE_DELAY' | 'TRACE_TRUSTED_NETWORKS'
>;

export interface Tracing {
  tracer: Tracer;
  /** Sends the spans still queued and stops the exporter (boot's cleanups, last). */
  shutdown(): Promise<void>;
}

/**
 * The traces URL as the OTLP exporter specification says: the signal's own endpoint as given, else
 * the base endpoint with `v1/traces` appended.
 */
function tracesUrl(config: Pick<AppConfig, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
}

/** The URL as a log line may show it: no credentials, no query. */
function exporterUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const shown = new URL(url);
  shown.username = '';
  shown.password = '';
  shown.search = '';
  return shown.toString();
}

/** Marks a context whose remote parent is an untrusted caller's (its sampled flag is not ours to obey). */
const UNTRUSTED_CALLER = createContextKey('liya untrusted trace caller');

/** How a trace of our own is sampled: the configured sampler's decision for a span without a parent. */
function rootSamplerOf(config: TracingConfig): Sampler {
  switch (config.OTEL_TRACES_SAMPLER) {
    case 'always_off':
    case 'parentbased_always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
    case 'parentbased_traceidratio':
      return new TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLER_ARG ?? 1);
    default:
      return new AlwaysOnSampler();
  }
}

/**
 * The configured sampler, except for a span whose parent is an untrusted caller's: that one is
 * sampled as a trace of our own would be, whatever the caller's flag says. The ratio samplers judge
 * a fresh random id there, not the caller's: a trace id is the caller's choice, and one picked to
 * fall outside the ratio would switch tracing off just the same.
 */
function samplerOf(config: TracingConfig): Sampler {
  const root = rootSamplerOf(config);
  const configured = config.OTEL_TRACES_SAMPLER.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
  const ids = new RandomIdGenerator();
  return {
    shouldSample(context, traceId, name, kind, attributes, links) {
      const fromUntrustedCaller = context.getValue(UNTRUSTED_CALLER) === true && trace.getSpanContext(context)?.isRemote === true;
      return fromUntrustedCaller
        ? root.shouldSample(ROOT_CONTEXT, ids.generateTraceId(), name, kind, attributes, links)
        : configured.shouldSample(context, traceId, name, kind, attributes, links);
    },
    toString: () => `UntrustedCallersSampledAsOwn{${configured.toString()}}`,
  };
}

/**
 * Whether a peer address is in TRACE_TRUSTED_NETWORKS (IP addresses or CIDR ranges). The peer is
 * the connection's own address, never a forwarded-for header, which any caller can write.
 */
function trustedPeers(entries: string[]): (address: string | undefined) => boolean {
  if (!entries.length) return () => false;
  const list = new net.BlockList();
  for (const entry of entries) {
    const [ip, bits, extra] = entry.split('/');
    const family = net.isIP(ip);
    const badBits = bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 6 ? 128 : 32));
    if (!family || badBits || extra !== undefined) throw new Error(`TRACE_TRUSTED_NETWORKS: "${entry}" is not an IP address or a CIDR range`);
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(ip, type);
    else list.addSubnet(ip, Number(bits), type);
  }
  return (address) => {
    if (!address) return false;
    // A dual-stack listener sees an IPv4 peer as ::ffff:a.b.c.d.
    const v4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)?.[1];
    try {
      return v4 ? list.check(v4, 'ipv4') : list.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');
    } catch {
      return false;
    }
  };
}

/** An untrusted caller's context: its trace id and span go on, its tracestate and sampled flag do not. */
function distrusted(extracted: Context): Context {
  const caller = trace.getSpanContext(extracted);
  if (!caller) return extracted;
  return trace.setSpanContext(extracted, { ...caller, traceState: undefined }).setValue(UNTRUSTED_CALLER, true);
}

/** Attributes as the SDK takes them: an undefined value is left out (the SDK would warn about it). */
function definedAttributes(attributes: Attributes): OtelAttributes {
  const out: OtelAttributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/** A model call is a call to another service (a CLIENT span, as the GenAI conventions say); the rest is work in this process. */
const MODEL_OPERATIONS = new Set(['chat', 'embeddings', 'text_completion', 'generate_content']);
const kindOf = (attributes: Attributes) =>
  MODEL_OPERATIONS.has(String(attributes['gen_ai.operation.name'])) ? SpanKind.CLIENT : SpanKind.INTERNAL;

function recordFailure(span: Span, err: unknown) {
  const error = err instanceof Error ? err : new Error(String(err));
  // As in the logs: a run callback's token never leaves in a message or a stack.
  span.recordException({ name: error.name, message: redactText(error.message), stack: error.stack === undefined ? undefined : redactText(error.stack) });
  // A bounded name: the error's code (VALIDATION_ERROR, ...), else its class (InternalServerError, ...).
  const code = (err as { code?: unknown } | null)?.code;
  const className = error.constructor?.name;
  span.setAttribute(ATTR_ERROR_TYPE, typeof code === 'string' && code ? code : className && className !== 'Error' ? className : error.name || 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: redactText(error.message).slice(0, 500) });
}

/** `processor`, except that the spans in `dropped` are never exported (the probes' request spans). */
function exportingAllBut(dropped: WeakSet<object>, processor: SpanProcessor): SpanProcessor {
  return {
    onStart: (span, parentContext) => processor.onStart(span, parentContext),
    onEnd: (span) => {
      if (!dropped.has(span)) processor.onEnd(span);
    },
    forceFlush: () => processor.forceFlush(),
    shutdown: () => processor.shutdown(),
  };
}

/** The SDK's own complaints (an export the collector refused or never answered) as warn lines. */
function routeDiagnostics(log: Logger) {
  const write = (message: string, ...args: unknown[]) => log.warn({ component: 'opentelemetry', details: args.length ? args.map(String) : undefined }, message);
  diag.setLogger({ error: write, warn: write, info: () => undefined, debug: () => undefined, verbose: () => undefined }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}

/** Starts tracing: a tracer provider exporting in batches to the configured OTLP/HTTP endpoint. */
export function startTracing(config: TracingConfig, log: Logger): Tracing {
  // First: a list that does not parse stops the start before anything is set up.
  const trusts = trustedPeers(config.TRACE_TRUSTED_NETWORKS);
  const url = tracesUrl(config);
  const dropped = new WeakSet<object>();
  // The exporter reads the rest of its standard variables itself (OTEL_EXPORTER_OTLP_HEADERS,
  // _TIMEOUT, _COMPRESSION, _CERTIFICATE, ... and their _TRACES_ forms).
  const exporter = new OTLPTraceExporter(url ? { url } : {});
  const resourceAttributes = parseKeyPairsIntoRecord(config.OTEL_RESOURCE_ATTRIBUTES);
  const provider = new TracerProvider({
    // OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES; `liya` when neither says.
    resource: defaultResource().merge(
      resourceFromAttributes({
        [ATTR_SERVICE_INSTANCE_ID]: PROCESS_ID,
        ...resourceAttributes,
        [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME ?? resourceAttributes[ATTR_SERVICE_NAME] ?? 'liya',
      }),
    ),
    sampler: samplerOf(config),
    // Names and ids are short; a value this long is a mistake, not something to ship.
    spanLimits: { attributeValueLengthLimit: 4096 },
    spanProcessors: [exportingAllBut(dropped, new BatchSpanProcessor({ exporter, scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY }))],
  });
  routeDiagnostics(log);
  log.info({ url: exporterUrl(url), sampler: config.OTEL_TRACES_SAMPLER }, 'traces exported over OTLP/HTTP');
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const propagator = new W3CTraceContextPropagator();
  const tracer = provider.getTracer('liya');

  const activeSpanContext = () => {
    const spanContext = trace.getSpan(contextManager.active())?.spanContext();
    return spanContext && isSpanContextValid(spanContext) ? spanContext : undefined;
  };

  const tracerPart: Tracer = {
    span(name, attributes, fn) {
      const parent = contextManager.active();
      const span = tracer.startSpan(name, { kind: kindOf(attributes), attributes: definedAttributes(attributes) }, parent);
      const handle = { setAttributes: (more: Attributes) => void span.setAttributes(definedAttributes(more)) };
      return contextManager.with(trace.setSpan(parent, span), async () => {
        try {
          return await fn(handle);
        } catch (err) {
          recordFailure(span, err);
          throw err;
        } finally {
          span.end();
        }
      });
    },
    traceId: () => activeSpanContext()?.traceId,
    outboundHeaders() {
      const headers: Record<string, string> = {};
      propagator.inject(contextManager.active(), headers, defaultTextMapSetter);
      return headers;
    },
    continueTrace(saved, fn) {
      // Our own saved context (never a caller's): its sampled flag is this server's earlier decision.
      return contextManager.with(propagator.extract(ROOT_CONTEXT, saved, defaultTextMapGetter), fn);
    },
    http: httpServerTracing(tracer, contextManager, propagator, dropped, trusts),
  };

  return {
    tracer: tracerPart,
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      try {
        // A collector that does not answer must not hold the process's exit for long.
        const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), SHUTDOWN_MS).unref()));
        if ((await Promise.race([provider.shutdown(), gaveUp])) === 'timeout') log.warn({ waitedMs: SHUTDOWN_MS }, 'the last spans were not sent: the collector did not answer');
      } catch (err) {
        log.warn({ err }, 'could not send the last spans');
      } finally {
        clearTimeout(timer);
        contextManager.disable();
        diag.disable();
      }
    },
  };
}

/**
 * A server span per request, continuing the caller's W3C trace context (all of it from a trusted
 * peer, its trace id and parent span from anyone else): the request's handling runs
 * inside it, so every run, step and call the request makes is its child. Named by the route
 * template (`POST /v1/agents/:agentKey/run`) once routing has found it, else by the method alone.
 */
function httpServerTracing(
  tracer: ReturnType<TracerProvider['getTracer']>,
  contextManager: AsyncLocalStorageContextManager,
  propagator: W3CTraceContextPropagator,
  dropped: WeakSet<object>,
  trusts: (address: string | undefined) => boolean,
): HttpServerTracing {
  const served = new WeakMap<IncomingMessage, { span: Span; route?: string }>();
  return {
    serve(req: IncomingMessage, res: ServerResponse, handle: (req: IncomingMessage, res: ServerResponse) => void) {
      const extracted: Context = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const parent = trusts(req.socket.remoteAddress) ? extracted : distrusted(extracted);
      const method = req.method ?? 'GET';
      const span = tracer.startSpan(
        method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            [ATTR_HTTP_REQUEST_METHOD]: method,
            // The path only (a query may carry anything), with a callback's token cut out as in the logs.
            [ATTR_URL_PATH]: redactUrl((req.url ?? '/').split('?')[0]),
            [ATTR_URL_SCHEME]: 'http',
          },
        },
        parent,
      );
      const active = trace.setSpan(parent, span);
      const request: { span: Span; route?: string } = { span };
      served.set(req, request);
      // Some Node versions emit a request's body and its response's events from the socket's
      // context, not the handler's: bound, fastify's body parsing and onResponse hooks stay inside
      // the request's span whatever the version.
      contextManager.bind(active, req);
      contextManager.bind(active, res);
      res.once('close', () => {
        if (request.route) span.updateName(`${method} ${request.route}`);
        if (res.headersSent) {
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.statusCode);
          // Server spans are errors on 5xx only: a 4xx is the caller's mistake, answered as designed.
          if (res.statusCode >= 500) {
            span.setAttribute(ATTR_ERROR_TYPE, String(res.statusCode));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
        } else {
          span.setAttribute(ATTR_ERROR_TYPE, 'connection_closed');
        }
        span.end();
      });
      contextManager.with(active, () => handle(req, res));
    },
    setRoute(req: IncomingMessage, route: string, probe: boolean) {
      const request = served.get(req);
      if (!request) return;
      request.route = route;
      request.span.setAttribute(ATTR_HTTP_ROUTE, route);
      if (probe) dropped.add(request.span);
    },
  };
}
