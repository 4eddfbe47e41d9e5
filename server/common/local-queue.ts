// The one way a process runs work it accepted itself instead of queueing a job (workflow runs:
// workflows/local-runs.ts; small uploads: documents/local-ingestion.ts). The work is already stored,
// owned by this process; this queue runs it a few at a time, and whatever it cannot run is handed
// to the job runner: an item whose execution fails, one that waited too long, and those still
// waiting when the process stops. A hand-over the database refuses (out of reach) is tried again
// with backoff until it is taken or the queue stops; what is left then, the recovery sweep of the
// job runners finds once this process's heartbeat is gone.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';

/**
 * A failed hand-over is tried again after this long, doubling up to the last: work stopped by a
 * short outage goes on soon after it, a long one is not hammered.
 */
const HANDOVER_RETRY_MS = [250, 500, 1000, 2000, 5000];

export interface LocalQueueOptions<T> {
  /** What the items are, for log lines ("workflow runs", "ingestions"). */
  what: string;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Items run at the same time at most. */
  concurrency: number;
  /** Runs one item; a rejection hands it over. */
  execute: (item: T) => Promise<unknown>;
  /** The id an item is stored under (its run or job). */
  idOf: (item: T) => string;
  /** Gives the stored items of these ids to the job runner (clears this process's ownership, queues their jobs); idempotent. */
  handOver: (ids: string[]) => Promise<void>;
  /** Bytes an item holds in memory while it waits (default 0). */
  sizeOf?: (item: T) => number;
  /** An item that waited longer than this is handed over instead of run (default: never). */
  maxWaitMs?: number;
  /** False while the process is stopping: a waiting item is then handed over instead of run. */
  accepting?: () => boolean;
}

interface Waiting<T> {
  item: T;
  acceptedAt: number;
  /** The async context the item was accepted in (its request's trace and log fields). */
  context: <R>(fn: () => R) => R;
}

export class LocalQueue<T> {
  private readonly waiting: Waiting<T>[] = [];
  private head = 0;
  private bytes = 0;
  private active = 0;
  private stopped = false;
  private drained: (() => void) | null = null;
  private readonly retries = new Set<NodeJS.Timeout>();

  constructor(private readonly options: LocalQueueOptions<T>) {}

  /** Items waiting now, and the bytes they hold. */
  waitingNow(): { items: number; bytes: number } {
    return { items: this.waiting.length - this.head, bytes: this.bytes };
  }

  /** Whether the queue still takes items (not paused or stopped). */
  isOpen(): boolean {
    return !this.stopped;
  }

  /** An item stored owned by this process: run when a slot is free (handed over at once after stop). */
  push(item: T): void {
    if (this.stopped) {
      this.handOver([this.options.idOf(item)]);
      return;
    }
    this.waiting.push({ item, acceptedAt: Date.now(), context: AsyncLocalStorage.snapshot() });
    this.bytes += this.options.sizeOf?.(item) ?? 0;
    this.pump();
  }

  private pump(): void {
    const { options } = this;
    while (this.active < options.concurrency && this.head < this.waiting.length && !this.stopped) {
      const { item, acceptedAt, context } = this.waiting[this.head++];
      this.bytes -= options.sizeOf?.(item) ?? 0;
      if (this.head > 1024 && this.head * 2 > this.waiting.length) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      if ((options.accepting && !options.accepting()) || (options.maxWaitMs !== undefined && Date.now() - acceptedAt > options.maxWaitMs)) {
        this.handOver([options.idOf(item)]);
        continue;
      }
      this.active++;
      // A waiting item starts when another ends, and would otherwise run in that one's context.
      context(() => options.execute(item))
        .catch((err: unknown) => {
          options.log.warn({ err, id: options.idOf(item) }, `${options.what}: failed in this process; handed to the job runner`);
          this.handOver([options.idOf(item)]);
        })
        .finally(() => {
          this.active--;
          if (this.active === 0 && this.drained) this.drained();
          this.pump();
        });
    }
  }

  /** Gives the stored items of `ids` to the job runner, trying until the database takes them or the queue stops. */
  handOver(ids: string[]): void {
    this.tryHandOver(ids, 0);
  }

  private tryHandOver(ids: string[], attempt: number): void {
    this.options.handOver(ids).catch((err: unknown) => {
      if (this.stopped) {
        // Still owned by this process, whose heartbeat goes with it: the recovery sweep finds them.
        this.options.log.warn({ err, items: ids.length }, `${this.options.what}: could not hand over to the job runner; recovered after the heartbeat timeout`);
        return;
      }
      this.options.log.warn({ err, items: ids.length }, `${this.options.what}: could not hand over to the job runner; trying again`);
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        this.tryHandOver(ids, attempt + 1);
      }, HANDOVER_RETRY_MS[Math.min(attempt, HANDOVER_RETRY_MS.length - 1)]);
      timer.unref();
      this.retries.add(timer);
    });
  }

  /** Starts nothing more (a stopping process; `stop` hands the waiting items over). */
  pause(): void {
    this.stopped = true;
  }

  /** Stops: the waiting items are handed over now, the running ones get up to `waitMs` to finish. */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    const left = this.waiting.slice(this.head).map((w) => this.options.idOf(w.item));
    this.waiting.length = 0;
    this.head = 0;
    this.bytes = 0;
    if (left.length) {
      await this.options.handOver(left).then(
        () => this.options.log.info({ items: left.length }, `${this.options.what}: waiting ones handed over to the job runner`),
        // Still owned by this process: recovered once its heartbeat is stale.
        (err: unknown) => this.options.log.warn({ err, items: left.length }, `${this.options.what}: could not hand the waiting ones over; they are recovered after the heartbeat timeout`),
      );
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
