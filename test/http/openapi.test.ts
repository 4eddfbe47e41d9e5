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
    expect(signup.responses['409'].content['application/json'].schema.properties.error.properties.code.enum).toEqual(['EMAIL_TAKEN']);
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
