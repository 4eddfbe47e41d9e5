// `liya doctor`: the server's own checks (GET /admin/diagnostics), plus whether the server can be
// reached and asked at all, each with a fix; exit code 0 when nothing failed, 1 otherwise.
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { DiagnosticCheck, Diagnostics } from '../../server/admin/diagnostics.schemas.js';
import { action } from '../action.js';
import { ApiError, UnreachableError } from '../api-client.js';
import { commandContext } from '../context.js';
import { EXIT_FAILURE } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { StatusList, type StatusKind, type StatusLineProps } from '../ui/status.js';

/** A check as the server reports it; the CLI adds its own (can the server be reached and asked). */
type DoctorCheck = DiagnosticCheck;

const KIND: Record<DoctorCheck['status'], StatusKind> = { ok: 'success', warn: 'warning', fail: 'error' };

const ADMIN_FIXES: Record<string, string> = {
  ADMIN_UNAUTHORIZED: 'Pass --admin-secret or set LIYA_ADMIN_SECRET to the server\'s ADMIN_SECRET.',
  ADMIN_DISABLED: 'Set ADMIN_SECRET in the server\'s environment and restart it, then pass the same value as --admin-secret.',
};

/** The server's checks, or the one check that explains why they could not be asked for. */
async function collectChecks(command: Command): Promise<DoctorCheck[]> {
  const { client, url } = commandContext(command);
  const started = performance.now();
  try {
    const report = await client.get<Diagnostics>('/admin/diagnostics', { auth: 'admin' });
    const server: DoctorCheck = { name: 'server', status: 'ok', detail: `${url} answered in ${Math.round(performance.now() - started)} ms`, fix: null };
    return [server, ...report.checks];
  } catch (err) {
    if (err instanceof UnreachableError) {
      return [{ name: 'server', status: 'fail', detail: `cannot reach ${url}: ${err.reason}`, fix: 'Start it: liya start (or point --url / LIYA_URL at the running server).' }];
    }
    if (!(err instanceof ApiError)) throw err;
    const server: DoctorCheck = { name: 'server', status: 'ok', detail: `${url} answered`, fix: null };
    const adminFix = ADMIN_FIXES[err.code];
    if (adminFix) return [server, { name: 'admin access', status: 'fail', detail: `${err.code}: ${err.message}`, fix: adminFix }];
    const fix =
      err.code === 'ROUTE_NOT_FOUND' ? `The server at ${url} has no diagnostics: upgrade it, or check --url.` : `Read the server's log; check that ${url} is a Liya server.`;
    return [server, { name: 'diagnostics', status: 'fail', detail: `${err.code} (HTTP ${err.status}): ${err.message}`, fix }];
  }
}

function toStatusLine(check: DoctorCheck): StatusLineProps {
  return { kind: KIND[check.status], message: `${check.name}: ${check.detail}`, hints: check.fix ? [`fix: ${check.fix}`] : [] };
}

function summaryLine(checks: DoctorCheck[]): StatusLineProps {
  const failed = checks.filter((c) => c.status === 'fail').length;
  const warned = checks.filter((c) => c.status === 'warn').length;
  const warnings = warned ? `, ${warned} warning${warned === 1 ? '' : 's'}` : '';
  const total = `${checks.length} check${checks.length === 1 ? '' : 's'}`;
  if (failed) return { kind: 'error', message: `${failed} of ${total} failed${warnings}` };
  // A check with a warning did not pass: it is counted apart, never as one of "all".
  if (warned) return { kind: 'warning', message: `${checks.length - warned} of ${total} passed${warnings}` };
  return { kind: 'success', message: `${checks.length === 1 ? 'The' : 'All'} ${total} passed` };
}

export function doctorCommand(): Command {
  return new Command('doctor')
    .description('Check the server, its database, migrations, job runner and model provider, with a fix for each problem, and list the optional features it lacks (needs --admin-secret); exit code 0 when no check fails, 1 otherwise')
    .option('--json', 'print {ok, url, checks: [{name, status, detail, fix}]} as JSON')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const { url } = commandContext(command);
        const checks = await withSpinner(`Checking ${url}`, () => collectChecks(command));
        const ok = checks.every((c) => c.status !== 'fail');
        if (flags.json) printJson({ ok, url, checks });
        else await show(h(StatusList, { items: [...checks.map(toStatusLine), summaryLine(checks)] }));
        return ok ? 0 : EXIT_FAILURE;
      }),
    );
}
