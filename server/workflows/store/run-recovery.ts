// Recovery: runs that cannot go on where they are (a process that stopped, a job that gave up, a
// run that kept crashing its process, an inactive tenant) are failed or handed to the job runner,
// and a failed run is set running again by hand.
//
// Part of the workflow_runs table's writes (see run-intake.ts: the run-*.ts modules share them by
// statement family). A failed run's callback delivery, and the job that continues a run handed
// over or found orphaned, are added in the same statement (graphile_worker.add_job, embedded as a
// fragment). Built with db/statements.ts.
import { sql, type Expression } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt } from '../../../db/statements.js';
import { workflowCallbackJob, workflowContinueJob } from '../../jobs/contracts.js';
import { addJobSql, jobKeySql } from '../../jobs/store/job-queue.js';
import { cast, jsonbObject, lit, type ResumableRunRow, STORED_RUN_SELECTION } from './run-rows.js';
import type { StateScope } from './workflow-state.js';

type Query = SqlPool['query'];

/** The delivery of a final run to its callback URL (`failed`: its id and tenant_id). */
const CALLBACK_JOB = sql.raw<unknown>(addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' })).as('job');

const failure = (code: string, message: string) => sql<Record<string, unknown>>`${lit(JSON.stringify({ code, message }))}::jsonb`;

const inactiveTenantFailure = (runId: string) =>
  build
    .updateTable('workflow_runs')
    .set({
      status: lit('failed'), owner_id: lit(null), completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()`,
      error: failure('TENANT_INACTIVE', 'The tenant is inactive'),
    })
    .where('id', '=', runId);

/** A run whose tenant is inactive fails. */
export async function failRunOfInactiveTenant(sql: SqlPool, runId: string): Promise<void> {
  await runBuilt(sql, inactiveTenantFailure(runId));
}

/**
 * Fails the running run (`owned`: only while that process has it) with the error `error` builds
 * from its next step's id, and queues its callback like any final run's.
 */
const runningRunFailure = (runId: string, tenantId: string, ownerId: string | null, error: (stepId: Expression<string | null>) => Expression<Record<string, unknown>>) =>
  build
    .with('failed', (db) =>
      db
        .updateTable('workflow_runs')
        .set({ status: lit('failed'), owner_id: lit(null), completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()`, error: error(sql.ref('next_step_id')) })
        .where('id', '=', runId)
        .where('tenant_id', '=', tenantId)
        .where('status', '=', lit('running'))
        .$if(ownerId !== null, (qb) => qb.where('owner_id', '=', ownerId!))
        .returning(['id', 'tenant_id', 'callback_url']),
    )
    .selectFrom('failed')
    .select(CALLBACK_JOB)
    .where('callback_url', 'is not', null);

/** A poison run fails at its step (when `ownerId` still has it), its callback queued like any final run's. */
export async function failCrashedRun(sql: SqlPool, values: { runId: string; tenantId: string; crashes: number; ownerId: string }): Promise<void> {
  await runBuilt(sql, crashedRunFailure(values));
}

const crashedRunFailure = (values: { runId: string; tenantId: string; crashes: number; ownerId: string }) =>
  runningRunFailure(
    values.runId,
    values.tenantId,
    values.ownerId,
    (stepId) =>
      jsonbObject(
        ['code', lit('RUN_CRASHED')], ['step_id', stepId], ['crashes', cast(values.crashes, 'int')],
        ['message', cast(`The process executing this run stopped ${values.crashes} times while running it; it is not continued again (retry it to try once more)`, 'text')],
      ),
  );

/** A running run fails after its job's last attempt, its callback queued like any final run's. */
export async function failGivenUpRun(sql: SqlPool, runId: string, tenantId: string): Promise<void> {
  await runBuilt(sql, givenUpRunFailure(runId, tenantId));
}

const givenUpRunFailure = (runId: string, tenantId: string) =>
  runningRunFailure(
    runId,
    tenantId,
    null,
    (stepId) => jsonbObject(['code', lit('INTERNAL_ERROR')], ['message', lit('The run stopped after repeated unexpected errors; retry it to continue')], ['step_id', stepId]),
  );

/** Clears `ownerId`'s ownership of runs it has not started and queues a job for each. */
const handOverOf = (runIds: string[], ownerId: string) =>
  build
    .with('r', (db) =>
      db
        .updateTable('workflow_runs')
        .set({ owner_id: lit(null), updated_at: sql<Date>`now()` })
        .where(sql<boolean>`${sql.ref('id')} = any(${runIds}::uuid[])`)
        .where('status', '=', lit('running'))
        .where('owner_id', '=', ownerId)
        .returning(['id', 'tenant_id']),
    )
    .selectFrom('r')
    .select(
      sql<number>`count(${sql.raw(addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' }, { keyMode: 'preserve_run_at' }))})::int`.as('queued'),
    );

/** Gives runs `ownerId` holds but has not started to the job runner. */
export async function handOverRuns(sql: SqlPool, runIds: string[], ownerId: string): Promise<void> {
  await runBuilt(sql, handOverOf(runIds, ownerId));
}

/** `now()` less `seconds`. */
const ago = (seconds: number) => sql<Date>`now() - make_interval(secs => ${seconds})`;

/** graphile_worker's jobs (its own table, not an entity), by key. */
const PENDING_JOBS = sql<{ key: string }>`${sql.table('graphile_worker._private_jobs')}`.as('j');

const orphansOf = (idleSeconds: number, staleAfterSeconds: number) =>
  build
    .with('orphans', (db) =>
      db
        .selectFrom('workflow_runs as r')
        .select(['r.id', 'r.tenant_id'])
        .where('r.status', '=', lit('running'))
        .where('r.updated_at', '<', ago(idleSeconds))
        .where((eb) =>
          eb.or([
            eb('r.owner_id', 'is', null),
            eb.not(
              eb.exists(
                eb
                  .selectFrom('worker_heartbeats as h')
                  .select(lit(1).as('one'))
                  .whereRef('h.worker_id', '=', 'r.owner_id')
                  .where('h.last_seen_at', '>', ago(staleAfterSeconds)),
              ),
            ),
          ]),
        )
        // A run whose job is still queued or running is not orphaned.
        .where((eb) => eb.not(eb.exists(eb.selectFrom(PENDING_JOBS).select(lit(1).as('one')).where('j.key', '=', sql.raw<string>(jobKeySql(workflowContinueJob, 'r.id::text'))))))
        .limit(lit(500)),
    )
    .selectFrom('orphans')
    .select([
      cast<string>(sql.ref('id'), 'text').as('id'),
      sql<boolean>`${sql.raw(addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' }, { keyMode: 'preserve_run_at' }))} is not null`.as('queued'),
    ]);

/**
 * Runs left running by a process that stopped (no update for `idleSeconds`, owner's heartbeat older
 * than `staleAfterSeconds`), and queued runs whose job is gone, get a job that continues them.
 */
export async function queueOrphanedRuns(sql: SqlPool, idleSeconds: number, staleAfterSeconds: number): Promise<{ id: string }[]> {
  return runBuilt(sql, orphansOf(idleSeconds, staleAfterSeconds));
}

const restartOf = (values: { tenantId: string; runId: string; ownerId: string }) =>
  build
    .updateTable('workflow_runs as r')
    .set((eb) => ({
      status: lit('running'), next_step_id: eb.ref('error', '->>').key('step_id'), error: lit(null), completed_at: lit(null), owner_id: values.ownerId,
      resume: lit(null), crashes: lit(0), updated_at: sql<Date>`now()`,
    }))
    .where('id', '=', values.runId)
    .where('tenant_id', '=', values.tenantId)
    .where('status', '=', lit('failed'))
    .returning([...STORED_RUN_SELECTION, 'r.version', 'r.definition', 'r.scope']);

/** A failed run set running again from its failed step (owned by `ownerId`); null when it is not failed (any more). */
export async function restartFailedRun(query: Query, values: { tenantId: string; runId: string; ownerId: string }): Promise<(ResumableRunRow & { scope: StateScope }) | null> {
  const [claimed] = await runBuilt(query, restartOf(values));
  return (claimed as (ResumableRunRow & { scope: StateScope }) | undefined) ?? null;
}
