// Watches a server while a test abuses it: another client (a worker thread with its own event loop,
// so a server running in the test's own thread is measured fairly) asks GET /health/live every
// 50 ms, one request at a time, and keeps the slowest answer. A request still unanswered when the
// watch stops counts with the time it has waited so far (the first request warms the thread up and
// is not counted). Also reads a process's resident memory.
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

export interface HealthReport {
  /** Slowest /health/live answer, in ms (or the wait of one still unanswered). */
  worstMs: number;
  /** Answers received. */
  answers: number;
  /** Requests that failed (connection refused or reset, non-200). */
  failures: number;
}

export interface HealthWatch {
  stop(): Promise<HealthReport>;
}

const WATCHER = `
const { parentPort, workerData } = require('node:worker_threads');
let worst = 0, answers = 0, failures = 0, stopping = false, inFlightSince = 0;
parentPort.on('message', () => {
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
      else answers++;
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

/** Starts watching `baseUrl`'s liveness from another thread. */
export function watchHealth(baseUrl: string, everyMs = 50): HealthWatch {
  const worker = new Worker(WATCHER, { eval: true, workerData: { url: baseUrl, everyMs } });
  return {
    stop: () =>
      new Promise<HealthReport>((resolve, reject) => {
        worker.once('message', (report: HealthReport) => {
          void worker.terminate();
          resolve(report);
        });
        worker.once('error', reject);
        worker.postMessage('stop');
      }),
  };
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
