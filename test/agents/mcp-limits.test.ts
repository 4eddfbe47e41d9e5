// MCP servers that abuse the platform: an answer far larger than any message should be, an event
// stream whose event never ends. The agent run goes on without that server's tools, the server
// stays responsive and small, and another tenant's run completes meanwhile. Also: MCP clients are
// never shared between tenants.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMcpClientPool } from '../../server/agents/mcp-client.js';
import { createOutboundHttp } from '../../server/net/safe-http.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring, expectAnsweredDuring, rssMiB, watchRss } from '../support/health-watch.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { startTestServer, type TestServer } from '../support/server.js';

const MiB = 1024 * 1024;

interface AbusiveMcpServer {
  url: string;
  /** Body bytes written to clients so far. */
  bytesSent(): number;
  /** initialize requests received so far. */
  initializeRequests(): number;
  /** Resolves when the server next writes body bytes to a client. */
  nextWrite(): Promise<void>;
  close(): Promise<void>;
}

// Writes what `chunks` yields while the client listens, waiting whenever the socket is full; nothing
// is allocated beyond one chunk.
async function stream(res: http.ServerResponse, chunks: Iterable<string>, sent: { bytes: number; onWrite: (() => void)[] }): Promise<void> {
  for (const chunk of chunks) {
    if (res.destroyed) return;
    sent.bytes += Buffer.byteLength(chunk);
    for (const wake of sent.onWrite.splice(0)) wake();
    if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
  }
  if (!res.destroyed) res.end();
}

function* bigJson(head: string, padding: number): Generator<string> {
  yield head;
  const chunk = 'x'.repeat(64 * 1024);
  for (let sent = 0; sent < padding; sent += chunk.length) yield chunk;
  yield '"}}';
}

function* forever(): Generator<string> {
  const chunk = 'x'.repeat(64 * 1024);
  for (;;) yield chunk;
}

/**
 * /big-json answers `initialize` with a 400 MB JSON body; /endless-event with an SSE event that
 * never ends; /endless-call answers `initialize` and `tools/list` properly, and a tool call with an
 * SSE event that never ends.
 */
async function startAbusiveMcpServer(): Promise<AbusiveMcpServer> {
  const sent = { bytes: 0, onWrite: [] as (() => void)[] };
  let initializeRequests = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { id?: number; method?: string };
    if (message.method === 'initialize') initializeRequests++;
    if (req.url === '/endless-call' && message.method !== 'tools/call') {
      if (message.id === undefined) return void res.writeHead(202).end();
      const result =
        message.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'abusive', version: '1' } }
          : { tools: [{ name: 'spin', inputSchema: { type: 'object' } }] };
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    }
    if (req.url !== '/endless-call' && message.method !== 'initialize') return void res.writeHead(202).end();
    const head = `{"jsonrpc":"2.0","id":${message.id},"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"abusive","version":"1"},"padding":"`;
    if (req.url === '/big-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      void stream(res, bigJson(head, 400 * MiB), sent);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: message\ndata: ${head}`);
    void stream(res, forever(), sent);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytesSent: () => sent.bytes,
    initializeRequests: () => initializeRequests,
    nextWrite: () => new Promise<void>((resolve) => sent.onWrite.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let t: TestServer;
let fake: FakeLlm;
let calc: TestMcpServer;
let abusive: AbusiveMcpServer;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const run = (s: SignedUpTenant, agentKey: string, message: string) => t.api.post(`/v1/agents/${agentKey}/run`, { input: { message } }, key(s));
const offeredTools = (req: FakeRequest): string[] => (req.body.tools ?? []).map((x: { function: { name: string } }) => x.function.name);
const userText = (req: FakeRequest) => JSON.stringify(req.body.messages);

async function createAgent(s: SignedUpTenant, agentKey: string, toolsConfig: Record<string, unknown>) {
  const res = await t.api.post('/v1/agents', { name: agentKey, goal: 'Use tools', agent_key: agentKey, tools_config: toolsConfig }, key(s));
  expect(res.status, res.text).toBe(201);
  expect((await t.api.post(`/v1/agents/${agentKey}/deploy`, undefined, key(s))).status).toBe(200);
}

beforeAll(async () => {
  fake = await startFakeLlm();
  calc = await startMcpServer();
  abusive = await startAbusiveMcpServer();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Abuser' });
  b = await signupTenant(t.api, { companyName: 'Bystander' });
  await createAgent(b, 'calc-user', { mcp_servers: [{ name: 'calc', url: calc.url, allowed_tools: ['add'] }] });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await calc?.close();
  await abusive?.close();
});
afterEach(() => fake.reset());

/** The bystander's model adds two numbers with its MCP tool; every other request gets a plain answer. */
function scriptModel() {
  fake.script((req) => {
    const hasToolResult = (req.body.messages as { role: string }[]).some((m) => m.role === 'tool');
    if (offeredTools(req).includes('calc__add') && !hasToolResult) return { tool_calls: [{ name: 'calc__add', arguments: { a: 20, b: 22 } }] };
    return hasToolResult ? 'The sum is 42.' : 'Answered without tools.';
  });
}

describe('MCP answers past their limits', () => {
  const cases = [
    { path: '/big-json', name: 'a 400 MB answer to initialize', cap: /response body exceeded \d+ bytes/ },
    { path: '/endless-event', name: 'an event stream whose event never ends', cap: /event exceeded \d+ bytes/ },
  ];
  for (const { path, name, cap } of cases) {
    it(`${name}: the server is left out naming the cap, the process stays small and live, another tenant's run completes`, async () => {
      const agentKey = `abused${path.replace(/\W/g, '-')}`;
      await createAgent(a, agentKey, { mcp_servers: [{ name: 'evil', url: `${abusive.url}${path}` }] });
      scriptModel();
      const sentBefore = abusive.bytesSent();
      const rssBefore = rssMiB();
      const rss = watchRss();
      // The bystander's run starts once the abusive server is streaming, so both are in flight at once.
      // Probes every 10 ms: the abuse is cut after a few MiB, so its span holds a handful of them.
      const watched = await answeredDuring(
        t.url,
        () => Promise.all([run(a, agentKey, 'abuse please'), abusive.nextWrite().then(() => run(b, 'calc-user', 'add 20 and 22'))]),
        10,
      );
      const [abused, bystander] = watched.result;
      const peak = rss.stop();
      const sentMiB = Math.round((abusive.bytesSent() - sentBefore) / MiB);
      console.log(`[mcp-limits] ${path}: ${watched.answeredDuring} health answers during the abuse (${watched.failures} failures), RSS ${rssBefore} -> peak ${peak} MiB, MCP server sent ${sentMiB} MiB`);

      expect(abused.status, abused.text).toBe(200);
      expect(abused.body.data.status).toBe('completed');
      const detail = await t.api.get(`/v1/agents/${agentKey}/runs/${abused.body.data.run_id}`, key(a));
      const problem = detail.body.data.run.trace.find((s: { name: string }) => s.name === 'mcp:evil');
      console.log(`[mcp-limits] ${path}: trace says "${problem?.error}"`);
      expect(problem?.error).toMatch(/not offered: MCP server "evil"/);
      expect(problem?.error).toMatch(cap);
      const abusedRequests = fake.chatRequests().filter((req) => userText(req).includes('abuse please'));
      expect(abusedRequests.length).toBeGreaterThan(0);
      for (const req of abusedRequests) expect(offeredTools(req).filter((n) => n.startsWith('evil'))).toEqual([]);

      expect(bystander.body.data).toMatchObject({ status: 'completed', output: 'The sum is 42.' });
      expectAnsweredDuring(watched);
      expect(peak - rssBefore).toBeLessThan(150);
      // The connection was dropped early, not read to its end.
      expect(sentMiB).toBeLessThan(100);
    }, 180_000);
  }
});

describe('MCP clients per tenant', () => {
  it('two tenants with one MCP URL and the same headers get separate sessions and tool lists', async () => {
    const shared = await startMcpServer();
    try {
      const server = { name: 'shared', url: shared.url, headers: { 'x-team': 'same-value-for-both' } };
      await createAgent(a, 'shared-mcp', { mcp_servers: [server] });
      await createAgent(b, 'shared-mcp', { mcp_servers: [server] });
      fake.script(() => 'ok');
      expect((await run(a, 'shared-mcp', 'hello')).body.data.status).toBe('completed');
      expect((await run(b, 'shared-mcp', 'hello')).body.data.status).toBe('completed');
      expect(shared.initializeRequests()).toBe(2);
      expect(shared.listRequests()).toBe(2);
      // Within one tenant the client and its tool list are still reused.
      expect((await run(a, 'shared-mcp', 'again')).body.data.status).toBe('completed');
      expect(shared.initializeRequests()).toBe(2);
      expect(shared.listRequests()).toBe(2);
    } finally {
      await shared.close();
    }
  });
});

describe('MCP client pool: limits of an established client', () => {
  it('fails a tool call whose event never ends at once, naming the cap, without a retry', async () => {
    const pool = createMcpClientPool({ fetch: createOutboundHttp({ allowedHosts: ['127.0.0.1'], maxBytes: 64 * 1024 }).fetch, timeoutMs: 20_000 });
    try {
      const server = { tenantId: 'tenant-1', name: 'spinner', url: `${abusive.url}/endless-call` };
      expect((await pool.listTools(server)).map((tool) => tool.name)).toEqual(['spin']);
      const before = abusive.initializeRequests();
      const sentBefore = abusive.bytesSent();
      const error = (await pool.callTool(server, 'spin', {}).catch((e: Error) => e)) as Error;
      // Failed by the cap, not by the 20 s time limit: the error names the cap, and the stream was
      // dropped after a few socket buffers, not read on for the time limit.
      expect(error.message).toMatch(/MCP server "spinner": calling tool "spin" failed: .*event exceeded 65536 bytes/);
      expect(error.message).not.toMatch(/timed out|time limit/i);
      expect(abusive.bytesSent() - sentBefore).toBeLessThan(32 * MiB);
      expect(abusive.initializeRequests()).toBe(before);
    } finally {
      await pool.close();
    }
  });

  it('never opens the notifications stream a server could hold for ever', async () => {
    const methods: string[] = [];
    const inner = createOutboundHttp({ allowedHosts: ['127.0.0.1'] }).fetch;
    const pool = createMcpClientPool({
      fetch: (input, init) => {
        methods.push(init?.method ?? 'GET');
        return inner(input, init);
      },
    });
    try {
      const server = { tenantId: 'tenant-1', name: 'calc', url: calc.url };
      expect((await pool.callTool(server, 'add', { a: 1, b: 2 })).text).toBe('3');
      // A notifications stream would be asked for right after initialization: a later call's whole
      // round trip comes after that request.
      expect((await pool.callTool(server, 'add', { a: 2, b: 2 })).text).toBe('4');
      expect(methods.length).toBeGreaterThan(0);
      expect(methods.filter((m) => m.toUpperCase() === 'GET')).toEqual([]);
    } finally {
      await pool.close();
    }
  });

  it('keeps clients of different tenants apart in the pool itself', async () => {
    const shared = await startMcpServer();
    const pool = createMcpClientPool({ fetch: createOutboundHttp({ allowedHosts: ['127.0.0.1'] }).fetch });
    try {
      const server = { name: 'shared', url: shared.url, headers: { 'x-team': 'same' } };
      await pool.listTools({ ...server, tenantId: 'tenant-1' });
      await pool.listTools({ ...server, tenantId: 'tenant-2' });
      await pool.listTools({ ...server, tenantId: 'tenant-1' });
      expect(shared.initializeRequests()).toBe(2);
      expect(shared.listRequests()).toBe(2);
      await expect(pool.listTools({ ...server, tenantId: '' })).rejects.toThrow(/no tenant/);
    } finally {
      await pool.close();
      await shared.close();
    }
  });
});
