// The MCP client (and the SDK behind it) is loaded on the first agent run that has an MCP
// server: a platform whose agents use none does not carry it in memory.
import type { OutboundHttp } from '../net/safe-http.js';
import type { McpClientPool } from './mcp-client.js';

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
