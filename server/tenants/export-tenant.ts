// A tenant's export: everything it owns as one NDJSON archive (ARCHIVE_FORMAT_NOTE), streamed to a
// sink as it is read. All tables are read in one snapshot, table by table through a cursor, so a
// tenant of any size costs bounded memory and the archive is consistent even while it works on.
import type { AppDeps } from '../deps.js';
import type { Actor } from '../actor.js';
import { isUuid } from '../common/schemas.js';
import { notFound } from '../errors.js';
import { recordTenantAction } from './platform-audit.js';
import { selectArchivedJobs } from './store/tenant-jobs.js';
import { selectTenantSummary, withExportSnapshot } from './store/tenant-data.js';
import { ARCHIVE_FORMAT, ARCHIVE_VERSION, ENCRYPTED_JSON_STRING, JOBS_TABLE, LEFT_OUT_TABLES, MASKED_SECRET_JSON, SECRET_COLUMNS } from './tenant-archive.js';

/** Where the archive goes: `write` resolves when the text may be followed by more (backpressure). */
export interface ArchiveSink {
  write(text: string): Promise<void>;
}

export interface ExportSummary {
  tenantId: string;
  rows: Record<string, number>;
  secretsOmitted: SecretCount[];
}

interface SecretCount {
  table: string;
  column: string;
  rows: number;
}

/**
 * Masks every encrypted value of a row (the JSON text of one row); answers the masked text and the
 * top-level columns that held one. Only a row that holds one is parsed, to name its columns.
 */
function maskSecrets(row: string): { text: string; columns: string[] } {
  if (!row.includes('"v1:')) return { text: row, columns: [] };
  const text = row.replace(ENCRYPTED_JSON_STRING, MASKED_SECRET_JSON);
  if (text === row) return { text, columns: [] };
  const parsed = JSON.parse(row) as Record<string, unknown>;
  const columns = Object.keys(parsed).filter((column) => new RegExp(ENCRYPTED_JSON_STRING.source).test(JSON.stringify(parsed[column])));
  return { text, columns };
}

/** Text gathered before it is handed to the sink. */
const WRITE_CHARS = 256 * 1024;

const line = (value: unknown) => `${JSON.stringify(value)}\n`;

/**
 * Writes the tenant's archive to `sink`. 404 when there is no such tenant (before anything is
 * written). A failure later ends the archive without its trailer, which an import refuses.
 */
export async function exportTenant(deps: Pick<AppDeps, 'sql'>, tenantId: string, sink: ArchiveSink, actor: Actor): Promise<ExportSummary> {
  if (!isUuid(tenantId)) throw notFound('Tenant');
  const summary = await withExportSnapshot(deps.sql, async (reader) => {
    const tenant = await selectTenantSummary(reader.query, tenantId);
    if (!tenant) throw notFound('Tenant');
    const tables = reader.catalog.tables.filter((t) => !(t.name in LEFT_OUT_TABLES));
    const declared = await reader.countSecrets(reader.catalog.tables, tenantId);
    await sink.write(
      line({
        format: ARCHIVE_FORMAT,
        version: ARCHIVE_VERSION,
        tenant_id: tenantId,
        tenant_name: tenant.name,
        exported_at: new Date().toISOString(),
        schema_version: reader.schemaVersion,
        tables: [...tables.map((t) => t.name), JOBS_TABLE],
        left_out: Object.entries(LEFT_OUT_TABLES)
          .filter(([name]) => reader.catalog.tables.some((t) => t.name === name))
          .map(([table, reason]) => ({ table, reason })),
        secrets_omitted: declared,
      }),
    );

    const rows: Record<string, number> = {};
    // Found while writing: the declared JSON columns, and any other place a secret turned up.
    const masked = new Map<string, SecretCount>();
    for (const table of tables) {
      const prefix = `{"table":${JSON.stringify(table.name)},"row":`;
      rows[table.name] = await reader.readRows(table, tenantId, async (batch) => {
        let text = '';
        for (const row of batch) {
          // Rows may be large (a run's input with attachments): written on well before a batch piles up.
          if (text.length > WRITE_CHARS) {
            await sink.write(text);
            text = '';
          }
          const safe = maskSecrets(row);
          for (const column of safe.columns) {
            const key = `${table.name}.${column}`;
            const count = masked.get(key) ?? { table: table.name, column, rows: 0 };
            count.rows += 1;
            masked.set(key, count);
          }
          text += `${prefix}${safe.text}}\n`;
        }
        await sink.write(text);
      });
    }
    const jobs = await selectArchivedJobs(reader.query, tenantId);
    if (jobs.length) await sink.write(jobs.map((job) => `{"table":${JSON.stringify(JOBS_TABLE)},"row":${job}}\n`).join(''));
    rows[JOBS_TABLE] = jobs.length;

    // The complete count: the columns written as null and the tables left out (declared), and every masked value.
    const secretsOmitted = [...declared.filter((d) => SECRET_COLUMNS.some((s) => s.table === d.table && s.column === d.column && s.mode !== 'json')), ...masked.values()];
    await sink.write(line({ end: true, rows, secrets_omitted: secretsOmitted }));
    return { tenantId, rows, secretsOmitted };
  });
  await recordTenantAction(deps.sql, actor, 'tenant.exported', tenantId, { rows: summary.rows, secrets_omitted: summary.secretsOmitted });
  return summary;
}
