// `liya login` / `liya logout`: a dashboard session (JWT) kept in the credentials file, used by
// commands that act as a tenant user (keys rotate --environment).
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { LoginResult } from '../../server/auth/auth.schemas.js';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { credentialsPath, deleteCredentials, readCredentials, writeCredentials } from '../credentials.js';
import { CliError } from '../errors.js';
import { isInteractive, printJson, promptPassword, show, withSpinner } from '../output.js';
import { StatusLine } from '../ui/status.js';

/** --password, else LIYA_PASSWORD, else a prompt on a terminal; never echoed, never stored. */
async function resolvePassword(email: string, given: string | undefined): Promise<string> {
  if (given) return given;
  if (process.env.LIYA_PASSWORD) return process.env.LIYA_PASSWORD;
  if (process.stdin.isTTY && isInteractive(process.stderr)) {
    const password = await promptPassword(`Password for ${email}:`);
    if (!password) throw new CliError('Login cancelled: no password given');
    return password;
  }
  throw new CliError('No password: stdin is not a terminal, so there is nothing to prompt on', [
    'Pass --password <password> or set LIYA_PASSWORD.',
  ]);
}

export function loginCommand(): Command {
  return new Command('login')
    .description('Log in to the dashboard API as a tenant user; the token is stored for later commands (keys rotate --environment)')
    .requiredOption('--email <email>', 'your dashboard e-mail')
    .option('--password <password>', 'your password (default: LIYA_PASSWORD, else a prompt on a terminal; a flag is visible to other local users in the process list)')
    .option('--json', 'print {email, tenantId, tenantName, role, url} as JSON (never the token)')
    .action(
      action(async (flags: { email: string; password?: string; json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        const password = await resolvePassword(flags.email, flags.password);
        const result = await withSpinner(`Logging in to ${ctx.url}`, () =>
          ctx.client.post<LoginResult>('/auth/login', { body: { email: flags.email, password } }),
        );
        const file = credentialsPath();
        await writeCredentials(
          { url: ctx.url, token: result.token, email: result.user.email, tenantId: result.tenant.tenantId, tenantName: result.tenant.tenantName, savedAt: new Date().toISOString() },
          file,
        );
        const summary = { url: ctx.url, email: result.user.email, role: result.user.role, tenantId: result.tenant.tenantId, tenantName: result.tenant.tenantName, credentials: file };
        if (flags.json) return printJson(summary);
        await show(
          h(StatusLine, {
            kind: 'success',
            message: `Logged in to ${ctx.url} as ${summary.email} (${summary.role}) of tenant ${summary.tenantName} (${summary.tenantId})`,
            hints: [`Token saved to ${file} (mode 0600). liya logout removes it.`],
          }),
        );
      }),
    );
}

export function logoutCommand(): Command {
  return new Command('logout').description('Forget the stored dashboard login').action(
    action(async () => {
      const file = credentialsPath();
      const previous = await readCredentials(file).catch(() => null);
      const removed = await deleteCredentials(file);
      await show(
        h(StatusLine, removed
          ? { kind: 'success', message: previous ? `Logged out ${previous.email} from ${previous.url}` : 'Logged out', hints: [`Removed ${file}`] }
          : { kind: 'info', message: 'Not logged in; nothing to remove' }),
      );
    }),
  );
}
