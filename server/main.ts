import { ConfigError, loadConfig } from './config.js';
import { createLogger, startServer } from './boot.js';

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
  let server;
  try {
    server = await startServer({ config, log });
  } catch (err) {
    log.fatal({ err }, `could not start: ${(err as Error).message}`);
    process.exit(1);
  }
  log.info(`Liya API listening on ${server.url} (docs: ${server.url}/docs)`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    await server.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}
