// The one rejection graphile-worker 0.18 leaves unhandled, taken out of Node's way.
//
// When a task ends, graphile-worker's worker calls completeJob(job) or failJob(...) and drops the
// promise (dist/worker.js). With completeJobBatchDelay at -1 (runner.ts, see there) and
// failJobBatchDelay at its default -1, that promise is the job's DELETE or UPDATE itself, which
// graphile-worker retries only for 40001, 40P01, 57P03, EHOSTUNREACH and ETIMEDOUT: a refused or
// dropped connection (ECONNREFUSED, 57P01 admin_shutdown, "Connection terminated") rejects it at
// once, and Node ends the process on the unhandled rejection. A database restart while jobs are in
// flight did exactly that. The batched mode (a delay >= 0) is no way out: its batcher catches the
// error but then shuts the whole worker pool down on the first failed write (its retry loop exits
// after one attempt, graphile/worker#636), and once it has failed it hands later completions back
// as promises that reject, again unhandled, when they arrive after the pool released it. No option
// or hook of graphile-worker reaches that promise (and widening its retries to lost connections
// would retry its job fetches too: a fetch whose answer was lost leaves jobs locked under a live
// runner for hours), so a process-level listener is the only place left to catch it.
//
// It is kept narrow: only a rejection that says the database is out of reach AND was raised by
// graphile-worker's completion or failure write (its own frames are in the stack) is taken; the
// runner that lost the write is told (its job stays locked under its id, so it is replaced and the
// lock released, runner.ts). Anything else is raised as an uncaught exception, which is what Node
// itself does with an unhandled rejection by default (--unhandled-rejections=throw); when the
// process has other 'unhandledRejection' listeners (a test runner), they decide, as they would
// without this one.
import { isDatabaseUnavailable } from '../server/errors.js';

/** graphile-worker's completion and failure writes (dist/sql/completeJobs.js, dist/sql/failJobs.js). */
const JOB_WRITE_FRAME = /[\\/]graphile-worker[\\/]dist[\\/]sql[\\/](completeJobs|failJobs)\.js/;

/** Whether `reason` is a job's completion or failure that graphile-worker could not write because the database is out of reach. */
export function isLostJobWrite(reason: unknown): reason is Error {
  return reason instanceof Error && isDatabaseUnavailable(reason) && JOB_WRITE_FRAME.test(reason.stack ?? '');
}

type Listener = (err: Error) => void;
const listeners = new Set<Listener>();

function unhandledRejectionError(reason: unknown): Error {
  const err = new Error(
    `This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason "${String(reason)}".`,
  );
  (err as Error & { code: string }).code = 'ERR_UNHANDLED_REJECTION';
  return err;
}

function onUnhandledRejection(reason: unknown): void {
  if (isLostJobWrite(reason)) {
    for (const listener of listeners) listener(reason);
    return;
  }
  if (process.listenerCount('unhandledRejection') > 1) return;
  throw reason instanceof Error ? reason : unhandledRejectionError(reason);
}

/**
 * Calls `listener` for every job completion or failure graphile-worker could not write because the
 * database was out of reach (instead of the process ending). The returned function stops it; the
 * process-level listener goes with the last one.
 */
export function onLostJobWrite(listener: Listener): () => void {
  if (listeners.size === 0) process.on('unhandledRejection', onUnhandledRejection);
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) process.off('unhandledRejection', onUnhandledRejection);
  };
}
