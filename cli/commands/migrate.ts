// `liya migrate`: applies the MikroORM migrations and graphile-worker's job schema, then exits.
import { Command } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { printJson, show, withSpinner } from '../output.js';
import { StatusList, type StatusLineProps } from '../ui/status.js';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('Apply pending database migrations and the job queue schema to the configured database (DATABASE_URL, or the embedded one), then exit')
    .option('--json', 'print what was applied as JSON')
    .action(
      action(async (flags: { json?: boolean }) => {
        const { runMigrations } = await import('../local/migrate.js');
        const report = await withSpinner('Applying migrations', runMigrations);
        if (flags.json) return printJson(report);
        const { applied, total } = report.migrations;
        const { from, to } = report.jobSchema;
        const items: StatusLineProps[] = [
          { kind: 'info', message: `Database: ${report.database}` },
          applied.length
            ? { kind: 'success', message: `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}`, lines: applied }
            : { kind: 'success', message: `Migrations: up to date (${total} applied earlier)` },
          from === to
            ? { kind: 'success', message: `Job queue schema: up to date (graphile-worker migration ${to ?? 'none'})` }
            : { kind: 'success', message: `Job queue schema: applied graphile-worker migrations ${(from ?? 0) + 1}-${to}` },
        ];
        await show(h(StatusList, { items }));
      }),
    );
}
