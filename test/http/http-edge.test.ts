// What reaches the server before any procedure runs: NUL characters, over-long and badly encoded
// URLs, oversize headers, malformed HTTP, slow senders. Each answer is the envelope with a code.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let tenant: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer({ REQUEST_TIMEOUT_MS: '1500' });
  tenant = await signupTenant(t.api);
});
afterAll(() => t?.close());

const expectEnvelopeError = (body: any, code: string) => {
  expect(body).toEqual({ success: false, error: expect.objectContaining({ code, message: expect.any(String) }) });
};

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Sends bytes as they are (no client-side checks) and reads the answer until the server closes or it is complete. */
function sendRaw(text: string | Buffer, options: { endAfterWrite?: boolean } = {}): Promise<RawResponse> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const finish = () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = raw.split('\r\n\r\n');
      const [statusLine, ...headerLines] = head.split('\r\n');
      const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      let body: unknown;
      try {
        body = JSON.parse(rest.join('\r\n\r\n'));
      } catch {
        body = rest.join('\r\n\r\n');
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    };
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const raw = Buffer.concat(chunks).toString('utf8');
      const length = /content-length:\s*(\d+)/i.exec(raw)?.[1];
      const headEnd = raw.indexOf('\r\n\r\n');
      if (length && headEnd >= 0 && Buffer.byteLength(raw.slice(headEnd + 4)) >= Number(length)) {
        socket.destroy();
        finish();
      }
    });
    socket.on('close', () => (chunks.length ? finish() : reject(new Error('closed without an answer'))));
    socket.on('error', () => undefined);
    socket.write(text);
    if (options.endAfterWrite) socket.end();
  });
}

describe('NUL characters never reach the database', () => {
  it('in a path parameter: 400 INVALID_INPUT naming the parameter', async () => {
    for (const [path, headers] of [
      ['/dashboard/prompts/%00', bearer(tenant.token)],
      ['/dashboard/custom-domains/%00/intents', bearer(tenant.token)],
      ['/v1/collections/abc%00def', bearer(tenant.apiKey)],
    ] as const) {
      const res = await t.api.get(path, { headers });
      expect(res.status, path).toBe(400);
      expectEnvelopeError(res.body, 'INVALID_INPUT');
      expect(res.body.error.details.issues[0].code).toBe('nul_character');
    }
    for (const path of ['/dashboard/provider-keys/openai%00', '/dashboard/prompts/%00']) {
      const res = await t.api.delete(path, { headers: bearer(tenant.token) });
      expect(res.status, path).toBe(400);
      expectEnvelopeError(res.body, 'INVALID_INPUT');
      expect(res.body.error.details.issues[0].code).toBe('nul_character');
    }
  });

  it('in a query value: 400 INVALID_INPUT', async () => {
    const res = await t.api.get('/v1/documents?category=a%00b', { headers: bearer(tenant.apiKey) });
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0]).toMatchObject({ path: 'category', code: 'nul_character' });
  });

  it('in a JSON string, however deep, or a key: 400 INVALID_INPUT naming the field', async () => {
    const headers = bearer(tenant.apiKey);
    const deep = await t.api.post('/v1/collections', { slug: 'ok', label: 'ok', domain_keys: ['hiring'], tags: ['fine', 'bad\u0000'] }, { headers });
    expect(deep.status).toBe(400);
    expect(deep.body.error.details.issues[0]).toMatchObject({ path: 'tags.1', code: 'nul_character' });

    const key = await t.api.post('/v1/collections', undefined, { headers, raw: '{"slug":"x","la\\u0000bel":1}', contentType: 'application/json' });
    expect(key.status).toBe(400);
    expectEnvelopeError(key.body, 'INVALID_INPUT');

    // The six characters \u0000 as text (an escaped backslash) are not a NUL and pass.
    const literal = await t.api.post('/v1/collections', undefined, {
      headers,
      raw: JSON.stringify({ label: 'Backslash \\u0000 text', slug: 'backslash-text', domain_keys: ['hiring'] }),
      contentType: 'application/json',
    });
    expect(literal.status, literal.text).toBe(201);
    expect(literal.body.data.collection.label).toBe('Backslash \\u0000 text');
  });
});

describe('answers the framework writes itself are envelopes', () => {
  it('a path segment over 500 characters: 414 URI_TOO_LONG', async () => {
    const res = await t.api.get(`/dashboard/prompts/${'a'.repeat(600)}`, { headers: bearer(tenant.token) });
    expect(res.status).toBe(414);
    expectEnvelopeError(res.body, 'URI_TOO_LONG');
  });

  it('a badly percent-encoded path: 400 MALFORMED_REQUEST', async () => {
    const res = await sendRaw('GET /v1/collections/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(400);
    expectEnvelopeError(res.body, 'MALFORMED_REQUEST');
  });

  it('headers over 16 KiB: 431 HEADERS_TOO_LARGE', async () => {
    const res = await sendRaw(`GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expectEnvelopeError(res.body, 'HEADERS_TOO_LARGE');
  });

  it('malformed HTTP: 400 MALFORMED_REQUEST', async () => {
    const res = await sendRaw('GET /health/live HTTP/1.1\r\nHost x\r\n\r\n');
    expect(res.status).toBe(400);
    expectEnvelopeError(res.body, 'MALFORMED_REQUEST');
  });

  it('a body shorter than its Content-Length, then silence: 408 REQUEST_TIMEOUT', async () => {
    const res = await sendRaw('POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":');
    expect(res.status).toBe(408);
    expectEnvelopeError(res.body, 'REQUEST_TIMEOUT');
  });

  it('headers that never finish: 408 REQUEST_TIMEOUT', async () => {
    const res = await sendRaw('GET /health/live HTTP/1.1\r\nHost: x\r\n');
    expect(res.status).toBe(408);
    expectEnvelopeError(res.body, 'REQUEST_TIMEOUT');
  });

  it('the server is still ready afterwards', async () => {
    const res = await t.api.get('/health/ready');
    expect(res.status).toBe(200);
  });
});
