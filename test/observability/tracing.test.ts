// OpenTelemetry traces, end to end: a server with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP
// receiver in this file. A request continues its caller's W3C trace; the agent run, its model call,
// its workflow tool, the workflow run and its steps nest under the request span in one trace; an
// http_request step's receiver joins that trace; log lines carry the run and the trace; a run queued
// by a request joins that request's trace, not the trace of whatever ran before it; an async run's
// callback carries the run's trace; a caller's tracestate and its "not sampled" flag count only from
// a trusted network (TRACE_TRUSTED_NETWORKS).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { createLogger } from '../../server/logger.js';
import { bearer, createClient, type ApiClient } from '../support/client.js';
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { ADMIN_SECRET, createTestDatabase, JWT_SECRET } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

// ---- The OTLP/HTTP receiver (JSON: the exporter's encoding) ----------------------------------------

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: AnyValue }[];
  status?: { code?: number; message?: string };
  events?: { name: string; attributes?: { key: string; value: AnyValue }[] }[];
}
interface ExportRequest {
  resourceSpans: { resource?: { attributes?: { key: string; value: AnyValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean | undefined>;
  status: number;
  events: string[];
  resource: Record<string, string | number | boolean | undefined>;
}

const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 };
const STATUS_ERROR = 2;

const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue;
const attributesOf = (list: { key: string; value: AnyValue }[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

const spans: ReceivedSpan[] = [];
const exportContentTypes: string[] = [];
let receiver: http.Server;
let receiverUrl: string;

// ---- The web service the http_request steps call -------------------------------------------------

const hookCalls: { path: string; headers: http.IncomingHttpHeaders }[] = [];
let hook: http.Server;
let hookUrl: string;

// ---- The log ----------------------------------------------------------------------------------

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  tenant_id?: string;
  run_id?: string;
  run_kind?: string;
  trace_id?: string;
  [key: string]: unknown;
}
const logStream = new PassThrough();
let logText = '';
logStream.on('data', (chunk: Buffer) => (logText += chunk.toString()));
const logLines = () => logText.split('\n').filter(Boolean).map((l) => JSON.parse(l) as LogLine);

let server: RunningServer;
let serverClosed = false;
let databaseUrl: string;
let api: ApiClient;
let fake: FakeLlm;
let tenant: SignedUpTenant;

const listen = async (s: http.Server) => {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
};
const closeServer = async (s: http.Server | undefined) => {
  s?.closeAllConnections();
  await new Promise((resolve) => (s ? s.close(resolve) : resolve(undefined)));
};

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** A caller's trace context: its trace id, its span id, and the header carrying both. */
const callerContext = () => {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, headers: { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'caller=yes' } };
};
const key = () => bearer(tenant.apiKey);
const lastMessage = (req: FakeRequest) => (req.body.messages as { role: string }[]).at(-1)!;

const inTrace = (traceId: string) => spans.filter((s) => s.traceId === traceId);
/** The one span of `traceId` that `match` picks, once exported. */
const spanOf = (traceId: string, what: string, match: (s: ReceivedSpan) => boolean) =>
  waitFor(() => {
    const found = inTrace(traceId).filter(match);
    if (found.length > 1) throw new Error(`more than one ${what} in the trace: ${found.map((s) => s.name).join(', ')}`);
    return found[0];
  }, what);

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      exportContentTypes.push(String(req.headers['content-type']));
      const request = JSON.parse(body) as ExportRequest;
      for (const rs of request.resourceSpans) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, kind: s.kind,
              attributes: attributesOf(s.attributes), status: s.status?.code ?? 0, events: (s.events ?? []).map((e) => e.name), resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  receiverUrl = await listen(receiver);

  hook = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hookCalls.push({ path: req.url ?? '', headers: req.headers });
      // /slow answers late, so a second queued run waits for the first.
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), req.url?.startsWith('/slow') ? 400 : 0);
    });
  });
  hookUrl = await listen(hook);

  fake = await startFakeLlm();
  const config = loadConfig({
    NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ADMIN_SECRET, JWT_SECRET, DB_POOL_MAX: '5',
    // One run at a time: a run queued behind another starts when that one ends (the queued-run test).
    WORKER_CONCURRENCY: '1',
    OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
  });
  databaseUrl = await createTestDatabase();
  server = await startServer({ config, databaseUrl, log: createLogger(config, { destination: logStream }) });
  api = createClient(server.url);
  tenant = await signupTenant(api, { companyName: 'Traced' });
});
afterAll(async () => {
  if (!serverClosed) await server?.close();
  await fake?.close();
  await closeServer(hook);
  await closeServer(receiver);
});
afterEach(() => fake.reset());

async function createAgent(body: Record<string, unknown>) {
  const res = await api.post('/v1/agents', { name: `Agent ${body.agent_key}`, goal: 'Help', ...body }, { headers: key() });
  expect(res.status, res.text).toBe(201);
  expect((await api.post(`/v1/agents/${body.agent_key}/deploy`, undefined, { headers: key() })).status).toBe(200);
}

describe('a request that runs an agent whose tool runs a workflow', () => {
  let caller: ReturnType<typeof callerContext>;
  let workflowKey: string;
  let agentRunId: string;

  beforeAll(async () => {
    const workflow = await createWorkflow(api, tenant.apiKey, 'Traced tool', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${hookUrl}/hook`, body: { n: '{{trigger.n}}' } } },
      { id: 'say', step_type: 'action', action_id: 'log', config: { message: 'traced step {{trigger.n}}' } },
    ]);
    workflowKey = workflow.workflow_key;
    await createAgent({ agent_key: 'tracer', workflow_ids: [workflow.id] });
    fake.script((req) =>
      lastMessage(req).role === 'user' ? { tool_calls: [{ id: 'c1', name: `workflow__${workflowKey}`, arguments: { n: 7 } }], model: 'gpt-4o-mini-2024-07-18' } : 'done',
    );
    caller = callerContext();
    const res = await api.post('/v1/agents/tracer/run', { input: { message: 'go' } }, { headers: { ...key(), ...caller.headers, 'x-request-id': 'traced-agent-run' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status).toBe('completed');
    agentRunId = res.body.data.run_id;
  });

  it('the request span continues the caller\'s trace: its trace id, the caller\'s span as parent, named by the route template', async () => {
    const request = await spanOf(caller.traceId, 'the request span', (s) => s.kind === SPAN_KIND.SERVER);
    expect(request.parentSpanId).toBe(caller.spanId);
    expect(request.name).toBe('POST /v1/agents/:agentKey/run');
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/agents/:agentKey/run',
      'http.response.status_code': 200,
      'url.path': '/v1/agents/tracer/run',
    });
    expect(request.resource).toMatchObject({ 'service.name': 'liya', 'deployment.environment.name': 'test' });
    // OTLP/HTTP as JSON, the exporter's encoding.
    expect(exportContentTypes[0]).toMatch(/application\/json/);
  });

  it('request -> agent run -> model call and workflow tool -> workflow run -> its steps, in one trace', async () => {
    const request = await spanOf(caller.traceId, 'the request span', (s) => s.kind === SPAN_KIND.SERVER);
    const agentRun = await spanOf(caller.traceId, 'the agent run', (s) => s.name === 'agent run');
    expect(agentRun.parentSpanId).toBe(request.spanId);
    expect(agentRun.attributes).toMatchObject({ 'liya.run.kind': 'agent', 'liya.run.id': agentRunId, 'liya.tenant.id': tenant.tenantId, 'liya.run.name': 'tracer', 'liya.run.outcome': 'completed' });

    // Two model calls (the tool call, then the answer), both children of the run, with the GenAI attributes.
    const chats = await waitFor(() => {
      const found = inTrace(caller.traceId).filter((s) => s.name === 'chat gpt-4o-mini');
      return found.length === 2 && found;
    }, 'both model calls');
    for (const chat of chats) {
      expect(chat.parentSpanId).toBe(agentRun.spanId);
      expect(chat.kind).toBe(SPAN_KIND.CLIENT);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.model']).sort()).toEqual(['gpt-4o-mini', 'gpt-4o-mini-2024-07-18']);

    const tool = await spanOf(caller.traceId, 'the tool call', (s) => s.name === `execute_tool workflow__${workflowKey}`);
    expect(tool.parentSpanId).toBe(agentRun.spanId);
    expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': `workflow__${workflowKey}`, 'liya.tool.kind': 'workflow', 'liya.tool.outcome': 'ok' });

    const workflowRun = await spanOf(caller.traceId, 'the workflow run', (s) => s.name === 'workflow run');
    expect(workflowRun.parentSpanId).toBe(tool.spanId);
    expect(workflowRun.attributes).toMatchObject({ 'liya.run.kind': 'workflow', 'liya.run.name': workflowKey, 'liya.run.outcome': 'completed' });

    const steps = await waitFor(() => {
      const found = inTrace(caller.traceId).filter((s) => s.name.startsWith('workflow step '));
      return found.length === 3 && found;
    }, 'the three steps');
    expect(steps.map((s) => s.attributes['liya.step.id']).sort()).toEqual(['call', 'say', 'start']);
    for (const step of steps) expect(step.parentSpanId).toBe(workflowRun.spanId);
    // Nothing of this request landed in another trace.
    expect(spans.filter((s) => s.attributes['liya.run.id'] === workflowRun.attributes['liya.run.id'] && s.traceId !== caller.traceId)).toEqual([]);
  });

  it('the http_request step\'s receiver gets a traceparent of the same trace, its parent the step\'s span', async () => {
    const call = hookCalls.find((c) => c.path === '/hook');
    expect(call, 'the hook was called').toBeDefined();
    const step = await spanOf(caller.traceId, 'the http_request step', (s) => s.attributes['liya.step.id'] === 'call');
    const traceparent = String(call!.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, parentId] = traceparent.split('-');
    expect(traceId).toBe(caller.traceId);
    expect(parentId).toBe(step.spanId);
    // The caller is not trusted (TRACE_TRUSTED_NETWORKS unset): its tracestate stays here, whatever it carries.
    expect(call!.headers.tracestate).toBeUndefined();
  });

  it('log lines written while serving the run carry the tenant, the run and the trace', async () => {
    const line = await waitFor(() => logLines().find((l) => l.msg === 'workflow log step' && l.workflow === workflowKey), 'the log step line');
    expect(line).toMatchObject({ tenant_id: tenant.tenantId, run_id: line.run, run_kind: 'workflow', trace_id: caller.traceId });
    // The request's own lines carry its trace (they are written inside its span), but no run.
    const requestLines = logLines().filter((l) => l.reqId === 'traced-agent-run');
    expect(requestLines.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
    for (const l of requestLines) {
      expect(l.trace_id).toBe(caller.traceId);
      expect(l.run_id).toBeUndefined();
    }
  });

  it('a later request on a new trace carries neither that run nor that trace', async () => {
    const res = await fetch(`${server.url}/openapi.json`, { headers: { 'x-request-id': 'after-the-run' } });
    await res.arrayBuffer();
    const lines = await waitFor(() => {
      const found = logLines().filter((l) => l.reqId === 'after-the-run');
      return found.length === 2 && found;
    }, 'the later request\'s lines');
    for (const l of lines) {
      expect(l.run_id).toBeUndefined();
      expect(l.tenant_id).toBeUndefined();
      expect(l.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(l.trace_id).not.toBe(caller.traceId);
    }
    // A request without a traceparent starts its own trace: a root span.
    const root = await waitFor(() => spans.find((s) => s.traceId === lines[0].trace_id && s.kind === SPAN_KIND.SERVER), 'the later request\'s span');
    expect(root.parentSpanId).toBeUndefined();
    expect(root.name).toBe('GET /openapi.json');
  });
});

describe('a request whose body arrives after its headers', () => {
  it('is handled inside its span all the same, whatever context node emits the body in', async () => {
    await createAgent({ agent_key: 'slow-body' });
    const caller = callerContext();
    const body = JSON.stringify({ input: { message: 'go' } });
    const url = new URL('/v1/agents/slow-body/run', server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: { ...key(), ...caller.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.flushHeaders();
      setTimeout(() => req.end(body), 150);
    });
    expect(status).toBe(200);
    const request = await spanOf(caller.traceId, 'the request span', (s) => s.kind === SPAN_KIND.SERVER);
    const run = await spanOf(caller.traceId, 'the agent run', (s) => s.name === 'agent run');
    expect(run.parentSpanId).toBe(request.spanId);
  });
});

describe('the traced HTTP server', () => {
  it('keeps the settings fastify gives its own (request and header deadlines, keep-alive)', () => {
    const raw = server.app.server;
    expect(raw.requestTimeout).toBe(120_000);
    expect(raw.headersTimeout).toBe(60_000);
    expect(raw.keepAliveTimeout).toBe(72_000);
  });
});

describe('a caller that says "not sampled"', () => {
  it('does not switch tracing off: its trace id is continued, but whether to sample is the server\'s decision', async () => {
    const workflow = await createWorkflow(api, tenant.apiKey, 'Unsampled caller', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${hookUrl}/unsampled` } },
    ]);
    const caller = callerContext();
    const headers = { traceparent: `00-${caller.traceId}-${caller.spanId}-00`, tracestate: 'caller=yes' };
    const res = await api.post(`/v1/workflows/${workflow.workflow_key}/run`, { input: {} }, { headers: { ...key(), ...headers } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status).toBe('completed');
    const request = await spanOf(caller.traceId, 'the request span', (s) => s.kind === SPAN_KIND.SERVER);
    expect(request.parentSpanId).toBe(caller.spanId);
    const run = await spanOf(caller.traceId, 'the workflow run', (s) => s.name === 'workflow run');
    expect(run.parentSpanId).toBe(request.spanId);
    // The services the run calls are told the trace is sampled: it is, here.
    const step = await spanOf(caller.traceId, 'the http_request step', (s) => s.attributes['liya.step.id'] === 'call');
    const call = hookCalls.find((c) => c.path === '/unsampled');
    expect(call?.headers.traceparent).toBe(`00-${caller.traceId}-${step.spanId}-01`);
    expect(call?.headers.tracestate).toBeUndefined();
  });
});

describe('health probes', () => {
  it('make no spans (one every few seconds would bury the requests that matter)', async () => {
    const probe = callerContext();
    for (const path of ['/health/live', '/health/ready']) expect((await api.get(path, { headers: probe.headers })).status).toBe(200);
    // A request after them is exported; by then the probes' spans would have been too.
    const after = callerContext();
    await api.get('/openapi.json', { headers: after.headers });
    await spanOf(after.traceId, 'the later request span', (s) => s.kind === SPAN_KIND.SERVER);
    expect(inTrace(probe.traceId)).toEqual([]);
  });
});

describe('failures', () => {
  it('a failing model call: its span has the error status and an exception event; the warn line carries the run and the trace', async () => {
    await createAgent({ agent_key: 'flaky' });
    fake.fail(1, 500, { message: 'provider down' });
    const caller = callerContext();
    const res = await api.post('/v1/agents/flaky/run', { input: { message: 'go' } }, { headers: { ...key(), ...caller.headers } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status).toBe('failed');
    const chat = await spanOf(caller.traceId, 'the failed model call', (s) => s.name === 'chat gpt-4o-mini');
    expect(chat.status).toBe(STATUS_ERROR);
    expect(chat.events).toContain('exception');
    // The provider's error as the SDK names it (a 500 from the provider).
    expect(chat.attributes['error.type']).toBe('InternalServerError');
    const run = await spanOf(caller.traceId, 'the agent run', (s) => s.name === 'agent run');
    expect(chat.parentSpanId).toBe(run.spanId);
    const warn = await waitFor(() => logLines().find((l) => l.level === 40 && l.trace_id === caller.traceId && l.provider === 'openai'), 'the provider warn line');
    expect(warn).toMatchObject({ tenant_id: tenant.tenantId, run_id: run.attributes['liya.run.id'], run_kind: 'agent' });
  });

  it('a 404 is a span named by its method alone, without a route', async () => {
    const caller = callerContext();
    const res = await api.get('/v1/no-such-thing/42?secret=x', { headers: caller.headers });
    expect(res.status).toBe(404);
    const request = await spanOf(caller.traceId, 'the 404 span', (s) => s.kind === SPAN_KIND.SERVER);
    expect(request.name).toBe('GET');
    expect(request.attributes['http.route']).toBeUndefined();
    expect(request.attributes).toMatchObject({ 'http.response.status_code': 404, 'url.path': '/v1/no-such-thing/42' });
    // A 4xx is the caller's mistake, not a failed span.
    expect(request.status).not.toBe(STATUS_ERROR);
  });
});

describe('runs a request queues', () => {
  it('an async run waiting behind another joins the trace of the request that queued it', async () => {
    const workflow = await createWorkflow(api, tenant.apiKey, 'Queued', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${hookUrl}/slow?n={{trigger.n}}` } },
    ]);
    const first = callerContext();
    const second = callerContext();
    const start = (caller: ReturnType<typeof callerContext>, n: number) =>
      api.post(`/v1/workflows/${workflow.workflow_key}/run`, { input: { n }, mode: 'async' }, { headers: { ...key(), ...caller.headers } });
    // One run at a time in this process: the second waits until the first has ended.
    const [a, b] = [await start(first, 1), await start(second, 2)];
    expect([a.status, b.status]).toEqual([202, 202]);
    for (const [caller, res] of [[first, a], [second, b]] as const) {
      const run = await spanOf(caller.traceId, 'the queued run', (s) => s.name === 'workflow run');
      expect(run.attributes['liya.run.id']).toBe(res.body.data.run_id);
      const request = await spanOf(caller.traceId, 'the queuing request', (s) => s.kind === SPAN_KIND.SERVER);
      expect(run.parentSpanId).toBe(request.spanId);
    }
  });
});

describe('an async run\'s callback', () => {
  it('carries the run\'s trace: the receiver\'s traceparent names the delivery\'s span, a child of the run\'s', async () => {
    const workflow = await createWorkflow(api, tenant.apiKey, 'Called back', [MANUAL_TRIGGER, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
    const caller = callerContext();
    const res = await api.post(`/v1/workflows/${workflow.workflow_key}/run`, { input: {}, mode: 'async', callback_url: `${hookUrl}/callback` }, { headers: { ...key(), ...caller.headers } });
    expect(res.status, res.text).toBe(202);
    const runId = res.body.data.run_id as string;
    const call = await waitFor(() => hookCalls.find((c) => c.path === '/callback'), 'the callback');
    expect(call.headers['webhook-id']).toMatch(new RegExp(`^msg_run_${runId}_\\d+$`));
    const traceparent = String(call.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, parentId] = traceparent.split('-');
    expect(traceId).toBe(caller.traceId);
    const run = await spanOf(caller.traceId, 'the workflow run', (s) => s.name === 'workflow run' && s.attributes['liya.run.id'] === runId);
    const delivery = await spanOf(caller.traceId, 'the callback delivery', (s) => s.name === 'workflow callback');
    expect(parentId).toBe(delivery.spanId);
    expect(delivery.parentSpanId).toBe(run.spanId);
    expect(delivery.attributes).toMatchObject({ 'liya.run.id': runId, 'liya.tenant.id': tenant.tenantId, 'http.response.status_code': 200 });
    // An untrusted caller's tracestate reaches no receiver, a callback's neither.
    expect(call.headers.tracestate).toBeUndefined();
  });
});

describe('closing the server', () => {
  it('sends the spans still queued: with a batch delay of ten minutes, only the close sends them', async () => {
    await server.close();
    serverClosed = true;
    const config = loadConfig({
      NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ADMIN_SECRET, JWT_SECRET, WORKER: '0', DB_POOL_MAX: '3',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    const other = await startServer({ config, databaseUrl });
    const caller = callerContext();
    await fetch(`${other.url}/openapi.json`, { headers: caller.headers }).then((r) => r.arrayBuffer());
    // Sleep: proves spans are NOT sent before the close; no export is due in ten minutes, so no later event can be waited for.
    await new Promise((r) => setTimeout(r, 300));
    expect(inTrace(caller.traceId)).toEqual([]);
    await other.close();
    expect(inTrace(caller.traceId).map((s) => s.name)).toEqual(['GET /openapi.json']);
  });
});

describe('a caller on a trusted network (TRACE_TRUSTED_NETWORKS)', () => {
  let trusted: RunningServer;
  let trustedApi: ApiClient;
  let owner: SignedUpTenant;
  let workflowKey: string;

  beforeAll(async () => {
    const config = loadConfig({
      NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ADMIN_SECRET, JWT_SECRET, WORKER: '0', DB_POOL_MAX: '3', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '100', TRACE_TRUSTED_NETWORKS: '10.0.0.0/8, 127.0.0.1',
    });
    trusted = await startServer({ config, databaseUrl });
    trustedApi = createClient(trusted.url);
    owner = await signupTenant(trustedApi, { companyName: 'Trusting' });
    const workflow = await createWorkflow(trustedApi, owner.apiKey, 'Trusted caller', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${hookUrl}/trusted?n={{trigger.n}}` } },
    ]);
    workflowKey = workflow.workflow_key;
  });
  afterAll(() => trusted?.close());

  const runWith = (n: number, headers: Record<string, string>) =>
    trustedApi.post(`/v1/workflows/${workflowKey}/run`, { input: { n } }, { headers: { ...bearer(owner.apiKey), ...headers } });

  it('has its tracestate passed on to the services the run calls', async () => {
    const caller = callerContext();
    const res = await runWith(1, caller.headers);
    expect(res.body.data?.status, res.text).toBe('completed');
    const step = await spanOf(caller.traceId, 'the http_request step', (s) => s.attributes['liya.step.id'] === 'call');
    const call = hookCalls.find((c) => c.path === '/trusted?n=1');
    expect(call?.headers.traceparent).toBe(`00-${caller.traceId}-${step.spanId}-01`);
    expect(call?.headers.tracestate).toBe('caller=yes');
  });

  it('is obeyed when it says "not sampled": no span of its trace is kept, and the services called are told so', async () => {
    const caller = callerContext();
    const res = await runWith(2, { ...caller.headers, traceparent: `00-${caller.traceId}-${caller.spanId}-00` });
    expect(res.body.data?.status, res.text).toBe('completed');
    const call = hookCalls.find((c) => c.path === '/trusted?n=2');
    expect(call?.headers.traceparent).toMatch(new RegExp(`^00-${caller.traceId}-[0-9a-f]{16}-00$`));
    // A request after it is exported; by then the run's spans would have been too.
    const after = callerContext();
    await trustedApi.get('/openapi.json', { headers: after.headers });
    await spanOf(after.traceId, 'the later request span', (s) => s.kind === SPAN_KIND.SERVER);
    expect(inTrace(caller.traceId)).toEqual([]);
  });
});

describe('a ratio sampler (OTEL_TRACES_SAMPLER=parentbased_traceidratio)', () => {
  it('samples an untrusted caller\'s request as a trace of its own: at ratio 0, the caller\'s "sampled" keeps nothing', async () => {
    const config = loadConfig({
      NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ADMIN_SECRET, JWT_SECRET, WORKER: '0', DB_POOL_MAX: '3',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0',
    });
    const ratioServer = await startServer({ config, databaseUrl });
    const caller = callerContext();
    try {
      const res = await fetch(`${ratioServer.url}/openapi.json`, { headers: caller.headers });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    } finally {
      // Closing sends every span still queued: after it, whatever the request made has arrived.
      await ratioServer.close();
    }
    expect(inTrace(caller.traceId)).toEqual([]);
  });
});
