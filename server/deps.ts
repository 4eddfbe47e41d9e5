import type { Logger } from 'pino';
import type { Orm } from '../db/orm.js';
import type { SqlPool } from '../db/sql-pool.js';
import type { AppConfig } from './config.js';
import type { LlmGateway } from './llm/llm.types.js';
import type { Mailer } from './mail/mailer.js';
import type { McpClientPool } from './net/mcp-client.types.js';
import type { OutboundHttp } from './net/safe-http.js';
import type { LocalRunQueuePort, RunPorts } from './runs/run-ports.js';
import type { WorkGate } from './common/work-gate.js';

/** Everything a request or job needs from the process; built once in main, passed down. */
export interface AppDeps {
  config: AppConfig;
  orm: Orm;
  /** Plain parameterised queries for the hot paths (authentication, the run engines' statements). */
  sql: SqlPool;
  log: Logger;
  /** HS256 key for dashboard JWTs. */
  jwtKey: Uint8Array;
  mailer: Mailer;
  /** Every model call goes through it (routing, structured output, usage metering). */
  llm: LlmGateway;
  /** Whether the database has pgvector and document_chunks.embedding_vector is kept (knowledge/pgvector.ts). */
  pgvector: boolean;
  /** The one way out to other servers: SSRF-safe (private addresses refused unless allowed). */
  outbound: OutboundHttp;
  /** Connections to agents' MCP servers (through `outbound`). */
  mcp: McpClientPool;
  /** Whether the job runner in this process (or the database's job schema) is ready. */
  engineReady: () => boolean;
  /** Running a workflow from an agent and an agent from a workflow (wired in boot.ts). */
  runs: RunPorts;
  /** Set while this process runs the job runner: queued workflow runs it accepts, it executes itself. */
  localRuns: LocalRunQueuePort | null;
  /** Admission of deploys as code (plans, deployments, publishes): their own share of the process and the pool. */
  deployGate: WorkGate;
}
