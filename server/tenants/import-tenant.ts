// A tenant archive (ARCHIVE_FORMAT_NOTE) loaded into this server: the tenant recreated with the same
// ids, all in one transaction. The archive is read line by line as it arrives and written in
// batches, so its size is bounded by the route's limit, not by memory. Anything wrong with it (no
// trailer, counts that disagree, an unknown table, another version, a row of another tenant) is
// 400 INVALID_ARCHIVE, a tenant id or unique value this server already has is 409, and either
// leaves nothing behind.
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import type { Actor } from '../actor.js';
import { isUuid } from '../common/schemas.js';
import { AppError } from '../errors.js';
import { recordTenantAction } from './platform-audit.js';
import { hasMigration, selectTenantSummary, withImportTransaction, type ImportWriter } from './store/tenant-data.js';
import type { TenantTable } from './store/tenant-catalog.js';
import { addArchivedJob, jobRowBelongsTo, type ArchivedJob } from './store/tenant-jobs.js';
import { ARCHIVE_FORMAT, ARCHIVE_VERSION, DERIVED_TABLES, JOBS_TABLE, LEFT_OUT_TABLES, PLATFORM_TASKS, TENANT_JOB_LINKS, TENANT_TASKS } from './tenant-archive.js';
import { secretsOmittedSchema, type ImportResult } from './tenant-data.schemas.js';

/** Rows one insert carries, and the JSON text it may reach before it is sent earlier. */
const BATCH_ROWS = 500;
const BATCH_CHARS = 4 * 1024 * 1024;

const invalidArchive = (message: string, details?: Record<string, unknown>) => new AppError('INVALID_ARCHIVE', message, details);

const headerSchema = z.object({
  format: z.literal(ARCHIVE_FORMAT),
  version: z.number(),
  tenant_id: z.string().refine(isUuid, 'not a UUID'),
  tenant_name: z.string(),
  exported_at: z.string(),
  schema_version: z.string(),
  tables: z.array(z.string()).min(1),
  secrets_omitted: secretsOmittedSchema.optional(),
});
type Header = z.infer<typeof headerSchema>;

const trailerSchema = z.object({ end: z.literal(true), rows: z.record(z.string(), z.number().int().min(0)) });

const jobSchema = z.object({
  task: z.string(),
  payload: z.record(z.string(), z.unknown()),
  run_at: z.string().nullable(),
  job_key: z.string().nullable(),
  max_attempts: z.number().int().min(1).max(32_767).nullable(),
  priority: z.number().int().min(-32_768).max(32_767).nullable(),
  queue_name: z.string().nullable(),
});

/** JSON.parse keeping every number's text: bigint and numeric columns must not pass through a double. */
type SourceReviver = (key: string, value: unknown, context: { source?: string }) => unknown;
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
const keepNumbers: SourceReviver = (_key, value, context) => (typeof value === 'number' && context?.source !== undefined ? rawJSON(context.source) : value);
const parseExact = (text: string): unknown => JSON.parse(text, keepNumbers as (key: string, value: unknown) => unknown);

function parseLine(text: string, lineNumber: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalidArchive(`line ${lineNumber} is not JSON: the archive is damaged`, { line: lineNumber });
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function readHeader(text: string | undefined): Header {
  if (text === undefined) throw invalidArchive('The archive is empty');
  const value = parseLine(text, 1);
  if (isPlainObject(value) && value.format === ARCHIVE_FORMAT && value.version !== ARCHIVE_VERSION) {
    throw invalidArchive(`This server reads version ${ARCHIVE_VERSION} archives; this one is version ${JSON.stringify(value.version)}`, { version: value.version });
  }
  const parsed = headerSchema.safeParse(value);
  if (!parsed.success) {
    throw invalidArchive(`The first line is not a ${ARCHIVE_FORMAT} header`, {
      issues: parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(header)', message: i.message })),
    });
  }
  return parsed.data;
}

/** PostgreSQL's refusal of a row: a unique value taken is a conflict, anything else a bad archive. */
function refusalOf(err: unknown, table: string | null): unknown {
  const pgError = err as { code?: string; constraint?: string; detail?: string; message?: string };
  if (typeof pgError?.code !== 'string' || err instanceof AppError) return err;
  if (pgError.code === '23505') {
    return new AppError('IMPORT_CONFLICT', `A value of the archive's ${table ?? 'rows'} is already taken on this server (${pgError.constraint ?? 'a unique constraint'})`, {
      table, constraint: pgError.constraint ?? null, detail: pgError.detail ?? null,
    });
  }
  // Integrity (23: a missing parent, a null, a check) and data (22: a value its column cannot read).
  if (pgError.code.startsWith('23') || pgError.code.startsWith('22')) {
    return invalidArchive(`A row of ${table ?? 'the archive'} cannot be loaded: ${pgError.message ?? 'refused by the database'}`, { table, reason: pgError.message ?? null, detail: pgError.detail ?? null });
  }
  return err;
}

/** Loads the archive `lines` (the NDJSON lines, in order) as a new tenant of this server. */
export async function importTenant(deps: Pick<AppDeps, 'sql'>, lines: AsyncIterable<string>, actor: Actor): Promise<ImportResult> {
  const iterator = lines[Symbol.asyncIterator]();
  let lineNumber = 0;
  const next = async (): Promise<string | undefined> => {
    for (;;) {
      const item = await iterator.next();
      if (item.done) return undefined;
      lineNumber += 1;
      if (item.value.trim() !== '') return item.value;
    }
  };
  const header = readHeader(await next());
  const tenantId = header.tenant_id;
  let current: string | null = null;
  try {
    const result = await withImportTransaction(deps.sql, async (writer) => {
      if (!(await hasMigration(writer.query, header.schema_version))) {
        throw invalidArchive(`The archive comes from a newer schema (${header.schema_version}) than this server's: upgrade this server first`, { schema_version: header.schema_version });
      }
      const tables = checkTables(writer, header);
      if (await selectTenantSummary(writer.query, tenantId)) {
        throw new AppError('TENANT_EXISTS', `Tenant ${tenantId} already exists on this server: delete it first, or import elsewhere`, { tenant_id: tenantId });
      }
      const load = new TableLoader(writer, tenantId, header.tables, tables);
      let trailer: z.infer<typeof trailerSchema> | null = null;
      for (let text = await next(); text !== undefined; text = await next()) {
        if (trailer) throw invalidArchive(`line ${lineNumber} follows the trailer: the archive is damaged`, { line: lineNumber });
        const plain = parseLine(text, lineNumber);
        if (isPlainObject(plain) && 'end' in plain) {
          const parsed = trailerSchema.safeParse(plain);
          if (!parsed.success) throw invalidArchive(`line ${lineNumber} is not a valid trailer`, { line: lineNumber });
          trailer = parsed.data;
          continue;
        }
        if (!isPlainObject(plain) || typeof plain.table !== 'string' || !isPlainObject(plain.row)) {
          throw invalidArchive(`line ${lineNumber} is not a row ({"table", "row"})`, { line: lineNumber });
        }
        current = plain.table;
        const row = plain.table === JOBS_TABLE ? plain.row : ((parseExact(text) as { row: Record<string, unknown> }).row);
        await load.add(plain.table, row, text.length, lineNumber);
      }
      if (!trailer) throw invalidArchive('The archive ends before its trailer: it is incomplete (the export failed or was cut off)', { lines: lineNumber });
      current = null;
      await load.finish();
      const mismatched = header.tables.filter((t) => (trailer.rows[t] ?? 0) !== (load.counts[t] ?? 0));
      const unknown = Object.keys(trailer.rows).filter((t) => !header.tables.includes(t));
      if (mismatched.length || unknown.length) {
        throw invalidArchive('The archive\'s rows disagree with its trailer\'s counts: it is damaged', {
          tables: [...mismatched, ...unknown].map((t) => ({ table: t, trailer: trailer.rows[t] ?? 0, read: load.counts[t] ?? 0 })),
        });
      }
      const tenant = await selectTenantSummary(writer.query, tenantId);
      if (!tenant) throw invalidArchive('The archive holds no tenants row for its tenant_id');
      return {
        tenant_id: tenantId,
        tenant_name: tenant.name,
        imported_at: new Date().toISOString(),
        rows: Object.fromEntries(header.tables.map((table) => [table, load.counts[table] ?? 0])),
        ignored_columns: [...load.ignoredColumns].sort(),
        secrets_omitted: header.secrets_omitted ?? [],
      };
    });
    await recordTenantAction(deps.sql, actor, 'tenant.imported', tenantId, { tenant_name: result.tenant_name, rows: result.rows, schema_version: header.schema_version });
    return result;
  } catch (err) {
    // A refused archive is not read on (the route answers, and closes a connection with much still to come).
    throw refusalOf(err, current);
  }
}

/** The header's tables as this server has them, checked: each known, each once, derived ones after their source, jobs last. */
function checkTables(writer: ImportWriter, header: Header): Map<string, TenantTable> {
  const known = new Map(writer.catalog.tables.filter((t) => !(t.name in LEFT_OUT_TABLES)).map((t) => [t.name, t]));
  const unknown = header.tables.filter((t) => t !== JOBS_TABLE && !known.has(t));
  if (unknown.length) throw invalidArchive(`The archive names tables this server does not import: ${unknown.join(', ')}`, { tables: unknown });
  if (new Set(header.tables).size !== header.tables.length) throw invalidArchive('The archive\'s header lists a table twice');
  if (header.tables.includes(JOBS_TABLE) && header.tables.at(-1) !== JOBS_TABLE) throw invalidArchive(`${JOBS_TABLE} must come last in the header's tables`);
  for (const [derived, { from }] of Object.entries(DERIVED_TABLES)) {
    const at = header.tables.indexOf(derived);
    const source = header.tables.indexOf(from);
    if (at >= 0 && source > at) throw invalidArchive(`${derived} must come after ${from} in the header's tables (a trigger derives it)`);
  }
  return known;
}

/** Loads rows table by table in the header's order, in batches. */
class TableLoader {
  readonly counts: Record<string, number> = {};
  readonly ignoredColumns = new Set<string>();
  private index = -1;
  private batch: Record<string, unknown>[] = [];
  private batchChars = 0;
  private readonly cleared = new Set<string>();

  constructor(
    private readonly writer: ImportWriter,
    private readonly tenantId: string,
    private readonly order: string[],
    private readonly tables: Map<string, TenantTable>,
  ) {}

  async add(table: string, row: Record<string, unknown>, chars: number, lineNumber: number): Promise<void> {
    const at = this.order.indexOf(table);
    if (at < 0) throw invalidArchive(`line ${lineNumber}: table ${table} is not in the header`, { line: lineNumber, table });
    if (at < this.index) throw invalidArchive(`line ${lineNumber}: a row of ${table} after rows of a later table (the header's order)`, { line: lineNumber, table });
    if (at > this.index) await this.advanceTo(at);
    this.counts[table] = (this.counts[table] ?? 0) + 1;
    if (table === JOBS_TABLE) return this.addJob(row, lineNumber);
    this.batch.push(row);
    this.batchChars += chars;
    if (this.batch.length >= BATCH_ROWS || this.batchChars >= BATCH_CHARS) await this.flush();
  }

  async finish(): Promise<void> {
    await this.advanceTo(this.order.length);
  }

  /** Writes what the current table has buffered, then readies derived tables the next rows may reach. */
  private async advanceTo(index: number): Promise<void> {
    await this.flush();
    this.index = index;
    for (const derived of Object.keys(DERIVED_TABLES)) {
      const at = this.order.indexOf(derived);
      if (at < 0 || at > index || this.cleared.has(derived)) continue;
      // The trigger counted the source rows loaded so far: the archive's own totals replace them.
      await this.writer.clearRows(this.tables.get(derived)!, this.tenantId);
      this.cleared.add(derived);
    }
  }

  private async flush(): Promise<void> {
    if (!this.batch.length) return;
    const name = this.order[this.index];
    const table = this.tables.get(name)!;
    const keys = new Set<string>();
    for (const row of this.batch) for (const key of Object.keys(row)) keys.add(key);
    const columns = table.columns.filter((c) => keys.has(c));
    for (const key of keys) if (!table.columns.includes(key)) this.ignoredColumns.add(`${name}.${key}`);
    const rows = this.batch;
    this.batch = [];
    this.batchChars = 0;
    const inserted = await this.writer.insertRows(table, columns, JSON.stringify(rows), this.tenantId);
    if (inserted !== rows.length) {
      throw invalidArchive(`${rows.length - inserted} row(s) of ${name} do not belong to tenant ${this.tenantId}`, { table: name, rows: rows.length - inserted });
    }
  }

  private async addJob(row: Record<string, unknown>, lineNumber: number): Promise<void> {
    const parsed = jobSchema.safeParse(row);
    if (!parsed.success) throw invalidArchive(`line ${lineNumber}: not a queued job`, { line: lineNumber });
    const job: ArchivedJob & { payload: Record<string, unknown> } = parsed.data;
    const known = TENANT_TASKS.includes(job.task) && !PLATFORM_TASKS.includes(job.task);
    const mine = job.payload.tenant_id === this.tenantId || (job.task in TENANT_JOB_LINKS && (await jobRowBelongsTo(this.writer.query, this.tenantId, job.task, job.payload)));
    if (!known || !mine) throw invalidArchive(`line ${lineNumber}: a ${job.task} job that is not tenant ${this.tenantId}'s work`, { line: lineNumber, task: job.task });
    await addArchivedJob(this.writer.query, job);
  }
}
