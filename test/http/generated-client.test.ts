// The API as a client generator's users meet it: types generated from GET /openapi.json with
// openapi-typescript, a small program that calls one route of each feature through them (typed
// requests, typed answers, the error envelope), type-checked with the project's compiler and then
// run against a live server. A second file reads fields the document does not promise: the
// compiler must refuse exactly those lines, so the types cannot have decayed into `any`.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { generateOpenApiTypes } from '../support/openapi-types.js';
import { ADMIN_SECRET, startTestServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
const projectRoot = path.resolve(import.meta.dirname, '../..');

let t: TestServer;
let tenant: SignedUpTenant;
let folder: string;

// A typed fetch over the generated `paths`: the request's path, query and body are checked against
// the operation, and the answer is a union over its documented statuses (narrowed by `status`).
const CLIENT = `import type { paths } from './api.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type Statuses<O> = O extends { responses: infer R } ? Extract<keyof R, number> : never;
export type Answer<P extends keyof paths, M extends Method> = {
  [S in Statuses<Operation<P, M>>]: { status: S; body: JsonOf<Operation<P, M>['responses'][S]>; requestId: string };
}[Statuses<Operation<P, M>>];

type Present<T> = [T] extends [never] ? false : [T] extends [undefined] ? false : true;
type PathOf<O> = O extends { parameters: { path: infer A } } ? (Present<A> extends true ? { path: A } : {}) : {};
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? (Present<Q> extends true ? { query?: Q } : {}) : {};
type BodyOf<O> = O extends { requestBody: { content: { 'application/json': infer B } } }
  ? { body: B }
  : O extends { requestBody?: { content: { 'application/json': infer B } } }
    ? { body?: B }
    : {};
// One object per operation (never the cross product of every operation's parts).
type RequestOf<O> = O extends unknown ? PathOf<O> & QueryOf<O> & BodyOf<O> & { headers?: Record<string, string> } : never;
export type Request<P extends keyof paths, M extends Method> = RequestOf<Operation<P, M>>;

type RawRequest = { path?: Record<string, string>; query?: Record<string, unknown>; body?: unknown; headers?: Record<string, string> };
// NoInfer: the operation comes from the method and path alone, never from the request's shape.
export type Call = <P extends keyof paths, M extends Method>(method: M, template: P, request: NoInfer<Request<P, M>>) => Promise<Answer<P, M>>;

export function createApi(baseUrl: string): Call {
  const call = async (method: Method, template: string, r: RawRequest) => {
    let url = template.replace(/\\{(\\w+)\\}/g, (_, name: string) => encodeURIComponent(String(r.path?.[name])));
    const query = new URLSearchParams(Object.entries(r.query ?? {}).map(([k, v]) => [k, String(v)]));
    if ([...query].length) url += \`?\${query}\`;
    const headers: Record<string, string> = { ...r.headers };
    if (r.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(baseUrl + url, { method: method.toUpperCase(), headers, body: r.body === undefined ? undefined : JSON.stringify(r.body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, requestId: res.headers.get('x-request-id') ?? '' };
  };
  return call as unknown as Call;
}
`;

const PROGRAM = `import type { components } from './api.ts';
import { createApi } from './client.ts';

const [baseUrl, apiKey, token, adminSecret] = process.argv.slice(2);
const call = createApi(baseUrl);
const key = { authorization: \`Bearer \${apiKey}\` };
const jwt = { authorization: \`Bearer \${token}\` };
const seen: string[] = [];

function expectStatus(name: string, status: number, wanted: number): void {
  if (status !== wanted) throw new Error(\`\${name}: status \${status}, expected \${wanted}\`);
  seen.push(name);
}

// Health
const ready = await call('get', '/health/ready', {});
if (ready.status === 200) {
  const db: true = ready.body.data.db;
  expectStatus('health', ready.status, 200);
  if (db !== true) throw new Error('db not ready');
}

// Intents
const domains = await call('get', '/v1/domains', { headers: key });
if (domains.status === 200) {
  const keys: string[] = domains.body.data.map((d) => d.domain_key);
  expectStatus('intents', domains.status, 200);
  void keys;
}

// Agents: a typed body, a typed answer
const created = await call('post', '/v1/agents', { headers: key, body: { agent_key: 'typed-client', name: 'Typed client', goal: 'Answer questions' } });
if (created.status !== 201) throw new Error(\`agent create: \${created.status}\`);
const agent: components['schemas']['Agent'] = created.body.data.agent;
expectStatus('agents', created.status, 201);
const read = await call('get', '/v1/agents/{agentKey}', { headers: key, path: { agentKey: agent.agent_key } });
if (read.status === 200 && read.body.data.agent.id !== agent.id) throw new Error('another agent');

// Workflows
const workflows = await call('get', '/v1/workflows', { headers: key });
if (workflows.status === 200) {
  const names: string[] = workflows.body.data.map((w) => w.workflow_key);
  expectStatus('workflows', workflows.status, 200);
  void names;
}

// Evaluations
const dataset = await call('post', '/v1/evals/datasets', { headers: key, body: { name: 'typed', cases: [{ input: { message: 'hi' }, expected_output: 'hello' }] } });
if (dataset.status === 201) {
  const count: number = dataset.body.data.dataset.cases_count;
  expectStatus('evals', dataset.status, 201);
  if (count !== 1) throw new Error('cases_count');
}

// Collections and documents
const collections = await call('get', '/v1/collections', { headers: key });
if (collections.status === 200) expectStatus('collections', collections.status, 200);
const documents = await call('get', '/v1/documents', { headers: key, query: { page: 1, pageSize: 5 } });
if (documents.status === 200) {
  const total: number = documents.body.data.pagination.total;
  expectStatus('documents', documents.status, 200);
  void total;
}

// Keys
const apiKeys = await call('get', '/dashboard/api-keys', { headers: jwt });
if (apiKeys.status === 200) {
  const previews: string[] = apiKeys.body.data.keys.map((k) => k.apiKeyPreview);
  expectStatus('keys', apiKeys.status, 200);
  void previews;
}

// Deploys as code
const project = await call('get', '/v1/project', { headers: key });
if (project.status === 200) expectStatus('deploys', project.status, 200);

// Usage
const usage = await call('get', '/dashboard/usage', { headers: jwt });
if (usage.status === 200) {
  const from: string = usage.body.data.from;
  expectStatus('usage', usage.status, 200);
  void from;
}

// Dashboard
const account = await call('get', '/dashboard/account', { headers: jwt });
if (account.status === 200) {
  const role: string = account.body.data.user.role;
  expectStatus('dashboard', account.status, 200);
  void role;
}

// Admin
const stats = await call('get', '/admin/stats', { headers: { 'x-admin-secret': adminSecret } });
if (stats.status === 200) {
  const tenants: number = stats.body.data.tenants;
  expectStatus('admin', stats.status, 200);
  void tenants;
}

// The error envelope: a documented status, its codes, the request id
const missing = await call('get', '/v1/agents/{agentKey}', { headers: key, path: { agentKey: 'no-such-agent' } });
if (missing.status === 404) {
  const code: 'NOT_FOUND' = missing.body.error.code;
  const message: string = missing.body.error.message;
  const envelope: components['schemas']['ErrorEnvelope'] = missing.body;
  expectStatus('error envelope', missing.status, 404);
  if (code !== 'NOT_FOUND' || !message || envelope.success !== false || !missing.requestId) throw new Error('envelope');
} else {
  throw new Error(\`missing agent: \${missing.status}\`);
}
const refused = await call('get', '/v1/agents', { headers: { authorization: 'Bearer svc_wrong' } });
if (refused.status === 401) {
  const code: 'MISSING_API_KEY' | 'INVALID_API_KEY' | 'INVALID_API_KEY_FORMAT' | 'API_KEY_REVOKED' | 'API_KEY_EXPIRED' = refused.body.error.code;
  const issues = refused.body.error.details?.issues ?? [];
  expectStatus('auth error', refused.status, 401);
  void code;
  void issues;
}

// A stream's events, as the component the document declares
type AgentEvent = components['schemas']['AgentRunStreamEvent'];
const event = { event: 'llm.delta', data: { text: 'hi' } } as AgentEvent;
if (event.event === 'llm.delta') void (event.data.text satisfies string);

console.log(JSON.stringify(seen));
`;

// Fields and routes the document does not promise: every line must be refused.
const WRONG = `import { createApi } from './client.ts';

const call = createApi('http://localhost');
const agents = await call('get', '/v1/agents', {});
if (agents.status === 200) void agents.body.data.no_such_field; // WRONG
if (agents.status === 401) void (agents.body.error.code satisfies 'NOT_FOUND'); // WRONG
await call('post', '/v1/agents', { body: { name: 'no key, no goal' } }); // WRONG
await call('get', '/v1/agents/{agentKey}', {}); // WRONG
await call('delete', '/v1/domains', {}); // WRONG
await call('get', '/v1/no-such-route', {}); // WRONG
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'es2023',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    skipLibCheck: true,
    lib: ['es2023', 'dom'],
    types: ['node'],
    typeRoots: [path.join(projectRoot, 'node_modules', '@types')],
  },
  files: ['api.ts', 'client.ts', 'program.ts', 'wrong.ts'],
};

beforeAll(async () => {
  t = await startTestServer();
  tenant = await signupTenant(t.api);
  folder = await mkdtemp(path.join(os.tmpdir(), 'liya-generated-client-'));
  const doc = (await t.api.get('/openapi.json')).body;
  await writeFile(path.join(folder, 'api.ts'), await generateOpenApiTypes(doc));
  await writeFile(path.join(folder, 'client.ts'), CLIENT);
  await writeFile(path.join(folder, 'program.ts'), PROGRAM);
  await writeFile(path.join(folder, 'wrong.ts'), WRONG);
  await writeFile(path.join(folder, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  await writeFile(path.join(folder, 'package.json'), JSON.stringify({ type: 'module' }));
}, 120_000);
afterAll(async () => {
  await t?.close();
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe('a client generated from /openapi.json (openapi-typescript)', () => {
  it('type-checks a program calling every feature, and refuses what the document does not promise', async () => {
    // The project's own compiler (TypeScript 7), as `npx tsc` runs it.
    const tsc = path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', path.join(folder, 'tsconfig.json'), '--pretty', 'false'], { cwd: folder }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, out: err.stdout + err.stderr }),
    );
    const errors = result.out.split('\n').filter((line) => /error TS\d+/.test(line));
    expect(errors.filter((line) => !line.startsWith('wrong.ts')), result.out).toEqual([]);
    const wrongLines = WRONG.split('\n').flatMap((line, i) => (line.endsWith('// WRONG') ? [i + 1] : []));
    const refused = new Set(errors.filter((line) => line.startsWith('wrong.ts')).map((line) => Number(/^wrong\.ts\((\d+),/.exec(line)?.[1])));
    expect([...refused].sort((a, b) => a - b)).toEqual(wrongLines);
  }, 120_000);

  it('runs against the server: each feature answers as its types say', async () => {
    const { stdout } = await run(process.execPath, [path.join(folder, 'program.ts'), t.url, tenant.apiKey, tenant.token, ADMIN_SECRET], { cwd: folder });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual([
      'health', 'intents', 'agents', 'workflows', 'evals', 'collections', 'documents', 'keys', 'deploys', 'usage', 'dashboard', 'admin', 'error envelope', 'auth error',
    ]);
  }, 120_000);
});
