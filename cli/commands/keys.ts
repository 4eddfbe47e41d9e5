// `liya keys rotate`: tenant-wide rotation through the admin API, or one environment's key through
// the dashboard API with the login stored by `liya login` (the admin API has no per-environment route).
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { EnvironmentDto, IssuedKeyDto } from '../../server/dashboard/dashboard.schemas.js';
import { action } from '../action.js';
import { commandContext, requireDashboardLogin, type CommandContext } from '../context.js';
import { credentialsPath, type Credentials } from '../credentials.js';
import { CliError } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { IssuedKey } from '../ui/issued-key.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';

type Environment = Pick<EnvironmentDto, 'id' | 'name'>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The stored login, checked against the server and tenant this command is about. */
async function loginFor(ctx: CommandContext, tenantId: string): Promise<Credentials> {
  return requireDashboardLogin(ctx, {
    message: '--environment needs a dashboard login (environment keys are rotated through the dashboard API)',
    hints: [`Log in as an owner or admin of tenant ${tenantId}: {login}`, 'Without --environment, the admin API rotates the tenant-wide key instead.'],
    tenantId,
  });
}

/** An environment id as is; a name (production, development, ...) looked up in the tenant's list. */
async function resolveEnvironment(ctx: CommandContext, token: string, idOrName: string): Promise<Environment> {
  if (UUID.test(idOrName)) return { id: idOrName, name: idOrName };
  const { environments } = await ctx.withToken(token).get<{ environments: Environment[] }>('/dashboard/environments', { auth: 'bearer' });
  const found = environments.find((e) => e.name.toLowerCase() === idOrName.toLowerCase());
  if (!found) {
    throw new CliError(`No environment named "${idOrName}"`, [`This tenant has: ${environments.map((e) => `${e.name} (${e.id})`).join(', ') || 'no environments'}`]);
  }
  return found;
}

export function keysCommand(): Command {
  const keys = new Command('keys').description('Manage API keys');
  keys
    .command('rotate')
    .description(
      'Issue a new API key. Without --environment: the admin API (--admin-secret) gives the tenant a new production key and revokes every other key. ' +
        'With --environment: only that environment\'s key is replaced, through the dashboard API with the login from `liya login` (an owner or admin of that tenant).',
    )
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--environment <id|name>', 'rotate only this environment\'s key (id, or a name such as production)')
    .option('--json', 'print {apiKey, apiKeyPreview} as JSON')
    .action(
      action(async (flags: { tenant: string; environment?: string; json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        if (!flags.environment) {
          const issued = await withSpinner('Rotating the tenant key', () =>
            ctx.client.post<IssuedKeyDto>(`/admin/tenants/${encodeURIComponent(flags.tenant)}/api-key/rotate`, { auth: 'admin' }),
          );
          if (flags.json) return printJson(issued);
          await show(
            h(
              Stack,
              null,
              h(StatusLine, { kind: 'success', message: `Rotated the API key of tenant ${flags.tenant}` }),
              h(IssuedKey, {
                owner: `tenant ${flags.tenant} (production)`,
                apiKey: issued.apiKey,
                notes: ['Every other key of this tenant (all environments) is revoked and now answers 401.'],
              }),
            ),
          );
          return;
        }

        const credentials = await loginFor(ctx, flags.tenant);
        const dashboard = ctx.withToken(credentials.token);
        const issued = await withSpinner('Rotating the environment key', async () => {
          const environment = await resolveEnvironment(ctx, credentials.token, flags.environment!);
          const key = await dashboard.post<IssuedKeyDto>(`/dashboard/environments/${encodeURIComponent(environment.id)}/api-key/rotate`, { auth: 'bearer' });
          return { environment, key };
        });
        if (flags.json) return printJson(issued.key);
        const label = issued.environment.name === issued.environment.id ? issued.environment.id : `${issued.environment.name} (${issued.environment.id})`;
        await show(
          h(
            Stack,
            null,
            h(StatusLine, { kind: 'success', message: `Rotated the API key of environment ${label}`, hints: [`Logged in as ${credentials.email} (${credentialsPath()})`] }),
            h(IssuedKey, {
              owner: `${credentials.tenantName ?? `tenant ${flags.tenant}`}, environment ${issued.environment.name}`,
              apiKey: issued.key.apiKey,
              notes: ['The previous key of this environment answers 401 from now on; other environments keep their keys.'],
            }),
          ),
        );
      }),
    );
  return keys;
}
