// The database for `liya worker` and `liya migrate`: DATABASE_URL, else the embedded PostgreSQL.
// When a `liya start` on this machine already runs the embedded server, attach to it instead of
// starting one (db/embedded.ts would stop the running server it finds in the data folder).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { ensureDatabase } from '../../db/orm.js';
import { openDatabase, type Database } from '../../server/boot.js';
import type { AppConfig } from '../../server/config.js';

export interface CliDatabase extends Database {
  /** Where it is, without credentials (for messages). */
  description: string;
}

/** postgres://user@host:port/db — the password left out. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

// db/embedded.ts keeps the superuser password in `<data dir>.password` beside the data folder.
async function runningEmbeddedUrl(config: AppConfig): Promise<string | null> {
  const dataDir = path.resolve(config.PG_DATA_DIR);
  if (!existsSync(path.join(dataDir, 'postmaster.pid'))) return null;
  const password = (await readFile(`${dataDir}.password`, 'utf8').catch(() => '')).trim();
  if (!password) return null;
  const url = (database: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${config.PG_PORT}/${database}`;
  const client = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
  } catch {
    return null; // a stale postmaster.pid: nothing is listening, so starting our own is right
  } finally {
    await client.end().catch(() => undefined);
  }
  await ensureDatabase(url('postgres'), 'liya');
  return url('liya');
}

export async function openCliDatabase(config: AppConfig, log: Logger): Promise<CliDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, embedded: null, description: redactUrl(config.DATABASE_URL) };
  const dataDir = path.resolve(config.PG_DATA_DIR);
  const running = await runningEmbeddedUrl(config);
  if (running) return { url: running, embedded: null, description: `embedded PostgreSQL in ${dataDir} (already running, port ${config.PG_PORT})` };
  const db = await openDatabase(config, log);
  return { ...db, description: `embedded PostgreSQL in ${dataDir} (port ${config.PG_PORT})` };
}
