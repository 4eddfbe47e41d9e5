// `liya tenants ...`: the admin API (X-Admin-Secret) for tenants.
import { Command, Option } from 'commander';
import { createElement as h } from 'react';
import type { Pagination } from '../../server/common/schemas.js';
import type { TenantDto } from '../../server/tenants/tenants.schemas.js';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { CliError, type FieldLabels } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { parseInteger, parseList, parseQuota } from '../options.js';
import { Details } from '../ui/details.js';
import { IssuedKey } from '../ui/issued-key.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { Stack } from '../ui/stack.js';
import { dateTime } from '../format.js';
import { addEraseUserCommand } from './tenant-erasure.js';
import { addTenantDataCommands } from './tenant-data.js';

type Tenant = TenantDto;

interface TenantPage {
  tenants: Tenant[];
  pagination: Pagination;
}

/** Validation issues name the flag, not the API field. */
export const TENANT_FIELD_LABELS: FieldLabels = {
  tenantName: '--name',
  tenantType: '--type',
  billingPlan: '--plan',
  billingEmail: '--billing-email',
  enabledDomains: '--domains',
  monthlyRequestQuota: '--request-quota',
  monthlyTokenQuota: '--token-quota',
  isActive: '--active/--inactive',
  limit: '--limit',
  offset: '--offset',
};

interface TenantFlags {
  name?: string;
  type?: string;
  plan?: string;
  billingEmail?: string;
  domains?: string[];
  requestQuota?: number | null;
  tokenQuota?: number | null;
  active?: boolean;
  inactive?: boolean;
  json?: boolean;
}

const tenantPath = (id: string) => `/admin/tenants/${encodeURIComponent(id)}`;

function addFieldOptions(command: Command, nameRequired: boolean): Command {
  const name = new Option('--name <name>', 'tenant name');
  if (nameRequired) name.makeOptionMandatory();
  return command
    .addOption(name)
    .option('--type <type>', 'tenant type: internal, partner, enterprise or trial (server default: trial)')
    .option('--plan <plan>', 'billing plan: free, trial, starter, pro or enterprise (server default: trial)')
    .option('--billing-email <email>', 'billing e-mail address ("none" clears it)')
    .option('--domains <list>', 'enabled built-in domains, comma-separated (e.g. hiring)', parseList)
    .option('--request-quota <n>', 'monthly request quota ("none" for no quota)', parseQuota)
    .option('--token-quota <n>', 'monthly token quota ("none" for no quota)', parseQuota);
}

/** The request body for the flags that were given (undefined ones are left out). */
function tenantBody(flags: TenantFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (flags.name !== undefined) body.tenantName = flags.name;
  if (flags.type !== undefined) body.tenantType = flags.type;
  if (flags.plan !== undefined) body.billingPlan = flags.plan;
  if (flags.billingEmail !== undefined) body.billingEmail = flags.billingEmail.trim().toLowerCase() === 'none' ? null : flags.billingEmail;
  if (flags.domains !== undefined) body.enabledDomains = flags.domains;
  if (flags.requestQuota !== undefined) body.monthlyRequestQuota = flags.requestQuota;
  if (flags.tokenQuota !== undefined) body.monthlyTokenQuota = flags.tokenQuota;
  if (flags.active) body.isActive = true;
  if (flags.inactive) body.isActive = false;
  return body;
}

const date = (iso: string | null) => (iso ? iso.slice(0, 10) : '—');
const usage = (used: string | number, quota: string | number | null) => (quota === null ? `${used} (no quota)` : `${used} of ${quota}`);

export function tenantFields(t: Tenant): [string, string][] {
  return [
    ['ID', t.id],
    ['Name', t.tenantName],
    ['Type', t.tenantType],
    ['Plan', t.billingPlan],
    ['Active', t.isActive ? 'yes' : 'no (keys answer 403, users cannot log in)'],
    ['Billing e-mail', t.billingEmail ?? '—'],
    ['Domains', t.enabledDomains.length ? t.enabledDomains.join(', ') : '—'],
    ['Requests (month)', usage(t.requestsThisMonth, t.monthlyRequestQuota)],
    ['Tokens (month)', usage(t.tokensThisMonth, t.monthlyTokenQuota)],
    ['Cost (month)', `$${t.costThisMonth}`],
    ['API key', t.hasApiKey ? `active, ${t.apiKeyLastUsedAt ? `last used ${dateTime(t.apiKeyLastUsedAt)}` : 'never used'}` : 'none (liya keys rotate issues one)'],
    ['Created', dateTime(t.createdAt)],
    ['Updated', dateTime(t.updatedAt)],
  ];
}

function tenantRows(tenants: Tenant[]): string[][] {
  return tenants.map((t) => [
    t.id,
    t.tenantName,
    t.tenantType,
    t.billingPlan,
    t.isActive ? 'yes' : 'no',
    String(t.requestsThisMonth),
    t.hasApiKey ? 'yes' : 'no',
    date(t.createdAt),
  ]);
}

function pageSummary({ total, limit, offset }: TenantPage['pagination'], shown: number): string {
  if (total === 0) return 'No tenants yet: liya tenants create --name <name>';
  if (shown === 0) return `No tenants at offset ${offset} (there are ${total}).`;
  const more = offset + shown < total ? ` Next page: --offset ${offset + limit}` : '';
  return `Tenants ${offset + 1}-${offset + shown} of ${total}.${more}`;
}

export function tenantsCommand(): Command {
  const tenants = new Command('tenants').description('Manage tenants through the admin API (needs --admin-secret or LIYA_ADMIN_SECRET)');

  tenants
    .command('list')
    .description('List tenants, newest first')
    .option('--limit <n>', 'how many (1-100)', parseInteger(1, 100), 20)
    .option('--offset <n>', 'how many to skip', parseInteger(0), 0)
    .option('--json', 'print the raw result as JSON')
    .action(
      action(async (flags: { limit: number; offset: number; json?: boolean }, command: Command) => {
        const { client } = commandContext(command);
        const page = await withSpinner('Loading tenants', () =>
          client.get<TenantPage>('/admin/tenants', { auth: 'admin', query: { limit: flags.limit, offset: flags.offset } }),
        );
        if (flags.json) return printJson(page);
        const table = h(Table, {
          headers: ['ID', 'NAME', 'TYPE', 'PLAN', 'ACTIVE', 'REQUESTS', 'API KEY', 'CREATED'],
          rows: tenantRows(page.tenants),
          align: ['left', 'left', 'left', 'left', 'left', 'right'],
          empty: 'No tenants.',
        });
        await show(h(Stack, null, table, h(StatusLine, { kind: 'info', message: pageSummary(page.pagination, page.tenants.length) })));
      }, TENANT_FIELD_LABELS),
    );

  addFieldOptions(tenants.command('create').description('Create a tenant (with production and development environments) and print its API key once'), true)
    .option('--json', 'print {tenant, apiKey} as JSON')
    .action(
      action(async (flags: TenantFlags, command: Command) => {
        const { client } = commandContext(command);
        const created = await withSpinner('Creating tenant', () =>
          client.post<{ tenant: Tenant; apiKey: string }>('/admin/tenants', { auth: 'admin', body: tenantBody(flags) }),
        );
        if (flags.json) return printJson(created);
        const { tenant, apiKey } = created;
        await show(
          h(
            Stack,
            null,
            h(StatusLine, { kind: 'success', message: `Created tenant ${tenant.tenantName} (${tenant.id}), plan ${tenant.billingPlan}` }),
            h(IssuedKey, {
              owner: `${tenant.tenantName} (production)`,
              apiKey,
              notes: ['Send it as "Authorization: Bearer <key>" or "x-api-key: <key>".', `A lost key cannot be shown again: liya keys rotate --tenant ${tenant.id}`],
            }),
          ),
        );
      }, TENANT_FIELD_LABELS),
    );

  tenants
    .command('show')
    .description('Show one tenant')
    .argument('<id>', 'tenant id')
    .option('--json', 'print the tenant as JSON')
    .action(
      action(async (id: string, flags: { json?: boolean }, command: Command) => {
        const { client } = commandContext(command);
        const tenant = await withSpinner('Loading tenant', () => client.get<Tenant>(tenantPath(id), { auth: 'admin' }));
        if (flags.json) return printJson(tenant);
        await show(h(Details, { title: `Tenant ${tenant.tenantName}`, fields: tenantFields(tenant) }));
      }, TENANT_FIELD_LABELS),
    );

  addFieldOptions(tenants.command('update').description('Change a tenant\'s name, type, plan, quotas, domains or state').argument('<id>', 'tenant id'), false)
    .addOption(new Option('--active', 'reactivate the tenant').conflicts('inactive'))
    .addOption(new Option('--inactive', 'deactivate the tenant (same as liya tenants deactivate)').conflicts('active'))
    .option('--json', 'print the updated tenant as JSON')
    .action(
      action(async (id: string, flags: TenantFlags, command: Command) => {
        const body = tenantBody(flags);
        if (Object.keys(body).length === 0) {
          throw new CliError('Nothing to update', ['Give at least one of --name, --type, --plan, --billing-email, --domains, --request-quota, --token-quota, --active, --inactive.']);
        }
        const { client } = commandContext(command);
        const tenant = await withSpinner('Updating tenant', () => client.patch<Tenant>(tenantPath(id), { auth: 'admin', body }));
        if (flags.json) return printJson(tenant);
        await show(
          h(
            Stack,
            null,
            h(StatusLine, { kind: 'success', message: `Updated tenant ${tenant.tenantName} (${tenant.id})` }),
            h(Details, { fields: tenantFields(tenant) }),
          ),
        );
      }, TENANT_FIELD_LABELS),
    );

  tenants
    .command('deactivate')
    .description('Deactivate a tenant: its API keys answer 403 ACCOUNT_INACTIVE and its users cannot log in (undo: update --active)')
    .argument('<id>', 'tenant id')
    .option('--json', 'print the updated tenant as JSON')
    .action(
      action(async (id: string, flags: { json?: boolean }, command: Command) => {
        const { client } = commandContext(command);
        const tenant = await withSpinner('Deactivating tenant', () => client.patch<Tenant>(tenantPath(id), { auth: 'admin', body: { isActive: false } }));
        if (flags.json) return printJson(tenant);
        await show(
          h(StatusLine, {
            kind: 'success',
            message: `Deactivated tenant ${tenant.tenantName} (${tenant.id})`,
            hints: [`Its API keys now answer 403 ACCOUNT_INACTIVE and its users cannot log in. Undo: liya tenants update ${tenant.id} --active`],
          }),
        );
      }, TENANT_FIELD_LABELS),
    );

  addEraseUserCommand(tenants);
  addTenantDataCommands(tenants);

  return tenants;
}
