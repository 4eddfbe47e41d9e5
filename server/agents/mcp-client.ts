// Agents' tools on Model Context Protocol servers (Streamable HTTP), through the official SDK client.
// One connected client per tenant and server is kept and reused: the initialize handshake costs a
// round trip, and no tenant may share another's session or see its tool list.
// All HTTP goes through the given fetch (the SSRF-safe one in production, which caps every body).
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { OutboundLimitError } from '../net/limited-body.js';
import { OutboundBlockedError, type OutboundHttp } from '../net/safe-http.js';
import type { McpCallResult, McpClientPool, McpServerConfig, McpToolInfo } from '../net/mcp-client.types.js';

export type { McpClientPool, McpServerConfig } from '../net/mcp-client.types.js';

export interface McpClientPoolOptions {
  fetch: OutboundHttp['fetch'];
  /** How long a tool list is cached and an unused client kept open (default 5 minutes). */
  ttlMs?: number;
  /** Time limit of connecting and of each request when neither the call nor the server sets one (default 10 s). */
  timeoutMs?: number;
  /** for tests; default Date.now */
  now?: () => number;
}

const CLIENT_INFO = { name: 'liya', version: '0.1.0' };
// A server paging forever must not keep an agent run waiting.
const MAX_LIST_PAGES = 20;
const NETWORK_ERROR_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET']);
// Resuming a request's event stream (GET with Last-Event-ID) is allowed this often per client: a
// server that keeps closing its streams cannot keep us reconnecting.
const MAX_RESUMES_PER_MINUTE = 10;
// Why a client was closed under its requests: an event of its streams went past the byte cap.
const overflowedClients = new WeakMap<Client, OutboundLimitError>();

interface Entry {
  key: string;
  /** Shared by concurrent first uses, so one server sees one handshake. */
  client: Promise<Client> | null;
  /** The client `client` resolved to, to tell whether a failing client is still the current one. */
  current: Client | null;
  tools: { expiresAt: number; list: Promise<McpToolInfo[]> } | null;
  active: number;
  idleTimer: NodeJS.Timeout | null;
}

/** A pool of MCP clients, one per tenant and server (url + headers), closed after ttlMs unused. */
export function createMcpClientPool(options: McpClientPoolOptions): McpClientPool {
  const ttlMs = options.ttlMs ?? 5 * 60_000;
  const defaultTimeoutMs = options.timeoutMs ?? 10_000;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();

  function entryFor(server: McpServerConfig): Entry {
    const key = serverKey(server);
    let entry = entries.get(key);
    if (!entry) {
      entry = { key, client: null, current: null, tools: null, active: 0, idleTimer: null };
      entries.set(key, entry);
    }
    return entry;
  }

  function connect(entry: Entry, server: McpServerConfig): Promise<Client> {
    if (entry.client) return entry.client;
    const pending = openClient(server, options.fetch, server.timeout_ms ?? defaultTimeoutMs);
    entry.client = pending;
    pending.then(
      (client) => {
        if (entry.client !== pending) return void client.close().catch(() => undefined);
        entry.current = client;
        // The SDK closes a client whose transport ended; the next use connects afresh.
        client.onclose = () => {
          if (entry.current === client) forget(entry);
        };
      },
      () => {
        if (entry.client === pending) forget(entry);
      },
    );
    return pending;
  }

  function forget(entry: Entry): void {
    entry.client = null;
    entry.current = null;
  }

  function scheduleIdleClose(entry: Entry): void {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = setTimeout(() => {
      if (entry.active > 0 || entries.get(entry.key) !== entry) return;
      entries.delete(entry.key);
      void closeEntry(entry);
    }, ttlMs);
    entry.idleTimer.unref();
  }

  async function withClient<T>(
    server: McpServerConfig,
    action: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    run: (client: Client) => Promise<T>,
  ): Promise<T> {
    const entry = entryFor(server);
    entry.active++;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    try {
      for (let attempt = 1; ; attempt++) {
        let client: Client;
        try {
          client = await abortable(connect(entry, server), signal);
        } catch (error) {
          throw describeFailure(error, server, action, server.timeout_ms ?? defaultTimeoutMs, signal);
        }
        try {
          return await run(client);
        } catch (error) {
          // Closed because the server broke a limit: a fresh client would fare no better.
          const overflow = overflowedClients.get(client);
          if (overflow) throw describeFailure(overflow, server, action, timeoutMs, signal);
          // A stale connection (server restarted, session expired, socket reset): one fresh try.
          if (attempt === 1 && !signal?.aborted && isConnectionError(error)) {
            if (entry.current === client) forget(entry);
            void client.close().catch(() => undefined);
            continue;
          }
          throw describeFailure(error, server, action, timeoutMs, signal);
        }
      }
    } finally {
      entry.active--;
      if (entry.active === 0) scheduleIdleClose(entry);
    }
  }

  function fetchToolList(server: McpServerConfig): Promise<McpToolInfo[]> {
    const timeout = server.timeout_ms ?? defaultTimeoutMs;
    return withClient(server, 'listing tools', timeout, undefined, async (client) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await client.listTools(cursor ? { cursor } : undefined, { timeout });
        for (const tool of result.tools) {
          tools.push({ name: tool.name, description: tool.description ?? null, inputSchema: tool.inputSchema as Record<string, unknown> });
        }
        cursor = result.nextCursor;
        if (!cursor) break;
      }
      return tools;
    });
  }

  return {
    async listTools(server, listOptions = {}) {
      const entry = entryFor(server);
      if (!entry.tools || entry.tools.expiresAt <= now()) {
        // No caller's signal inside: concurrent callers share this listing.
        const listing = { expiresAt: now() + ttlMs, list: fetchToolList(server) };
        entry.tools = listing;
        listing.list.catch(() => {
          if (entry.tools === listing) entry.tools = null;
        });
      }
      const tools = await abortable(entry.tools.list, listOptions.signal);
      const allowed = server.allowed_tools;
      return allowed ? tools.filter((tool) => allowed.includes(tool.name)) : tools;
    },

    async callTool(server, tool, args, callOptions = {}) {
      if (server.allowed_tools && !server.allowed_tools.includes(tool)) {
        throw new Error(`MCP server "${server.name}": tool "${tool}" is not among its allowed tools`);
      }
      const timeout = callOptions.timeoutMs ?? server.timeout_ms ?? defaultTimeoutMs;
      const signal = callOptions.signal;
      const result = await withClient(server, `calling tool "${tool}"`, timeout, signal, (client) =>
        client.callTool({ name: tool, arguments: args }, undefined, { timeout, signal }),
      );
      return toCallResult(result);
    },

    async close() {
      const all = [...entries.values()];
      entries.clear();
      await Promise.all(all.map(closeEntry));
    },
  };
}

async function openClient(server: McpServerConfig, fetch: OutboundHttp['fetch'], timeoutMs: number): Promise<Client> {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  // The SDK only reports a broken event stream and leaves its request waiting for its time limit;
  // closing the client ends every request of it now, with the cap as the reason.
  const onOverflow = (error: OutboundLimitError) => {
    if (!overflowedClients.has(client)) overflowedClients.set(client, error);
    void client.close().catch(() => undefined);
  };
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: guardFetch(fetch, onOverflow), requestInit: { headers: server.headers ?? {} } });
  try {
    // On failure the SDK closes the client itself.
    await client.connect(transport, { timeout: timeoutMs });
  } catch (error) {
    throw overflowedClients.get(client) ?? error;
  }
  return client;
}

/**
 * The transport's fetch, narrowed. The notifications stream (a GET the server may hold open for
 * ever) is answered 405 without asking the server, which the SDK takes as "no such stream": we use
 * no server notifications (tool lists are re-read after ttlMs). Resuming a request's own stream
 * (GET with Last-Event-ID) goes through, a few times a minute. An event stream whose event passes
 * the byte cap reports it to `onOverflow`.
 */
function guardFetch(fetch: OutboundHttp['fetch'], onOverflow: (error: OutboundLimitError) => void): OutboundHttp['fetch'] {
  let windowStart = 0;
  let resumes = 0;
  return async (input, init) => {
    if ((init?.method ?? 'GET').toUpperCase() === 'GET') {
      const resuming = new Headers(init?.headers).has('last-event-id');
      if (Date.now() - windowStart > 60_000) [windowStart, resumes] = [Date.now(), 0];
      if (!resuming || ++resumes > MAX_RESUMES_PER_MINUTE) return new Response(null, { status: 405, statusText: 'Method Not Allowed' });
    }
    const response = await fetch(input, init);
    const isStream = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
    return response.body && isStream ? watchEventStream(response, onOverflow) : response;
  };
}

function watchEventStream(response: Response, onOverflow: (error: OutboundLimitError) => void): Response {
  const reader = response.body!.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          if (error instanceof OutboundLimitError && error.limit === 'event_bytes') onOverflow(error);
          controller.error(error);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  const watched = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  // Constructed responses have an empty url; the SDK resolves redirects against it.
  Object.defineProperties(watched, { url: { value: response.url }, redirected: { value: response.redirected } });
  return watched;
}

async function closeEntry(entry: Entry): Promise<void> {
  if (entry.idleTimer) clearTimeout(entry.idleTimer);
  const pending = entry.client;
  entry.client = null;
  entry.current = null;
  entry.tools = null;
  await pending?.then((client) => client.close()).catch(() => undefined);
}

// Header names are case-insensitive; values are hashed, never kept readable in the key. The tenant
// is part of it: two tenants configuring the same server never share a client, session or tool list.
function serverKey(server: McpServerConfig): string {
  if (!server.tenantId) throw new Error(`MCP server "${server.name}": no tenant given`);
  const headers = Object.entries(server.headers ?? {})
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify([server.tenantId, server.url, headers])).digest('hex');
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function isConnectionError(error: unknown): boolean {
  if (error instanceof OutboundBlockedError) return false;
  // Other McpErrors are the server's answer (unknown tool, bad arguments) or our own time limit.
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  // 404: the server no longer knows the session (it restarted); 5xx: a proxy or the server failing.
  if (error instanceof StreamableHTTPError) return error.code === 404 || (error.code ?? 0) >= 500;
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return error.message === 'Not connected' || (typeof code === 'string' && NETWORK_ERROR_CODES.has(code));
}

function describeFailure(error: unknown, server: McpServerConfig, action: string, timeoutMs: number, signal?: AbortSignal): unknown {
  // The caller's own abort goes back as it came.
  if (signal?.aborted && error === signal.reason) return error;
  const prefix = `MCP server "${server.name}": ${action}`;
  let message: string;
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    message = `${prefix} timed out after ${timeoutMs} ms`;
  } else if (error instanceof OutboundBlockedError) {
    return new Error(`${prefix} refused: ${error.message}`, { cause: error });
  } else if (error instanceof StreamableHTTPError) {
    message = `${prefix} failed (HTTP ${error.code}): ${error.message}`;
  } else {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    const unreachable = typeof code === 'string' && NETWORK_ERROR_CODES.has(code) ? ' (server unreachable)' : '';
    message = `${prefix} failed${unreachable}: ${error instanceof Error ? error.message : String(error)}`;
  }
  // The cause stays off: loggers print causes, and a server may echo what it was sent.
  return new Error(redactHeaders(message, server.headers));
}

// Header values are often credentials; a server echoing one back must not put it in our logs.
function redactHeaders(message: string, headers: Record<string, string> | undefined): string {
  let result = message;
  for (const value of Object.values(headers ?? {})) {
    const secrets = [value, ...value.split(/\s+/)].filter((part) => part.length >= 6);
    for (const secret of secrets) result = result.split(secret).join('[redacted]');
  }
  return result;
}

type ContentPart = { type: string; text?: unknown; mimeType?: unknown; data?: unknown; uri?: unknown; resource?: { uri?: unknown; text?: unknown } };

function describePart(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return String(part.text ?? '');
    case 'image':
    case 'audio': {
      const bytes = typeof part.data === 'string' ? Math.floor((part.data.length * 3) / 4) : 0;
      return `[${part.type} ${String(part.mimeType ?? '')}, ${bytes} bytes]`;
    }
    case 'resource':
      return typeof part.resource?.text === 'string' ? part.resource.text : `[resource ${String(part.resource?.uri ?? '')}]`;
    case 'resource_link':
      return `[resource link ${String(part.uri ?? '')}]`;
    default:
      return `[${part.type} content]`;
  }
}

function toCallResult(result: Record<string, unknown>): McpCallResult {
  const parts = (Array.isArray(result.content) ? result.content : []) as ContentPart[];
  const structured = result.structuredContent ?? null;
  const hasText = parts.some((part) => part.type === 'text');
  const text = hasText || structured === null ? parts.map(describePart).join('\n') : JSON.stringify(structured);
  return { isError: result.isError === true, text, structured };
}
