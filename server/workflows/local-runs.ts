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
// the same way, so the job runner's retries with backoff apply to it.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AppDeps } from '../deps.js';
import { PROCESS_ID } from '../runs/process-identity.js';
import type { LocalRun, LocalRuns } from './engine/run-types.js';
import { executeOwnedRun } from './run-jobs.js';
import { handOverRuns } from './store/workflow-runs.js';

/** Accepted runs one process keeps waiting for itself; beyond it new runs get a job any worker takes. */
export const MAX_LOCAL_WAITING = 5000;
/**
 * A hand-over that failed (the database out of reach) is tried again after this long, doubling up
 * to the last: runs stopped by a short outage go on soon after it, a long one is not hammered.
 */
const HANDOVER_RETRY_MS = [250, 500, 1000, 2000, 5000];

export class LocalRunQueue implements LocalRuns {
  private readonly waiting: LocalRun[] = [];
  private head = 0;
  private active = 0;
  private stopped = false;
  private drained: (() => void) | null = null;
  private readonly retries = new Set<NodeJS.Timeout>();
  /**
   * The async context each run was accepted in (the request that queued it: its trace, its log
   * fields). A run that waited starts when another ends, and would otherwise go on in that one's.
   */
  private readonly acceptedIn = new WeakMap<LocalRun, <R>(fn: () => R) => R>();

  constructor(
    private readonly deps: AppDeps,
    private readonly concurrency: number,
  ) {}

  /** Whether a new run may be taken (otherwise it gets a job). */
  hasRoom(): boolean {
    return !this.stopped && this.waiting.length - this.head < MAX_LOCAL_WAITING;
  }

  /** A run written owned by this process, committed: executed when a slot is free. */
  push(run: LocalRun): void {
    if (this.stopped) {
      this.handOver([run]);
      return;
    }
    this.waiting.push(run);
    this.acceptedIn.set(run, AsyncLocalStorage.snapshot());
    this.pump();
  }

  private pump(): void {
    while (this.active < this.concurrency && this.head < this.waiting.length && !this.stopped) {
      const run = this.waiting[this.head++];
      if (this.head > 1024 && this.head * 2 > this.waiting.length) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      this.active++;
      const inAcceptedContext = this.acceptedIn.get(run) ?? ((fn) => fn());
      this.acceptedIn.delete(run);
      inAcceptedContext(() => executeOwnedRun(this.deps, run.target, run.stored))
        .catch((err: unknown) => {
          this.deps.log.warn({ err, run: run.stored.id }, 'workflow run failed in this process; handed to the job runner');
          this.handOver([run]);
        })
        .finally(() => {
          this.active--;
          if (this.active === 0 && this.drained) this.drained();
          this.pump();
        });
    }
  }

  /**
   * Gives the runs to the job runner, trying until the database takes it. Also for a run whose
   * intake may have been written although the answer was lost (run-admission.ts): a run that does
   * not exist, or is not this process's, is left alone.
   */
  handOver(runs: LocalRun[]): void {
    this.tryHandOver(runs, 0);
  }

  private tryHandOver(runs: LocalRun[], attempt: number): void {
    // Clears this process's ownership of runs it has not started and queues a job for each.
    handOverRuns(this.deps.sql, runs.map((r) => r.stored.id), PROCESS_ID).catch((err: unknown) => {
      this.deps.log.warn({ err, runs: runs.length }, 'could not hand workflow runs over to the job runner; trying again');
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        this.tryHandOver(runs, attempt + 1);
      }, HANDOVER_RETRY_MS[Math.min(attempt, HANDOVER_RETRY_MS.length - 1)]);
      timer.unref();
      this.retries.add(timer);
    });
  }

  /** Starts no more runs (a stopping process; the waiting ones are handed over by `stop`). */
  pause(): void {
    this.stopped = true;
  }

  /** Stops: the waiting runs get jobs now, the running ones finish (up to `waitMs`). */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    const left = this.waiting.slice(this.head);
    this.waiting.length = 0;
    this.head = 0;
    if (left.length) {
      await handOverRuns(this.deps.sql, left.map((r) => r.stored.id), PROCESS_ID).catch((err: unknown) => {
        // Still owned by this process: recovered once its heartbeat is stale.
        this.deps.log.warn({ err, runs: left.length }, 'could not hand waiting workflow runs over; they are recovered after the heartbeat timeout');
      });
      this.deps.log.info({ runs: left.length }, 'waiting workflow runs handed over to the job runner');
    }
    if (this.active > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        timer.unref();
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
  }
}
