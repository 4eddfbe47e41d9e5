// Queued runs (webhooks, events, schedule ticks, async API runs) accepted by a process that runs the
// job runner are executed by that process straight away, without a job: the run row is written
// owned by this process (its heartbeat id), and this queue runs it with what the intake already
// holds (definition, scope, input, the trigger step stored with the run), reading nothing back. A
// job would cost a fetch, a lock, a claim and a delete per run
// for work the accepting process can start at once.
//
// Nothing is lost when the process is not there to finish: a run it owns that has not ended is a
// running run with a dead owner once its heartbeat stops, and the recovery sweep gives it a job (any
// process continues it from its stored steps). A process that stops gracefully hands its waiting runs
// over at once (owner cleared, a job each); a run whose execution fails with an error is handed over
// the same way, so the job runner's retries with backoff apply to it (common/local-queue.ts).
import type { AppDeps } from '../deps.js';
import { LocalQueue } from '../common/local-queue.js';
import { jsonSize } from '../runs/json-size.js';
import { PROCESS_ID } from '../runs/process-identity.js';
import type { LocalRun, LocalRuns } from './engine/run-types.js';
import { executeOwnedRun } from './run-jobs.js';
import { handOverRuns } from './store/run-recovery.js';

/** Accepted runs one process keeps waiting for itself; beyond it new runs get a job any worker takes. */
export const MAX_LOCAL_WAITING = 5000;
/**
 * Size (as jsonSize counts) of the inputs of the runs one process keeps waiting; beyond it new runs
 * get a job (which reads its input when it starts). A run's input may hold up to three copies of
 * 18 MB of attachment text, so the count of runs alone would not bound the memory they hold.
 */
export const MAX_LOCAL_WAITING_INPUT_SIZE = 256 * 1024 * 1024;

export class LocalRunQueue implements LocalRuns {
  private readonly queue: LocalQueue<LocalRun>;

  constructor(deps: AppDeps, concurrency: number) {
    this.queue = new LocalQueue<LocalRun>({
      what: 'workflow runs',
      log: deps.log,
      concurrency,
      execute: (run) => executeOwnedRun(deps, run.target, run.stored),
      // Clears this process's ownership of runs it has not started and queues a job for each. Also
      // for a run whose intake may have been written although the answer was lost
      // (run-admission.ts): a run that does not exist, or is not this process's, is left alone.
      idOf: (run) => run.stored.id,
      sizeOf: (run) => jsonSize(run.stored.input, Number.MAX_SAFE_INTEGER),
      handOver: (ids) => handOverRuns(deps.sql, ids, PROCESS_ID),
    });
  }

  /** Whether a new run may be taken (otherwise it gets a job). */
  hasRoom(): boolean {
    const waiting = this.queue.waitingNow();
    return this.queue.isOpen() && waiting.items < MAX_LOCAL_WAITING && waiting.bytes < MAX_LOCAL_WAITING_INPUT_SIZE;
  }

  /** A run written owned by this process, committed: executed when a slot is free. */
  push(run: LocalRun): void {
    this.queue.push(run);
  }

  /** Gives the runs to the job runner, trying until the database takes it. */
  handOver(runs: LocalRun[]): void {
    this.queue.handOver(runs.map((run) => run.stored.id));
  }

  /** Starts no more runs (a stopping process; the waiting ones are handed over by `stop`). */
  pause(): void {
    this.queue.pause();
  }

  /** Stops: the waiting runs get jobs now, the running ones finish (up to `waitMs`). */
  stop(waitMs: number): Promise<void> {
    return this.queue.stop(waitMs);
  }
}
