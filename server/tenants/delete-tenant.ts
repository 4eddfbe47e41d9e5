// A tenant deleted for good: every row of every table that holds its rows (documents, chunks and
// their vectors, cached answers, history, usage), its queued jobs, and the sign-in attempts of its
// users, then a scan proving nothing is left, recorded in the operator's audit log (outside the
// tenant, so the record outlives it). A big tenant goes table by table in short batches, children
// first: no long transaction holds locks that other tenants' requests would wait for.
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppDeps } from '../deps.js';
import type { Actor } from '../actor.js';
import { isUuid } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import { recordTenantAction } from './platform-audit.js';
import { readTenantCatalog } from './store/tenant-catalog.js';
import {
  cancelInFlight, countInFlight, countTenantRows, deactivateTenantRow, deleteLoginAttempts, deleteRowBatch, selectRemainingRows, selectTenantSummary, withTenantLock, type TenantQuery,
} from './store/tenant-data.js';
import { removeTenantJobs, selectLinkedJobIds } from './store/tenant-jobs.js';
import { JOBS_TABLE } from './tenant-archive.js';
import type { DeletionReceipt } from './tenant-data.schemas.js';
import { forgetTenantCaches } from './tenant-caches.js';

export const TENANT_DELETION_NOTE = `Deletes every row the tenant owns in every table (resources, users, keys, documents, chunks and their
vectors, cached answers, sessions and history, usage, its audit log), its queued jobs, and the sign-in attempts of its users'
e-mail addresses; then scans every table with a tenant_id column, and the job queue, and answers the receipt
\`{tenant_id, tenant_name, deleted_at, forced, cancelled, deleted: {table: rows}, jobs_removed, verified, remaining}\`
(\`verified: true, remaining: {}\` when nothing is left). Keys stop working at once (the tenant is deactivated first);
rows go table by table in short batches, children first, so no long transaction holds locks other tenants wait for.
While work runs (workflow runs running or waiting, agent runs running, evaluation runs pending or running, ingestion jobs
pending or running) it answers 409 RUNS_IN_FLIGHT with \`details.in_flight\` counts per table, unless \`force=true\`:
that work is then marked cancelled and its jobs removed first (a job a worker is executing is removed when it lets go,
waited for up to 30 s; one still held is listed in \`remaining\` as \`graphile_worker.jobs\`, and deleting again removes it).
A second deletion of a tenant while one runs is 409 CONFLICT. The receipt is recorded in the operator's audit log
(GET /admin/audit-log, \`tenant.deleted\`), outside the tenant, so it outlives it. Export the tenant first to keep a copy.`;

export interface DeleteTenantOptions {
  force: boolean;
  actor: Actor;
  /** Rows one delete statement removes (default 2000). */
  batchRows?: number;
  /** How long to wait for jobs a worker is executing to end before they are removed (default 30 s). */
  heldJobsWaitMs?: number;
}

/**
 * Deletes the tenant and everything it owns; answers the receipt. 409 RUNS_IN_FLIGHT while its work
 * runs, unless `force` (that work is cancelled first). 404 for an unknown tenant, unless jobs of an
 * earlier deletion were left (a worker held them): those are removed and a receipt answered.
 */
export async function deleteTenant(deps: Pick<AppDeps, 'sql' | 'log'>, tenantId: string, options: DeleteTenantOptions): Promise<DeletionReceipt> {
  if (!isUuid(tenantId)) throw notFound('Tenant');
  const batchRows = options.batchRows ?? 2000;
  const receipt = await withTenantLock(deps.sql, tenantId, async (query) => {
    const tenant = await selectTenantSummary(query, tenantId);
    const deleted: Record<string, number> = {};
    let cancelled: Record<string, number> = {};
    let linkedJobs: string[] = [];
    let jobsRemoved = 0;
    if (tenant) {
      const inFlight = Object.fromEntries(Object.entries(await countInFlight(query, tenantId)).filter(([, n]) => n > 0));
      if (Object.keys(inFlight).length && !options.force) {
        throw new AppError('RUNS_IN_FLIGHT', `Tenant ${tenantId} has work in flight: wait for it to end, or delete with force=true to cancel it`, { in_flight: inFlight });
      }
      await recordTenantAction(deps.sql, options.actor, 'tenant.delete_started', tenantId, { tenant_name: tenant.name, forced: options.force, in_flight: inFlight });
      // Its keys and logins stop working first: no new work starts while its rows go.
      await deactivateTenantRow(query, tenantId);
      if (Object.keys(inFlight).length) {
        await cancelInFlight(query, tenantId);
        cancelled = inFlight;
      }
      // Jobs first (no worker starts the tenant's work meanwhile); the ones naming a row rather than
      // the tenant are remembered, since nothing names the tenant once their rows are gone.
      linkedJobs = await selectLinkedJobIds(query, tenantId);
      jobsRemoved += (await removeTenantJobs(query, tenantId, linkedJobs)).removed;
      deleted.login_attempts = await deleteLoginAttempts(query, tenantId);
      const catalog = await readTenantCatalog(query);
      // Counted first: deleting a table's rows may take others' with them (a run's steps go with
      // the run, by trigger; children by cascade), and the receipt counts every row that went.
      for (const table of catalog.tables) deleted[table.name] = await countTenantRows(query, catalog, table, tenantId);
      for (const table of [...catalog.tables].reverse()) {
        let total = 0;
        for (let n = batchRows; n === batchRows; total += n) n = await deleteRowBatch(query, catalog, table, tenantId, batchRows);
        // More than counted: rows written while the deletion ran (work finishing), deleted too.
        deleted[table.name] = Math.max(deleted[table.name], total);
        if (deleted[table.name] > 0) deps.log.info({ tenantId, table: table.name, rows: deleted[table.name] }, 'tenant deletion: table done');
      }
    }
    jobsRemoved += await removeJobsWhenReleased(query, tenantId, linkedJobs, options.heldJobsWaitMs ?? 30_000);
    const remaining = await selectRemainingRows(query, tenantId);
    const held = (await removeTenantJobs(query, tenantId, linkedJobs)).held;
    if (held > 0) remaining[JOBS_TABLE] = held;
    if (!tenant && jobsRemoved === 0 && !Object.keys(remaining).length) throw notFound('Tenant');
    return {
      tenant_id: tenantId,
      tenant_name: tenant?.name ?? null,
      deleted_at: new Date().toISOString(),
      forced: options.force,
      cancelled,
      deleted,
      jobs_removed: jobsRemoved,
      verified: Object.keys(remaining).length === 0,
      remaining,
    } satisfies DeletionReceipt;
  });
  forgetTenantCaches(tenantId);
  await recordTenantAction(deps.sql, options.actor, 'tenant.deleted', tenantId, receipt);
  return receipt;
}

/**
 * Removes the tenant's jobs, waiting up to `waitMs` for those a worker is executing now (a job is
 * removed once its worker lets go of it: its task finds no rows and ends, or fails and is released).
 */
async function removeJobsWhenReleased(query: TenantQuery, tenantId: string, linked: string[], waitMs: number): Promise<number> {
  const deadline = Date.now() + waitMs;
  let removed = 0;
  for (;;) {
    const pass = await removeTenantJobs(query, tenantId, linked);
    removed += pass.removed;
    if (pass.held === 0 || Date.now() >= deadline) return removed;
    await sleep(250);
  }
}
