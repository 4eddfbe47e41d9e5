// `liya tenants export | import | delete`: a tenant's whole data moved between servers, or deleted for
// good, through the admin API. The archive streams both ways (never whole in memory); a person at a
// terminal sees how far it got.
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Command } from 'commander';
import { createElement as h } from 'react';
import type { TenantDto } from '../../server/tenants/tenants.schemas.js';
import type { DeletionReceipt, ImportResult } from '../../server/tenants/tenant-data.schemas.js';
import { action } from '../action.js';
import { ApiError, createApiClient, UnreachableError } from '../api-client.js';
import { commandContext, type GlobalOptions } from '../context.js';
import { CliError, EXIT_FAILURE } from '../errors.js';
import { isInteractive, printJson, show, withSpinner } from '../output.js';
import { Details } from '../ui/details.js';
import { renderLiveView, type LiveView } from '../ui/live-view.js';
import { Spinner } from '../ui/spinner.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';

/** Exports, imports and deletions take as long as the tenant is big: an hour unless --timeout says otherwise. */
const LONG_TIMEOUT_MS = 60 * 60_000;

const LABELS = { tenantId: '<tenantId>', force: '--force' };

interface Remote {
  url: string;
  adminSecret?: string;
  timeoutMs: number;
}

function remoteOf(command: Command): Remote {
  const { url } = commandContext(command);
  const options = command.optsWithGlobals<GlobalOptions>();
  const userSetTimeout = ['cli', 'env'].includes(command.getOptionValueSourceWithGlobals('timeout') ?? '');
  return { url, adminSecret: options.adminSecret, timeoutMs: userSetTimeout ? options.timeout : LONG_TIMEOUT_MS };
}

const size = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 ** 2 ? `${(bytes / 1024).toFixed(1)} KiB` : bytes < 1024 ** 3 ? `${(bytes / 1024 ** 2).toFixed(1)} MiB` : `${(bytes / 1024 ** 3).toFixed(2)} GiB`;

/** A spinner with a changing label on an interactive stderr; nothing elsewhere. */
function progress(label: () => string): LiveView {
  if (!isInteractive(process.stderr)) return { update: () => undefined, finish: async () => undefined };
  return renderLiveView(process.stderr, () => h(Spinner, { label: label() }), true);
}

/** Sends one streaming request; an error answer (a JSON envelope) throws ApiError. */
async function streamRequest(remote: Remote, method: string, path: string, init: { body?: Readable; headers?: Record<string, string>; query?: Record<string, string> } = {}): Promise<Response> {
  const url = new URL(remote.url + path);
  for (const [key, value] of Object.entries(init.query ?? {})) url.searchParams.set(key, value);
  const headers: Record<string, string> = { ...init.headers };
  if (remote.adminSecret) headers['x-admin-secret'] = remote.adminSecret;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: init.body ? (Readable.toWeb(init.body) as ReadableStream) : undefined,
      ...(init.body ? { duplex: 'half' } : {}),
      signal: AbortSignal.timeout(remote.timeoutMs),
    } as RequestInit);
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause;
    throw new UnreachableError(remote.url, cause?.message ?? (err as Error).message);
  }
  if (!res.ok) {
    const text = await res.text();
    let error: { code?: string; message?: string; details?: Record<string, unknown> } = {};
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
    } catch {
      // not an envelope
    }
    throw new ApiError(res.status, error.code ?? `HTTP_${res.status}`, error.message ?? `${method} ${path} failed with HTTP ${res.status}`, error.details);
  }
  return res;
}

/** Counts what passes (bytes, and lines of NDJSON) and keeps the first and last line. */
class ArchiveWatch extends Transform {
  bytes = 0;
  lines = 0;
  private head = '';
  private tail = '';
  constructor(private readonly onProgress: () => void) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    const text = chunk.toString('utf8');
    // The header is the first line: kept until its end has passed.
    if (this.lines === 0) this.head = (this.head + text).slice(0, 4 * 1024 * 1024);
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.lines += 1;
    // The trailer is small: the last 64 KiB hold it.
    this.tail = (this.tail + text).slice(-65_536);
    this.onProgress();
    done(null, chunk);
  }
  get first(): string {
    return this.head.split('\n')[0];
  }
  get last(): string {
    return this.tail.trimEnd().split('\n').at(-1) ?? '';
  }
}

const parseJson = (text: string): Record<string, unknown> | null => {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};

interface SecretCount {
  table: string;
  column: string;
  rows: number;
}
const secretLines = (secrets: SecretCount[]) => secrets.map((s) => `${s.table}.${s.column}: ${s.rows} row${s.rows === 1 ? '' : 's'}`);

async function exportAction(tenantId: string, flags: { output?: string; gzip?: boolean; json?: boolean }, command: Command): Promise<number> {
  const remote = remoteOf(command);
  const toStdout = flags.output === '-';
  const gzip = Boolean(flags.gzip) || Boolean(flags.output?.endsWith('.gz'));
  const file = toStdout ? null : (flags.output ?? `liya-tenant-${tenantId}.ndjson${gzip ? '.gz' : ''}`);
  if (toStdout && flags.json) throw new CliError('--json prints a summary on stdout: give --output a file, not -');
  // The server compresses in transit (fetch undoes it); --gzip compresses the file here.
  const res = await streamRequest(remote, 'GET', `/admin/tenants/${encodeURIComponent(tenantId)}/export`, { headers: { 'accept-encoding': 'gzip' } });
  const watch = new ArchiveWatch(() => view.update());
  const view = progress(() => `Exporting tenant ${tenantId}: ${watch.lines.toLocaleString('en')} lines, ${size(watch.bytes)}`);
  const partial = file ? `${file}.partial` : null;
  try {
    const body = Readable.fromWeb(res.body as never);
    const target = partial ? createWriteStream(partial) : process.stdout;
    await (gzip ? pipeline(body, watch, createGzip(), target) : pipeline(body, watch, target));
  } catch (err) {
    await view.finish();
    if (partial) await rm(partial, { force: true });
    throw new CliError(`The export was cut off: ${(err as Error).message}`, ['Nothing was saved. Run it again; the server log says why it stopped.'], EXIT_FAILURE);
  }
  await view.finish();
  const trailer = parseJson(watch.last);
  if (trailer?.end !== true) {
    if (partial) await rm(partial, { force: true });
    throw new CliError('The export ended without its trailer: the archive is incomplete', ['Nothing was saved. Run it again; the server log says why it stopped.'], EXIT_FAILURE);
  }
  if (partial && file) await rename(partial, file);
  const header = parseJson(watch.first) ?? {};
  const rows = (trailer.rows ?? {}) as Record<string, number>;
  const secrets = (trailer.secrets_omitted ?? []) as SecretCount[];
  const total = Object.values(rows).reduce((a, b) => a + b, 0);
  const written = file ? (await stat(file)).size : watch.bytes;
  if (flags.json) {
    printJson({ file, bytes: written, tenant_id: tenantId, tenant_name: header.tenant_name ?? null, rows, secrets_omitted: secrets });
    return 0;
  }
  if (toStdout) return 0;
  await show(
    h(StatusLine, {
      kind: 'success',
      message: `Exported tenant ${String(header.tenant_name ?? tenantId)} (${tenantId}): ${total.toLocaleString('en')} rows of ${Object.values(rows).filter((n) => n > 0).length} tables, ${size(written)} to ${file}`,
      lines: secrets.length ? ['Credentials are not in the archive (set them again after an import):', ...secretLines(secrets)] : [],
      hints: [`Load it into a server: liya tenants import ${file}`],
    }),
  );
  return 0;
}

/** Whether the file starts with gzip's magic bytes. */
async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

async function importAction(file: string, flags: { json?: boolean }, command: Command): Promise<number> {
  const remote = remoteOf(command);
  let total: number;
  try {
    total = (await stat(file)).size;
  } catch {
    throw new CliError(`Cannot read ${file}`, ['Give the path of an archive written by liya tenants export.']);
  }
  const gzipped = await isGzip(file);
  let sent = 0;
  const view = progress(() => (sent < total ? `Uploading ${file}: ${size(sent)} of ${size(total)}` : `Loading ${file} (${size(total)}) into the server`));
  const body = createReadStream(file).on('data', (chunk: Buffer | string) => {
    sent += chunk.length;
    view.update();
  });
  let result: ImportResult;
  try {
    const res = await streamRequest(remote, 'POST', '/admin/tenants/import', {
      body,
      headers: { 'content-type': gzipped ? 'application/gzip' : 'application/x-ndjson', 'content-length': String(total) },
    });
    result = ((await res.json()) as { data: ImportResult }).data;
  } finally {
    await view.finish();
  }
  if (flags.json) {
    printJson(result);
    return 0;
  }
  const loaded = Object.values(result.rows).reduce((a, b) => a + b, 0);
  await show(
    h(
      Stack,
      null,
      h(StatusLine, {
        kind: 'success',
        message: `Imported tenant ${result.tenant_name} (${result.tenant_id}): ${loaded.toLocaleString('en')} rows`,
        lines: result.secrets_omitted.length ? ['Credentials were not in the archive; set them again:', ...secretLines(result.secrets_omitted)] : [],
        hints: result.ignored_columns.length ? [`Left out (no such column here): ${result.ignored_columns.join(', ')}`] : [],
      }),
    ),
  );
  return 0;
}

async function confirmDeletion(tenant: TenantDto, url: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`\nDelete tenant ${tenant.tenantName} (${tenant.id}) and everything it owns from ${url}, for good? Only "yes" is accepted: `);
    return answer.trim() === 'yes';
  } finally {
    prompt.close();
  }
}

function receiptFields(receipt: DeletionReceipt): [string, string][] {
  const tables = Object.entries(receipt.deleted).filter(([, n]) => n > 0);
  return [
    ['Tenant', `${receipt.tenant_name ?? '—'} (${receipt.tenant_id})`],
    ['Deleted at', receipt.deleted_at],
    ['Rows deleted', String(tables.reduce((a, [, n]) => a + n, 0))],
    ...tables.map(([table, n]): [string, string] => [`  ${table}`, String(n)]),
    ['Jobs removed', String(receipt.jobs_removed)],
    ...(Object.keys(receipt.cancelled).length ? [['Cancelled', Object.entries(receipt.cancelled).map(([t, n]) => `${t} ${n}`).join(', ')] as [string, string]] : []),
    ['Verified', receipt.verified ? 'yes: no table holds the tenant\'s id' : `no, still found: ${Object.entries(receipt.remaining).map(([t, n]) => `${t} ${n}`).join(', ')}`],
  ];
}

async function deleteAction(tenantId: string, flags: { force?: boolean; yes?: boolean; json?: boolean }, command: Command): Promise<number> {
  const remote = remoteOf(command);
  const client = createApiClient({ baseUrl: remote.url, adminSecret: remote.adminSecret, timeoutMs: remote.timeoutMs });
  const path = `/admin/tenants/${encodeURIComponent(tenantId)}`;
  if (!flags.yes) {
    const tenant = await client.get<TenantDto>(path, { auth: 'admin' });
    if (!process.stdin.isTTY) {
      throw new CliError('Not deleted: stdin is not a terminal to confirm on', ['Pass --yes to delete without confirmation.'], EXIT_FAILURE);
    }
    if (!(await confirmDeletion(tenant, remote.url))) {
      await show(h(StatusLine, { kind: 'warning', message: 'Deletion cancelled: nothing was changed.' }), process.stderr);
      return EXIT_FAILURE;
    }
  }
  let receipt: DeletionReceipt;
  try {
    receipt = await withSpinner(`Deleting tenant ${tenantId} (row by row: a big tenant takes a while)`, () =>
      client.call<DeletionReceipt>('DELETE', path, { auth: 'admin', query: flags.force ? { force: 'true' } : {} }),
    );
  } catch (err) {
    if (err instanceof ApiError && err.code === 'RUNS_IN_FLIGHT') {
      const inFlight = (err.details?.in_flight ?? {}) as Record<string, number>;
      throw new CliError(
        `Not deleted: tenant ${tenantId} has work in flight (${Object.entries(inFlight).map(([t, n]) => `${t} ${n}`).join(', ')})`,
        ['Wait for it to end, or pass --force to cancel it and delete.'],
        EXIT_FAILURE,
      );
    }
    throw err;
  }
  if (flags.json) printJson(receipt);
  else {
    await show(
      h(
        Stack,
        null,
        h(StatusLine, {
          kind: receipt.verified ? 'success' : 'warning',
          message: receipt.verified ? `Deleted tenant ${receipt.tenant_name ?? ''} (${receipt.tenant_id}) for good` : `Deleted tenant ${receipt.tenant_id}, but something is left`,
          hints: receipt.verified ? ['The receipt is in the operator\'s audit log (GET /admin/audit-log).'] : [`Run liya tenants delete ${tenantId} --yes again once the job runner let go of its jobs.`],
        }),
        h(Details, { fields: receiptFields(receipt) }),
      ),
    );
  }
  return receipt.verified ? 0 : EXIT_FAILURE;
}

/** Adds `export`, `import` and `delete` to the `tenants` command. */
export function addTenantDataCommands(tenants: Command): void {
  tenants
    .command('export')
    .description('Save everything a tenant owns as one archive (NDJSON, streamed; credentials are left out)')
    .argument('<tenantId>', 'tenant id')
    .option('-o, --output <file>', 'where to write it ("-" for stdout; default liya-tenant-<id>.ndjson, .ndjson.gz with --gzip)')
    .option('--gzip', 'compress the file with gzip (also when --output ends with .gz)')
    .option('--json', 'print a summary as JSON ({file, bytes, rows, secrets_omitted})')
    .action(action(exportAction, LABELS));

  tenants
    .command('import')
    .description('Recreate a tenant on this server from its archive (same ids; all or nothing)')
    .argument('<file>', 'an archive written by liya tenants export (NDJSON or gzip)')
    .option('--json', 'print the result as JSON')
    .action(action(importAction, LABELS));

  tenants
    .command('delete')
    .description('Delete a tenant and everything it owns, for good, and print the receipt (export it first to keep a copy)')
    .argument('<tenantId>', 'tenant id')
    .option('--force', 'delete even while its runs are in flight (they are cancelled)')
    .option('--yes', 'delete without asking (needed when stdin is not a terminal)')
    .option('--json', 'print the receipt as JSON')
    .action(action(deleteAction, LABELS));
}
