// http_request steps cannot reach private addresses: loopback, 10/8, link-local metadata, a name
// that resolves to loopback, or a redirect from an allowed host to a private one.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let a: SignedUpTenant;
let target: http.Server;
let targetPort: number;
let redirector: http.Server;
let redirectorUrl: string;

const listen = (server: http.Server, host: string) => new Promise<number>((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));

beforeAll(async () => {
  target = http.createServer((_req, res) => res.end('secret internal data'));
  targetPort = await listen(target, '127.0.0.1');
  // Only 127.0.0.2 is allowed: it answers with a redirect to the private 127.0.0.1.
  redirector = http.createServer((_req, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${targetPort}/` });
    res.end();
  });
  redirectorUrl = `http://127.0.0.2:${await listen(redirector, '127.0.0.2')}/`;
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.2' });
  a = await signupTenant(t.api, { companyName: 'SSRF' });
});
afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => target?.close(resolve));
  await new Promise((resolve) => redirector?.close(resolve));
});

describe('http_request and private addresses', () => {
  it('refuses every private target, and the redirect from an allowed host to one', async () => {
    const key = { headers: bearer(a.apiKey) };
    const urls = [
      `http://127.0.0.1:${targetPort}/`,
      `http://localhost:${targetPort}/`,
      'http://10.0.0.1/',
      'http://169.254.169.254/latest/meta-data/',
      `http://[::1]:${targetPort}/`,
      redirectorUrl,
    ];
    const created = await t.api.post('/v1/workflows', {
      name: 'Fetcher',
      steps: [
        { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
        { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: '{{trigger.url}}', timeout_ms: 2000 } },
      ],
    }, key);
    expect(created.status, created.text).toBe(201);
    const wf = created.body.data.workflow;
    expect((await t.api.post(`/v1/workflows/${wf.id}/deploy`, undefined, key)).status).toBe(200);
    const errors: string[] = [];
    for (const url of urls) {
      const res = await t.api.post(`/v1/workflows/${wf.id}/run`, { input: { url } }, key);
      expect(res.status, url).toBe(200);
      expect(res.body.data.status, url).toBe('failed');
      expect(JSON.stringify(res.body.data.trace)).not.toContain('secret internal data');
      errors.push(res.body.data.trace[1].error);
    }
    // The allowed host was reached: it is its redirect to 127.0.0.1 that was refused.
    expect(errors.at(-1)).toMatch(/127\.0\.0\.1/);
    expect(errors.at(-1)).not.toMatch(/127\.0\.0\.2/);
  });
});
