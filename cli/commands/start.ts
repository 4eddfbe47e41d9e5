import { Command } from 'commander';

export function startCommand(): Command {
  return new Command('start')
    .description('Start the API server (embedded PostgreSQL unless DATABASE_URL is set; job runner in-process unless WORKER=0)')
    .action(async () => {
      const { runServer } = await import('../../server/main.js');
      await runServer();
    });
}
