import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OutboundLimitError } from '../../server/net/limited-body.js';
import { createOutboundHttp, OutboundBlockedError } from '../../server/net/safe-http.js';
import { readLimited } from '../../server/net/signed-webhook.js';

interface TestServer {
  origin: string;
  port: number;
  /** Ends the SSE responses still open. */
  endSse(): void;
  close(): Promise<void>;
}

// Writes `chunk` until the client goes away, waiting whenever the socket is full.
async function writeForever(res: http.ServerResponse, chunk: string): Promise<void> {
  while (!res.destroyed && !res.writableEnded) {
    if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
  }
}

async function startServer(): Promise<TestServer> {
  const openSse: http.ServerResponse[] = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://test');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    switch (url.pathname) {
      case '/hello':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello');
        return;
      case '/echo':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }));
        return;
      case '/redirect':
        res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to') ?? '/hello' }).end();
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/big':
        res.writeHead(200, { 'content-type': 'text/plain' });
        for (let i = 0; i < 8; i++) res.write('x'.repeat(64 * 1024));
        res.end();
        return;
      case '/gzip':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(gzipSync('compressed hello'));
        return;
      case '/hang':
        return; // never answers
      case '/drip': {
        // A head at once, then a byte now and then, forever.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('x'), 50);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/gzip-bomb':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(8 * 1024 * 1024)));
        return;
      case '/sse-endless-event':
        // One event that never reaches its blank line.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: ');
        void writeForever(res, 'x'.repeat(16 * 1024));
        return;
      case '/sse-many-events':
        // Many small events, in every line ending SSE allows, far more bytes in total than the cap.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < 300; i++) res.write(`data: ${'y'.repeat(200)}${['\n\n', '\r\n\r\n', '\r\r'][i % 3]}`);
        res.end('data: last\n\n');
        return;
      case '/sse-ticks': {
        // Small events forever.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const timer = setInterval(() => res.write('data: tick\n\n'), 50);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('data: one\n\n');
        setTimeout(() => res.write('data: two\n\n'), 100);
        openSse.push(res);
        return;
      default:
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    endSse: () => openSse.splice(0).forEach((res) => res.end()),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let server: TestServer;
let other: TestServer;
beforeAll(async () => {
  server = await startServer();
  other = await startServer();
});
afterAll(async () => {
  await server.close();
  await other.close();
});

async function refusal(promise: Promise<unknown>): Promise<OutboundBlockedError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the request to be refused');
    },
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OutboundBlockedError);
  expect((error as OutboundBlockedError).code).toBe('OUTBOUND_BLOCKED');
  return error as OutboundBlockedError;
}

describe('outbound HTTP: refused targets', () => {
  const outbound = createOutboundHttp();

  it('refuses a loopback server by default, through get and fetch, naming the host', async () => {
    const viaGet = await refusal(outbound.get(`${server.origin}/hello`));
    expect(viaGet.message).toContain(`127.0.0.1:${server.port}`);
    await refusal(outbound.fetch(`${server.origin}/echo`, { method: 'POST', body: '{}' }));
  });

  it('refuses names resolving to private addresses and private, metadata, CGNAT and unspecified IPs', async () => {
    const targets = [
      `http://localhost:${server.port}/hello`,
      `http://[::1]:${server.port}/`,
      `http://[::ffff:127.0.0.1]:${server.port}/`,
      `http://0.0.0.0:${server.port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'https://172.16.0.1/',
    ];
    for (const target of targets) {
      const error = await refusal(outbound.get(target));
      expect(error.message).toContain(new URL(target).host);
    }
  });

  it('refuses other schemes and URLs carrying credentials', async () => {
    const allowed = createOutboundHttp({ allowedHosts: ['127.0.0.1'] });
    await refusal(outbound.get('ftp://example.com/file'));
    await refusal(outbound.fetch('file:///etc/passwd'));
    await refusal(allowed.get(`http://user:pass@127.0.0.1:${server.port}/hello`));
    await refusal(allowed.fetch(`http://user:pass@127.0.0.1:${server.port}/hello`));
  });
});

describe('outbound HTTP: allow-listed hosts', () => {
  for (const allowedHosts of [['127.0.0.1'], ['127.0.0.0/8'], ['localhost']]) {
    it(`reaches the local server with allowedHosts ${allowedHosts.join(',')} (get and fetch)`, async () => {
      const outbound = createOutboundHttp({ allowedHosts });
      const origin = allowedHosts[0] === 'localhost' ? `http://localhost:${server.port}` : server.origin;
      const page = await outbound.get(`${origin}/hello`);
      expect(page).toEqual({
        status: 200,
        url: `${origin}/hello`,
        contentType: 'text/plain; charset=utf-8',
        text: 'hello',
        truncated: false,
        bytes: 5,
      });
      const response = await outbound.fetch(`${origin}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-trace': 'abc' },
        body: JSON.stringify({ question: 42 }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      const echoed = (await response.json()) as { method: string; headers: Record<string, string>; body: string };
      expect(echoed.method).toBe('POST');
      expect(echoed.headers['x-trace']).toBe('abc');
      expect(JSON.parse(echoed.body)).toEqual({ question: 42 });
    });
  }

  it('allows a name whose addresses all lie in a listed range, and only then', async () => {
    const warn = vi.spyOn(console, 'warn');
    try {
      const inRange = createOutboundHttp({ allowedHosts: ['fd00::/8', '127.0.0.0/8'] });
      expect((await inRange.get(`http://localhost:${server.port}/hello`)).text).toBe('hello');
      await refusal(createOutboundHttp({ allowedHosts: ['10.0.0.0/8', '::1'] }).get(`http://localhost:${server.port}/hello`));
      // Ranges of both families never make the filtering library complain about "invalid" CIDRs.
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('rejects a malformed range in the allow-list', () => {
    expect(() => createOutboundHttp({ allowedHosts: ['10.0.0.0/99'] })).toThrow(/Invalid CIDR/);
  });

  it('sends Uint8Array and URLSearchParams bodies and accepts a Request', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'] });
    const bytes = await (await outbound.fetch(`${server.origin}/echo`, { method: 'PUT', body: new TextEncoder().encode('raw') })).json();
    expect(bytes).toMatchObject({ method: 'PUT', body: 'raw' });
    const form = await (await outbound.fetch(`${server.origin}/echo`, { method: 'POST', body: new URLSearchParams({ a: '1' }) })).json();
    expect(form).toMatchObject({ body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' } });
    const request = new Request(`${server.origin}/echo`, { method: 'POST', body: 'from a Request' });
    expect(await (await outbound.fetch(request)).json()).toMatchObject({ body: 'from a Request' });
  });

  it('decodes a compressed body', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'] });
    expect((await outbound.get(`${server.origin}/gzip`)).text).toBe('compressed hello');
    expect(await (await outbound.fetch(`${server.origin}/gzip`)).text()).toBe('compressed hello');
  });
});

describe('outbound HTTP: redirects', () => {
  const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxRedirects: 3 });

  it('follows redirects on allowed hosts and reports the final URL', async () => {
    const page = await outbound.get(`${server.origin}/redirect?to=/hello`);
    expect(page).toMatchObject({ status: 200, text: 'hello', url: `${server.origin}/hello` });
    const response = await outbound.fetch(`${server.origin}/redirect?to=/hello`);
    expect(response.url).toBe(`${server.origin}/hello`);
    expect(response.redirected).toBe(true);
    expect(await response.text()).toBe('hello');
  });

  it('refuses a redirect to a host that is not allowed', async () => {
    const to = encodeURIComponent('http://10.0.0.1/');
    await refusal(outbound.get(`${server.origin}/redirect?to=${to}`));
    const toV6 = encodeURIComponent(`http://[::1]:${server.port}/hello`);
    await refusal(outbound.fetch(`${server.origin}/redirect?to=${toV6}`));
    // Listing a name allows that name, not the address it happens to resolve to.
    const byName = createOutboundHttp({ allowedHosts: ['localhost'] });
    const toIp = encodeURIComponent(`${server.origin}/hello`);
    await refusal(byName.get(`http://localhost:${server.port}/redirect?to=${toIp}`));
    await refusal(byName.get(`http://localhost:${server.port}/redirect?to=${encodeURIComponent('http://169.254.169.254/')}`));
  });

  it('stops after maxRedirects', async () => {
    await expect(outbound.get(`${server.origin}/loop`)).rejects.toThrow(/redirected more than 3 times/);
  });

  it("returns the redirect itself with redirect: 'manual'", async () => {
    const response = await outbound.fetch(`${server.origin}/redirect?to=/hello`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/hello');
  });

  it('turns a 303 after POST into a GET and drops credentials when leaving the origin', async () => {
    const to = encodeURIComponent(`${other.origin}/echo`);
    const response = await outbound.fetch(`${server.origin}/redirect?status=303&to=${to}`, {
      method: 'POST',
      headers: { authorization: 'Bearer secret', 'x-trace': 'abc', 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    const echoed = (await response.json()) as { method: string; headers: Record<string, string>; body: string };
    expect(echoed.method).toBe('GET');
    expect(echoed.body).toBe('');
    expect(echoed.headers['x-trace']).toBe('abc');
    expect(echoed.headers.authorization).toBeUndefined();
    expect(echoed.headers['content-type']).toBeUndefined();
  });
});

describe('outbound HTTP: limits and streaming', () => {
  it('cuts a body at maxBytes', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 1000 });
    const page = await outbound.get(`${server.origin}/big`);
    expect(page.truncated).toBe(true);
    expect(page.bytes).toBe(1000);
    expect(page.text).toBe('x'.repeat(1000));
  });

  it('gives up on a server that never answers, saying it timed out', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], timeoutMs: 300 });
    await expect(outbound.get(`${server.origin}/hang`)).rejects.toThrow(/timed out/);
    await expect(outbound.fetch(`${server.origin}/hang`)).rejects.toThrow(/timed out/);
    await expect(outbound.get(`${server.origin}/hang`, { timeoutMs: 200 })).rejects.toThrow(/timed out after 200 ms/);
  });

  it("honours the caller's abort signal", async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'] });
    const controller = new AbortController();
    const pending = outbound.fetch(`${server.origin}/hang`, { signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(pending).rejects.toThrow('caller gave up');
  });

  it('streams a Server-Sent Events body chunk by chunk before the server ends it', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'] });
    const response = await outbound.fetch(`${server.origin}/sse`, { headers: { accept: 'text/event-stream' } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('data: two\n\n')) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      received += decoder.decode(value, { stream: true });
    }
    expect(received).toBe('data: one\n\ndata: two\n\n');
    // Both events arrived while the response was still open; now let the server finish.
    server.endSse();
    expect((await reader.read()).done).toBe(true);
  });
});

/** Rejects when `promise` has not settled after `ms` (so a missing limit fails the test instead of hanging it). */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms).unref())]);
}

/** Reads a fetch body to its end or its error: the bytes received and how it ended. */
async function drain(response: Response): Promise<{ text: string; error: Error | null }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { text, error: null };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error: error as Error };
  }
}

describe('outbound HTTP: fetch body limits', () => {
  it('errors a body past maxBytes after handing over exactly maxBytes', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 1000 });
    const { text, error } = await within(5_000, drain(await outbound.fetch(`${server.origin}/big`)));
    expect(error).toBeInstanceOf(OutboundLimitError);
    expect(error!.message).toMatch(/response body exceeded 1000 bytes/);
    expect(text).toBe('x'.repeat(1000));
    expect(await (await outbound.fetch(`${server.origin}/hello`)).text()).toBe('hello');
  });

  it('counts bytes after decompression', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 1024 * 1024 });
    await expect(within(5_000, (await outbound.fetch(`${server.origin}/gzip-bomb`)).arrayBuffer())).rejects.toThrow(/response body exceeded 1048576 bytes/);
  });

  it('keeps readLimited cutting at its own limit', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 1000 });
    const cut = await readLimited(await outbound.fetch(`${server.origin}/big`), 1000);
    expect(cut).toEqual({ text: 'x'.repeat(1000), truncated: true });
  });

  it('limits the time of the whole call, body included', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], timeoutMs: 400 });
    const response = await outbound.fetch(`${server.origin}/drip`);
    const { text, error } = await within(5_000, drain(response));
    expect(error?.message).toMatch(/timed out after 400 ms/);
    expect(text.length).toBeGreaterThan(0);
  });

  it('caps each Server-Sent Event, not the stream', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 10_000 });
    const endless = await within(5_000, drain(await outbound.fetch(`${server.origin}/sse-endless-event`)));
    expect(endless.error).toBeInstanceOf(OutboundLimitError);
    expect(endless.error!.message).toMatch(/event exceeded 10000 bytes/);
    expect(endless.text.length).toBeLessThanOrEqual(10_000);
    const many = await within(5_000, drain(await outbound.fetch(`${server.origin}/sse-many-events`)));
    expect(many.error).toBeNull();
    expect(many.text.length).toBeGreaterThan(60_000);
    expect(many.text.endsWith('data: last\n\n')).toBe(true);
  });

  it('honours maxEventBytes apart from maxBytes', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 10_000, maxEventBytes: 100 });
    const { error } = await within(5_000, drain(await outbound.fetch(`${server.origin}/sse-many-events`)));
    expect(error?.message).toMatch(/event exceeded 100 bytes/);
  });

  it('ends an event stream at its total time limit', async () => {
    const outbound = createOutboundHttp({ allowedHosts: ['127.0.0.1'], timeoutMs: 5_000, streamTimeoutMs: 500 });
    const { text, error } = await within(5_000, drain(await outbound.fetch(`${server.origin}/sse-ticks`)));
    // Cut by the stream's own limit (500 ms), not by the request's (5 s): the error names it.
    expect(error).toBeInstanceOf(OutboundLimitError);
    expect(error).toMatchObject({ code: 'OUTBOUND_LIMIT', limit: 'stream_time' });
    expect(error!.message).toMatch(/stream exceeded 500 ms/);
    expect(text).toContain('data: tick\n\n');
  });
});

/** A resolver answering from a table, counting its calls. */
function tableResolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolveHost = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolveHost, calls };
}

describe('outbound HTTP: address normalisation', () => {
  const outbound = createOutboundHttp({ timeoutMs: 2_000 });

  it('refuses loopback, private and metadata addresses in any IPv4 or embedding IPv6 spelling', async () => {
    const p = server.port;
    const targets = [
      `http://[::127.0.0.1]:${p}/`, // IPv4-compatible ::/96
      `http://[::7f00:1]:${p}/`,
      `http://[0:0:0:0:0:0:7f00:1]:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`, // IPv4-mapped
      `http://[0:0:0:0:0:ffff:7f00:1]:${p}/`,
      `http://[::ffff:169.254.169.254]/`,
      `http://[::ffff:0:127.0.0.1]:${p}/`, // IPv4-translated
      `http://[64:ff9b::127.0.0.1]:${p}/`, // NAT64
      `http://[64:ff9b::a9fe:a9fe]/`,
      `http://[64:ff9b:1::a00:1]/`,
      `http://[2002:7f00:1::]:${p}/`, // 6to4
      `http://[2002:a9fe:a9fe::1]/`,
      `http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/`, // Teredo
      `http://[2001:db8::1]/`,
      `http://[3fff::1]/`,
      `http://[fd00:ec2:0:0:0:0:0:254]/`,
      `http://[fe80::1]/`,
      `http://[ff02::1]/`,
      `http://[100::1]/`,
      `http://0x7f.1:${p}/`,
      `http://2130706433:${p}/`,
      `http://017700000001:${p}/`,
      `http://127.1:${p}/`,
      'http://192.0.2.1/',
      'http://198.18.0.1/',
      'http://192.0.0.170/',
      'http://240.0.0.1/',
      'http://255.255.255.255/',
      'http://224.0.0.1/',
    ];
    for (const target of targets) {
      const error = await within(3_000, refusal(outbound.fetch(target)));
      expect(error.message, target).toContain(new URL(target).host);
    }
  });

  it('refuses names whose addresses embed a private or metadata one, at connect time', async () => {
    const dns = tableResolver({
      'compat.test': ['::7f00:1'],
      'mapped.test': ['::ffff:127.0.0.1'],
      'nat64.test': ['64:ff9b::a9fe:a9fe'],
      'sixtofour.test': ['2002:a00:1::1'],
      'teredo.test': ['2001:0:4136:e378:8000:63bf:80ff:fffe'],
      'mixed.test': ['93.184.216.34', '10.0.0.1'],
      'doc.test': ['2001:db8::5'],
    });
    const client = createOutboundHttp({ timeoutMs: 2_000, resolveHost: dns.resolveHost });
    for (const name of ['compat', 'mapped', 'nat64', 'sixtofour', 'teredo', 'mixed', 'doc']) {
      const error = await within(3_000, refusal(client.fetch(`http://${name}.test:${server.port}/hello`)));
      expect(error.message).toContain(`${name}.test:${server.port}`);
    }
    expect(dns.calls).toContain('mapped.test');
  });

  it('refuses an allow-listed name resolving to a metadata address in any spelling', async () => {
    const names = {
      'meta-mapped.test': ['::ffff:169.254.169.254'],
      'meta-hex.test': ['::ffff:a9fe:a9fe'],
      'meta-nat64.test': ['64:ff9b::169.254.169.254'],
      'meta-ec2.test': ['fd00:ec2:0:0:0:0:0:254'],
      'meta-alibaba.test': ['::ffff:100.100.100.200'],
    };
    const dns = tableResolver(names);
    const client = createOutboundHttp({ timeoutMs: 2_000, allowedHosts: Object.keys(names), resolveHost: dns.resolveHost });
    for (const name of Object.keys(names)) {
      const error = await within(3_000, refusal(client.fetch(`http://${name}/latest/meta-data/`)));
      expect(error.message).toMatch(/metadata/);
    }
    // Listing the metadata address itself is the deliberate way in, in any spelling.
    const listed = createOutboundHttp({ timeoutMs: 300, allowedHosts: ['::ffff:169.254.169.254'] });
    const reached = await listed.fetch('http://169.254.169.254/').catch((e: Error) => e);
    expect(reached).not.toBeInstanceOf(OutboundBlockedError);
  });

  it('reaches an allow-listed address whatever spelling the resolver uses', async () => {
    const dns = tableResolver({ 'local.test': ['::ffff:127.0.0.1'] });
    const client = createOutboundHttp({ allowedHosts: ['127.0.0.1'], resolveHost: dns.resolveHost });
    expect(await (await client.fetch(`http://local.test:${server.port}/hello`)).text()).toBe('hello');
    expect((await client.get(`http://local.test:${server.port}/hello`)).text).toBe('hello');
    const viaRange = createOutboundHttp({ allowedHosts: ['127.0.0.0/8'], resolveHost: dns.resolveHost });
    expect((await viaRange.get(`http://local.test:${server.port}/hello`)).text).toBe('hello');
  });
});
