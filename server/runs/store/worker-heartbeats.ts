// The worker_heartbeats table: the rows of API and worker processes (`process:` ids), of the job
// runners (worker/runner.ts), and their pruning; this module alone writes it.
import { sql as kysql, type Compilable } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';
import type { Pool } from 'pg';

const UPSERT_PROCESS = statement<{ processId: string }>()('liya_process_heartbeat', (p) =>
  build
    .insertInto('worker_heartbeats')
    .values({ worker_id: p.processId, started_at: kysql<Date>`now()`, last_seen_at: kysql<Date>`now()` })
    .onConflict((oc) => oc.column('worker_id').doUpdateSet({ last_seen_at: kysql<Date>`now()` })),
);

/** Creates the process's row or marks it seen now. */
export async function upsertProcessHeartbeat(sql: SqlPool, processId: string): Promise<void> {
  await UPSERT_PROCESS.run(sql, { processId });
}

/** Removes the process's row. */
export async function deleteProcessHeartbeat(sql: SqlPool, processId: string): Promise<void> {
  await runBuilt(sql, build.deleteFrom('worker_heartbeats').where('worker_id', '=', processId));
}

/** Deletes heartbeats not seen since `before`; returns how many. */
export async function deleteHeartbeatsSeenBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('worker_heartbeats').where('last_seen_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The job runner's own pool (graphile-worker wants a `pg.Pool` of its own). */
type RunnerPool = Pick<Pool, 'query'>;

/** Creates the job runners' rows or marks them seen now. */
export async function upsertRunnerHeartbeats(pool: RunnerPool, runnerIds: string[]): Promise<void> {
  await runOnPool(pool, upsertRunnersOf(runnerIds));
}

/** Removes the job runners' rows. */
export async function deleteRunnerHeartbeats(pool: RunnerPool, runnerIds: string[]): Promise<void> {
  await runOnPool(pool, build.deleteFrom('worker_heartbeats').where(kysql<boolean>`${kysql.ref('worker_id')} = any(${runnerIds}::text[])`));
}

/** Runs a built statement on the runner's own pool (unnamed, as graphile-worker's pool runs it). */
async function runOnPool(pool: RunnerPool, query: Compilable<unknown>): Promise<void> {
  const compiled = query.compile();
  await pool.query(compiled.sql, [...compiled.parameters]);
}

function upsertRunnersOf(runnerIds: string[]) {
  return build
    .insertInto('worker_heartbeats')
    .columns(['worker_id', 'started_at', 'last_seen_at'])
    .expression(build.selectNoFrom([kysql<string>`unnest(${runnerIds}::text[])`.as('worker_id'), kysql<Date>`now()`.as('started_at'), kysql<Date>`now()`.as('last_seen_at')]))
    .onConflict((oc) => oc.column('worker_id').doUpdateSet({ last_seen_at: kysql<Date>`now()` }));
}

/** The lock owners of graphile-worker jobs whose heartbeat is older than `staleSeconds` (or absent). */
export async function selectDeadLockOwners(pool: RunnerPool, staleSeconds: number): Promise<string[]> {
  // Raw(graphile-worker): graphile_worker's own table, which no entity maps.
  const { rows } = await pool.query<{ locked_by: string }>(
    `select distinct j.locked_by from graphile_worker._private_jobs j
      where j.locked_by is not null
        and not exists (select 1 from worker_heartbeats h where h.worker_id = j.locked_by and h.last_seen_at > now() - make_interval(secs => $1))`,
    [staleSeconds],
  );
  return rows.map((r) => r.locked_by);
}
