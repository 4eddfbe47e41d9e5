// Small text uploads accepted by a process that runs the job runner are ingested by that process
// straight away, with the bytes and settings the upload already holds, and without a graphile job:
// no job insert (graphile-worker's add_job and the NOTIFY that wakes every runner), no fetch, lock,
// claim, content read or delete, and no stage writes on the way (runLocalIngestion). This is what
// server/workflows/local-runs.ts does for queued workflow runs.
//
// Nothing is lost when the process is not there to finish: the upload's job row is committed owned
// by this process (owner_id, its heartbeat id). A pending or running job whose owner's heartbeat
// stopped is given a graphile job by the recovery sweep (recoverLocalIngestions, run by every job
// runner), and any process ingests it from the stored upload. A run that fails with an error (the
// database out of reach), one that waited here too long, and those still waiting when the job
// runner stops are handed over at once (owner cleared, a job queued; common/local-queue.ts), so the
// job runner's retries with backoff apply. The completion is gated on the job row, so a job that
// runs twice completes once.
import { LocalQueue } from '../common/local-queue.js';
import type { AppDeps } from '../deps.js';
import { PROCESS_ID, staleAfterMs } from '../runs/process-identity.js';
import { runLocalIngestion, type LocalIngestion } from './ingest-document.js';
import type { SupportedMediaType } from './media-types.js';
import { handOverIngestionJob, queueOrphanedIngestionJobs } from './store/ingestion-jobs.js';

/** A local ingestion still waiting this long after its upload goes to the job runner instead. */
const LOCAL_MAX_WAIT_MS = 10_000;
/** A job still owned this long after its upload is recovered even though its owner lives (it lost it). */
const ABANDONED_AFTER_MS = 6 * LOCAL_MAX_WAIT_MS;
/** Uploads waiting in one process at most (their bytes are held in memory). */
const MAX_WAITING = 2000;
const MAX_WAITING_BYTES = 64 * 1024 * 1024;
/** Larger files go to the job runner, which reports their stages as they go. */
const MAX_LOCAL_BYTES = 1024 * 1024;
/** Extracted in this process without a parser library (extract-text.ts). */
const LOCAL_MEDIA_TYPES: ReadonlySet<SupportedMediaType> = new Set(['text/plain', 'text/markdown', 'application/json']);

type Deps = Pick<AppDeps, 'orm' | 'sql' | 'pgvector' | 'log' | 'config' | 'localRuns'>;

class LocalIngestionQueue {
  private readonly queue: LocalQueue<LocalIngestion>;

  constructor(private readonly deps: Deps) {
    this.queue = new LocalQueue<LocalIngestion>({
      what: 'ingestions',
      log: deps.log,
      concurrency: deps.config.WORKER_CONCURRENCY,
      execute: (item) => runLocalIngestion(deps, item),
      // Clears this process's ownership and queues a graphile job. Also for an upload whose intake
      // may have committed although its answer was lost: a job that does not exist, or is not this
      // process's, is left alone.
      idOf: (item) => item.jobId,
      handOver: async (jobIds) => {
        // Every one is tried; one refused fails the whole (the queue tries again, idempotently).
        const outcomes = await Promise.allSettled(jobIds.map((jobId) => handOverIngestionJob(deps.sql, jobId, PROCESS_ID)));
        const refused = outcomes.find((outcome) => outcome.status === 'rejected');
        if (refused) throw refused.reason;
      },
      sizeOf: (item) => item.content.length,
      maxWaitMs: LOCAL_MAX_WAIT_MS,
      // The job runner runs in this process: while it stops, nothing more is started.
      accepting: () => deps.localRuns !== null,
    });
  }

  hasRoom(bytes: number): boolean {
    const waiting = this.queue.waitingNow();
    return this.deps.localRuns !== null && this.queue.isOpen() && waiting.items < MAX_WAITING && waiting.bytes + bytes <= MAX_WAITING_BYTES;
  }

  /** An upload whose job row, owned by this process, has committed. */
  push(item: LocalIngestion): void {
    this.queue.push(item);
  }

  /** Gives the upload's job to the job runner, trying until the database takes it. */
  handOver(jobId: string): void {
    this.queue.handOver([jobId]);
  }

  /**
   * The job runner stops: every waiting upload is handed over now (while the database and this
   * process's heartbeat are still there), and the running ones get up to `waitMs` to finish.
   */
  stop(waitMs: number): Promise<void> {
    return this.queue.stop(waitMs);
  }
}

/** The owner_id of the jobs this process ingests itself. */
export const LOCAL_OWNER = PROCESS_ID;

const queues = new WeakMap<Deps, LocalIngestionQueue>();

/**
 * This process's queue of local ingestions when it may take an upload of `bytes` of `mediaType`
 * with no embedding model to call (else null: the job runner ingests it). The upload's job row is
 * then written owned by LOCAL_OWNER.
 */
export function localIngestionFor(deps: Deps, upload: { mediaType: SupportedMediaType; bytes: number; embeddingModel: string | null }): LocalIngestionQueue | null {
  if (deps.localRuns === null || upload.embeddingModel !== null || upload.bytes > MAX_LOCAL_BYTES || !LOCAL_MEDIA_TYPES.has(upload.mediaType)) return null;
  let queue = queues.get(deps);
  if (!queue) {
    queue = new LocalIngestionQueue(deps);
    queues.set(deps, queue);
  }
  return queue.hasRoom(upload.bytes) ? queue : null;
}

/**
 * Hands this process's waiting local ingestions to the job runner and waits up to `waitMs` for the
 * running ones; called by the job runner as it stops (what it misses, the recovery sweep finds).
 */
export async function stopLocalIngestions(deps: Deps, waitMs: number): Promise<void> {
  await queues.get(deps)?.stop(waitMs);
}

/** Queues the ingestions of processes that stopped before finishing them; run by each job runner's recovery. */
export async function recoverLocalIngestions(deps: Pick<AppDeps, 'sql' | 'config' | 'log'>): Promise<number> {
  const staleSeconds = staleAfterMs(deps.config.HEARTBEAT_MS) / 1000;
  const queued = await queueOrphanedIngestionJobs(deps.sql, staleSeconds / 2, staleSeconds, ABANDONED_AFTER_MS / 1000);
  if (queued) deps.log.warn({ jobs: queued, by: PROCESS_ID }, 'ingestions of stopped processes queued');
  return queued;
}
