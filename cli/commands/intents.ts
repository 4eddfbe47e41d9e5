// `liya intents ...`: a domain's intents through the API key routes (list), and the version history
// of a custom intent through the dashboard API with the login stored by `liya login` (versions,
// diff, restore).
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { CustomIntentDto, IntentVersionDiff, VersionSummaryDto } from '../../server/intents/custom-intents.schemas.js';
import type { IntentSummary } from '../../server/intents/intents.schemas.js';
import { action } from '../action.js';
import { commandContext, requireDashboardLogin, type CommandContext } from '../context.js';
import type { Credentials } from '../credentials.js';
import { printJson, show, withSpinner } from '../output.js';
import { parseInteger } from '../options.js';
import { FieldDiff, type FieldChange } from '../ui/field-diff.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { dateTime, segment } from '../format.js';

/** The live custom intent (only the fields the CLI shows). */
type CustomIntent = Pick<CustomIntentDto, 'domain_key' | 'intent_key' | 'display_name' | 'current_version' | 'updated_at'>;

const intentPath = (domain: string, intent: string) => `/dashboard/custom-domains/${segment(domain)}/intents/${segment(intent)}`;
const versionNumber = parseInteger(1, 1_000_000_000);

/**
 * The stored dashboard login, checked against this server and for expiry before any request:
 * missing, for another --url or expired is a usage error (exit 2), as for `keys rotate --environment`.
 */
export async function dashboardLogin(ctx: CommandContext, what: string): Promise<Credentials> {
  return requireDashboardLogin(ctx, {
    message: `${what} needs a dashboard login (intent versions are read and restored through the dashboard API)`,
    hints: ['Log in as a user of the tenant that owns the intent: {login}'],
  });
}

// ---------------------------------------------------------------- formatting

export interface ValueFormat {
  /** Lines kept per value (the rest are counted in a last line). */
  maxLines: number;
  /** Characters kept per line. */
  maxLineLength: number;
}

export const SHORT_VALUES: ValueFormat = { maxLines: 12, maxLineLength: 160 };
export const FULL_VALUES: ValueFormat = { maxLines: Number.POSITIVE_INFINITY, maxLineLength: Number.POSITIVE_INFINITY };

/**
 * A field value as lines: text as it reads (a prompt template keeps its line breaks), anything
 * else as pretty-printed JSON; long values are cut to `format`, saying how much was left out.
 */
export function formatValue(value: unknown, format: ValueFormat = SHORT_VALUES): string[] {
  let text: string;
  if (value === null || value === undefined) text = '(none)';
  else if (typeof value === 'string') text = value === '' ? '""' : value;
  else text = JSON.stringify(value, null, 2);
  const lines = text.split(/\r?\n/);
  const kept = lines
    .slice(0, format.maxLines)
    .map((line) => (line.length > format.maxLineLength ? `${line.slice(0, format.maxLineLength - 1)}…` : line));
  const left = lines.length - kept.length;
  if (left > 0) kept.push(`… ${left} more line${left === 1 ? '' : 's'} (--full shows everything)`);
  return kept;
}

function changeLabel(v: VersionSummaryDto): string {
  if (v.change_type === 'restore') return v.restored_from_version ? `restore of v${v.restored_from_version}` : 'restore';
  return v.change_type;
}

function fieldList(fields: string[], max = 60): string {
  const text = fields.join(', ') || '—';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// ---------------------------------------------------------------- commands

export function intentsCommand(): Command {
  const intents = new Command('intents').description(
    'List a domain\'s intents (with --api-key), and read, compare and restore versions of a custom intent (with the login from `liya login`)',
  );

  intents
    .command('list')
    .description('List the intents of a domain (built-in such as hiring, or custom) with their endpoints; needs --api-key')
    .requiredOption('--domain <key>', 'domain key, e.g. hiring')
    .option('--json', 'print {intents} with their input and output schemas as JSON')
    .action(
      action(async (flags: { domain: string; json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        const result = await withSpinner(`Loading the intents of ${flags.domain}`, () =>
          client.get<{ intents: IntentSummary[] }>(`/v1/domains/${segment(flags.domain)}/intents`, { auth: 'bearer' }),
        );
        if (flags.json) return printJson(result);
        const count = result.intents.length;
        await show(
          h(
            Stack,
            null,
            h(Table, {
              headers: ['INTENT', 'NAME', 'ENDPOINT'],
              rows: result.intents.map((i) => [i.intent_key, i.display_name, `${i.method} ${i.endpoint}`]),
              empty: `Domain ${flags.domain} has no active intents.`,
            }),
            h(StatusLine, {
              kind: 'info',
              message: `${count} intent${count === 1 ? '' : 's'} in ${flags.domain}.`,
              hints: count ? [`Run one: liya run ${flags.domain} ${result.intents[0].intent_key} --input input.json`] : [],
            }),
          ),
        );
      }),
    );

  intents
    .command('versions')
    .description('List the versions of a custom intent, newest first; needs `liya login`')
    .argument('<domain>', 'custom domain key')
    .argument('<intent>', 'intent key')
    .option('--json', 'print {versions} as JSON')
    .action(
      action(async (domain: string, intent: string, flags: { json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        const credentials = await dashboardLogin(ctx, 'liya intents versions');
        const { versions } = await withSpinner(`Loading the versions of ${domain}/${intent}`, () =>
          ctx.withToken(credentials.token).get<{ versions: VersionSummaryDto[] }>(`${intentPath(domain, intent)}/versions`, { auth: 'bearer' }),
        );
        if (flags.json) return printJson({ versions });
        const current = versions[0]?.version_number;
        const oldest = versions.at(-1)?.version_number;
        await show(
          h(
            Stack,
            null,
            h(Table, {
              headers: ['VERSION', 'CHANGE', 'CHANGED FIELDS', 'BY', 'CREATED'],
              rows: versions.map((v) => [
                v.version_number === current ? `${v.version_number} (current)` : String(v.version_number),
                changeLabel(v),
                fieldList(v.changed_fields),
                v.actorName ?? v.created_by ?? '—',
                dateTime(v.created_at),
              ]),
              empty: 'No versions.',
            }),
            h(StatusLine, {
              kind: 'info',
              message: `${versions.length} version${versions.length === 1 ? '' : 's'} of ${domain}/${intent}${current ? `; current: ${current}` : ''}.`,
              hints:
                current && oldest && current !== oldest
                  ? [`Compare: liya intents diff ${domain} ${intent} ${oldest} ${current}`, `Go back: liya intents restore ${domain} ${intent} <version>`]
                  : [],
            }),
          ),
        );
      }),
    );

  intents
    .command('diff')
    .description('Show what changed between two versions of a custom intent, field by field; needs `liya login`')
    .argument('<domain>', 'custom domain key')
    .argument('<intent>', 'intent key')
    .argument('<a>', 'version to compare from', versionNumber)
    .argument('<b>', 'version to compare to', versionNumber)
    .option('--full', 'show long values in full (default: 12 lines of 160 characters each)')
    .option('--json', 'print {from, to, changes} as JSON')
    .action(
      action(async (domain: string, intent: string, a: number, b: number, flags: { full?: boolean; json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        const credentials = await dashboardLogin(ctx, 'liya intents diff');
        const diff = await withSpinner(`Comparing versions ${a} and ${b} of ${domain}/${intent}`, () =>
          ctx.withToken(credentials.token).get<IntentVersionDiff>(`${intentPath(domain, intent)}/versions/${a}/diff/${b}`, { auth: 'bearer' }),
        );
        if (flags.json) return printJson(diff);
        const format = flags.full ? FULL_VALUES : SHORT_VALUES;
        const changes: FieldChange[] = diff.changes.map((c) => ({ field: c.field, before: formatValue(c.before, format), after: formatValue(c.after, format) }));
        const count = changes.length;
        await show(
          h(FieldDiff, {
            title: `${domain}/${intent}: version ${diff.from} → ${diff.to}, ${count} field${count === 1 ? '' : 's'} changed`,
            changes,
            empty: 'The two versions define the intent the same way.',
          }),
        );
      }),
    );

  intents
    .command('restore')
    .description('Make an old version live again: it is saved as a new version (the history is kept); needs `liya login` as a developer, admin or owner')
    .argument('<domain>', 'custom domain key')
    .argument('<intent>', 'intent key')
    .argument('<version>', 'version to restore', versionNumber)
    .option('--json', 'print the live intent as JSON')
    .action(
      action(async (domain: string, intent: string, version: number, flags: { json?: boolean }, command: Command) => {
        const ctx = commandContext(command);
        const credentials = await dashboardLogin(ctx, 'liya intents restore');
        const restored = await withSpinner(`Restoring version ${version} of ${domain}/${intent}`, () =>
          ctx.withToken(credentials.token).post<{ intent: CustomIntent }>(`${intentPath(domain, intent)}/versions/${version}/restore`, { auth: 'bearer' }),
        );
        if (flags.json) return printJson(restored.intent);
        const live = restored.intent;
        await show(
          h(StatusLine, {
            kind: 'success',
            message: `Restored version ${version} of ${domain}/${intent} as version ${live.current_version}; current_version is now ${live.current_version}`,
            hints: [`Runs use it from now on. What changed: liya intents diff ${domain} ${intent} ${live.current_version - 1} ${live.current_version}`],
          }),
        );
      }),
    );

  return intents;
}
