// `liya worker`: a standalone job runner (scale-out beside `liya start`, which can run with WORKER=0).
import { Command } from 'commander';
import { action } from '../action.js';

export function workerCommand(): Command {
  return new Command('worker')
    .description('Run background jobs only (no HTTP) on the configured database (DATABASE_URL, or the embedded one); migrates first; stops cleanly on SIGINT/SIGTERM')
    .action(
      action(async () => {
        const { runWorker } = await import('../local/worker.js');
        return runWorker();
      }),
    );
}
