// Watches a server while a test abuses it: another client (a worker thread with its own event loop,
// so a server running in the test's own thread is watched fairly) asks GET /health/live one
// request at a time, a few ms apart. The oracle is an ordering, not a clock: `answeredDuring` counts the
// probes answered while the abusive work was still pending. A server whose event loop the work
// holds answers none until it lets go, and then at most the one probe that was waiting, so two or
// more answers mean the loop was given back while the work ran (`expectAnsweredDuring`). The
// slowest answer is kept for the log only (a loaded machine makes any bound on it a coin toss).
// Also reads a process's resident memory.
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { expect } from 'vitest';

interface HealthReport {
  /** Slowest /health/live answer, in ms (or the wait of one still unanswered). */
  worstMs: number;
  /** Answers received. */
  answers: number;
  /** Requests that failed (connection refused or reset, non-200). */
  failures: number;
}

const WATCHER = `
const { parentPort, workerData } = require('node:worker_threads');
let worst = 0, answers = 0, failures = 0, stopping = false, inFlightSince = 0;
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  stopping = true;
  const waiting = inFlightSince ? performance.now() - inFlightSince : 0;
  parentPort.postMessage({ worstMs: Math.round(Math.max(worst, waiting)), answers, failures });
});
(async () => {
  while (!stopping) {
    inFlightSince = performance.now();
    try {
      const res = await fetch(workerData.url + '/health/live', { signal: AbortSignal.timeout(60000) });
      await res.arrayBuffer();
      if (res.status !== 200) failures++;
      else {
        answers++;
        parentPort.postMessage('answer');
      }
    } catch {
      failures++;
    }
    // The first request pays for loading fetch in this thread: a warm-up, not a measure.
    if (answers + failures > 1) worst = Math.max(worst, performance.now() - inFlightSince);
    inFlightSince = 0;
    await new Promise((r) => setTimeout(r, workerData.everyMs));
  }
})();
`;

export interface AnsweredDuring<T> extends HealthReport {
  /** What `work` returned. */
  result: T;
  /** Probes answered while `work` was still pending. */
  answeredDuring: number;
}

/** Handed to the watched work: a work too short to span two probes by nature can wait on them. */
export interface Watch {
  /** Settles once `n` probes have been answered during the work. */
  answered(n: number): Promise<void>;
}

/**
 * Starts watching `baseUrl`, runs `work`, and counts the probes answered while it was still pending.
 * A work that is quick by nature (a few model calls) holds one of its outside answers (e.g.
 * `fake.holdNext(watch.answered(2))`) so that its span covers two probes on any machine: the
 * oracle then still fails if the rest of the work holds the event loop.
 */
export async function answeredDuring<T>(baseUrl: string, work: (watch: Watch) => Promise<T>, everyMs = 5): Promise<AnsweredDuring<T>> {
  const worker = new Worker(WATCHER, { eval: true, workerData: { url: baseUrl, everyMs } });
  let pending = true;
  let during = 0;
  let waiters: { n: number; resolve: () => void }[] = [];
  const watch: Watch = {
    answered: (n) => (during >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
  };
  worker.on('message', (message: HealthReport | 'answer') => {
    if (message !== 'answer' || !pending) return;
    during++;
    waiters = waiters.filter((w) => (w.n <= during ? (w.resolve(), false) : true));
  });
  try {
    // Wait for the first answer (the watcher warms up) so the count covers the work's whole span.
    await new Promise<void>((resolve, reject) => {
      const first = (message: unknown) => {
        if (message !== 'answer') return;
        worker.off('message', first);
        resolve();
      };
      worker.on('message', first);
      worker.once('error', reject);
    });
    during = 0;
    const result = await work(watch).finally(() => {
      pending = false;
    });
    const report = await new Promise<HealthReport>((resolve, reject) => {
      worker.on('message', (message: HealthReport | 'answer') => {
        if (message !== 'answer') resolve(message);
      });
      worker.once('error', reject);
      worker.postMessage('stop');
    });
    return { ...report, result, answeredDuring: during };
  } finally {
    void worker.terminate();
  }
}

/** The server kept answering while the work ran: no probe failed, and at least two were answered mid-work. */
export function expectAnsweredDuring(watched: Pick<AnsweredDuring<unknown>, 'answeredDuring' | 'failures'>): void {
  expect(watched.failures, 'health probes that failed while the work ran').toBe(0);
  expect(watched.answeredDuring, 'health probes answered while the work was still running').toBeGreaterThanOrEqual(2);
}

/** Resident memory of a process in MiB (default: this one), read from /proc. */
export function rssMiB(pid: number = process.pid): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Samples a process's resident memory every 100 ms until stopped; answers the peak in MiB. */
export function watchRss(pid: number = process.pid): { stop(): number } {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      // The process ended.
    }
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}
