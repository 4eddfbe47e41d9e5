// A fake model provider speaking the OpenAI HTTP protocol on 127.0.0.1, so tests and benchmarks
// run the real openai SDK code path: chat completions (JSON, streaming, tool calls), embeddings, models.
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, any>;

export interface FakeRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (null when there was none). */
  body: any;
}

export interface FakeToolCall {
  id?: string;
  name: string;
  /** An object is sent JSON-encoded, as providers do. */
  arguments: string | Record<string, unknown>;
}

/**
 * What a scripted chat answer may say. A string is the answer's text; `content` given as an
 * object or array is sent JSON-encoded. `status` (>= 400) answers with that error instead.
 */
export type FakeAnswer =
  | string
  | {
      content?: string | Json | null;
      tool_calls?: FakeToolCall[];
      model?: string;
      finish_reason?: string;
      /** null: the response carries no usage (some servers send none). */
      usage?: { prompt_tokens: number; completion_tokens: number } | null;
      status?: number;
      error?: { message: string; type?: string; code?: string };
      /**
       * Streamed answers only: the connection is destroyed after this many characters of the
       * content were sent (0: after the first, empty, chunk), as a provider cutting a stream does.
       */
      cut_after?: number;
      /** `retry-after` sent with a scripted `status` (default '0'). */
      retry_after?: string | null;
    };

/** Returns the answer for one chat request, or undefined for the default behaviour. */
export type FakeHandler = (request: FakeRequest) => FakeAnswer | undefined | Promise<FakeAnswer | undefined>;

export type FakeFault = number | 'hang' | 'reset' | 'truncate';

export interface FakeFailureOptions {
  /** `retry-after` header sent with the error (default '0', so SDK retries don't wait; null: none). */
  retryAfter?: string | null;
  message?: string;
}

export interface FakeLlm {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  /** Every request received, in order (including failed ones). */
  requests: FakeRequest[];
  /** Chat requests only. */
  chatRequests(): FakeRequest[];
  /**
   * A handler for every chat request, or a queue of answers used one per chat request (then the
   * default behaviour). Replaces the previous script; `script(null)` clears it.
   */
  script(script: FakeHandler | FakeAnswer[] | null): void;
  /** Delay before every answer, in ms. */
  setLatency(ms: number): void;
  /** The next chat request is answered only once `until` settles (a condition, not a clock). */
  holdNext(until: Promise<unknown>): void;
  /**
   * The next `count` requests answer `status` (e.g. 429, 500), never answer ('hang'), close the
   * connection without answering ('reset'), or send the headers and half of a JSON body and then
   * close it ('truncate').
   */
  fail(count: number, status: FakeFault, options?: FakeFailureOptions): void;
  /** Forgets the request log, the script, the latency and pending failures. */
  reset(): void;
  close(): Promise<void>;
}

export interface FakeLlmOptions {
  /** Embedding size when a request sets no `dimensions` (default 64). */
  embeddingDimension?: number;
  /** Ids listed by GET /v1/models (default ['gpt-4o-mini', 'fake-model', 'fake-embedding']). */
  models?: string[];
}

/** Token counts as the fake reports them: about four characters a token. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4);

// ---------------------------------------------------------------- sample answers from a schema

const FORMAT_SAMPLES: Record<string, string> = {
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '12:00:00Z',
  email: 'user@example.com',
  'idn-email': 'user@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  'uri-reference': 'https://example.com/',
  iri: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  'idn-hostname': 'example.com',
  ipv4: '127.0.0.1',
  ipv6: '::1',
  duration: 'P1D',
  regex: '.*',
};

function mergeAllOf(schema: Schema): Schema {
  if (!Array.isArray(schema.allOf)) return schema;
  const { allOf, ...rest } = schema;
  return allOf.reduce<Schema>(
    (acc, part: Schema) => {
      const branch = mergeAllOf(part);
      return {
        ...acc,
        ...branch,
        properties: { ...acc.properties, ...branch.properties },
        required: [...(acc.required ?? []), ...(branch.required ?? [])],
      };
    },
    { ...rest, properties: { ...rest.properties }, required: [...(rest.required ?? [])] },
  );
}

function sampleType(schema: Schema): string | undefined {
  const type = schema.type;
  if (Array.isArray(type)) return type.find((t) => t !== 'null') ?? 'null';
  if (type) return type;
  if (schema.properties || schema.required) return 'object';
  if (schema.items || schema.prefixItems) return 'array';
  return undefined;
}

function sampleNumber(schema: Schema, integer: boolean, variant: number): number {
  const step = integer ? 1 : 0.5;
  let low: number | undefined = schema.minimum ?? (typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + step : undefined);
  let high: number | undefined = schema.maximum ?? (typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - step : undefined);
  if (integer) {
    low = low === undefined ? undefined : Math.ceil(low);
    high = high === undefined ? undefined : Math.floor(high);
  }
  let value = (low ?? Math.min(1, high ?? 1)) + variant;
  if (high !== undefined && value > high) value = high;
  return value;
}

// Tried in order when a schema has a `pattern` and no known format: the first that matches is used.
const PATTERN_SAMPLES = ['sample', 'sample-1', 'user@example.com', 'abc', 'a', 'x1', 'A1', '1', '#aabbcc', 'https://example.com/', '2024-01-01', 'en'];

function patternSample(pattern: string, variant: number): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
  const found = PATTERN_SAMPLES.find((candidate) => re.test(candidate));
  if (found && variant && re.test(`${found}${variant + 1}`)) return `${found}${variant + 1}`;
  return found;
}

function sampleString(schema: Schema, variant: number): string {
  const format = typeof schema.format === 'string' ? FORMAT_SAMPLES[schema.format] : undefined;
  const patterned = !format && typeof schema.pattern === 'string' ? patternSample(schema.pattern, variant) : undefined;
  let value = format ?? patterned ?? 'sample';
  if (variant && !schema.format && !patterned) value = `${value} ${variant + 1}`;
  const min = schema.minLength ?? 0;
  if (value.length < min) value = value.padEnd(min, 'x');
  if (schema.maxLength !== undefined && value.length > schema.maxLength) value = value.slice(0, schema.maxLength);
  return value;
}

/**
 * A deterministic value satisfying common JSON Schemas: objects with every property (required
 * first), enums and consts, string formats and lengths, number bounds, arrays of minItems (at least
 * one) items, nullable types and the first branch of oneOf/anyOf. `variant` makes array items distinct.
 */
export function sampleFromSchema(input: unknown, variant = 0): Json {
  if (input === true || input === undefined || input === null) return 'sample';
  if (typeof input !== 'object') return null;
  const schema = mergeAllOf(input as Schema);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[variant % schema.enum.length];
  const branch = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(branch) && branch.length) {
    const { oneOf: _o, anyOf: _a, ...rest } = schema;
    return sampleFromSchema({ ...rest, ...branch[0] }, variant);
  }
  switch (sampleType(schema)) {
    case 'object': {
      const properties: Record<string, unknown> = schema.properties ?? {};
      const required: string[] = schema.required ?? [];
      const keys = [...new Set([...required, ...Object.keys(properties)])];
      return Object.fromEntries(keys.map((key) => [key, sampleFromSchema(properties[key] ?? {}, variant)]));
    }
    case 'array': {
      const max = schema.maxItems ?? Infinity;
      const count = Math.min(Math.max(1, schema.minItems ?? 0), max);
      const tuple: unknown[] | undefined = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : undefined;
      return Array.from({ length: tuple ? Math.max(count, tuple.length) : count }, (_, i) =>
        sampleFromSchema(tuple?.[i] ?? (Array.isArray(schema.items) ? schema.additionalItems : schema.items) ?? {}, variant + i),
      );
    }
    case 'string':
      return sampleString(schema, variant);
    case 'integer':
      return sampleNumber(schema, true, variant);
    case 'number':
      return sampleNumber(schema, false, variant);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return 'sample';
  }
}

// ---------------------------------------------------------------- embeddings

/**
 * A deterministic unit vector: each word is hashed to a signed dimension (feature hashing), so
 * texts sharing words point in similar directions; a text without words hashes as a whole.
 */
export function fakeEmbedding(text: string, dimension = 64): number[] {
  const vector = new Array<number>(dimension).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [text];
  for (const word of words) {
    const hash = createHash('sha256').update(word).digest();
    vector[hash.readUInt32BE(0) % dimension] += hash[4] & 1 ? 1 : -1;
    // A second, weaker feature keeps different words from cancelling out exactly.
    vector[hash.readUInt32BE(5) % dimension] += (hash[9] & 1 ? 1 : -1) * 0.5;
  }
  let norm = Math.hypot(...vector);
  if (norm === 0) {
    const hash = createHash('sha256').update(text).digest();
    vector[hash.readUInt32BE(0) % dimension] = 1;
    norm = 1;
  }
  return vector.map((v) => v / norm);
}

const toBase64Floats = (vector: number[]) => Buffer.from(new Float32Array(vector).buffer).toString('base64');

// ---------------------------------------------------------------- the server

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}

interface ChatAnswer {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  model: string;
  finishReason: string;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
}

function defaultAnswerText(body: any): string {
  const schema = body?.response_format?.json_schema?.schema;
  if (schema) return JSON.stringify(sampleFromSchema(schema));
  const lastUser = [...(body?.messages ?? [])].reverse().find((m: any) => m?.role === 'user');
  const text = `echo: ${messageText(lastUser?.content)}`;
  return body?.response_format?.type === 'json_object' ? JSON.stringify({ echo: text }) : text;
}

/** Every message of a chat request's prompt, as one text. */
const promptTextOf = (body: any): string => (body?.messages ?? []).map((m: any) => messageText(m?.content)).join('\n');

/** A chat request's prompt, as one text (for scripts that answer by what the prompt says). */
export const promptOf = (request: FakeRequest): string => promptTextOf(request.body);

/** The name of the JSON schema a chat request asks its answer to follow (`eval_judge`, an intent's), if any. */
export const schemaNameOf = (request: FakeRequest): string | undefined => request.body?.response_format?.json_schema?.name;

function buildAnswer(body: any, scripted: Exclude<FakeAnswer, string> | undefined): ChatAnswer {
  const promptText = promptTextOf(body);
  const toolCalls = (scripted?.tool_calls ?? []).map((call, i) => ({
    id: call.id ?? `call_${i + 1}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  let content: string | null;
  if (scripted && 'content' in scripted) content = scripted.content === null || typeof scripted.content === 'string' ? (scripted.content ?? null) : JSON.stringify(scripted.content);
  else content = toolCalls.length ? null : defaultAnswerText(body);
  // Like real providers, a text answer stops at max_tokens (finish_reason "length"). JSON answers
  // are left whole: a cut JSON answer is a test of its own (scripted).
  const limit = typeof body?.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body?.max_tokens === 'number' ? body.max_tokens : null;
  let cut = false;
  const toolChars = toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  if (limit !== null && content && !body?.response_format && Math.ceil((content.length + toolChars) / 4) > limit) {
    content = content.slice(0, Math.max(0, limit * 4 - toolChars));
    cut = true;
  }
  const answerChars = (content ?? '').length + toolChars;
  return {
    content,
    toolCalls,
    model: scripted?.model ?? body?.model ?? 'fake-model',
    finishReason: scripted?.finish_reason ?? (cut ? 'length' : toolCalls.length ? 'tool_calls' : 'stop'),
    usage:
      scripted?.usage !== undefined
        ? scripted.usage
        : { prompt_tokens: estimateTokens(promptText), completion_tokens: Math.max(1, Math.min(Math.ceil(answerChars / 4), limit ?? Number.MAX_SAFE_INTEGER)) },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const dimension = options.embeddingDimension ?? 64;
  const models = options.models ?? ['gpt-4o-mini', 'fake-model', 'fake-embedding'];
  const requests: FakeRequest[] = [];
  let handler: FakeHandler | null = null;
  let queue: FakeAnswer[] = [];
  let latencyMs = 0;
  let held: Promise<unknown> | null = null;
  let failures: { status: FakeFault; options: FakeFailureOptions }[] = [];
  let sequence = 0;

  const sendJson = (res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_fake_${++sequence}`, ...headers });
    res.end(JSON.stringify(payload));
  };
  const sendError = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}, extra: { type?: string; code?: string } = {}) =>
    sendJson(res, status, { error: { message, type: extra.type ?? (status === 429 ? 'rate_limit_exceeded' : 'server_error'), code: extra.code ?? null, param: null } }, headers);

  async function nextScripted(request: FakeRequest): Promise<FakeAnswer | undefined> {
    if (queue.length) return queue.shift();
    return handler ? await handler(request) : undefined;
  }

  async function handleChat(request: FakeRequest, res: ServerResponse) {
    if (held) {
      const until = held;
      held = null;
      await until.catch(() => undefined);
    }
    const scriptedRaw = await nextScripted(request);
    const scripted = typeof scriptedRaw === 'string' ? { content: scriptedRaw } : scriptedRaw;
    if (scripted?.status && scripted.status >= 400) {
      const retryAfter = scripted.retry_after === undefined ? '0' : scripted.retry_after;
      return sendError(res, scripted.status, scripted.error?.message ?? `scripted ${scripted.status}`, retryAfter === null ? {} : { 'retry-after': retryAfter }, scripted.error);
    }
    const body = request.body;
    const answer = buildAnswer(body, scripted);
    const id = `chatcmpl-fake-${++sequence}`;
    const created = Math.floor(Date.now() / 1000);
    const toolCalls = answer.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    const usage = answer.usage && { ...answer.usage, total_tokens: answer.usage.prompt_tokens + answer.usage.completion_tokens };
    if (!body?.stream) {
      const message = { role: 'assistant', content: answer.content, refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: answer.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: answer.finishReason }],
        ...(usage ? { usage } : {}),
      });
    }
    const includeUsage = !!body?.stream_options?.include_usage;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: answer.model, choices, ...(includeUsage ? { usage: null } : {}), ...extra })}\n\n`);
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    // Several small deltas, as real providers send them, so clients must join the pieces.
    const text = answer.content ?? '';
    const cutAfter = scripted?.cut_after;
    // Destroyed on the next turn: the response corks the socket until then, and destroying it now
    // would drop the chunks written so far (the client would see no token at all).
    const cut = () => void setImmediate(() => res.destroy());
    if (cutAfter === 0) return cut();
    for (let i = 0; i < text.length; i += 8) {
      chunk([{ index: 0, delta: { content: text.slice(i, i + 8) }, finish_reason: null }]);
      if (cutAfter !== undefined && i + 8 >= cutAfter) return cut();
    }
    answer.toolCalls.forEach((call, index) => {
      chunk([{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, finish_reason: null }]);
      for (let i = 0; i < call.arguments.length; i += 8) {
        chunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: call.arguments.slice(i, i + 8) } }] }, finish_reason: null }]);
      }
    });
    chunk([{ index: 0, delta: {}, finish_reason: answer.finishReason }]);
    if (includeUsage && usage) chunk([], { usage });
    res.end('data: [DONE]\n\n');
  }

  function handleEmbeddings(request: FakeRequest, res: ServerResponse) {
    const body = request.body ?? {};
    const raw = body.input;
    const inputs: unknown[] = Array.isArray(raw) && (raw.length === 0 || typeof raw[0] !== 'number') ? raw : [raw];
    if (!inputs.length || inputs.some((i) => i === undefined || i === null)) return sendError(res, 400, "'input' is required", {}, { type: 'invalid_request_error' });
    const size = typeof body.dimensions === 'number' ? body.dimensions : dimension;
    const texts = inputs.map((i) => (typeof i === 'string' ? i : JSON.stringify(i)));
    const data = texts.map((text, index) => {
      const vector = fakeEmbedding(text, size);
      return { object: 'embedding', index, embedding: body.encoding_format === 'base64' ? toBase64Floats(vector) : vector };
    });
    const tokens = texts.reduce((n, t) => n + estimateTokens(t), 0);
    sendJson(res, 200, { object: 'list', data, model: body.model ?? 'fake-embedding', usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }

  async function route(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: any = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      return sendError(res, 400, 'invalid JSON body', {}, { type: 'invalid_request_error' });
    }
    const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '');
    const request: FakeRequest = { method: req.method ?? 'GET', path, headers: req.headers, body };
    requests.push(request);

    const failure = failures.shift();
    if (failure?.status === 'hang') return; // never answered; close() drops the connection
    if (failure?.status === 'reset') return void res.destroy();
    if (failure?.status === 'truncate') {
      // A whole answer's headers and length, half of its JSON, then the connection closes.
      const whole = JSON.stringify({ id: 'chatcmpl-cut', object: 'chat.completion', created: 0, model: 'fake-model', choices: [{ index: 0, message: { role: 'assistant', content: 'an answer that never arrives whole' }, finish_reason: 'stop' }] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(whole)) });
      res.write(whole.slice(0, Math.floor(whole.length / 2)));
      return void setImmediate(() => res.destroy());
    }
    if (latencyMs) await sleep(latencyMs);
    if (failure) {
      const retryAfter = failure.options.retryAfter === undefined ? '0' : failure.options.retryAfter;
      return sendError(res, failure.status, failure.options.message ?? `injected failure ${failure.status}`, retryAfter === null ? {} : { 'retry-after': retryAfter });
    }

    if (req.method === 'POST' && path === '/v1/chat/completions') return handleChat(request, res);
    if (req.method === 'POST' && path === '/v1/embeddings') return handleEmbeddings(request, res);
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake' })) });
    }
    sendError(res, 404, `no route ${req.method} ${path}`, {}, { type: 'invalid_request_error' });
  }

  const server = createServer((req, res) => {
    route(req, res).catch((err) => {
      if (!res.headersSent) sendError(res, 500, `fake server error: ${(err as Error).message}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    chatRequests: () => requests.filter((r) => r.path === '/v1/chat/completions'),
    script(script) {
      handler = typeof script === 'function' ? script : null;
      queue = Array.isArray(script) ? [...script] : [];
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    holdNext(until) {
      held = until;
    },
    fail(count, status, failureOptions = {}) {
      for (let i = 0; i < count; i++) failures.push({ status, options: failureOptions });
    },
    reset() {
      requests.length = 0;
      handler = null;
      queue = [];
      latencyMs = 0;
      held = null;
      failures = [];
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
