import { ConfigError, loadConfig } from './config.js';
import type { RunningServer } from './boot.js';
import { openDatabase, type Database } from '../db/database.js';
import { createLogger } from './logger.js';

/** Stops an embedded database whose server never started. */
async function stopDatabase(database: Promise<Database>) {
  const db = await database.catch(() => null);
  await db?.embedded?.stop();
}

/** `npm start` / `liya start`: serve until SIGINT or SIGTERM, then stop HTTP, worker and database in order. */
export async function runServer(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger(config);
  let server: RunningServer | null = null;
  let stopping = false;
  let firstSignalAt = 0;
  // Handlers go in before start-up, so Ctrl-C while booting still stops the database it started.
  const stop = async (signal: string) => {
    if (stopping) {
      // One Ctrl-C can arrive twice (from the terminal and from a launcher forwarding it).
      if (Date.now() - firstSignalAt < 1000) return;
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    firstSignalAt = Date.now();
    log.info({ signal }, 'shutting down');
    if (server) {
      await server.close();
      log.info('stopped');
      process.exit(0);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // PostgreSQL starts (on the first start: is initialised) while the server's modules load, about
  // a second of work on one core that neither needs to wait for.
  const database = openDatabase({ url: config.DATABASE_URL, dataDir: config.PG_DATA_DIR, port: config.PG_PORT, log: (m) => log.info(m) });
  database.catch(() => undefined); // startServer awaits it and reports a failure
  try {
    const { startServer } = await import('./boot.js').catch(async (err: unknown) => {
      await stopDatabase(database);
      throw err;
    });
    server = await startServer({ config, log, database });
  } catch (err) {
    log.fatal({ err }, `could not start: ${(err as Error).message}`);
    process.exit(1);
  }
  if (stopping) {
    await server.close();
    log.info('stopped');
    process.exit(0);
  }
  log.info(`Liya API listening on ${server.url} (docs: ${server.url}/docs)`);
}
