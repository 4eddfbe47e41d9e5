// One worker-thread pool for the CPU-bound work a request can bring: a long guardrail scan, the
// statistics of a large run comparison. Work of that size on the main thread holds the event loop,
// during which no other request (of any tenant) is served; here it runs on a thread at a lower
// priority while the main thread goes on answering.
//
// Each kind of work is a task contract (definePoolTask): a name, the function that does the work,
// and a size cap. The function is the same one a caller may run inline for small inputs, so a result
// is identical wherever it was computed. The worker module (server/pool-worker.ts) registers every
// contract by name.
//
// The pool is created on the first task (piscina itself is loaded then: a server that never sees a
// large input does not pay for it), keeps no thread once idle, and is closed with the server
// (closeWorkerPool, from boot's shutdown): tasks under way finish, then the threads exit.
import { availableParallelism } from 'node:os';
import type { Piscina } from 'piscina';
import { AppError } from '../errors.js';

/** A kind of work the pool runs. Input and output cross threads by structured clone: plain data only. */
export interface PoolTask<Input, Output> {
  /** The worker's dispatch key; unique among the contracts. */
  readonly name: string;
  /** The work itself: pure and synchronous, run by the worker thread (or inline by the caller). */
  readonly run: (input: Input) => Output;
  /** The input's size in the contract's own unit (characters, pairs): what the cap and the inline threshold compare. */
  readonly size: (input: Input) => number;
  /**
   * Largest size one task may carry. Inputs are capped upstream (body limit, cases per dataset);
   * this keeps a task within the thread's memory limit should a path miss its cap.
   */
  readonly maxSize: number;
}

export function definePoolTask<Input, Output>(task: PoolTask<Input, Output>): PoolTask<Input, Output> {
  return task;
}

/** What crosses to the worker: the contract's name and its input. */
export interface PoolMessage {
  name: string;
  input: unknown;
}

/** A thread that had no task for this long exits, so an idle server holds no pool thread. */
const IDLE_TIMEOUT_MS = 30_000;
/** How long closing waits for the tasks under way before it ends the threads. */
const CLOSE_TIMEOUT_MS = 10_000;
/**
 * A lower priority for the pool threads: on a busy machine the request threads get the CPU first,
 * so a megabyte being scanned or a comparison being computed does not slow other tenants' requests
 * (Linux and macOS, through piscina's optional native helper; without it the priority stays as it is).
 */
const POOL_THREAD_NICENESS = process.platform === 'win32' ? 0 : 10;
/**
 * One thread per core, at most two: on a 2-core server a scan and a comparison can run side by side
 * (each thread is niced, so the main thread still gets a core), and more would only queue on the
 * same cores while holding memory. A second thread is started only when two tasks meet.
 */
const MAX_THREADS = Math.max(1, Math.min(2, availableParallelism()));
/** Tasks queued for a thread at most, across tenants (see maxQueue below). */
const MAX_QUEUED_TASKS = 16;
/**
 * Each thread's heap: a 1 MB scan or a 20,000-case comparison needs a few tens of MB. A task past
 * this ends its thread (ERR_WORKER_OUT_OF_MEMORY, the request fails) rather than the server.
 */
const RESOURCE_LIMITS = { maxOldGenerationSizeMb: 256 };

type Pool = Piscina<PoolMessage, unknown>;

/** The pool being created or created; `created` once it exists (for its counters). */
let pool: Promise<Pool> | null = null;
let created: Pool | null = null;

/**
 * The worker module: `pool-worker.js` in server/ when compiled; under a TypeScript loader (this
 * module is a `.ts` file) a bootstrap that registers the loader in the thread first.
 */
function workerFilename(): string {
  const typescript = new URL(import.meta.url).pathname.endsWith('.ts');
  return new URL(typescript ? '../pool-worker-ts.mjs' : '../pool-worker.js', import.meta.url).href;
}

function workerPool(): Promise<Pool> {
  pool ??= import('piscina').then(
    ({ Piscina }) => {
      const instance = new Piscina<PoolMessage, unknown>({
        filename: workerFilename(),
        minThreads: 0,
        maxThreads: MAX_THREADS,
        idleTimeout: IDLE_TIMEOUT_MS,
        closeTimeout: CLOSE_TIMEOUT_MS,
        niceIncrement: POOL_THREAD_NICENESS,
        resourceLimits: RESOURCE_LIMITS,
        // Tasks waiting for a thread at most: past that a request is refused (429), so a burst of
        // large comparisons cannot queue minutes of work ahead of everyone's scans.
        maxQueue: MAX_QUEUED_TASKS,
      });
      // Piscina reports a close that outlived CLOSE_TIMEOUT_MS as an 'error' event (then ends the
      // threads anyway); without a listener the event would throw.
      instance.on('error', () => undefined);
      return (created = instance);
    },
    (err: unknown) => {
      pool = null; // the next task tries again
      throw err;
    },
  );
  return pool;
}

/**
 * Runs `task` on a pool thread. Over the contract's size cap the input is refused (422) without
 * being copied to a thread.
 */
export async function runPoolTask<Input, Output>(task: PoolTask<Input, Output>, input: Input): Promise<Output> {
  const size = task.size(input);
  if (size > task.maxSize) {
    throw new AppError('UNPROCESSABLE', `The work this request asks for is too large for one task (${size} > ${task.maxSize})`, { size, max: task.maxSize });
  }
  try {
    return (await (await workerPool()).run({ name: task.name, input })) as Output;
  } catch (err) {
    if (err instanceof Error && err.message === 'Task queue is at limit') {
      throw new AppError('CONCURRENCY_LIMIT', 'The server is busy with other large tasks; try again shortly', { queued: MAX_QUEUED_TASKS }, { 'retry-after': '2' });
    }
    throw err;
  }
}

/** Tasks the current pool has completed (0 without a pool): tells whether work ran off the event loop. */
export function workerPoolCompleted(): number {
  return created?.completed ?? 0;
}

/** Closes the pool (server shutdown): tasks under way finish, then the threads exit; a later task starts a new pool. */
export async function closeWorkerPool(): Promise<void> {
  const current = pool;
  pool = null;
  const instance = await current?.catch(() => null);
  if (!instance) return;
  if (created === instance) created = null;
  await instance.close();
}
