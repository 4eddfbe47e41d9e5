import { Command, Option } from 'commander';
import { DEFAULT_TIMEOUT_MS } from './api-client.js';
import { loginCommand, logoutCommand } from './commands/auth.js';
import { documentsCommand } from './commands/documents.js';
import { healthCommand } from './commands/health.js';
import { intentsCommand } from './commands/intents.js';
import { keysCommand } from './commands/keys.js';
import { knowledgeCommand } from './commands/knowledge.js';
import { migrateCommand } from './commands/migrate.js';
import { runCommand } from './commands/run.js';
import { startCommand } from './commands/start.js';
import { tenantsCommand } from './commands/tenants.js';
import { workerCommand } from './commands/worker.js';
import { DEFAULT_URL } from './context.js';
import { parseSeconds } from './options.js';

export function buildProgram(): Command {
  const program = new Command('liya')
    .description('Run and manage a Liya server')
    .addOption(new Option('--url <url>', 'server URL for remote commands').env('LIYA_URL').default(DEFAULT_URL))
    .addOption(new Option('--admin-secret <secret>', 'the server\'s ADMIN_SECRET, for tenants and keys commands').env('LIYA_ADMIN_SECRET'))
    .addOption(new Option('--api-key <key>', 'a tenant API key (svc_...), for intents list, run, documents and knowledge').env('LIYA_API_KEY'))
    .addOption(new Option('--timeout <seconds>', 'time limit of each HTTP request').env('LIYA_TIMEOUT').argParser(parseSeconds).default(DEFAULT_TIMEOUT_MS, '15'))
    .addHelpText(
      'after',
      `
Exit codes: 0 done; 1 the request failed (server error, unreachable, not ready); 2 invalid command line or missing login.
Dashboard login (liya login) is stored in $LIYA_CONFIG_DIR/credentials.json (default ~/.config/liya).`,
    );

  // Server processes (use the server's environment: DATABASE_URL, PG_DATA_DIR, ...).
  program.addCommand(startCommand());
  program.addCommand(workerCommand());
  program.addCommand(migrateCommand());
  // Remote commands (talk to a running server at --url).
  program.addCommand(healthCommand());
  program.addCommand(tenantsCommand());
  program.addCommand(keysCommand());
  program.addCommand(intentsCommand());
  program.addCommand(runCommand());
  program.addCommand(documentsCommand());
  program.addCommand(knowledgeCommand());
  program.addCommand(loginCommand());
  program.addCommand(logoutCommand());

  // Usage errors (unknown option, bad value) throw instead of exiting, in every subcommand (settings
  // are not inherited by addCommand): main.ts turns them into exit code 2.
  const configure = (command: Command) => {
    command.exitOverride().showHelpAfterError('(run with --help for usage)');
    command.commands.forEach(configure);
  };
  configure(program);
  return program;
}
