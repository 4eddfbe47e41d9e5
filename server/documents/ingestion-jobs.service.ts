import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid, type Pagination } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import type { IngestionJobDto } from './documents.schemas.js';

interface JobRow {
  id: string;
  source_type: string;
  name: string;
  status: IngestionJobDto['status'];
  stage: string | null;
  progress: number;
  result: Record<string, unknown> | null;
  error_message: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  document_id: string | null;
}

// Never the stored bytes (`content`).
const JOB_SELECT = `select id, source_type, name, status, stage, progress, result, error_message, created_at, started_at, completed_at, document_id from ingestion_jobs`;

export const toJobDto = (row: JobRow): IngestionJobDto => ({
  id: row.id,
  source_type: row.source_type,
  name: row.name,
  status: row.status,
  stage: row.stage,
  progress: row.progress,
  result: row.result,
  error_message: row.error_message,
  created_at: isoRequired(row.created_at),
  started_at: iso(row.started_at),
  completed_at: iso(row.completed_at),
  document_id: row.document_id,
});

export async function listIngestionJobs(
  em: EntityManager,
  tenantId: string,
  filter: { status?: IngestionJobDto['status'] },
  page: { limit: number; offset: number },
): Promise<{ jobs: IngestionJobDto[]; pagination: Pagination }> {
  const where = filter.status ? 'tenant_id = ? and status = ?' : 'tenant_id = ?';
  const params = filter.status ? [tenantId, filter.status] : [tenantId];
  const [{ total }] = await em.execute<{ total: number }[]>(`select count(*)::int as total from ingestion_jobs where ${where}`, params);
  const rows = await em.execute<JobRow[]>(`${JOB_SELECT} where ${where} order by created_at desc, id desc limit ? offset ?`, [...params, page.limit, page.offset]);
  return { jobs: rows.map(toJobDto), pagination: { total, ...page } };
}

export async function getIngestionJob(em: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Ingestion job');
  const [row] = await em.execute<JobRow[]>(`${JOB_SELECT} where id = ? and tenant_id = ?`, [id, tenantId]);
  if (!row) throw notFound('Ingestion job');
  return { job: toJobDto(row) };
}

/**
 * Cancels a pending or running job (409 CONFLICT once it has finished). The upload is abandoned:
 * its document, chunks and collection references are deleted now; a running task notices the
 * cancellation at its next stage or batch and stops without writing.
 */
export async function cancelIngestionJob(em: EntityManager, tenantId: string, actor: Actor, id: string) {
  if (!isUuid(id)) throw notFound('Ingestion job');
  await em.transactional(async (tx) => {
    const [job] = await tx.execute<{ status: string; document_id: string | null; name: string }[]>(
      'select status, document_id, name from ingestion_jobs where id = ? and tenant_id = ? for update',
      [id, tenantId],
    );
    if (!job) throw notFound('Ingestion job');
    if (job.status !== 'pending' && job.status !== 'running') {
      throw new AppError('CONFLICT', `The ingestion job has already ended (${job.status})`, { status: job.status });
    }
    await tx.execute(`update ingestion_jobs set status = 'cancelled', content = null, completed_at = now() where id = ?`, [id]);
    if (job.document_id) await tx.execute('delete from documents where id = ?', [job.document_id]);
    // A job not yet picked up is removed from the queue (a locked one finds the row cancelled).
    if (job.status === 'pending') await tx.execute('select graphile_worker.remove_job(?)', [id]);
    recordAudit(tx, tenantId, actor, {
      action: 'ingestion_job.cancelled',
      targetType: 'ingestion_job',
      targetId: id,
      details: { name: job.name, status_before: job.status, document_id: job.document_id },
    });
    await tx.flush();
  });
  return getIngestionJob(em, tenantId, id);
}
