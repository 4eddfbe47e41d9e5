import { ConfigError, loadConfig } from './config.js';
import { startServer, type RunningServer } from './boot.js';
import { createLogger } from './logger.js';

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
  try {
    server = await startServer({ config, log });
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
