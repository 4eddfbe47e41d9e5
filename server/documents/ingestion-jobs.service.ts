import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAuditNow } from '../audit/audit.service.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery, type HistoryPagination } from '../common/pagination.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import { ingestDocumentJob } from '../jobs/contracts.js';
import { removeJob } from '../jobs/job-queue.js';
import type { IngestionJobDto } from './documents.schemas.js';
import { deleteDocumentRow } from './store/documents.js';
import {
  countIngestionJobs, lockTenantIngestionJob, markIngestionJobCancelled, selectIngestionJobRow, selectIngestionJobRows,
} from './store/ingestion-jobs.js';

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

const JOBS_LIST: HistoryList = { name: 'ingestion_jobs', key: 'time' };

export async function listIngestionJobs(
  em: EntityManager,
  tenantId: string,
  filter: { status?: IngestionJobDto['status'] },
  query: HistoryPageQuery,
): Promise<{ jobs: IngestionJobDto[]; pagination: HistoryPagination }> {
  const request = pageRequestOf(JOBS_LIST, query);
  const status = filter.status || undefined;
  const rows = await selectIngestionJobRows(em, tenantId, status, request);
  const page = await pageOfRows(JOBS_LIST, request, rows, (r) => ({ key: r.cursor_key, id: r.id }), (cap) => countIngestionJobs(em, tenantId, status, cap));
  return { jobs: page.items.map(toJobDto), pagination: page.pagination };
}

export async function getIngestionJob(em: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Ingestion job');
  const row = await selectIngestionJobRow(em, tenantId, id);
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
    const job = await lockTenantIngestionJob(tx, tenantId, id);
    if (!job) throw notFound('Ingestion job');
    if (job.status !== 'pending' && job.status !== 'running') {
      throw new AppError('CONFLICT', `The ingestion job has already ended (${job.status})`, { status: job.status });
    }
    await markIngestionJobCancelled(tx, id);
    if (job.document_id) await deleteDocumentRow(tx, job.document_id);
    // A job not yet picked up is removed from the queue (a locked one finds the row cancelled).
    // Takes the queued job off the queue; a job a worker has already locked stays.
    if (job.status === 'pending') await removeJob(tx, ingestDocumentJob, id);
    await recordAuditNow(tx, tenantId, actor, {
      action: 'ingestion_job.cancelled',
      targetType: 'ingestion_job',
      targetId: id,
      details: { name: job.name, status_before: job.status, document_id: job.document_id },
    });
  });
  return getIngestionJob(em, tenantId, id);
}
