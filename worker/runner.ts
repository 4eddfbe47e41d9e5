import { EventEmitter } from 'node:events';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, makeWorkerUtils, run, runMigrations, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type { Pool } from 'pg';
import type { AppDeps } from '../server/deps.js';
import { evalRunTask } from './tasks/eval-run.js';
import { ingestDocumentTask } from './tasks/ingest-document.js';
import { enforceRetentionTask } from './tasks/enforce-retention.js';
import { pruneExpiredTask } from './tasks/prune-expired.js';
import { sendMailTask } from './tasks/send-mail.js';
import { deliverEventsTask } from './tasks/deliver-events.js';
import { onlineEvalIntakeTask, onlineEvalSweepTask, startOnlineSamplePoll } from './tasks/online-evals.js';
import { workflowCallbackTask, workflowContinueTask, workflowScheduleTask } from './tasks/workflow-runs.js';
import { deliverEventsJob, enforceRetentionJob, evalRunJob, ingestDocumentJob, onlineEvalIntakeJob, onlineEvalSweepJob, pruneExpiredJob, sendMailJob, workflowCallbackJob, workflowContinueJob, workflowScheduleJob } from '../server/jobs/contracts.js';
import { deleteRunnerHeartbeats, selectDeadLockOwners, upsertRunnerHeartbeats } from '../server/runs/store/worker-heartbeats.js';
import { staleAfterMs } from '../server/runs/process-identity.js';
import { LocalRunQueue } from '../server/workflows/local-runs.js';
import { recoverOrphanedRuns } from '../server/workflows/run-jobs.js';
import { recoverLocalIngestions, stopLocalIngestions } from '../server/documents/local-ingestion.js';
import { onLostJobWrite } from './lost-job-writes.js';


export interface WorkerHandle {
  /** The lock owners of the runners running now (their heartbeat ids). */
  readonly workerIds: string[];
  /** Whether a runner runs now (false while one waits for the database to start again). */
  isRunning(): boolean;
  /** Settles when the runner has ended for good: stopped, or refused to go on (a newer job schema). */
  readonly ended: Promise<void>;
  stop(): Promise<void>;
}

export function createTaskList(deps: AppDeps): TaskList {
  return {
    [pruneExpiredJob.task]: pruneExpiredTask(deps),
    [enforceRetentionJob.task]: enforceRetentionTask(deps),
    [sendMailJob.task]: sendMailTask(deps),
    [ingestDocumentJob.task]: ingestDocumentTask(deps),
    [workflowContinueJob.task]: workflowContinueTask(deps),
    [workflowCallbackJob.task]: workflowCallbackTask(deps),
    [workflowScheduleJob.task]: workflowScheduleTask(deps),
    [evalRunJob.task]: evalRunTask(deps),
    [deliverEventsJob.task]: deliverEventsTask(deps),
    [onlineEvalIntakeJob.task]: onlineEvalIntakeTask(deps),
    [onlineEvalSweepJob.task]: onlineEvalSweepTask(deps),
  };
}

function toGraphileLogger(deps: Pick<AppDeps, 'log'>) {
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
export async function migrateJobSchema(pgPool: Pool, deps: Pick<AppDeps, 'log'>): Promise<void> {
  await runMigrations({ pgPool, logger: toGraphileLogger(deps) });
}

// Jobs locked by workers that are gone (crash, kill -9) would otherwise wait for the 4 h lock timeout.
async function releaseDeadWorkerLocks(pgPool: Pool, deps: AppDeps, staleMs: number) {
  const owners = await selectDeadLockOwners(pgPool, staleMs / 1000);
  if (owners.length === 0) return;
  const utils = await makeWorkerUtils({ pgPool });
  try {
    await utils.forceUnlockWorkers(owners);
    deps.log.warn({ workers: owners.length }, 'released job locks held by workers that stopped without finishing');
  } finally {
    await utils.release();
  }
}

/** How long a stopping process lets the workflow runs it is executing finish (the rest are recovered). */
const LOCAL_RUNS_STOP_WAIT_MS = 30_000;
/** First and longest wait between attempts to start a replacement runner while the database is away. */
const RESTART_FIRST_WAIT_MS = 250;
const RESTART_MAX_WAIT_MS = 2_000;
/** How long a stopping process waits for a replacement runner that is still starting. */
const REPLACEMENT_STOP_WAIT_MS = 5_000;
/** How long after a stop an outcome graphile-worker could not write is still taken (lost-job-writes.ts). */
const LOST_WRITE_GRACE_MS = 60_000;
/** graphile-worker's exit code for a job schema migrated by a newer version: this code must not run jobs on it. */
const BREAKING_MIGRATION_EXIT_CODE = 57;

/** One graphile-worker runner. A process runs one at a time, and briefly two while one replaces another. */
interface Generation {
  runner: Runner;
  /** Its worker pool's id and its workers' ids: the names its job locks carry, which beat while it runs. */
  ids: string[];
  done: boolean;
}

async function runGeneration(deps: AppDeps, pgPool: Pool): Promise<Generation> {
  const ids: string[] = [];
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  events.on('worker:create', ({ worker }) => ids.push(worker.workerId));
  // With a local queue the pool locks jobs under its own id: it must beat too, or its live locks look dead.
  events.on('pool:create', ({ workerPool }) => ids.push(workerPool.id));
  const runner = await run({
    pgPool,
    concurrency: deps.config.WORKER_CONCURRENCY,
    noHandleSignals: true,
    pollInterval: 1000,
    taskList: createTaskList(deps),
    // Retention at half past, apart from the pruning on the hour.
    // Every minute, the online samples whose intake a crash lost.
    crontab: `0 * * * * ${pruneExpiredJob.task}\n30 * * * * ${enforceRetentionJob.task}\n* * * * * ${onlineEvalSweepJob.task}`,
    // Jobs are fetched in batches (a batch locked by a process that dies is released by the
    // recovery below, and every task is idempotent). Completions are not batched: with a backlog
    // of a few thousand jobs graphile-worker's batched delete (`using unnest(ids)`) took 1.2-2 ms a
    // statement in the webhooks benchmark, the delete by id 0.03 ms. Unbatched, graphile-worker
    // leaves a completion it cannot write as an unhandled rejection: lost-job-writes.ts takes it.
    preset: { worker: { localQueue: { size: 16 }, completeJobBatchDelay: -1 } },
    logger: toGraphileLogger(deps),
    events,
  });
  return { runner, ids, done: false };
}

/**
 * Starts the job runner in this process and keeps it running through database outages: a runner
 * that ends without being asked to, or that could not write a job's outcome (the job stays locked
 * under its id), is replaced by a new one as soon as the database answers; the old one finishes the
 * jobs it is running, then the locks left under its ids are released, so those jobs run again.
 */
export async function startWorker(deps: AppDeps, pgPool: Pool): Promise<WorkerHandle> {
  const log = deps.log;
  /** Runners still running: the current one, and replaced ones finishing their jobs. */
  const live = new Set<Generation>();
  let current: Generation | null = null;
  let stopping = false;
  let finished = false;
  let replacing: Promise<void> | null = null;
  let endedResolve!: () => void;
  const ended = new Promise<void>((resolve) => (endedResolve = resolve));
  const stopped = new AbortController();
  // Queued workflow runs this process accepts, it executes itself (local-runs.ts); set in deps once the runner runs.
  const localRuns = new LocalRunQueue(deps, deps.config.WORKER_CONCURRENCY);
  const liveIds = () => [...live].flatMap((g) => g.ids);
  /** The ids of every runner this handle started, whose heartbeat rows go when it stops. */
  const startedIds: string[] = [];

  const beat = async () => {
    const ids = liveIds();
    // A runner that ended must not look alive to `liya doctor` and the lock recovery.
    if (ids.length === 0 || stopping) return;
    await upsertRunnerHeartbeats(pgPool, ids);
  };

  // Nothing runs under an ended runner's ids any more: the locks still held under them (an outcome
  // it could not write) are released now rather than after the heartbeat timeout.
  const release = async (gen: Generation) => {
    try {
      const utils = await makeWorkerUtils({ pgPool });
      try {
        await utils.forceUnlockWorkers(gen.ids);
      } finally {
        await utils.release();
      }
      await deleteRunnerHeartbeats(pgPool, gen.ids);
    } catch (err) {
      log.warn({ err }, 'could not release the job locks of a job runner that ended; they are released after the heartbeat timeout');
    }
  };

  const finish = () => {
    if (finished) return;
    finished = true;
    if (deps.localRuns === localRuns) deps.localRuns = null;
    endedResolve();
  };

  const onEnd = (gen: Generation, err: unknown) => {
    gen.done = true;
    live.delete(gen);
    if (stopping) return;
    void release(gen);
    if (gen !== current) return;
    current = null;
    if (process.exitCode === BREAKING_MIGRATION_EXIT_CODE) {
      log.error({ err }, 'the job runner stopped: a newer version migrated the job schema');
      finish();
      return;
    }
    log.warn({ err }, 'the job runner stopped by itself; a new one starts once the database answers');
    void replace();
  };

  const launch = async () => {
    const gen = await runGeneration(deps, pgPool);
    live.add(gen);
    startedIds.push(...gen.ids);
    // graphile-worker settles this promise (never rejecting) once the runner has ended, for any reason.
    gen.runner.promise.then(
      () => onEnd(gen, null),
      (err: unknown) => onEnd(gen, err),
    );
    return gen;
  };

  const replace = () =>
    (replacing ??= (async () => {
      let wait = RESTART_FIRST_WAIT_MS;
      try {
        while (!stopping) {
          try {
            await pgPool.query('select 1');
            const next = await launch();
            const previous = current;
            current = next;
            if (stopping) {
              await next.runner.stop().catch(() => undefined);
              return;
            }
            if (previous && !previous.done) {
              previous.runner.stop().catch((err: unknown) => log.warn({ err }, 'the replaced job runner did not stop cleanly'));
            }
            log.info({ replaced: previous !== null }, 'job runner restarted');
            return;
          } catch (err) {
            log.debug({ err }, 'the job runner cannot start yet');
            await sleep(wait, undefined, { signal: stopped.signal, ref: false }).catch(() => undefined);
            wait = Math.min(wait * 2, RESTART_MAX_WAIT_MS);
          }
        }
      } finally {
        replacing = null;
      }
    })());

  // The outcome of a finished job that graphile-worker could not write leaves the job locked under
  // the runner's id, where nothing would release it while the runner lives: replace the runner.
  const stopListening = onLostJobWrite((err) => {
    log.warn({ err }, "a job's outcome could not be written (the database is out of reach); the job runner is replaced once it answers and the job runs again");
    if (!stopping && current) void replace();
  });

  try {
    current = await launch();
  } catch (err) {
    stopListening();
    throw err;
  }
  await beat();
  const staleMs = staleAfterMs(deps.config.HEARTBEAT_MS);
  // Work left by processes that died: job locks they held, and runs they were executing.
  const recover = async () => {
    await releaseDeadWorkerLocks(pgPool, deps, staleMs).catch((err) => log.warn({ err }, 'could not release stale job locks'));
    await recoverOrphanedRuns(deps).catch((err) => log.warn({ err }, 'could not recover workflow runs'));
    await recoverLocalIngestions(deps).catch((err) => log.warn({ err }, 'could not recover ingestions'));
  };
  await recover();
  let beats = 0;
  const timer = setInterval(() => {
    const recovering = ++beats % 2 === 0;
    // Recovery after the beat: after an outage longer than the heartbeat timeout, this runner's
    // beat must land before recovery judges which lock owners are alive, or it would release the
    // locks of jobs this process is running.
    void beat()
      .catch((err) => log.warn({ err }, 'worker heartbeat failed'))
      .then(() => (recovering && !stopping ? recover() : undefined));
  }, deps.config.HEARTBEAT_MS);
  timer.unref();
  // Runs only write their online-evaluation samples: the runners queue the tenants' intakes.
  const stopSamplePoll = startOnlineSamplePoll(deps, (err) => log.warn({ err }, 'looking for queued online evaluation samples failed'));
  deps.localRuns = localRuns;

  log.info({ concurrency: deps.config.WORKER_CONCURRENCY, host: os.hostname() }, 'job runner started');
  return {
    get workerIds() {
      return liveIds();
    },
    isRunning: () => !finished && current !== null,
    ended,
    async stop() {
      if (stopping) return;
      stopping = true;
      stopped.abort();
      clearInterval(timer);
      stopSamplePoll();
      if (deps.localRuns === localRuns) deps.localRuns = null;
      // The runs waiting in this process get jobs only once its own runner fetches no more, so
      // another process takes them.
      localRuns.pause();
      // A replacement being started stops itself once it has started (or gives up).
      if (replacing) await Promise.race([replacing, sleep(REPLACEMENT_STOP_WAIT_MS, undefined, { ref: false })]);
      await Promise.all([...live].map((g) => g.runner.stop().catch((err: unknown) => log.warn({ err }, 'the job runner did not stop cleanly'))));
      await Promise.all([localRuns.stop(LOCAL_RUNS_STOP_WAIT_MS), stopLocalIngestions(deps, LOCAL_RUNS_STOP_WAIT_MS)]);
      finish();
      // graphile-worker does not wait for the last outcomes it writes: one still being retried may
      // yet fail, and must not end the process while it shuts down.
      setTimeout(stopListening, LOST_WRITE_GRACE_MS).unref();
      if (startedIds.length) await deleteRunnerHeartbeats(pgPool, startedIds).catch(() => undefined);
    },
  };
}
