import { AsyncResource } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { Logger } from 'pino';
import { applyMigrations, openOrm, type Orm } from '../db/orm.js';
import { WorkGate } from './common/work-gate.js';
import { createSqlPool } from '../db/sql-pool.js';
import { startProcessHeartbeat } from './runs/process-identity.js';
import { backfillVectors, enableVectorSupport } from './knowledge/pgvector.js';
import { migrateJobSchema, startWorker, type WorkerHandle } from '../worker/runner.js';
import type { AppConfig } from './config.js';
import type { AppDeps } from './deps.js';
import { closeWorkerPool } from './common/worker-pool.js';
import { stopOcrProcess } from './workflows/ocr.js';
import { preloadOpenAiSdk } from './llm/client-cache.js';
import { createLlmGateway } from './llm/llm-gateway.js';
import { startBreakerSync, type BreakerSync } from './llm/breaker-sync.js';
import { createLogger } from './logger.js';
import { createMailer } from './mail/mailer.js';
import { createLazyMcpPool, MCP_OUTBOUND_LIMITS } from './agents/mcp-pool.js';
import { createOutboundHttp } from './net/safe-http.js';
import { createAgentRunPort } from './agents/agent-run-port.js';
import type { RunPorts } from './runs/run-ports.js';
import { createWorkflowRunPort } from './workflows/workflow-run-port.js';
import { insertPlatformSettingIfAbsent, selectPlatformSetting } from './settings/store/platform-settings.js';
import { startTelemetry } from './observability/start-telemetry.js';
import { openDatabase as openDatabaseAt, type Database } from '../db/database.js';

export type { Database } from '../db/database.js';

/** DATABASE_URL when set, else the embedded server (started and given a `liya` database). */
export function openDatabase(config: AppConfig, log: Logger): Promise<Database> {
  return openDatabaseAt({ url: config.DATABASE_URL, dataDir: config.PG_DATA_DIR, port: config.PG_PORT, log: (m) => log.info(m) });
}

/** JWT_SECRET, or a secret generated once and kept in the database (shared by every process). */
export async function resolveJwtKey(orm: Orm, config: AppConfig): Promise<Uint8Array> {
  if (config.JWT_SECRET) return new TextEncoder().encode(config.JWT_SECRET);
  const em = orm.em.fork();
  // The first process to start wins; every process reads the same secret back.
  await insertPlatformSettingIfAbsent(em, 'jwt_secret', randomBytes(48).toString('base64url'));
  const secret = await selectPlatformSetting(em, 'jwt_secret');
  if (secret === undefined) throw new Error('the jwt_secret platform setting could not be read back');
  return new TextEncoder().encode(secret);
}

export interface Runtime {
  deps: AppDeps;
  /** The pool the job runner uses (graphile-worker wants its own `pg.Pool`). */
  jobPool: pg.Pool;
  /** What /health/ready reports as `engine` (default: the job schema exists). */
  setEngineCheck(check: () => boolean): void;
}

/**
 * Everything a server or a standalone worker needs on an open database: the ORM (migrated), the
 * hot-path SQL pool, the job pool and schema, and the AppDeps built from them. Each opened piece
 * pushes its own cleanup onto `cleanups` (run in reverse order).
 */
export async function openRuntime(config: AppConfig, log: Logger, url: string, cleanups: (() => Promise<unknown>)[]): Promise<Runtime> {
  // The migrator's own progress lines are plain text; "migrations applied" says it in the log format.
  const orm = await openOrm({ url, poolMax: config.DB_POOL_MAX, quiet: true });
  cleanups.push(() => orm.close(true));
  const migrating = applyMigrations(orm);

  const sql = createSqlPool(url, Math.max(2, Math.ceil(config.DB_POOL_MAX / 2)), log);
  cleanups.push(() => sql.end());

  const jobPool = new pg.Pool({ connectionString: url, max: Math.max(2, config.WORKER_CONCURRENCY + 2) });
  // Bound to boot's async context, as the SqlPool's: a connection's late failure names no run.
  jobPool.on('error', AsyncResource.bind((err: Error) => log.warn({ err }, 'job database pool error')));
  const jobConnectionError = AsyncResource.bind((err: Error) => log.warn({ err }, 'job database connection error'));
  jobPool.on('connect', (client) => client.on('error', jobConnectionError));
  cleanups.push(() => jobPool.end());
  // graphile-worker's schema (none of our migrations touches it) at the same time as ours: on a new
  // database each is a few hundred milliseconds of DDL.
  const [ours, jobs] = await Promise.allSettled([migrating, migrateJobSchema(jobPool, { log })]);
  if (ours.status === 'rejected') throw ours.reason;
  if (jobs.status === 'rejected') throw jobs.reason;
  if (ours.value.length) log.info({ applied: ours.value }, 'migrations applied');

  // Two independent round trips at once.
  const [pgvector, jwtKey] = await Promise.all([enableVectorSupport(sql, log), resolveJwtKey(orm, config)]);
  if (pgvector) {
    // Embeddings stored before pgvector was enabled are copied in the background.
    const stop = new AbortController();
    const copying = backfillVectors(sql, stop.signal)
      .then((copied) => copied && log.info({ copied }, 'embeddings copied into the pgvector column'))
      .catch((err: unknown) => log.warn({ err }, 'copying embeddings into the pgvector column failed; retried at the next start'));
    cleanups.push(async () => {
      stop.abort();
      await copying;
    });
  }

  let engineCheck = () => false;
  const outbound = createOutboundHttp({ allowedHosts: config.OUTBOUND_ALLOWED_HOSTS, timeoutMs: config.OUTBOUND_TIMEOUT_MS, maxBytes: config.OUTBOUND_MAX_BYTES });
  // MCP traffic has limits of its own (MCP_OUTBOUND_LIMITS): a tool answered as plain JSON sends
  // its head only when done, so each call is bounded by its own tool time limit, not the default.
  const mcpMaxBytes = Math.max(config.OUTBOUND_MAX_BYTES, MCP_OUTBOUND_LIMITS.maxBytes);
  const mcp = createLazyMcpPool(createOutboundHttp({ allowedHosts: config.OUTBOUND_ALLOWED_HOSTS, ...MCP_OUTBOUND_LIMITS, maxBytes: mcpMaxBytes }).fetch);
  cleanups.push(() => mcp.close());
  // Breakers are shared with every other process (started below, once the gateway that owns them exists).
  let breakerSync: BreakerSync | null = null;
  const deps: AppDeps = {
    config,
    orm,
    sql,
    log,
    jwtKey,
    mailer: createMailer(config.SMTP_URL, config.MAIL_FROM),
    llm: createLlmGateway({ config, log, onBreakerChange: (change) => breakerSync?.publish(change) }),
    pgvector,
    outbound,
    mcp,
    engineReady: () => engineCheck(),
    localRuns: null,
    runs: {} as RunPorts,
    deployGate: new WorkGate('deploy', {
      running: Math.max(1, Math.min(config.DEPLOY_CONCURRENCY, config.DB_POOL_MAX - 2)),
      waiting: 16,
      perKey: 2,
      perKeyPerMinute: 60,
    }),
  };
  breakerSync = startBreakerSync({ url, sql, health: deps.llm.health, log });
  const sync = breakerSync;
  cleanups.push(() => sync.close());
  // Agents run workflows and workflows run agents: each through the other's port, wired here.
  deps.runs.workflows = createWorkflowRunPort(deps);
  deps.runs.agents = createAgentRunPort(deps);
  // Metrics and tracing, when enabled (server/observability/start-telemetry.ts, one place for both):
  // before the worker runs anything and before the HTTP app is built, whose request hook depends on it.
  cleanups.push(await startTelemetry({ config, log, orm, sql, jobPool, breakers: () => deps.llm.breakers() }));
  // Every process that executes runs (API or `liya worker`) beats, so its runs are not taken from it.
  cleanups.push(await startProcessHeartbeat(sql, config.HEARTBEAT_MS, log));
  engineCheck = () => true;
  return { deps, jobPool, setEngineCheck: (check) => (engineCheck = check) };
}

export interface RunningServer {
  app: FastifyInstance;
  deps: AppDeps;
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface StartOptions {
  config: AppConfig;
  log?: Logger;
  /** Use this database instead of opening one (tests share one embedded server). */
  databaseUrl?: string;
  /** The database being opened already (server/main.ts starts it while this module loads). */
  database?: Promise<Database>;
}

/**
 * Boot: database -> migrations and job schema -> worker and HTTP app -> listen. `close()` undoes it
 * in reverse. The server is ready (answers /health/ready) only once all of it is done.
 */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const { config } = options;
  const log = options.log ?? createLogger(config);
  // The HTTP app's modules (fastify, the routers: a good part of the start's module loading) load
  // while the database starts and migrates. Loaded here, not at the top: `liya worker` opens the
  // same runtime and never needs them.
  const appModule = import('./http/app.js');
  appModule.catch(() => undefined); // a failure is thrown where it is awaited
  const db: Database = options.databaseUrl ? { url: options.databaseUrl, embedded: null } : await (options.database ?? openDatabase(config, log));
  const cleanups: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => log.error({ err }, 'shutdown step failed'));
  };
  if (db.embedded) cleanups.push(() => db.embedded!.stop());
  try {
    const runtime = await openRuntime(config, log, db.url, cleanups);
    const { deps, jobPool } = runtime;
    let worker: WorkerHandle | null = null;
    runtime.setEngineCheck(() => (worker ? worker.isRunning() : true));
    // The job runner starts (round trips to the database) while the HTTP app is built (CPU). The
    // app reads what the runner sets in deps (localRuns) when a request comes, not when it is built.
    const [started, built] = await Promise.allSettled([
      config.WORKER ? startWorker(deps, jobPool) : Promise.resolve(null),
      appModule.then(({ buildApp }) => buildApp(deps)),
    ]);
    // After app.close() and the job runner's stop (cleanups run in reverse): the requests and jobs
    // under way finish their pool tasks first, and none starts a new pool after it closed.
    cleanups.push(() => closeWorkerPool());
    if (started.status === 'fulfilled' && started.value) {
      worker = started.value;
      cleanups.push(() => worker!.stop());
    }

    cleanups.push(async () => stopOcrProcess());
    if (built.status === 'fulfilled') cleanups.push(() => built.value.close());
    if (started.status === 'rejected') throw started.reason;
    if (built.status === 'rejected') throw built.reason;
    const app = built.value;
    await app.listen({ port: config.PORT, host: config.HOST });
    // Loaded after the start instead of during it; before the first model call, most likely.
    preloadOpenAiSdk();
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.PORT;
    const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
    return { app, deps, url: `http://${host}:${port}`, port, close };
  } catch (err) {
    await close();
    throw err;
  }
}
