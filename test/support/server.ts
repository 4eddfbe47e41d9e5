// Starts a real server (real HTTP on port 0, real PostgreSQL) on a fresh database cloned from the
// migrated template. Every test file gets its own database, so files run in parallel.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { startServer, type RunningServer } from '../../server/boot.js';
import { loadConfig } from '../../server/config.js';
import { createClient, type ApiClient } from './client.js';

export const ADMIN_SECRET = 'test-admin-secret-0123456789';
export const JWT_SECRET = 'test-jwt-secret-0123456789abcdefghijklmnopqrstuvwxyz';

export interface TestServer {
  server: RunningServer;
  url: string;
  databaseUrl: string;
  api: ApiClient;
  /** A direct connection to the test database, for assertions on stored rows. */
  sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

function withDatabase(url: string, database: string) {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function createTestDatabase(): Promise<string> {
  const adminUrl = inject('pgAdminUrl');
  const name = `liya_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name} template ${inject('pgTemplate')}`);
  } finally {
    await client.end();
  }
  return withDatabase(adminUrl, name);
}

export interface TestServerOptions {
  /** Reuse this database instead of cloning a fresh one. */
  databaseUrl?: string;
}

export async function startTestServer(env: Record<string, string> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const databaseUrl = options.databaseUrl ?? (await createTestDatabase());
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ADMIN_SECRET,
    JWT_SECRET,
    WORKER_CONCURRENCY: '2',
    DB_POOL_MAX: '5',
    ...env,
  });
  const server = await startServer({ config, databaseUrl, log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  pool.on('error', () => undefined);
  return {
    server,
    url: server.url,
    databaseUrl,
    api: createClient(server.url),
    sql: async (text, params = []) => (await pool.query(text, params)).rows,
    async close() {
      await pool.end();
      await server.close();
    },
  };
}
