import { EventEmitter } from 'node:events';
import os from 'node:os';
import { Logger, makeWorkerUtils, run, runMigrations, type TaskList, type WorkerEvents } from 'graphile-worker';
import type { Pool } from 'pg';
import type { AppDeps } from '../server/deps.js';
import { evalRunTask } from './tasks/eval-run.js';
import { ingestDocumentTask } from './tasks/ingest-document.js';
import { pruneExpiredTask } from './tasks/prune-expired.js';
import { sendMailTask } from './tasks/send-mail.js';
import { workflowCallbackTask, workflowContinueTask, workflowScheduleTask } from './tasks/workflow-runs.js';
import { staleAfterMs } from '../server/runs/process-identity.js';
import { LocalRunQueue } from '../server/workflows/local-runs.js';
import { recoverOrphanedRuns } from '../server/workflows/run-jobs.js';


export interface WorkerHandle {
  readonly workerIds: string[];
  isRunning(): boolean;
  /** Settles when the runner has ended, whether stopped or crashed. */
  readonly ended: Promise<void>;
  stop(): Promise<void>;
}

export function createTaskList(deps: AppDeps): TaskList {
  return {
    prune_expired: pruneExpiredTask(deps),
    send_mail: sendMailTask(deps),
    ingest_document: ingestDocumentTask(deps),
    workflow_continue: workflowContinueTask(deps),
    workflow_callback: workflowCallbackTask(deps),
    workflow_schedule: workflowScheduleTask(deps),
    eval_run: evalRunTask(deps),
  };
}

function toGraphileLogger(deps: AppDeps) {
  return new Logger((scope) => (level, message, meta) => {
    const log = deps.log.child({ component: 'worker', ...scope });
    const fields = meta ?? {};
    if (level === 'error') log.error(fields, message);
    else if (level === 'warning') log.warn(fields, message);
    else if (level === 'info') log.info(fields, message);
    else log.debug(fields, message);
  });
}

/** Creates graphile-worker's schema (also needed where no runner runs, to enqueue jobs). */
export async function migrateJobSchema(pgPool: Pool, deps: AppDeps): Promise<void> {
  await runMigrations({ pgPool, logger: toGraphileLogger(deps) });
}

// Jobs locked by workers that are gone (crash, kill -9) would otherwise wait for the 4 h lock timeout.
async function releaseDeadWorkerLocks(pgPool: Pool, deps: AppDeps, staleMs: number) {
  const { rows } = await pgPool.query<{ locked_by: string }>(
    `select distinct j.locked_by from graphile_worker._private_jobs j
      where j.locked_by is not null
        and not exists (select 1 from worker_heartbeats h where h.worker_id = j.locked_by and h.last_seen_at > now() - make_interval(secs => $1))`,
    [staleMs / 1000],
  );
  if (rows.length === 0) return;
  const utils = await makeWorkerUtils({ pgPool });
  try {
    await utils.forceUnlockWorkers(rows.map((r) => r.locked_by));
    deps.log.warn({ workers: rows.length }, 'released job locks held by workers that stopped without finishing');
  } finally {
    await utils.release();
  }
}

/** How long a stopping process lets the workflow runs it is executing finish (the rest are recovered). */
const LOCAL_RUNS_STOP_WAIT_MS = 30_000;

/** Starts the job runner in this process. */
export async function startWorker(deps: AppDeps, pgPool: Pool): Promise<WorkerHandle> {
  const workerIds: string[] = [];
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  events.on('worker:create', ({ worker }) => workerIds.push(worker.workerId));
  // With a local queue the pool locks jobs under its own id: it must beat too, or its live locks look dead.
  events.on('pool:create', ({ workerPool }) => workerIds.push(workerPool.id));
  let running = true;

  const runner = await run({
    pgPool,
    concurrency: deps.config.WORKER_CONCURRENCY,
    noHandleSignals: true,
    pollInterval: 1000,
    taskList: createTaskList(deps),
    crontab: '0 * * * * prune_expired',
    // Jobs are fetched in batches (a batch locked by a process that dies is released by the
    // recovery below, and every task is idempotent). Completions are not batched: with a backlog
    // of a few thousand jobs graphile-worker's batched delete (`using unnest(ids)`) took 1.2-2 ms a
    // statement in the webhooks benchmark, the delete by id 0.03 ms.
    preset: { worker: { localQueue: { size: 16 }, completeJobBatchDelay: -1 } },
    logger: toGraphileLogger(deps),
    events,
  });

  const beat = async () => {
    // A runner that ended must not look alive to `liya doctor` and the lock recovery.
    if (workerIds.length === 0 || !running) return;
    await pgPool.query(
      `insert into worker_heartbeats (worker_id, started_at, last_seen_at) select unnest($1::text[]), now(), now()
       on conflict (worker_id) do update set last_seen_at = now()`,
      [workerIds],
    );
  };
  await beat();
  const staleMs = staleAfterMs(deps.config.HEARTBEAT_MS);
  // Work left by processes that died: job locks they held, and runs they were executing.
  const recover = async () => {
    await releaseDeadWorkerLocks(pgPool, deps, staleMs).catch((err) => deps.log.warn({ err }, 'could not release stale job locks'));
    await recoverOrphanedRuns(deps).catch((err) => deps.log.warn({ err }, 'could not recover workflow runs'));
  };
  await recover();
  let beats = 0;
  const timer = setInterval(() => {
    beat().catch((err) => deps.log.warn({ err }, 'worker heartbeat failed'));
    if (++beats % 2 === 0) void recover();
  }, deps.config.HEARTBEAT_MS);
  timer.unref();
  // Queued workflow runs this process accepts from now on, it executes itself (local-runs.ts).
  const localRuns = new LocalRunQueue(deps, deps.config.WORKER_CONCURRENCY);
  deps.localRuns = localRuns;
  const ended = runner.promise.then(
    () => undefined,
    (err: unknown) => deps.log.error({ err }, 'the job runner failed'),
  ).finally(() => {
    running = false;
    if (deps.localRuns === localRuns) deps.localRuns = null;
  });

  deps.log.info({ concurrency: deps.config.WORKER_CONCURRENCY, host: os.hostname() }, 'job runner started');
  return {
    workerIds,
    isRunning: () => running,
    ended,
    async stop() {
      clearInterval(timer);
      if (deps.localRuns === localRuns) deps.localRuns = null;
      // The runs waiting in this process get jobs only once its own runner fetches no more, so
      // another process takes them.
      localRuns.pause();
      const wasRunning = running;
      if (wasRunning) await runner.stop();
      await localRuns.stop(LOCAL_RUNS_STOP_WAIT_MS);
      if (!wasRunning) return;
      running = false;
      await pgPool.query('delete from worker_heartbeats where worker_id = any($1::text[])', [workerIds]).catch(() => undefined);
    },
  };
}
