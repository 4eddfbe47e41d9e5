import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appRouter } from '../../server/router.js';
import type { RouteMeta } from '../../server/trpc.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let doc: any;

beforeAll(async () => {
  t = await startTestServer();
  doc = (await t.api.get('/openapi.json')).body;
});
afterAll(() => t?.close());

interface Route {
  method: string;
  path: string;
  meta: RouteMeta;
}

const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { meta?: RouteMeta } }>;
// Registration order is the adapter's matching order.
const routes: Route[] = Object.values(procedures)
  .filter((p) => p._def.meta?.openapi)
  .map((p) => ({ method: p._def.meta!.openapi!.method, path: p._def.meta!.openapi!.path, meta: p._def.meta! }));
const RAW_ROUTES = ['/health/live', '/health/ready', '/openapi.json', '/docs'];
/** Raw routes beside the procedures that are not GETs: the streams. */
const RAW_STREAMS = [
  'POST /v1/agents/{agentKey}/run/stream', 'POST /v1/workflows/{workflowIdOrKey}/run/stream',
  'POST /webhooks/workflows/{slug}', 'POST /webhooks/workflow-callbacks/{token}',
  // The tenant archive: streamed out, streamed in.
  'GET /admin/tenants/{tenantId}/export', 'POST /admin/tenants/import',
];

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1/);
    expect(doc.info.version).toBe('1.0.0');
  });

  it('lists every route, and nothing else', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`));
    const expected = [...routes.map((r) => `${r.method} ${r.path}`), ...RAW_ROUTES.map((p) => `GET ${p}`), ...RAW_STREAMS];
    expect(documented.sort()).toEqual(expected.sort());
  });

  it('documents the real success status, the envelope and each route\'s error codes', () => {
    for (const route of routes) {
      const op = doc.paths[route.path][route.method.toLowerCase()];
      const status = String(route.meta.successStatus ?? 200);
      expect(Object.keys(op.responses), `${route.method} ${route.path}`).toContain(status);
      expect(op.responses[status].content['application/json'].schema).toBeDefined();
      expect(op.responses['500'].content['application/json'].schema.properties.error.properties.code.enum).toContain('INTERNAL_ERROR');
      for (const code of route.meta.errors ?? []) {
        const listed = Object.values(op.responses).some((r: any) => r.content?.['application/json']?.schema?.properties?.error?.properties?.code?.enum?.includes(code));
        expect(listed, `${route.method} ${route.path} documents ${code}`).toBe(true);
      }
    }
    const signup = doc.paths['/auth/signup'].post;
    expect(Object.keys(signup.responses)).toContain('201');
    expect(Object.keys(signup.responses)).not.toContain('200');
    // Its own code, and the lost race any write may answer.
    expect(signup.responses['409'].content['application/json'].schema.properties.error.properties.code.enum).toEqual(['EMAIL_TAKEN', 'CONFLICT']);
  });

  it('gives every operation an operationId, the ErrorEnvelope for each error and x-request-id on each response', () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item as object).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })));
    const ids = operations.map(({ op }) => op.operationId);
    expect(operations.filter(({ op }) => !/^[a-z][A-Za-z]*(-[a-z][A-Za-z]*)+$/.test(op.operationId ?? '')).map(({ name }) => name)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { name, op } of operations) {
      expect(op.responses.default, name).toBeDefined();
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        expect(response.headers?.['x-request-id'], `${name} ${status}`).toBeDefined();
        if (status !== 'default' && Number(status) < 400) continue;
        const schema = response.content['application/json'].schema;
        expect(schema.allOf, `${name} ${status}`).toEqual([{ $ref: '#/components/schemas/ErrorEnvelope' }]);
        const codes: string[] = schema.properties.error.properties.code.enum;
        const retry = codes.some((code) => ['RATE_LIMITED', 'LLM_UNAVAILABLE', 'LLM_PROVIDER_ERROR', 'DATABASE_UNAVAILABLE'].includes(code));
        if (retry) expect(response.headers['Retry-After'], `${name} ${status}`).toEqual({ $ref: '#/components/headers/RetryAfter' });
      }
    }
    expect(doc.paths['/openapi.json'].get.responses['200'].content['application/json'].schema.type).toBe('object');
    expect(Object.keys(doc.paths['/docs'].get.responses['200'].content)).toEqual(['text/html']);
  });

  it('references every component it has, and none of the generator\'s own error shapes', () => {
    const text = JSON.stringify(doc);
    for (const name of Object.keys(doc.components.schemas)) {
      expect(text.includes(`"#/components/schemas/${name}"`), name).toBe(true);
      expect(name.startsWith('error.'), name).toBe(false);
    }
  });

  it('types health and webhook answers strictly: every field required', () => {
    const strict = (schema: any): void => {
      if (schema?.type !== 'object' || !schema.properties) return;
      expect(schema.additionalProperties).toBe(false);
      const optional = Object.keys(schema.properties).filter((key) => !schema.required?.includes(key));
      // `duplicate` is present only on a repeated delivery.
      expect(optional.filter((key) => key !== 'duplicate')).toEqual([]);
      for (const value of Object.values(schema.properties)) strict(value);
    };
    strict(doc.paths['/health/live'].get.responses['200'].content['application/json'].schema);
    strict(doc.paths['/health/ready'].get.responses['200'].content['application/json'].schema);
    strict(doc.paths['/webhooks/workflows/{slug}'].post.responses['202'].content['application/json'].schema);
    strict(doc.paths['/webhooks/workflow-callbacks/{token}'].post.responses['202'].content['application/json'].schema);
    const webhookHeaders = doc.paths['/webhooks/workflows/{slug}'].post.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name);
    expect(webhookHeaders).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  });

  it('documents each stream\'s events and their data', () => {
    const events = (path: string) => doc.paths[path].post.responses['200'].content['text/event-stream'];
    expect(Object.keys(events('/v1/agents/{agentKey}/run/stream')['x-stream-events'])).toEqual(['run.started', 'llm.delta', 'tool.started', 'tool.completed', 'run.completed', 'run.failed']);
    expect(Object.keys(events('/v1/workflows/{workflowIdOrKey}/run/stream')['x-stream-events'])).toEqual([
      'run.started', 'step.started', 'step.completed', 'run.completed', 'run.waiting', 'run.awaiting_approval', 'run.failed',
    ]);
    expect(doc.components.schemas.AgentRunStreamEvent.oneOf).toHaveLength(6);
    expect(doc.components.schemas.WorkflowRunStreamEvent.oneOf).toHaveLength(7);
  });

  it('declares the auth scheme of each route', () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['AdminSecret', 'ApiKeyBearer', 'ApiKeyHeader', 'DashboardJwt']);
    for (const route of routes) {
      const op = doc.paths[route.path][route.method.toLowerCase()];
      // An API-key route lists the permission it needs as the role of each requirement.
      const permission = op['x-permission'];
      const expected = route.path.startsWith('/v1/')
        ? [{ ApiKeyBearer: [permission] }, { ApiKeyHeader: [permission] }]
        : route.path.startsWith('/admin/')
          ? [{ AdminSecret: [] }]
          : route.path.startsWith('/dashboard/') || ['/auth/me', '/auth/refresh', '/auth/verify-email/resend'].includes(route.path)
            ? [{ DashboardJwt: [] }]
            : [];
      expect(op.security, `${route.method} ${route.path}`).toEqual(expected);
      if (route.path.startsWith('/v1/')) expect(permission, `${route.method} ${route.path}`).toMatch(/^[a-z]+:[a-z]+$/);
    }
  });

  it('serves an interactive reference with local assets only', async () => {
    const page = await t.api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(src.startsWith('/'), src).toBe(true);
      const asset = await t.api.get(src);
      expect(asset.status, src).toBe(200);
    }
    expect((await t.api.get('/docs/assets/../../package.json')).status).toBe(404);
  });
});

describe('route table', () => {
  // The adapter takes the first registered route whose pattern matches, so a `{param}` route
  // registered before a literal sibling would swallow it.
  const toRegExp = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}/?$`);

  it('no {param} route shadows another route', () => {
    for (const route of routes) {
      const concrete = route.path.replace(/\{[^}]+\}/g, 'sample-value-123');
      const winner = routes.find((r) => r.method === route.method && toRegExp(r.path).test(concrete));
      expect(`${winner?.method} ${winner?.path}`, `${route.method} ${concrete}`).toBe(`${route.method} ${route.path}`);
    }
  });

  it('each method and path is declared once', () => {
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('every route is reachable over HTTP (no 404 ROUTE_NOT_FOUND)', async () => {
    for (const route of routes) {
      const res = await t.api.request(route.method, route.path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000'), route.method === 'GET' || route.method === 'DELETE' ? undefined : {});
      expect(res.body?.error?.code, `${route.method} ${route.path}`).not.toBe('ROUTE_NOT_FOUND');
      expect(res.status, `${route.method} ${route.path}`).toBeLessThan(500);
    }
  });
});
