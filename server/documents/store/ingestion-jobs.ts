// The ingestion_jobs table; this module writes it, except for an upload's intake (document-uploads.ts)
// and an ingestion's completion (ingestion-completion.ts), each one statement.
import { sql } from 'kysely';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';
import type { PageRequest } from '../../common/pagination.js';
import { ingestDocumentJob } from '../../jobs/contracts.js';
import { addJobSql } from '../../jobs/store/job-queue.js';
import type { IngestionJobOptions } from '../ingestion-options.js';

export type IngestionJobStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';

// Never the stored bytes (`content`).
const JOB_COLUMNS = ['id', 'source_type', 'name', 'status', 'stage', 'progress', 'result', 'error_message', 'created_at', 'started_at', 'completed_at', 'document_id'] as const;

/** The tenant's jobs with the status (any status when undefined): an equality its index begins with. */
function tenantJobs(em: EntityManager, tenantId: string, status: IngestionJobStatus | undefined) {
  return kyselyOf(em)
    .selectFrom('ingestion_jobs')
    .where('tenant_id', '=', tenantId)
    .$if(status !== undefined, (qb) => qb.where('status', '=', status!));
}

/** How many of the tenant's jobs have the status (any status when undefined), counted up to `cap` + 1 (pageOfRows says how far). */
export async function countIngestionJobs(em: EntityManager, tenantId: string, status: IngestionJobStatus | undefined, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), tenantJobs(em, tenantId, status).select(sql.lit(1).as('one')), cap);
}

/**
 * A page of the tenant's jobs with the status (any status when undefined), newest first (ties by id),
 * and one more when there is a next page; on (tenant_id[, status], created_at desc, id desc), from the
 * offset or the cursor.
 */
export async function selectIngestionJobRows(em: EntityManager, tenantId: string, status: IngestionJobStatus | undefined, page: PageRequest) {
  return newestFirstPage(tenantJobs(em, tenantId, status).select(JOB_COLUMNS), 'created_at', page).execute();
}

/** One job of the tenant (undefined when there is none). */
export async function selectIngestionJobRow(em: EntityManager, tenantId: string, id: string) {
  return kyselyOf(em).selectFrom('ingestion_jobs').select(JOB_COLUMNS).where('id', '=', id).where('tenant_id', '=', tenantId).executeTakeFirst();
}

/** Locks the jobs of the tenant's document `for update` until the end of `tx`'s transaction. */
export async function lockDocumentIngestionJobs(tx: EntityManager, tenantId: string, documentId: string): Promise<void> {
  await kyselyOf(tx).selectFrom('ingestion_jobs').select('id').where('document_id', '=', documentId).where('tenant_id', '=', tenantId).forUpdate().execute();
}

/** Cancels the document's jobs that are still pending or running, dropping their stored bytes. */
export async function cancelDocumentIngestionJobs(tx: EntityManager, documentId: string): Promise<void> {
  await kyselyOf(tx)
    .updateTable('ingestion_jobs')
    .set({ status: 'cancelled', content: null, completed_at: sql<Date>`now()`, owner_id: null })
    .where('document_id', '=', documentId)
    .where('status', 'in', ['pending', 'running'])
    .execute();
}

/** The tenant's job (status, document, name), locked `for update` until the end of `tx`'s transaction. */
export async function lockTenantIngestionJob(tx: EntityManager, tenantId: string, id: string) {
  return kyselyOf(tx).selectFrom('ingestion_jobs').select(['status', 'document_id', 'name']).where('id', '=', id).where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst();
}

/** The job's status and document, locked `for update` until the end of `tx`'s transaction. */
export async function lockIngestionJob(tx: EntityManager, id: string) {
  return kyselyOf(tx).selectFrom('ingestion_jobs').select(['status', 'document_id']).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** Marks the job cancelled, dropping its stored bytes. */
export async function markIngestionJobCancelled(tx: EntityManager, id: string): Promise<void> {
  await kyselyOf(tx).updateTable('ingestion_jobs').set({ status: 'cancelled', content: null, completed_at: sql<Date>`now()`, owner_id: null }).where('id', '=', id).execute();
}

/**
 * Starts (or resumes) a pending or running job at the `extracting` stage; undefined when the job is
 * not pending or running.
 */
export async function claimIngestionJob(em: EntityManager, id: string, progress: number) {
  return kyselyOf(em)
    .updateTable('ingestion_jobs')
    .set({
      status: 'running',
      started_at: sql<Date>`coalesce(started_at, now())`,
      stage: 'extracting',
      progress: sql<number>`greatest(progress, ${progress})`,
    })
    .where('id', '=', id)
    .where('status', 'in', ['pending', 'running'])
    .returning(['tenant_id', 'document_id', 'options'])
    .executeTakeFirst();
}

/**
 * Moves a running job to `stage` (progress never goes back). False when the job is no longer running
 * (cancelled, or finished by another run): the caller stops.
 */
export async function advanceIngestionJob(em: EntityManager, id: string, stage: string, progress: number): Promise<boolean> {
  const rows = await kyselyOf(em)
    .updateTable('ingestion_jobs')
    .set({ stage, progress: sql<number>`greatest(progress, ${progress})` })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .returning('id')
    .execute();
  return rows.length > 0;
}

/** The job's status (undefined when there is no such job). */
export async function selectIngestionJobStatus(em: EntityManager, id: string): Promise<IngestionJobStatus | undefined> {
  return (await kyselyOf(em).selectFrom('ingestion_jobs').select('status').where('id', '=', id).executeTakeFirst())?.status;
}

/** The job's stored upload (null once it was dropped; undefined when there is no such job). */
export async function selectIngestionJobContent(em: EntityManager, id: string): Promise<Buffer | null | undefined> {
  const row = await kyselyOf(em).selectFrom('ingestion_jobs').select('content').where('id', '=', id).executeTakeFirst();
  // bytea comes back from pg as a Buffer.
  return row?.content as Buffer | null | undefined;
}

/** Keeps the settled settings in the job's options (`options.resolved`). */
export async function saveResolvedIngestionSettings(em: EntityManager, id: string, settings: NonNullable<IngestionJobOptions['resolved']>): Promise<void> {
  await kyselyOf(em)
    .updateTable('ingestion_jobs')
    .set({ options: sql<Record<string, unknown>>`options || jsonb_build_object('resolved', ${JSON.stringify(settings)}::jsonb)` })
    .where('id', '=', id)
    .execute();
}

/** Marks the job failed with `message`, dropping its stored bytes. */
export async function markIngestionJobFailed(tx: EntityManager, id: string, message: string): Promise<void> {
  await kyselyOf(tx)
    .updateTable('ingestion_jobs')
    .set({ status: 'failed', error_message: message, content: null, completed_at: sql<Date>`now()`, owner_id: null })
    .where('id', '=', id)
    .execute();
}

// Jobs ingested by the process that accepted them (owner_id set, no graphile job yet). On the
// SqlPool: graphile_worker.add_job (addJobSql) in the same statement as the ownership change, so a
// job is never left both unowned and unqueued.

/** The graphile job of each released row (`id`): its count is what the statement answers. */
const QUEUE_RELEASED = sql.raw(addJobSql(ingestDocumentJob, { jobId: 'id::text' }));

const HAND_OVER = statement<{ jobId: string; ownerId: string }>()('ingestion-hand-over', (p) =>
  build
    .with('released', (db) =>
      db
        .updateTable('ingestion_jobs')
        .set({ owner_id: sql.lit(null) })
        .where('id', '=', p.jobId)
        .where('owner_id', '=', p.ownerId)
        .where(sql<boolean>`${sql.ref('status')} in ('pending', 'running')`)
        .returning('id'),
    )
    .selectFrom('released')
    .select(sql<number>`count(${QUEUE_RELEASED})::int`.as('queued')),
);

/**
 * Gives a job this process owns to the job runner: clears the ownership and queues its graphile job.
 * Nothing happens when the job is no longer pending or running under `ownerId`.
 */
export async function handOverIngestionJob(sql: SqlPool, jobId: string, ownerId: string): Promise<void> {
  await HAND_OVER.run(sql, { jobId, ownerId });
}

/** The sweep of queueOrphanedIngestionJobs (the process heartbeats are server/runs' worker_heartbeats). */
function orphanSweep(idleSeconds: number, staleAfterSeconds: number, abandonedSeconds: number) {
  const ago = (seconds: number) => sql<Date>`now() - make_interval(secs => ${seconds})`;
  return build
    .with('orphans', (db) =>
      db
        .selectFrom('ingestion_jobs as j')
        .select('j.id')
        .where('j.owner_id', 'is not', null)
        .where('j.created_at', '<', ago(idleSeconds))
        .where((eb) =>
          eb.or([
            eb.not(
              eb.exists(
                eb
                  .selectFrom('worker_heartbeats as h')
                  .select(sql.lit(1).as('one'))
                  .whereRef('h.worker_id', '=', 'j.owner_id')
                  .where('h.last_seen_at', '>', ago(staleAfterSeconds)),
              ),
            ),
            eb('j.created_at', '<', ago(abandonedSeconds)),
          ]),
        )
        .orderBy('j.created_at')
        .limit(500)
        .forUpdate()
        .skipLocked(),
    )
    .with('released', (db) =>
      db.updateTable('ingestion_jobs as j').set({ owner_id: sql.lit(null) }).from('orphans as o').whereRef('j.id', '=', 'o.id').returning(['j.id', 'j.status']),
    )
    .selectFrom('released')
    .select(sql<number>`count(${QUEUE_RELEASED})::int`.as('queued'))
    .where(sql<boolean>`${sql.ref('status')} in ('pending', 'running')`);
}

/**
 * Queues a graphile job for each pending or running job whose owner has not beaten for
 * `staleAfterSeconds` (a process that stopped before finishing it) or that is still owned after
 * `abandonedSeconds` (its owner lives but lost it: a completion lost with an asynchronous commit,
 * an intake whose answer was lost), at most 500 a call, and clears the owner of every job it looked
 * at. Only jobs older than `idleSeconds` are looked at. A job its owner still runs completes once:
 * the completion is gated on the job row.
 */
export async function queueOrphanedIngestionJobs(sql: SqlPool, idleSeconds: number, staleAfterSeconds: number, abandonedSeconds: number): Promise<number> {
  const [row] = await runBuilt(sql, orphanSweep(idleSeconds, staleAfterSeconds, abandonedSeconds));
  return row?.queued ?? 0;
}
