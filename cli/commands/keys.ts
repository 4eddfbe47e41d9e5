// `liya keys`: named keys with permissions (create, list, revoke) and rotation. Named keys and
// environment keys are managed through the dashboard API with the login stored by `liya login` (an
// owner or admin); the tenant-wide rotation goes through the admin API.
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { EnvironmentDto, IssuedKeyDto } from '../../server/dashboard/dashboard.schemas.js';
import type { ApiKeyDto, CreatedKeyDto } from '../../server/keys/keys.schemas.js';
import { action } from '../action.js';
import { commandContext, requireDashboardLogin, type CommandContext } from '../context.js';
import { credentialsPath, type Credentials } from '../credentials.js';
import { CliError } from '../errors.js';
import { dateTime } from '../format.js';
import { parseList } from '../options.js';
import { printJson, show, withSpinner } from '../output.js';
import { IssuedKey } from '../ui/issued-key.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';

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

/** The stored login (owner or admin), for --tenant when given, else for whichever tenant it is. */
async function managerLogin(ctx: CommandContext, tenantId: string | undefined): Promise<Credentials> {
  return requireDashboardLogin(ctx, {
    message: 'Managing keys needs a dashboard login (an owner or admin of the tenant)',
    hints: ['Log in: {login}'],
    tenantId,
  });
}

/** `90d`, `12h`, `30m` or an ISO date-time -> the ISO expiry. */
function expiryOf(value: string, now = Date.now()): string {
  const relative = /^(\d{1,5})([dhm])$/.exec(value.trim());
  if (relative) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[relative[2] as 'd' | 'h' | 'm'];
    return new Date(now + Number(relative[1]) * unit).toISOString();
  }
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new CliError(`--expires "${value}" is neither a duration (90d, 12h, 30m) nor a date-time`, ['For example: --expires 90d, or --expires 2027-01-31T00:00:00Z']);
  return date.toISOString();
}

const keyRows = (keys: ApiKeyDto[]) =>
  keys.map((k) => [
    k.name ?? `(${k.environment ?? 'tenant'} key)`,
    k.environment ?? '—',
    k.preset ?? k.permissions.join(','),
    k.apiKeyPreview,
    k.expired ? `expired ${dateTime(k.expires_at)}` : dateTime(k.expires_at),
    dateTime(k.last_used_at),
  ]);

export function keysCommand(): Command {
  const keys = new Command('keys').description('Manage API keys: named keys with permissions, and rotation');
  keys
    .command('create')
    .description('Create a named key with a preset (full, read-only, run-only, ingest-only, deploy) or a list of permissions; the key is printed once')
    .requiredOption('--name <name>', 'the key\'s name (lower-case letters, digits, . - _)')
    .option('--preset <preset>', 'full | read-only | run-only | ingest-only | deploy')
    .option('--permissions <list>', 'comma-separated permissions, e.g. intents:run,runs:read', parseList)
    .option('--environment <name>', 'the environment whose permissions bound the key (default production)')
    .option('--expires <when>', 'a duration (90d, 12h, 30m) or a date-time; default: never')
    .option('--tenant <id>', 'the tenant (checked against your login)')
    .option('--json', 'print {key, apiKey} as JSON')
    .action(
      action(async (flags: { name: string; preset?: string; permissions?: string[]; environment?: string; expires?: string; tenant?: string; json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        if (!flags.preset === !flags.permissions) throw new CliError('Give either --preset or --permissions', ['Presets: full, read-only, run-only, ingest-only, deploy']);
        const credentials = await managerLogin(ctx, flags.tenant);
        const body = {
          name: flags.name,
          ...(flags.preset ? { preset: flags.preset } : { permissions: flags.permissions }),
          ...(flags.environment ? { environment: flags.environment } : {}),
          ...(flags.expires ? { expires_at: expiryOf(flags.expires) } : {}),
        };
        const created = await withSpinner('Creating the key', () => ctx.withToken(credentials.token).post<CreatedKeyDto>('/dashboard/api-keys', { auth: 'bearer', body }));
        if (flags.json) return printJson(created);
        const { key } = created;
        await show(
          h(
            Stack,
            null,
            h(StatusLine, { kind: 'success', message: `Created key ${key.name} (${key.environment})` }),
            h(IssuedKey, {
              owner: `${credentials.tenantName ?? 'the tenant'}, key ${key.name}`,
              apiKey: created.apiKey,
              notes: [`Permissions: ${key.permissions.join(', ')}${key.preset ? ` (preset ${key.preset})` : ''}`, key.expires_at ? `Expires ${dateTime(key.expires_at)}` : 'Never expires (revoke it with liya keys revoke).'],
            }),
          ),
        );
      }),
    );

  keys
    .command('list')
    .description('The tenant\'s keys that are not revoked: environment keys, then named keys, with their permissions')
    .option('--tenant <id>', 'the tenant (checked against your login)')
    .option('--json', 'print the keys as JSON')
    .action(
      action(async (flags: { tenant?: string; json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        const credentials = await managerLogin(ctx, flags.tenant);
        const { keys: list } = await ctx.withToken(credentials.token).get<{ keys: ApiKeyDto[] }>('/dashboard/api-keys', { auth: 'bearer' });
        if (flags.json) return printJson(list);
        await show(h(Table, { headers: ['NAME', 'ENVIRONMENT', 'PERMISSIONS', 'KEY', 'EXPIRES', 'LAST USED'], rows: keyRows(list), empty: 'No keys.' }));
      }),
    );

  keys
    .command('revoke <key>')
    .description('Revoke a named key (by name or id): it answers 401 API_KEY_REVOKED from now on')
    .option('--tenant <id>', 'the tenant (checked against your login)')
    .action(
      action(async (key: string, flags: { tenant?: string }, command: Command) => {
        const ctx = commandContext(command);
        const credentials = await managerLogin(ctx, flags.tenant);
        await withSpinner('Revoking the key', () => ctx.withToken(credentials.token).call('DELETE', `/dashboard/api-keys/${encodeURIComponent(key)}`, { auth: 'bearer' }));
        await show(h(StatusLine, { kind: 'success', message: `Revoked key ${key}` }));
      }),
    );

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
