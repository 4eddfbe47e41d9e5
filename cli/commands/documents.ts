// `liya documents ...`: upload files into a collection through the dashboard API (login from
// `liya login`), following each ingestion job until it ends, and list the tenant's documents
// through the API key routes.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option } from 'commander';
import { createElement as h } from 'react';
import type { CollectionDto } from '../../server/collections/collections.schemas.js';
import type { DocumentDto, DocumentPage, IngestionJobDto, JobReference } from '../../server/documents/documents.schemas.js';
import type { MediaTypesByExtension } from '../../server/documents/media-types.js';
import { action } from '../action.js';
import { ApiError, type ApiClient } from '../api-client.js';
import { commandContext, requireDashboardLogin, type CommandContext } from '../context.js';
import type { Credentials } from '../credentials.js';
import { CliError, EXIT_FAILURE } from '../errors.js';
import { isInteractive, printJson, show, withSpinner } from '../output.js';
import { parseInteger, parseSeconds } from '../options.js';
import { IngestionProgress, type UploadProgress } from '../ui/ingestion-progress.js';
import { renderLiveView } from '../ui/live-view.js';
import { Stack } from '../ui/stack.js';
import { StatusLine, StatusList, type StatusLineProps } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { dateTime, plural } from '../format.js';

type CollectionSummary = Pick<CollectionDto, 'id' | 'slug' | 'label'>;

/**
 * What the server accepts, by extension (anything else is sent without a type: the server answers
 * 415). Typed from the server's table, so the compiler fails when the two differ.
 */
export const MIME_TYPES: { readonly [E in keyof MediaTypesByExtension as `.${E}`]: MediaTypesByExtension[E] } = {
  '.txt': 'text/plain',
  '.text': 'text/plain',
  '.log': 'text/plain',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

export function mimeTypeOf(file: string): string | undefined {
  return (MIME_TYPES as Readonly<Record<string, string>>)[path.extname(file).toLowerCase()];
}

const FINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
const POLL_MS = 300;
/** How long `upload` follows the jobs unless --max-wait says otherwise. */
const MAX_WAIT_MS = 10 * 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The stored dashboard login, checked against this server and for expiry: missing, for another --url or expired is exit 2. */
export async function uploadLogin(ctx: CommandContext, what: string): Promise<Credentials> {
  return requireDashboardLogin(ctx, {
    message: `${what} needs a dashboard login (documents are uploaded through the dashboard API)`,
    hints: ['Log in as a developer, admin or owner of the tenant: {login}'],
  });
}

/**
 * Collection ids for the given ids or slugs: ids are taken as they are, slugs are looked up through
 * GET /v1/collections; an unknown slug is exit 2, naming the tenant's slugs.
 */
export async function resolveCollections(client: ApiClient, values: string[]): Promise<string[]> {
  if (values.every((v) => UUID.test(v))) return values;
  const { collections } = await client.get<{ collections: CollectionSummary[] }>('/v1/collections', { auth: 'bearer' });
  return values.map((value) => {
    const found = collections.find((c) => c.id === value || c.slug === value);
    if (found) return found.id;
    if (UUID.test(value)) return value; // an id the server will judge
    const known = collections.map((c) => c.slug);
    throw new CliError(`The tenant has no collection "${value}"`, [
      known.length ? `Its collections: ${known.join(', ')}` : 'It has no collections yet; create one in the dashboard or with POST /v1/collections.',
    ]);
  });
}

interface LocalFile {
  file: string;
  name: string;
  content: Buffer;
  mimeType?: string;
}

async function readUpload(file: string): Promise<LocalFile> {
  let content: Buffer;
  try {
    content = await readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw new CliError(`Cannot read ${file}: ${reason}`);
  }
  return { file, name: path.basename(file), content, mimeType: mimeTypeOf(file) };
}

/** One file's upload: its job once accepted, or why the server refused it. */
interface Upload {
  file: string;
  name: string;
  job?: IngestionJobDto;
  rejected?: { status: number; code: string; message: string };
}

function progressOf(u: Upload): UploadProgress {
  if (u.rejected) return { name: u.name, status: 'rejected', stage: null, progress: 0 };
  const job = u.job!;
  return { name: u.name, status: job.status, stage: job.stage, progress: job.progress };
}

function stateKey(u: Upload): string {
  return u.rejected ? 'rejected' : `${u.job!.status}/${u.job!.stage ?? ''}`;
}

function progressLine(u: Upload): string {
  if (u.rejected) return `${u.name}: rejected, ${u.rejected.code} (HTTP ${u.rejected.status})`;
  const job = u.job!;
  return `${u.name}: ${job.status}${job.stage && job.stage !== job.status ? `, ${job.stage}` : ''} ${Math.round(job.progress)}%`;
}

function outcome(u: Upload): StatusLineProps {
  if (u.rejected) return { kind: 'error', message: `${u.name}: ${u.rejected.code} (HTTP ${u.rejected.status}): ${u.rejected.message}` };
  const job = u.job!;
  if (job.status === 'completed') {
    const r = job.result ?? {};
    const facts = [
      typeof r.chunks === 'number' ? plural(r.chunks, 'chunk') : null,
      typeof r.characters === 'number' ? plural(r.characters, 'character') : null,
      typeof r.pages === 'number' && r.pages > 0 ? plural(r.pages, 'page') : null,
    ].filter(Boolean);
    return { kind: 'success', message: `${u.name}: completed${facts.length ? `, ${facts.join(', ')}` : ''}`, lines: job.document_id ? [`document ${job.document_id}`] : [] };
  }
  if (job.status === 'failed' || job.status === 'cancelled') {
    return { kind: 'error', message: `${u.name}: ${job.status}${job.stage && job.stage !== job.status ? ` at ${job.stage}` : ''}`, lines: job.error_message ? [job.error_message] : [] };
  }
  return { kind: 'warning', message: `${u.name}: still ${job.status}${job.stage ? ` (${job.stage}, ${Math.round(job.progress)}%)` : ''} when liya stopped waiting`, lines: [`job ${job.id}`] };
}

/** Shows the uploads as they move: ink bars on a terminal, one line per stage change elsewhere, nothing for --json off a terminal. */
function progressView(uploads: Upload[], json: boolean) {
  const stream = json ? process.stderr : process.stdout;
  if (isInteractive(stream)) {
    return renderLiveView(stream, () => h(IngestionProgress, { uploads: uploads.map(progressOf) }), json);
  }
  const seen = new Map<Upload, string>();
  const update = () => {
    if (json) return;
    for (const u of uploads) {
      const key = stateKey(u);
      if (seen.get(u) === key) continue;
      seen.set(u, key);
      stream.write(`${progressLine(u)}\n`);
    }
  };
  return { update, finish: async () => update() };
}

async function upload(files: string[], flags: { collection: string; category?: string; json?: boolean; maxWait: number }, command: Command): Promise<number> {
  const ctx = commandContext(command);
  const credentials = await uploadLogin(ctx, 'liya documents upload');
  // A slug is looked up with the API key; an id is sent as it is.
  const byId = UUID.test(flags.collection);
  const keyClient = byId ? null : ctx.withApiKey();
  const dashboard = ctx.withToken(credentials.token);
  const locals: LocalFile[] = [];
  for (const file of files) locals.push(await readUpload(file));
  const collectionId = keyClient ? (await resolveCollections(keyClient, [flags.collection]))[0] : flags.collection;

  const uploads: Upload[] = [];
  for (const local of locals) {
    const body = {
      name: local.name,
      content_base64: local.content.toString('base64'),
      ...(local.mimeType ? { mime_type: local.mimeType } : {}),
      ...(flags.category ? { category: flags.category } : {}),
      collection_ids: [collectionId],
    };
    try {
      const { jobId } = await dashboard.post<JobReference>('/dashboard/documents', { auth: 'bearer', body });
      const { job } = await dashboard.get<{ job: IngestionJobDto }>(`/dashboard/ingestion-jobs/${encodeURIComponent(jobId)}`, { auth: 'bearer' });
      uploads.push({ file: local.file, name: local.name, job });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // Without a usable login or key no other file can go through either.
      if (err.status === 401 || err.status === 403) throw err;
      uploads.push({ file: local.file, name: local.name, rejected: { status: err.status, code: err.code, message: err.message } });
    }
  }

  const view = progressView(uploads, Boolean(flags.json));
  const deadline = Date.now() + flags.maxWait;
  try {
    view.update();
    while (uploads.some((u) => u.job && !FINAL.has(u.job.status)) && Date.now() < deadline) {
      await sleep(POLL_MS);
      await Promise.all(
        uploads
          .filter((u) => u.job && !FINAL.has(u.job.status))
          .map(async (u) => {
            const { job } = await dashboard.get<{ job: IngestionJobDto }>(`/dashboard/ingestion-jobs/${encodeURIComponent(u.job!.id)}`, { auth: 'bearer' });
            u.job = job;
          }),
      );
      view.update();
    }
  } finally {
    await view.finish();
  }

  const ok = uploads.every((u) => u.job?.status === 'completed');
  if (flags.json) {
    printJson({
      jobs: uploads.filter((u) => u.job).map((u) => ({ file: u.file, ...u.job })),
      rejected: uploads.filter((u) => u.rejected).map((u) => ({ file: u.file, name: u.name, ...u.rejected })),
    });
    return ok ? 0 : EXIT_FAILURE;
  }
  const completed = uploads.filter((u) => u.job?.status === 'completed').length;
  const stillRunning = uploads.some((u) => u.job && !FINAL.has(u.job.status));
  await show(
    h(
      Stack,
      null,
      h(StatusList, { items: uploads.map(outcome) }),
      h(StatusLine, {
        kind: ok ? 'success' : 'error',
        message: `${completed} of ${plural(uploads.length, 'file')} ingested into ${flags.collection}.`,
        hints: [
          ...(stillRunning ? ['Wait longer with --max-wait <seconds>; the jobs go on on the server.'] : []),
          ...(ok ? ['List them: liya documents list'] : []),
        ],
      }),
    ),
    ok ? process.stdout : process.stderr,
  );
  return ok ? 0 : EXIT_FAILURE;
}

function collectionNames(d: DocumentDto): string {
  const text = d.collections.map((c) => c.slug).join(', ') || '—';
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

export function documentsCommand(): Command {
  const documents = new Command('documents').description(
    'Upload documents into a collection (with the login from `liya login` and --api-key) and list them (with --api-key)',
  );

  documents
    .command('upload')
    .description(
      'Upload files into a collection and follow their ingestion (extracting, chunking, embedding, indexing) until it ends; ' +
        'needs `liya login` (developer or higher), and --api-key to find a collection by its slug',
    )
    .argument('<file...>', `files to upload (${Object.keys(MIME_TYPES).join(' ')})`)
    .requiredOption('--collection <slug>', 'collection slug or id to add the documents to')
    .option('--category <category>', 'category of the documents')
    .addOption(new Option('--max-wait <seconds>', 'how long to follow the ingestion jobs').argParser(parseSeconds).default(MAX_WAIT_MS, '600'))
    .option('--json', 'print {jobs, rejected}: the final ingestion jobs and the uploads the server refused')
    .addHelpText('after', '\nExit codes: 0 every file was ingested; 1 an upload was refused or a job failed, was cancelled or is still running; 2 usage error, missing file, login or key.')
    .action(action((files: string[], flags: { collection: string; category?: string; json?: boolean; maxWait: number }, command: Command) => upload(files, flags, command)));

  documents
    .command('list')
    .description('List the tenant\'s documents, newest first; needs --api-key')
    .option('--collection <id>', 'only the documents of this collection (id or slug)')
    .option('--category <category>', 'only documents of this category')
    .option('--page <n>', 'page number', parseInteger(1, 1_000_000), 1)
    .option('--page-size <n>', 'documents per page', parseInteger(1, 100))
    .option('--json', 'print {documents, pagination} as JSON')
    .action(
      action(async (flags: { collection?: string; category?: string; page: number; pageSize?: number; json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        const result = await withSpinner('Loading documents', async () => {
          const [collectionId] = flags.collection ? await resolveCollections(client, [flags.collection]) : [undefined];
          return client.get<DocumentPage>('/v1/documents', {
            auth: 'bearer',
            query: { collection_id: collectionId, category: flags.category, page: flags.page, pageSize: flags.pageSize },
          });
        });
        if (flags.json) return printJson(result);
        const { total, limit, offset } = result.pagination;
        const count = result.documents.length;
        const pages = Math.max(1, Math.ceil(total / Math.max(limit, 1)));
        await show(
          h(
            Stack,
            null,
            h(Table, {
              headers: ['NAME', 'CATEGORY', 'CHUNKS', 'SIZE KB', 'COLLECTIONS', 'STATUS', 'UPLOADED'],
              align: ['left', 'left', 'right', 'right'],
              rows: result.documents.map((d) => [
                d.name,
                d.category ?? '—',
                String(d.chunks),
                String(Math.round(d.sizeKb * 10) / 10),
                collectionNames(d),
                d.status,
                dateTime(d.uploadedAt),
              ]),
              empty: 'No documents.',
            }),
            h(StatusLine, {
              kind: 'info',
              message: count ? `Documents ${offset + 1}–${offset + count} of ${total} (page ${flags.page} of ${pages}).` : `${plural(total, 'document')}.`,
              hints: offset + count < total ? [`Next page: liya documents list --page ${flags.page + 1}`] : count ? [] : ['Upload some: liya documents upload <file...> --collection <slug>'],
            }),
          ),
        );
      }),
    );

  return documents;
}

