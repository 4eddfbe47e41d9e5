import { Command } from 'commander';

export function buildProgram(): Command {
  const program = new Command('liya').description('Run and manage a Liya server').showHelpAfterError();
  program
    .command('start')
    .description('Start the API server (embedded PostgreSQL unless DATABASE_URL is set; job runner in-process unless WORKER=0)')
    .action(async () => {
      const { runServer } = await import('../server/main.js');
      await runServer();
    });
  return program;
}
