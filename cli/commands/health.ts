// `liya health`: the readiness probe, as an exit code for scripts (0 ready, 1 anything else).
import { Command } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { EXIT_FAILURE } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { StatusLine } from '../ui/status.js';

interface Readiness {
  success?: boolean;
  data?: { status?: string; engine?: boolean; db?: boolean };
  error?: { code?: string; message?: string };
}

const state = (ok: boolean | undefined) => (ok === undefined ? 'unknown' : ok ? 'ok' : 'unavailable');

export function healthCommand(): Command {
  return new Command('health')
    .description('Check that the server is ready (GET /health/ready); exit code 0 when ready, 1 otherwise')
    .option('--json', 'print {status, db, engine} as JSON')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const { client, url } = commandContext(command);
        const res = await withSpinner(`Checking ${url}`, () => client.send('GET', '/health/ready'));
        const body = (res.body ?? {}) as Readiness;
        const data = body.data ?? {};
        const ready = res.status === 200 && body.success === true && data.status === 'ready';
        if (flags.json) {
          printJson({ status: data.status ?? 'unknown', db: data.db ?? null, engine: data.engine ?? null, httpStatus: res.status });
        } else {
          const reason = body.error?.message ?? (ready ? '' : `HTTP ${res.status}`);
          await show(
            h(StatusLine, {
              kind: ready ? 'success' : 'error',
              message: ready ? `Liya at ${url} is ready` : `Liya at ${url} is not ready: ${reason}`,
              lines: [`database: ${state(data.db)}`, `engine (job runner): ${state(data.engine)}`],
            }),
            ready ? process.stdout : process.stderr,
          );
        }
        return ready ? 0 : EXIT_FAILURE;
      }),
    );
}
