// The work behind `liya worker` (loaded only when that command runs).
import type { Logger } from 'pino';
import { openRuntime } from '../../server/boot.js';
import { createLogger } from '../../server/logger.js';
import type { AppConfig } from '../../server/config.js';
import { startWorker, type WorkerHandle } from '../../worker/runner.js';
import { loadServerConfig } from './config.js';
import { openCliDatabase } from './database.js';

const DUPLICATE_SIGNAL_MS = 1000;

/** Runs jobs until SIGINT or SIGTERM; resolves with the exit code once everything is closed. */
export async function runWorker(): Promise<number> {
  const config = loadServerConfig();
  const log = createLogger(config);
  const cleanups: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => log.error({ err }, 'shutdown step failed'));
  };

  // A signal during start-up is honoured as soon as the start has finished.
  let requestStop: (signal: string) => void = () => undefined;
  const stopRequested = new Promise<string>((resolve) => (requestStop = resolve));
  let stopping = false;
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      // On an old Node, bin/liya.mjs re-runs us as a child and forwards signals, so one Ctrl+C in a
      // terminal (sent to the whole process group) arrives twice: only a later one means "force".
      if (Date.now() - firstSignalAt < DUPLICATE_SIGNAL_MS) return;
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    firstSignalAt = Date.now();
    requestStop(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    return await runUntilStopped(config, log, cleanups, close, stopRequested, () => stopping);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function runUntilStopped(
  config: AppConfig,
  log: Logger,
  cleanups: (() => Promise<unknown>)[],
  close: () => Promise<void>,
  stopRequested: Promise<string>,
  stopping: () => boolean,
): Promise<number> {
  let worker: WorkerHandle | null = null;
  try {
    const db = await openCliDatabase(config, log);
    if (db.embedded) cleanups.push(() => db.embedded!.stop());
    const { deps, jobPool, setEngineCheck } = await openRuntime(config, log, db.url, cleanups);
    setEngineCheck(() => worker?.isRunning() ?? false);
    if (!stopping()) {
      worker = await startWorker(deps, jobPool);
      cleanups.push(() => worker!.stop());
      log.info({ database: db.description, concurrency: config.WORKER_CONCURRENCY }, 'Liya worker running; SIGINT or SIGTERM stops it');
    }
  } catch (err) {
    log.fatal({ err }, `the worker could not start: ${(err as Error).message}`);
    await close();
    return 1;
  }

  // The runner rides out database outages by itself; one that refuses to go on (a newer version
  // migrated the job schema) ends the process with code 1, so a supervisor (systemd, Docker's
  // restart policy) starts a fresh one.
  const ended = worker ? worker.ended.then(() => null) : new Promise<null>(() => undefined);
  const signal = await Promise.race([stopRequested, ended]);
  if (signal === null) {
    log.fatal('the job runner stopped by itself; exiting so that a supervisor can restart it');
    await close();
    return 1;
  }
  log.info({ signal }, 'stopping the worker; jobs in progress finish first');
  await close();
  log.info('worker stopped');
  return 0;
}
