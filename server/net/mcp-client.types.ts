// What an MCP client pool offers (agents/mcp-client.ts implements it). Declared with the way out
// to other servers so the process's dependencies (deps.ts) can carry a pool without importing a feature.
export interface McpServerConfig {
  /** The tenant whose agent uses the server: clients, sessions and tool lists are never shared across tenants. */
  tenantId: string;
  name: string;
  url: string;
  headers?: Record<string, string>;
  allowed_tools?: string[];
  timeout_ms?: number;
}

export interface McpToolInfo {
  name: string;
  description: string | null;
  inputSchema: Record<string, unknown>;
}

export interface McpCallResult {
  isError: boolean;
  /** text parts joined, structuredContent JSON, or a short description of other parts */
  text: string;
  structured: unknown | null;
}

export interface McpClientPool {
  /** The server's tools (filtered by allowed_tools when given), cached per server (tenant + url + headers) for ttlMs. */
  listTools(server: McpServerConfig, options?: { signal?: AbortSignal }): Promise<McpToolInfo[]>;
  callTool(
    server: McpServerConfig,
    tool: string,
    args: Record<string, unknown>,
    options?: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<McpCallResult>;
  /** Closes every connected client. */
  close(): Promise<void>;
}
