// Walks /openapi.json and sends generated bad input to every documented operation, with valid
// credentials most of the time: junk and real ids in the path, junk query values, bodies sampled
// from the operation's schema and then mutated (a field dropped, retyped, oversized, NUL-laden,
// deeply nested, the whole body replaced, malformed JSON, a wrong content type). Every answer must
// be below 500 and an envelope, and the server must still be ready at the end. Bounded and seeded:
// FUZZ_SEED and FUZZ_RUNS (cases per operation) reproduce or widen a run.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, sampleFromSchema, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 30);
// Raw routes that do not answer JSON envelopes by design.
const NOT_ENVELOPES = new Set(['/openapi.json', '/docs']);

type Schema = Record<string, any>;

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: { name: string; schema: Schema }[];
  body: Schema | null;
  security: 'apiKey' | 'dashboard' | 'admin' | 'none';
}

interface Credentials {
  apiKey: string;
  token: string;
  /** Real values for path parameters, so some requests get past the 404 to validation and services. */
  pool: string[];
}

let t: TestServer;
let llm: FakeLlm;
let operations: Operation[] = [];
let components: Record<string, Schema> = {};

/** A fresh tenant with one of each resource whose id or key can appear in a path. */
async function provision(): Promise<Credentials> {
  const tenant = await signupTenant(t.api);
  const owner = { headers: bearer(tenant.token) };
  const pool = [tenant.tenantId, tenant.userId, 'hiring', 'resume-analysis', 'openai', '1', '2'];
  const collection = await t.api.post('/v1/collections', { slug: 'fuzz', label: 'Fuzz', domain_keys: ['hiring'] }, { headers: bearer(tenant.apiKey) });
  if (collection.status === 201) pool.push(collection.body.data.collection.id);
  if ((await t.api.post('/dashboard/custom-domains', { domain_key: 'fuzz-domain', display_name: 'Fuzz' }, owner)).status === 201) pool.push('fuzz-domain');
  const intent = await t.api.post('/dashboard/custom-domains/fuzz-domain/intents', { intent_key: 'fuzz-intent', display_name: 'Fuzz', prompt_template: 'Say {{input.text}}' }, owner);
  if (intent.status === 201) pool.push('fuzz-intent');
  if ((await t.api.post('/dashboard/prompts', { prompt_key: 'fuzz-prompt', name: 'Fuzz', template: 'Say {{input.text}}' }, owner)).status === 201) pool.push('fuzz-prompt');
  const upload = await t.api.post('/dashboard/documents', { filename: 'fuzz.md', content_base64: Buffer.from('# Fuzz\n\nSome text.').toString('base64') }, owner);
  if (upload.status === 202) pool.push(upload.body.data.document?.id, upload.body.data.job?.id);
  return { apiKey: tenant.apiKey, token: tenant.token, pool: pool.filter((v): v is string => typeof v === 'string') };
}

function resolveRef(schema: Schema | undefined): Schema | undefined {
  if (!schema || typeof schema.$ref !== 'string') return schema;
  return resolveRef(components[schema.$ref.replace('#/components/schemas/', '')]);
}

function readOperations(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const parameters: any[] = op.parameters ?? [];
      const security = JSON.stringify(op.security ?? []);
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: resolveRef(p.schema) ?? {} })),
        body: resolveRef(op.requestBody?.content?.['application/json']?.schema) ?? null,
        security: security.includes('ApiKey') ? 'apiKey' : security.includes('DashboardJwt') ? 'dashboard' : security.includes('AdminSecret') ? 'admin' : 'none',
      });
    }
  }
  return out;
}

// ------------------------------------------------------------------------------- generators

const hugeString = fc.constantFrom('x'.repeat(10_000), 'é'.repeat(70_000), '9'.repeat(400));
const junkString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '../../etc/passwd', '%', '%zz', '${jndi:x}', "' or 1=1 --", '<script>', '\ud83d\ude00', '\ud800', 'null', 'NaN', '-1', '1e309', '0x10'),
  hugeString,
);
const junkNumber = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-1, 0, 1e308, -1e308, 2 ** 53 + 1, 0.5, -0));
const junkLeaf = fc.oneof(junkString, junkNumber, fc.boolean(), fc.constant(null));
const deepObject = fc.nat({ max: 2000 }).map((depth) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
});
const junkValue = fc.oneof(
  { weight: 6, arbitrary: junkLeaf },
  { weight: 2, arbitrary: fc.array(junkLeaf, { maxLength: 5 }) },
  { weight: 2, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), junkLeaf, { maxKeys: 4 }) },
  { weight: 1, arbitrary: deepObject },
  { weight: 1, arbitrary: fc.constant(Array.from({ length: 5000 }, (_, i) => i)) },
);

const MUTATIONS = ['valid', 'drop', 'retype', 'retype-deep', 'extra', 'replace', 'invalid-json', 'wrong-type', 'empty', 'proto'] as const;

const caseArb = fc.record({
  mutation: fc.constantFrom(...MUTATIONS),
  pick: fc.nat(),
  variant: fc.nat({ max: 3 }),
  junk: junkValue,
  pathValues: fc.array(fc.oneof(fc.record({ pool: fc.nat() }), fc.record({ junk: junkString }), fc.record({ raw: fc.constantFrom('%00', '%', '%E0%A4%A', '..', '%2e%2e', 'a'.repeat(600)) })), { minLength: 4, maxLength: 4 }),
  // Query strings stay under the 16 KiB header limit mostly, so they reach validation (a few go over).
  queryValues: fc.array(fc.oneof({ weight: 10, arbitrary: junkString.filter((v) => v.length < 2000) }, { weight: 1, arbitrary: hugeString }, { weight: 3, arbitrary: junkNumber.map(String) }, { weight: 2, arbitrary: fc.constant(['1', '2']) }), { minLength: 6, maxLength: 6 }),
  extraQuery: fc.option(fc.tuple(fc.string({ maxLength: 10 }), junkString), { nil: undefined }),
  credentials: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'none', 'junk'),
});
type FuzzCase = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

/** Every [container, key] inside a JSON value, so a mutation can reach nested fields. */
function slots(value: unknown, out: [Record<string, unknown> | unknown[], string | number][] = []) {
  if (Array.isArray(value)) value.forEach((item, i) => (out.push([value, i]), slots(item, out)));
  else if (value && typeof value === 'object') for (const [key, item] of Object.entries(value)) (out.push([value as Record<string, unknown>, key]), slots(item, out));
  return out;
}

function buildBody(op: Operation, c: FuzzCase): { text?: string; contentType?: string } {
  if (!op.body) return c.mutation === 'replace' ? { text: JSON.stringify(c.junk), contentType: 'application/json' } : {};
  const sample = sampleFromSchema(op.body, c.variant) as any;
  const json = (value: unknown) => ({ text: JSON.stringify(value), contentType: 'application/json' });
  switch (c.mutation) {
    case 'valid':
      return json(sample);
    case 'drop': {
      const required: string[] = op.body.required ?? Object.keys(sample ?? {});
      if (sample && typeof sample === 'object' && required.length) delete sample[required[c.pick % required.length]];
      return json(sample);
    }
    case 'retype':
    case 'retype-deep': {
      const all = slots(sample);
      const candidates = c.mutation === 'retype' ? all.filter(([container]) => container === sample) : all;
      if (!candidates.length) return json(c.junk);
      const [container, key] = candidates[c.pick % candidates.length];
      (container as any)[key] = c.junk;
      return json(sample);
    }
    case 'extra':
      return json({ ...sample, [`x${c.pick % 7}`]: c.junk, input: sample?.input ?? c.junk });
    case 'replace':
      return json(c.junk);
    case 'invalid-json':
      return { text: JSON.stringify(sample).slice(0, 1 + (c.pick % 20)) + (c.pick % 2 ? '\u0001' : ''), contentType: 'application/json' };
    case 'wrong-type':
      return { text: JSON.stringify(sample), contentType: ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx'][c.pick % 4] };
    case 'empty':
      return { text: '', contentType: 'application/json' };
    case 'proto':
      return { text: `{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},${JSON.stringify(sample).slice(1)}`, contentType: 'application/json' };
  }
}

// A lone surrogate cannot be percent-encoded as UTF-8: send the bytes of one instead (invalid UTF-8).
function encodeSegment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return `${encodeURIComponent(text.replace(/[\ud800-\udfff]/g, ''))}%ED%A0%80`;
  }
}

function buildUrl(op: Operation, c: FuzzCase, creds: Credentials): string {
  let index = 0;
  const path = op.path.replace(/\{(\w+)\}/g, () => {
    const choice = c.pathValues[index++ % c.pathValues.length];
    if ('pool' in choice) return encodeSegment(creds.pool[choice.pool % creds.pool.length]);
    if ('junk' in choice) return encodeSegment(choice.junk) || 'x';
    return choice.raw;
  });
  const query = new URLSearchParams();
  op.queryParams.forEach(({ name }, i) => {
    const value = c.queryValues[i % c.queryValues.length];
    if (typeof value === 'string') query.append(name, value);
    else value.forEach((v) => query.append(name, v));
  });
  if (c.extraQuery) query.append(c.extraQuery[0], c.extraQuery[1]);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

function headersFor(op: Operation, c: FuzzCase, creds: Credentials): Record<string, string> {
  if (c.credentials === 'none') return {};
  if (c.credentials === 'junk') return { authorization: `Bearer svc_${'A'.repeat(43)}`, 'x-admin-secret': 'nope' };
  switch (op.security) {
    case 'apiKey':
      return bearer(creds.apiKey);
    case 'dashboard':
      return bearer(creds.token);
    case 'admin':
      return adminHeaders;
    default:
      return {};
  }
}

const isEnvelope = (body: any) =>
  body !== null &&
  typeof body === 'object' &&
  (body.success === true || (body.success === false && typeof body.error?.code === 'string' && typeof body.error?.message === 'string'));

beforeAll(async () => {
  llm = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'sk-fake', LLM_MAX_RETRIES: '0', LOGIN_MAX_FAILURES: '1000' });
  const doc = (await t.api.get('/openapi.json')).body;
  components = doc.components?.schemas ?? {};
  operations = readOperations(doc);
}, 120_000);
afterAll(async () => {
  await t?.close();
  await llm?.close();
});

describe('fuzzing every documented operation', () => {
  it(
    'never answers 5xx or a bare body, and stays ready',
    async () => {
      expect(operations.length).toBeGreaterThan(80);
      let creds = await provision();
      const failures: string[] = [];
      let requests = 0;
      const byStatus = new Map<number, number>();
      for (const [index, op] of operations.entries()) {
        const cases = fc.sample(caseArb, { seed: SEED + index, numRuns: RUNS_PER_OPERATION });
        for (const c of cases) {
          const url = buildUrl(op, c, creds);
          const body = buildBody(op, c);
          const headers = { ...headersFor(op, c, creds), ...(body.contentType ? { 'content-type': body.contentType } : {}) };
          const res = await fetch(`${t.url}${url}`, { method: op.method, headers, body: op.method === 'GET' ? undefined : body.text });
          const text = await res.text();
          requests++;
          byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          const label = `${op.method} ${url.slice(0, 160)} [${c.mutation}] -> ${res.status} ${text.slice(0, 200)}`;
          if (res.status >= 500) failures.push(label);
          else if (!NOT_ENVELOPES.has(op.path) && !isEnvelope(parsed)) failures.push(`not an envelope: ${label}`);
          // A case may legitimately rotate the key, change the password or deactivate the tenant:
          // start again with a fresh tenant when the valid credentials stop working.
          const code = (parsed as any)?.error?.code;
          if (c.credentials === 'valid' && (res.status === 401 || code === 'ACCOUNT_INACTIVE') && op.security !== 'admin') creds = await provision();
        }
      }
      const ready = await t.api.get('/health/ready');
      console.log(`fuzz: seed ${SEED}, ${operations.length} operations, ${requests} requests; by status ${JSON.stringify(Object.fromEntries([...byStatus].sort(([a], [b]) => a - b)))}`);
      expect(failures.slice(0, 25), `${failures.length} failing answers`).toEqual([]);
      expect(ready.status).toBe(200);
    },
    600_000,
  );
});
