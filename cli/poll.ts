// Following a server-side job by polling it: until it is done, Ctrl-C (stops watching, not the
// job; a second one exits at once) or a time limit; failures that may pass (no answer, a server
// error, a rate limit) are looked past a few times in a row. The caller brings the view.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, UnreachableError } from './api-client.js';

/** Time between two looks: LIYA_EVAL_POLL_MS (milliseconds) or half a second. */
export function pollIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env.LIYA_EVAL_POLL_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : 500;
}

/** Failed looks in a row before following gives up. */
const MAX_POLL_FAILURES = 5;

/** A look that may work next time: no answer, a server error, a rate limit. */
const transient = (err: unknown) => err instanceof UnreachableError || (err instanceof ApiError && (err.status >= 500 || err.status === 429));

export interface Polled<T> {
  value: T;
  /** Why following stopped before the job was done. */
  stopped?: 'interrupted' | 'max-wait';
}

export interface PollView {
  update(): void;
  finish(): Promise<void>;
}

/** Polls `initial` with `load` until `done`, updating `view` (built over the latest value) after each look. */
export async function pollUntil<T extends { id: string }>(
  initial: T,
  load: (id: string, signal: AbortSignal) => Promise<T>,
  done: (value: T) => boolean,
  makeView: (current: () => T) => PollView,
  maxWaitMs: number,
): Promise<Polled<T>> {
  let value = initial;
  const view = makeView(() => value);
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  const deadline = Date.now() + maxWaitMs;
  const interval = pollIntervalMs();
  let failures = 0;
  try {
    view.update();
    while (!done(value)) {
      if (Date.now() >= deadline) return { value, stopped: 'max-wait' };
      try {
        await sleep(Math.min(interval, Math.max(0, deadline - Date.now())), undefined, { signal: controller.signal });
      } catch {
        // aborted by Ctrl-C
      }
      if (controller.signal.aborted) return { value, stopped: 'interrupted' };
      try {
        value = await load(value.id, controller.signal);
        failures = 0;
      } catch (err) {
        // Ctrl-C during a look abandons it at once rather than after --timeout.
        if (controller.signal.aborted) return { value, stopped: 'interrupted' };
        if (!transient(err) || ++failures >= MAX_POLL_FAILURES) throw err;
        continue;
      }
      view.update();
    }
    return { value };
  } finally {
    process.off('SIGINT', onSigint);
    await view.finish();
  }
}
