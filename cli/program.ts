import { Command, Option } from 'commander';
import { DEFAULT_TIMEOUT_MS } from './api-client.js';
import { DEFAULT_URL } from './context.js';
import { parseSeconds } from './options.js';

// Each command's module, loaded only when needed: the remote commands pull in ink and React
// (~50 MB), which `liya start` and `liya worker` must not carry for their whole life.
const COMMANDS: Record<string, () => Promise<Command[]>> = {
  start: async () => [(await import('./commands/start.js')).startCommand()],
  worker: async () => [(await import('./commands/worker.js')).workerCommand()],
  migrate: async () => [(await import('./commands/migrate.js')).migrateCommand()],
  health: async () => [(await import('./commands/health.js')).healthCommand()],
  doctor: async () => [(await import('./commands/doctor.js')).doctorCommand()],
  tenants: async () => [(await import('./commands/tenants.js')).tenantsCommand()],
  keys: async () => [(await import('./commands/keys.js')).keysCommand()],
  intents: async () => [(await import('./commands/intents.js')).intentsCommand()],
  run: async () => [(await import('./commands/run.js')).runCommand()],
  documents: async () => [(await import('./commands/documents.js')).documentsCommand()],
  knowledge: async () => [(await import('./commands/knowledge.js')).knowledgeCommand()],
  agents: async () => [(await import('./commands/agents.js')).agentsCommand()],
  workflows: async () => [(await import('./commands/workflows.js')).workflowsCommand()],
  approvals: async () => [(await import('./commands/approvals.js')).approvalsCommand()],
  events: async () => [(await import('./commands/events.js')).eventsCommand()],
  evals: async () => [(await import('./commands/evals.js')).evalsCommand()],
  export: async () => [(await import('./commands/deploys.js')).exportCommand()],
  plan: async () => [(await import('./commands/deploys.js')).planCommand()],
  apply: async () => [(await import('./commands/deploys.js')).applyCommand()],
  login: async () => [(await import('./commands/auth.js')).loginCommand()],
  logout: async () => [(await import('./commands/auth.js')).logoutCommand()],
};
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['--url', '--admin-secret', '--api-key', '--timeout']);

/** The command named on the command line (after the global options), if any. */
export function commandNameOf(argv: string[]): string | undefined {
  for (let i = 2; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') return argv[i + 1];
    if (!arg.startsWith('-')) return arg;
    if (GLOBAL_OPTIONS_WITH_VALUE.has(arg)) i++;
  }
  return undefined;
}

/**
 * The `liya` program for `argv`: with only the named command when it is a known one, else with
 * every command (for the help and commander's suggestions).
 */
export async function buildProgram(argv: string[] = process.argv): Promise<Command> {
  const program = new Command('liya')
    .description('Run and manage a Liya server')
    .addOption(new Option('--url <url>', 'server URL for remote commands').env('LIYA_URL').default(DEFAULT_URL))
    .addOption(new Option('--admin-secret <secret>', 'the server\'s ADMIN_SECRET, for the tenants, keys and doctor commands').env('LIYA_ADMIN_SECRET'))
    .addOption(new Option('--api-key <key>', 'a tenant API key (svc_...), for intents list, run, documents, knowledge, agents, workflows, evals, export, plan and apply').env('LIYA_API_KEY'))
    .addOption(new Option('--timeout <seconds>', 'time limit of each HTTP request').env('LIYA_TIMEOUT').argParser(parseSeconds).default(DEFAULT_TIMEOUT_MS, '15'))
    .addHelpText(
      'after',
      `
Exit codes: 0 done; 1 the request failed (server error, unreachable, not ready); 2 invalid command line or missing login.
Dashboard login (liya login) is stored in $LIYA_CONFIG_DIR/credentials.json (default ~/.config/liya).`,
    );

  // Server processes (start, worker, migrate: the server's environment, DATABASE_URL, PG_DATA_DIR,
  // ...) come first, then the remote commands (talk to a running server at --url).
  const name = commandNameOf(argv);
  const wanted = name !== undefined && Object.hasOwn(COMMANDS, name) ? [name] : Object.keys(COMMANDS);
  for (const commands of await Promise.all(wanted.map((key) => COMMANDS[key]()))) commands.forEach((command) => program.addCommand(command));

  // Usage errors (unknown option, bad value) throw instead of exiting, in every subcommand (settings
  // are not inherited by addCommand): main.ts turns them into exit code 2.
  const configure = (command: Command) => {
    command.exitOverride().showHelpAfterError('(run with --help for usage)');
    command.commands.forEach(configure);
  };
  configure(program);
  return program;
}
