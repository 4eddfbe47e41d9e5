import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpClientPool, type McpClientPool, type McpServerConfig } from '../../server/agents/mcp-client.js';
import { createOutboundHttp, type OutboundHttp } from '../../server/net/safe-http.js';
import { freePort } from '../support/free-port.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { waitFor } from '../support/wait-for.js';

const allowedFetch = createOutboundHttp({ allowedHosts: ['127.0.0.1'] }).fetch;

/** Wraps a fetch to see the JSON-RPC methods posted and to break the next POST like a dropped connection. */
function watchedFetch(inner: OutboundHttp['fetch']) {
  const methods: string[] = [];
  let breakNext = false;
  const fetch: OutboundHttp['fetch'] = async (input, init) => {
    if (init?.method === 'POST' && typeof init.body === 'string') {
      const method = (JSON.parse(init.body) as { method?: string }).method ?? 'response';
      if (breakNext && method !== 'initialize') {
        breakNext = false;
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      }
      methods.push(method);
    }
    return inner(input, init);
  };
  return { fetch, methods, breakNextPost: () => (breakNext = true) };
}

let server: TestMcpServer;
let pool: McpClientPool;
let config: McpServerConfig;
beforeAll(async () => {
  server = await startMcpServer();
  pool = createMcpClientPool({ fetch: allowedFetch });
  config = { tenantId: 'tenant-1', name: 'test', url: server.url };
});
afterAll(async () => {
  await pool.close();
  await server.close();
});

describe('MCP client pool', () => {
  it('lists the tools of a server, filtered by allowed_tools', async () => {
    const tools = await pool.listTools(config);
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'fail', 'slow']);
    const add = tools.find((t) => t.name === 'add')!;
    expect(add.description).toBe('Adds two numbers');
    expect(add.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } });
    const some = await pool.listTools({ ...config, allowed_tools: ['echo', 'add', 'missing'] });
    expect(some.map((t) => t.name).sort()).toEqual(['add', 'echo']);
  });

  it('calls tools and returns their text', async () => {
    expect(await pool.callTool(config, 'add', { a: 2, b: 3 })).toEqual({ isError: false, text: '5', structured: null });
    expect(await pool.callTool(config, 'echo', { text: 'héllo' })).toMatchObject({ isError: false, text: 'héllo' });
    expect(server.calls).toContainEqual({ name: 'add', args: { a: 2, b: 3 } });
  });

  it('returns a tool error as a result, not as an exception', async () => {
    expect(await pool.callTool(config, 'fail', {})).toEqual({ isError: true, text: 'tool failed on purpose', structured: null });
  });

  it('refuses a tool outside allowed_tools without calling the server', async () => {
    const before = server.calls.length;
    await expect(pool.callTool({ ...config, allowed_tools: ['add'] }, 'echo', { text: 'x' })).rejects.toThrow(/"echo" is not among its allowed tools/);
    expect(server.calls.length).toBe(before);
  });

  it('gives up on a slow tool after timeoutMs, naming the server, and stays usable', async () => {
    const error = await pool.callTool(config, 'slow', { ms: 5_000 }, { timeoutMs: 300 }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/MCP server "test": calling tool "slow" timed out after 300 ms/);
    expect((await pool.callTool(config, 'add', { a: 1, b: 1 })).text).toBe('2');
  });

  it('caches the tool list for ttlMs and shares one connection', async () => {
    let clock = 1_000_000;
    const own = await startMcpServer();
    const watched = watchedFetch(allowedFetch);
    const cached = createMcpClientPool({ fetch: watched.fetch, ttlMs: 60_000, now: () => clock });
    try {
      const target = { tenantId: 'tenant-1', name: 'cached', url: own.url };
      await Promise.all([cached.listTools(target), cached.listTools(target)]);
      await cached.listTools({ ...target, allowed_tools: ['add'] });
      expect(own.listRequests()).toBe(1);
      clock += 60_001;
      await cached.listTools(target);
      expect(own.listRequests()).toBe(2);
      expect(watched.methods.filter((m) => m === 'initialize')).toHaveLength(1);
    } finally {
      await cached.close();
      await own.close();
    }
  });

  it('reconnects once when the connection breaks under a call', async () => {
    const watched = watchedFetch(allowedFetch);
    const own = createMcpClientPool({ fetch: watched.fetch });
    try {
      expect((await own.callTool(config, 'add', { a: 1, b: 2 })).text).toBe('3');
      watched.breakNextPost();
      expect((await own.callTool(config, 'add', { a: 2, b: 2 })).text).toBe('4');
      expect(watched.methods.filter((m) => m === 'initialize')).toHaveLength(2);
    } finally {
      await own.close();
    }
  });

  it('closes a client left unused for ttlMs', async () => {
    // Closing a client aborts the signal its requests were sent with: that is what is waited for.
    const signals: AbortSignal[] = [];
    const watched = watchedFetch((input, init) => {
      if (init?.signal) signals.push(init.signal);
      return allowedFetch(input, init);
    });
    const own = createMcpClientPool({ fetch: watched.fetch, ttlMs: 100 });
    try {
      await own.callTool(config, 'add', { a: 1, b: 2 });
      expect(signals.length).toBeGreaterThan(0);
      await waitFor(() => signals.every((signal) => signal.aborted), 'the idle client to be closed');
      await own.callTool(config, 'add', { a: 1, b: 2 });
      expect(watched.methods.filter((m) => m === 'initialize')).toHaveLength(2);
    } finally {
      await own.close();
    }
  });
});

describe('MCP client pool: headers and reachability', () => {
  let guarded: TestMcpServer;
  beforeAll(async () => {
    guarded = await startMcpServer({ requireHeader: ['X-Api-Key', 'secret-key-123'] });
  });
  afterAll(() => guarded.close());

  it('sends the configured headers', async () => {
    const tools = await pool.listTools({ tenantId: 'tenant-1', name: 'guarded', url: guarded.url, headers: { 'X-Api-Key': 'secret-key-123' } });
    expect(tools.length).toBe(4);
    const result = await pool.callTool({ tenantId: 'tenant-1', name: 'guarded', url: guarded.url, headers: { 'X-Api-Key': 'secret-key-123' } }, 'echo', { text: 'in' });
    expect(result.text).toBe('in');
  });

  it('reports a refused header as an HTTP error without the header value', async () => {
    const error = (await pool.listTools({ tenantId: 'tenant-1', name: 'guarded', url: guarded.url, headers: { 'X-Api-Key': 'wrong-key-456' } }).catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(/MCP server "guarded": listing tools failed \(HTTP 401\)/);
    expect(error.message).not.toContain('wrong-key-456');
  });

  it('is refused by the SSRF rules when 127.0.0.1 is not allowed', async () => {
    const strict = createMcpClientPool({ fetch: createOutboundHttp().fetch });
    try {
      const before = server.listRequests();
      const error = (await strict.listTools({ tenantId: 'tenant-1', name: 'local', url: server.url }).catch((e: Error) => e)) as Error;
      expect(error.message).toMatch(/MCP server "local": listing tools refused: Outbound request to 127\.0\.0\.1:\d+ refused/);
      await expect(strict.callTool({ tenantId: 'tenant-1', name: 'local', url: server.url }, 'add', { a: 1, b: 1 })).rejects.toThrow(/MCP server "local".*refused/);
      expect(server.listRequests()).toBe(before);
    } finally {
      await strict.close();
    }
  });

  it('names the server when it cannot be reached', async () => {
    const url = `http://127.0.0.1:${await freePort()}/mcp`;
    await expect(pool.listTools({ tenantId: 'tenant-1', name: 'down', url })).rejects.toThrow(/MCP server "down": listing tools failed \(server unreachable\).*ECONNREFUSED/);
    await expect(pool.callTool({ tenantId: 'tenant-1', name: 'down', url }, 'add', { a: 1, b: 1 })).rejects.toThrow(/MCP server "down"/);
  });
});
