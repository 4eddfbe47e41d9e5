// Every response the tests see, checked against the OpenAPI document as a generated client would
// read it: the operation (method and path template), a documented status (or the operation's
// `default`), the JSON body against that response's schema, each Server-Sent Event against the
// stream's event schema, the headers it requires and the Retry-After it must declare when sent.
// Responses are checked after each test (openapi-check-setup.ts fails the test that saw one that
// does not match). Each mismatch is also appended to a file per process in the folder
// global-setup.ts made (LIYA_OPENAPI_CHECK_DIR, with the document in it), which fails the run when
// any was written. Without that folder (a bench, LIYA_OPENAPI_CHECK=0) nothing is checked.
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const OPENAPI_CHECK_DIR_ENV = 'LIYA_OPENAPI_CHECK_DIR';

export interface ObservedResponse {
  method: string;
  /** The request's path and query, as sent. */
  url: string;
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined. */
  body: unknown;
}

export interface OpenApiMismatch {
  method: string;
  path: string;
  status: number;
  problem: string;
  errors?: unknown[];
  code?: unknown;
  /** Where in the tests the request was made. */
  at?: string;
}

type Node = Record<string, any>;

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  literals: number;
  operation: Node;
}

interface Checker {
  doc: Node;
  routes: Route[];
  validators: Map<string, ValidateFunction>;
  ajv: Ajv2020;
  seen: Set<string>;
  dir: string;
}

let checker: Checker | null | undefined;
/** Mismatches not yet reported to a test (openapi-check-setup.ts fails the test that saw them). */
const unreported: OpenApiMismatch[] = [];
/**
 * Responses waiting to be checked, each with the stack of its request (formatted only for a
 * mismatch). Checks run after the test (flushOpenApiChecks), never inside it: the server under test
 * usually shares this process, and compiling a validator must not stall it while a test times it.
 */
const queue: { res: ObservedResponse; request: Error }[] = [];

export const describeMismatch = (m: OpenApiMismatch) =>
  `${m.method} ${m.path} ${m.status}${m.code ? ` ${m.code}` : ''}: ${m.problem}${m.errors ? ` ${JSON.stringify(m.errors)}` : ''}${m.at ? ` (${m.at})` : ''}`;

/**
 * What the checks read of the document: each operation's responses (headers, media types and their
 * schemas) and the components; descriptions, parameters and request bodies are left out, so each
 * process parses and indexes a fraction of it.
 */
export function slimOpenApiDocument(doc: Node): Node {
  const paths = Object.fromEntries(
    Object.entries(doc.paths as Node).map(([template, item]) => [
      template,
      Object.fromEntries(
        Object.entries(item as Node).map(([method, operation]) => [
          method,
          {
            responses: Object.fromEntries(
              Object.entries((operation as Node).responses as Node).map(([status, response]) => [
                status,
                {
                  headers: response.headers,
                  content: Object.fromEntries(
                    Object.entries((response.content ?? {}) as Node).map(([type, media]) => [type, { schema: media.schema, 'x-stream-event': media['x-stream-event'] }]),
                  ),
                },
              ]),
            ),
          },
        ]),
      ),
    ]),
  );
  return { paths, components: { schemas: doc.components.schemas, headers: doc.components.headers } };
}

const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

function loadChecker(): Checker | null {
  const dir = process.env[OPENAPI_CHECK_DIR_ENV];
  if (!dir) return null;
  const doc = JSON.parse(readFileSync(path.join(dir, 'openapi.json'), 'utf8')) as Node;
  // The document's schemas carry OpenAPI keywords ajv does not know (example, x-...): lenient.
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addFormat('binary', true);
  ajv.addSchema(doc, 'openapi.json');
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(doc.paths as Node)) {
    for (const [method, operation] of Object.entries(item as Node)) {
      const segments = template.split('/');
      const source = segments.map((s) => (s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
      routes.push({ method: method.toUpperCase(), template, pattern: new RegExp(`^${source}/?$`), literals: segments.filter((s) => !s.startsWith('{')).length, operation: operation as Node });
    }
  }
  // The router prefers literal segments over parameters: so does the lookup.
  routes.sort((a, b) => b.literals - a.literals);
  return { doc, routes, validators: new Map(), ajv, seen: new Set(), dir };
}

/** The validator of the schema at `pointer` in the document, compiled once per process. */
function validatorAt(c: Checker, pointer: string): ValidateFunction {
  let validate = c.validators.get(pointer);
  if (!validate) {
    validate = c.ajv.compile({ $ref: `openapi.json#${pointer}` });
    c.validators.set(pointer, validate);
  }
  return validate;
}

function resolvePointer(doc: Node, pointer: string): Node | undefined {
  return pointer.split('/').slice(1).reduce<Node | undefined>((node, segment) => node?.[segment.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

/** Where in a test file the request was made (the first stack frame outside test/support). */
function callSite(request: Error): string | undefined {
  const frames = (request.stack ?? '').split('\n');
  const frame = frames.find((line) => /[\\/]test[\\/]/.test(line) && !/[\\/]test[\\/]support[\\/]/.test(line));
  return frame?.trim().replace(/^at\s+/, '').replace(/^.*\((.*)\)$/, '$1');
}

/** The events of a Server-Sent Events body, as `{event, data}` (data parsed as JSON; undefined when it is not). */
function parseEvents(text: string): { event: string; data: unknown }[] {
  const events = [];
  for (const frame of text.split(/\n\n/)) {
    let event = 'message';
    const data: string[] = [];
    for (const line of frame.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (!data.length) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.join('\n'));
    } catch {
      parsed = undefined;
    }
    events.push({ event, data: parsed });
  }
  return events;
}

type Verdict = { ok: true } | { ok: false; problem: string; errors?: unknown[] };

/** Checks `res` against one documented response (`statusKey` is its key: "200", "default"). */
function checkAgainst(c: Checker, route: Route, statusKey: string, res: ObservedResponse): Verdict {
  const response = route.operation.responses[statusKey] as Node;
  const mediaType = (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  const content = (response.content ?? {}) as Node;
  for (const [name, header] of Object.entries((response.headers ?? {}) as Node)) {
    const declared = header.$ref ? resolvePointer(c.doc, header.$ref.slice(1)) : header;
    if (declared?.required && !res.headers.has(name)) return { ok: false, problem: `required header ${name} missing` };
  }
  if (res.headers.has('retry-after') && !Object.keys(response.headers ?? {}).some((name) => name.toLowerCase() === 'retry-after')) {
    return { ok: false, problem: 'Retry-After sent but not declared' };
  }
  if (!mediaType || (!res.text && !content[mediaType])) return { ok: true };
  if (!content[mediaType]) return { ok: false, problem: `content type ${mediaType} not declared (declared: ${Object.keys(content).join(', ') || 'none'})` };
  const base = `/paths/${escapePointer(route.template)}/${route.method.toLowerCase()}/responses/${escapePointer(statusKey)}/content/${escapePointer(mediaType)}`;
  if (mediaType === 'application/json') {
    if (res.body === undefined) return res.text ? { ok: false, problem: 'body is not JSON' } : { ok: true };
    const validate = validatorAt(c, `${base}/schema`);
    return validate(res.body) ? { ok: true } : { ok: false, problem: 'body does not match the schema', errors: validate.errors?.slice(0, 3) };
  }
  if (mediaType === 'text/event-stream') {
    const eventRef = content[mediaType]['x-stream-event']?.$ref as string | undefined;
    if (!eventRef) return { ok: false, problem: 'stream without an event schema' };
    const validate = validatorAt(c, eventRef.slice(1));
    for (const event of parseEvents(res.text)) {
      if (event.data === undefined) return { ok: false, problem: `event ${event.event}: data is not JSON` };
      if (!validate({ event: event.event, data: event.data })) return { ok: false, problem: `event ${event.event} does not match the schema`, errors: validate.errors?.slice(0, 3) };
    }
  }
  return { ok: true };
}

function record(c: Checker, file: string, line: object): void {
  if (file === 'mismatches') unreported.push(line as OpenApiMismatch);
  appendFileSync(path.join(c.dir, `${file}-${process.pid}.jsonl`), `${JSON.stringify(line)}\n`);
}

/** Queues one response for checking (when the run checks responses at all). */
export function checkOpenApiResponse(res: ObservedResponse): void {
  if (process.env[OPENAPI_CHECK_DIR_ENV]) queue.push({ res, request: new Error('request') });
}

/** Checks the queued responses; answers the mismatches found since the last call. */
export function flushOpenApiChecks(): OpenApiMismatch[] {
  if (!queue.length) return unreported.splice(0);
  const started = performance.now();
  if (checker === undefined) checker = loadChecker();
  const c = checker;
  if (!c) return [];
  const checked = queue.splice(0);
  for (const { res, request } of checked) checkOne(c, res, request);
  record(c, 'timing', { responses: checked.length, ms: performance.now() - started });
  return unreported.splice(0);
}

/** Checks one response; records what does not match. Never throws. */
function checkOne(c: Checker, res: ObservedResponse, request: Error): void {
  const pathname = res.url.split('?')[0];
  const route = c.routes.find((r) => r.method === res.method.toUpperCase() && r.pattern.test(pathname));
  // Not an operation of the document (unknown paths, /metrics, /docs assets): nothing to check.
  if (!route) return;
  try {
    const declared = String(res.status) in route.operation.responses ? String(res.status) : null;
    let verdict: Verdict = declared ? checkAgainst(c, route, declared, res) : { ok: false, problem: 'status not documented' };
    let used = declared;
    if (!verdict.ok && route.operation.responses.default) {
      const fallback = checkAgainst(c, route, 'default', res);
      if (fallback.ok) [verdict, used] = [fallback, 'default'];
    }
    const key = `${route.method} ${route.template} ${used}`;
    if (verdict.ok && !c.seen.has(key)) {
      c.seen.add(key);
      record(c, 'seen', { method: route.method, path: route.template, status: used });
    }
    if (!verdict.ok) {
      const code = (res.body as { error?: { code?: unknown } } | undefined)?.error?.code;
      record(c, 'mismatches', { method: route.method, path: route.template, status: res.status, problem: verdict.problem, errors: verdict.errors, code, at: callSite(request) } satisfies OpenApiMismatch);
    }
  } catch (err) {
    record(c, 'mismatches', { method: route.method, path: route.template, status: res.status, problem: `the check failed: ${(err as Error).message}`, at: callSite(request) } satisfies OpenApiMismatch);
  }
}

export interface OpenApiCheckSummary {
  operations: { seen: number; total: number };
  responses: { seen: number; total: number };
  mismatches: OpenApiMismatch[];
  /** `METHOD path status` of each documented response seen. */
  seen: string[];
  /** Responses checked, and the time the checks took in all processes together. */
  checked: { responses: number; ms: number };
}

const readLines = <T>(dir: string, prefix: string): T[] =>
  readdirSync(dir)
    .filter((name) => name.startsWith(`${prefix}-`))
    .flatMap((name) => readFileSync(path.join(dir, name), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as T));

/** What every process of the run recorded in `dir`: operations and responses seen, and the mismatches. */
export function summarizeOpenApiChecks(dir: string): OpenApiCheckSummary {
  const doc = JSON.parse(readFileSync(path.join(dir, 'openapi.json'), 'utf8')) as Node;
  const operations = Object.values(doc.paths as Node).flatMap((item) => Object.values(item as Node)) as Node[];
  const lines = readLines<{ method: string; path: string; status: string }>(dir, 'seen');
  const seen = [...new Set(lines.map((s) => `${s.method} ${s.path} ${s.status}`))].sort();
  return {
    operations: { seen: new Set(lines.map((s) => `${s.method} ${s.path}`)).size, total: operations.length },
    responses: { seen: seen.length, total: operations.reduce((n, op) => n + Object.keys(op.responses).length, 0) },
    mismatches: readLines<OpenApiMismatch>(dir, 'mismatches'),
    seen,
    checked: readLines<{ responses: number; ms: number }>(dir, 'timing').reduce((sum, t) => ({ responses: sum.responses + t.responses, ms: sum.ms + t.ms }), { responses: 0, ms: 0 }),
  };
}
