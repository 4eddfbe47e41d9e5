// MCP server headers often carry credentials: they are stored encrypted, shown masked, and a
// masked value sent back on update keeps what was stored.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { decryptSecret, encryptSecret, resolveEncryptionKey } from '../llm/secret-box.js';
import { MASKED_HEADER_VALUE, type ToolsConfig } from './agents.schemas.js';

const ENCRYPTED_PREFIX = 'v1:';
const headerContext = (tenantId: string, agentKey: string, server: string, header: string) =>
  `agent-mcp-header:${tenantId}:${agentKey}:${server}:${header.toLowerCase()}`;

/** The tools config to store: header values encrypted; masked ones replaced by the stored value. */
export async function protectMcpHeaders(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, config: ToolsConfig, previous: ToolsConfig | null): Promise<ToolsConfig> {
  if (!config.mcp_servers?.some((s) => s.headers && Object.keys(s.headers).length)) return config;
  const key = await resolveEncryptionKey(em, deps.config);
  const servers = config.mcp_servers.map((server) => {
    if (!server.headers) return server;
    // A stored secret is only kept for the same server at the same URL: pointing a server at a new
    // address must not send it the old credentials.
    const prior = previous?.mcp_servers?.find((s) => s.name === server.name);
    const before = prior && prior.url === server.url ? (prior.headers ?? {}) : {};
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(server.headers)) {
      if (value === MASKED_HEADER_VALUE) {
        // Only a value stored for this very server and header can be kept.
        const stored = Object.entries(before).find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];
        if (stored) headers[name] = stored;
        continue;
      }
      headers[name] = encryptSecret(key, value, headerContext(tenantId, agentKey, server.name, name));
    }
    return { ...server, headers };
  });
  return { ...config, mcp_servers: servers };
}

/** The headers to send to one server, decrypted; values that no longer decrypt are left out. */
export async function revealMcpHeaders(em: EntityManager, deps: AppDeps, tenantId: string, agentKey: string, server: { name: string; headers?: Record<string, string> }): Promise<Record<string, string>> {
  if (!server.headers || !Object.keys(server.headers).length) return {};
  const key = await resolveEncryptionKey(em, deps.config);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(server.headers)) {
    if (!value.startsWith(ENCRYPTED_PREFIX)) continue;
    const plain = decryptSecret(key, value, headerContext(tenantId, agentKey, server.name, name));
    if (plain !== null) out[name] = plain;
  }
  return out;
}
