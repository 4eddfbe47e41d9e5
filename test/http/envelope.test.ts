import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let tenant: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer({ BODY_LIMIT_BYTES: '4096' });
  tenant = await signupTenant(t.api);
});
afterAll(() => t?.close());

const expectEnvelopeError = (body: any, code: string) => {
  expect(body).toEqual({ success: false, error: expect.objectContaining({ code, message: expect.any(String) }) });
  expect(Object.keys(body).sort()).toEqual(['error', 'success']);
};

describe('the envelope on every error', () => {
  it('malformed JSON is 400 INVALID_JSON', async () => {
    const res = await t.api.post('/auth/login', undefined, { raw: '{"email": ', contentType: 'application/json' });
    expect(res.status).toBe(400);
    expectEnvelopeError(res.body, 'INVALID_JSON');
  });

  it('an unknown route is 404 ROUTE_NOT_FOUND', async () => {
    for (const [method, path] of [['GET', '/v1/nothing-here'], ['POST', '/nope'], ['DELETE', '/v1/collections/a/b']]) {
      const res = await t.api.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
      expectEnvelopeError(res.body, 'ROUTE_NOT_FOUND');
    }
  });

  it('a known path under another method is 405 METHOD_NOT_ALLOWED with Allow', async () => {
    for (const [method, path, allow] of [
      ['OPTIONS', '/v1/collections', 'GET, HEAD, POST'],
      ['DELETE', '/auth/login', 'POST'],
      ['PUT', '/v1/collections/0b6a4f1e-0000-4000-8000-000000000000', 'DELETE, GET, HEAD, PATCH'],
    ]) {
      const res = await t.api.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      expectEnvelopeError(res.body, 'METHOD_NOT_ALLOWED');
    }
  });

  it('an oversize body is 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.api.post('/auth/login', { email: 'a@b.co', password: 'x'.repeat(10_000) });
    expect(res.status).toBe(413);
    expectEnvelopeError(res.body, 'PAYLOAD_TOO_LARGE');
  });

  it('a non-JSON content type is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    for (const contentType of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
      const res = await t.api.post('/auth/login', undefined, { raw: 'email=a', contentType });
      expect(res.status, contentType).toBe(415);
      expectEnvelopeError(res.body, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('wrong types and missing fields are 400 INVALID_INPUT naming each field', async () => {
    const res = await t.api.post('/auth/signup', { companyName: 42, email: 'not-an-email' });
    expect(res.status).toBe(400);
    expectEnvelopeError(res.body, 'INVALID_INPUT');
    const paths = res.body.error.details.issues.map((i: { path: string }) => i.path).sort();
    expect(paths).toEqual(['companyName', 'email', 'password']);
  });

  it('does not coerce strings or booleans in bodies', async () => {
    const res = await t.api.post('/admin/tenants', { tenantName: 'X', monthlyRequestQuota: '100' }, { headers: { 'x-admin-secret': 'test-admin-secret-0123456789' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0].path).toBe('monthlyRequestQuota');
    const created = await t.api.post('/admin/tenants', { tenantName: 'X' }, { headers: { 'x-admin-secret': 'test-admin-secret-0123456789' } });
    const flip = await t.api.patch(`/admin/tenants/${created.body.data.tenant.id}`, { isActive: 'false' }, { headers: { 'x-admin-secret': 'test-admin-secret-0123456789' } });
    expect(flip.status).toBe(400);
  });

  it('a JSON array or scalar body is 400, not 500', async () => {
    for (const raw of ['[]', '"text"', '42', 'null']) {
      const res = await t.api.post('/auth/login', undefined, { raw, contentType: 'application/json' });
      expect(res.status, raw).toBe(400);
      expect(res.body.success).toBe(false);
    }
  });

  it('a prototype-poisoning body is refused', async () => {
    const res = await t.api.post('/auth/login', undefined, { raw: '{"__proto__": {"admin": true}, "email": "a@b.co", "password": "x"}', contentType: 'application/json' });
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
  });

  it('an empty POST body counts as {}', async () => {
    const res = await t.api.request('POST', '/auth/refresh', undefined, { headers: bearer(tenant.token) });
    expect(res.status).toBe(200);
    expect(res.body.data.token).toEqual(expect.any(String));
  });

  it('every response carries a request id, echoing a sane incoming one', async () => {
    const res = await t.api.get('/health/live', { headers: { 'x-request-id': 'trace-abc.123' } });
    expect(res.headers.get('x-request-id')).toBe('trace-abc.123');
    const other = await t.api.get('/v1/collections', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(other.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(other.status).toBe(401);
  });

  it('success responses are the envelope too', async () => {
    const res = await t.api.get('/v1/collections', { headers: bearer(tenant.apiKey) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { collections: [] } });
  });
});
