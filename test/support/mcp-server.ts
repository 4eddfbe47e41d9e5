// A real MCP server (the official SDK's server side over Streamable HTTP) for the client tests.
// Stateless: every HTTP request gets a fresh server and transport, as the SDK requires in that mode.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface TestMcpServer {
  url: string;
  /** Every tool call received, in order. */
  calls: { name: string; args: unknown }[];
  /** How many tools/list requests reached the server. */
  listRequests(): number;
  /** How many initialize requests (new client sessions) reached the server. */
  initializeRequests(): number;
  close(): Promise<void>;
}

export interface TestMcpServerOptions {
  /** Requests without this header (name, value) are answered with HTTP 401. */
  requireHeader?: [string, string];
}

function createServer(calls: TestMcpServer['calls'], timers: Set<NodeJS.Timeout>): McpServer {
  const server = new McpServer({ name: 'liya-test-mcp', version: '1.0.0' });
  const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async (args) => {
    calls.push({ name: 'add', args });
    return text(String(args.a + args.b));
  });
  server.registerTool('echo', { description: 'Returns the text it is given', inputSchema: { text: z.string() } }, async (args) => {
    calls.push({ name: 'echo', args });
    return text(args.text);
  });
  server.registerTool('fail', { description: 'Always reports an error' }, async () => {
    calls.push({ name: 'fail', args: {} });
    return { ...text('tool failed on purpose'), isError: true };
  });
  server.registerTool('slow', { description: 'Answers after ms milliseconds', inputSchema: { ms: z.number() } }, async (args) => {
    calls.push({ name: 'slow', args });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, args.ms);
      timers.add(timer);
    });
    return text('done');
  });
  return server;
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

export async function startMcpServer(options: TestMcpServerOptions = {}): Promise<TestMcpServer> {
  const calls: TestMcpServer['calls'] = [];
  const timers = new Set<NodeJS.Timeout>();
  let listRequests = 0;
  let initializeRequests = 0;
  const httpServer = http.createServer(async (req, res) => {
    try {
      const [name, value] = options.requireHeader ?? [];
      if (name && req.headers[name.toLowerCase()] !== value) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
      // A stateless server offers no standalone SSE stream and no session to delete.
      if (req.method !== 'POST') {
        res.writeHead(405, { allow: 'POST' }).end();
        return;
      }
      const body = await readJson(req);
      const messages = Array.isArray(body) ? body : [body];
      listRequests += messages.filter((m) => (m as { method?: string } | null)?.method === 'tools/list').length;
      initializeRequests += messages.filter((m) => (m as { method?: string } | null)?.method === 'initialize').length;
      const server = createServer(calls, timers);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    listRequests: () => listRequests,
    initializeRequests: () => initializeRequests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
