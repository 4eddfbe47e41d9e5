// The database a server process runs on. Apart from server/boot.ts, which loads every module of
// the server: server/main.ts starts the embedded PostgreSQL (or initialises it) while those load.
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded.js';
import { ensureDatabase } from './ensure-database.js';

export interface Database {
  url: string;
  embedded: EmbeddedPostgres | null;
}

export interface DatabaseOptions {
  /** DATABASE_URL: an existing server; without it, the embedded one. */
  url?: string;
  /** The embedded server's data folder and port (PG_DATA_DIR, PG_PORT). */
  dataDir: string;
  port: number;
  log: (message: string) => void;
}

/** `url` when set, else the embedded server (started and given a `liya` database). */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) return { url: options.url, embedded: null };
  const embedded = await startEmbeddedPostgres({ dataDir: path.resolve(options.dataDir), port: options.port, log: options.log });
  try {
    await ensureDatabase(embedded.url(), 'liya');
  } catch (err) {
    await embedded.stop();
    throw err;
  }
  return { url: embedded.url('liya'), embedded };
}
