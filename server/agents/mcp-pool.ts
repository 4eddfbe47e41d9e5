// The MCP client (and the SDK behind it) is loaded on the first agent run that has an MCP
// server: a platform whose agents use none does not carry it in memory.
import type { OutboundHttp } from '../net/safe-http.js';
import type { McpClientPool } from './mcp-client.js';

/**
 * Limits of the outbound client MCP traffic goes through (boot.ts creates it), apart from the one
 * other calls use: a server answering a tool call as plain JSON sends its head only when the tool is
 * done, so the time limit is the longest per-call limit an agent may set (120 s) and a margin. It
 * covers head and body, and an event stream as a whole. One message (a JSON body, or one event of
 * a stream) may take 4 MiB, the largest step output of any plan, or OUTBOUND_MAX_BYTES if larger.
 */
export const MCP_OUTBOUND_LIMITS = { timeoutMs: 130_000, streamTimeoutMs: 130_000, maxBytes: 4 * 1024 * 1024 } as const;

export function createLazyMcpPool(fetch: OutboundHttp['fetch']): McpClientPool {
  let pool: Promise<McpClientPool> | null = null;
  const get = () => {
    pool ??= import('./mcp-client.js').then((m) => m.createMcpClientPool({ fetch }));
    return pool;
  };
  return {
    listTools: async (server, options) => (await get()).listTools(server, options),
    callTool: async (server, tool, args, options) => (await get()).callTool(server, tool, args, options),
    close: async () => {
      if (pool) await (await pool).close();
    },
  };
}
