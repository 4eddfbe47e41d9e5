import { z } from 'zod';
import { historyPageQuery, historyPaginationSchema } from '../common/pagination.js';

const tableCounts = z.record(z.string(), z.number().int());

export const secretsOmittedSchema = z
  .array(z.object({ table: z.string(), column: z.string(), rows: z.number().int() }))
  .describe('Credentials the archive does not carry, per table and column, with how many rows held one: set them again after an import.');

export const deleteTenantInput = z.object({
  tenantId: z.string().max(64),
  force: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v === 'true')
    .describe('Delete even while runs are in flight: they are cancelled and their queued jobs removed first (default false).'),
});

export const deletionReceiptSchema = z
  .object({
    tenant_id: z.string(),
    tenant_name: z.string().nullable().describe('null when only leftovers of an earlier deletion (queued jobs) were found'),
    deleted_at: z.string(),
    forced: z.boolean(),
    cancelled: tableCounts.describe('Work in flight that was cancelled (force=true), per table.'),
    deleted: tableCounts.describe('Rows deleted per table, documents, chunks, cached answers and history included (the tenants row too).'),
    jobs_removed: z.number().int().describe('Queued jobs of the tenant removed from the job queue.'),
    verified: z.boolean().describe('true when a scan of every table with a tenant_id column, and of the job queue, found nothing of the tenant.'),
    remaining: tableCounts.describe('What the scan still found, per table (`graphile_worker.jobs` for jobs a worker still held); empty when verified.'),
  })
  .meta({ id: 'TenantDeletionReceipt' });
export type DeletionReceipt = z.infer<typeof deletionReceiptSchema>;

export const importResultSchema = z
  .object({
    tenant_id: z.string(),
    tenant_name: z.string(),
    imported_at: z.string(),
    rows: tableCounts.describe('Rows loaded per table (`graphile_worker.jobs`: jobs queued again).'),
    ignored_columns: z.array(z.string()).describe('`table.column` of the archive this server has no column for (left out), e.g. pgvector columns on a server without pgvector.'),
    secrets_omitted: secretsOmittedSchema,
  })
  .meta({ id: 'TenantImportResult' });
export type ImportResult = z.infer<typeof importResultSchema>;

export const platformAuditQuery = z.object({
  ...historyPageQuery,
  action: z.string().max(100).optional().describe('Only entries of this action: tenant.deleted, tenant.delete_started, tenant.exported, tenant.imported.'),
  target_id: z.string().max(200).optional().describe('Only entries about this tenant id.'),
});

export const platformAuditEntrySchema = z
  .object({
    id: z.string(),
    actor: z.string(),
    actor_type: z.string(),
    action: z.string(),
    target_type: z.string(),
    target_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()).describe('tenant.deleted: the deletion receipt.'),
    created_at: z.string(),
  })
  .meta({ id: 'PlatformAuditEntry' });
export type PlatformAuditEntryDto = z.infer<typeof platformAuditEntrySchema>;
export const platformAuditOutput = z.object({ entries: z.array(platformAuditEntrySchema), pagination: historyPaginationSchema });
