// Batch work (an evaluation run's cases, an ingestion's embeddings batches) rides out a provider's
// bad minutes instead of failing at its first rate limit. The gateway's own retries are few and
// short because a request is waiting on them; a batch has no one waiting, so it can afford to slow
// down and wait for as long as PROVIDER_PATIENCE_MS:
// - `rideOut` tries a piece of work again while it fails in a way time may cure
//   (transientProviderFailure): after the provider's Retry-After when it gave one, else after a
//   jittered backoff growing from 0.5 s to 10 s;
// - an adaptive limiter (AIMD) shared by the pieces of one batch halves how many of them call the
//   provider at once on such a failure (at least one) and adds one back after as many successes in
//   a row as it allows at once: a rate-limited batch backs off together rather than each piece
//   retrying at full width into the same limit.
import { setTimeout as delay } from 'node:timers/promises';
import { jitteredBackoffMs } from './backoff.js';
import { transientProviderFailure, type ProviderFailureReason } from './provider-errors.js';

const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 10_000;

/** Thrown by rideOut when its signal ends a wait (the work was cancelled or set aside for later). */
export class RideOutAborted extends Error {
  constructor() {
    super('The wait for the model provider was abandoned');
  }
}

/** Waits `ms`; an abort of `signal` ends the wait with RideOutAborted. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch((err: unknown) => {
    throw signal?.aborted ? new RideOutAborted() : err;
  });
}

type AttemptOutcome = 'served' | 'transient' | 'other';

interface Permit {
  release(outcome: AttemptOutcome): void;
}

export interface AdaptiveLimiter {
  /** Provider calls of the batch allowed at once now (1..max). */
  readonly limit: number;
  /**
   * Since when the batch's calls have failed transiently with no success in between (epoch ms),
   * or null: a piece does not wait past the patience counted from here either, so a provider that
   * is down for good costs the batch one patience, not one per piece.
   */
  readonly failingSince: number | null;
  /** Why its pieces wait, while at least one of them does (progress shows it); else null. */
  waitingFor(): ProviderFailureReason | null;
  /** A slot for one attempt; a retry goes before first attempts. */
  acquire(retry: boolean, signal?: AbortSignal): Promise<Permit>;
  /** Counts a piece waiting out a failure, until the returned function is called. */
  enterWait(reason: ProviderFailureReason): () => void;
}

/** A limiter for one batch: `max` attempts at once while the provider serves. */
export function createAdaptiveLimiter(max: number): AdaptiveLimiter {
  let limit = Math.max(1, max);
  let active = 0;
  const queue: { grant: () => void }[] = [];
  // A failure halves the limit once per generation: the failures of attempts that started before
  // the last halving were already answered by it (one halving per window, as TCP does).
  let generation = 0;
  let successes = 0;
  let failingSince: number | null = null;
  let waiting = 0;
  let reason: ProviderFailureReason | null = null;

  const pump = () => {
    while (active < limit && queue.length) {
      active++;
      queue.shift()!.grant();
    }
  };

  const permit = (): Permit => {
    const at = generation;
    let released = false;
    return {
      release(outcome) {
        if (released) return;
        released = true;
        active--;
        if (outcome === 'served') {
          failingSince = null;
          if (++successes >= limit && limit < max) {
            limit++;
            successes = 0;
          }
        } else if (outcome === 'transient') {
          failingSince ??= Date.now();
          successes = 0;
          if (at === generation) {
            limit = Math.max(1, Math.floor(limit / 2));
            generation++;
          }
        }
        pump();
      },
    };
  };

  return {
    get limit() {
      return limit;
    },
    get failingSince() {
      return failingSince;
    },
    waitingFor: () => (waiting > 0 ? reason : null),
    acquire(retry, signal) {
      if (signal?.aborted) return Promise.reject(new RideOutAborted());
      if (active < limit && (retry || queue.length === 0)) {
        active++;
        return Promise.resolve(permit());
      }
      return new Promise<Permit>((resolve, reject) => {
        const entry = {
          grant: () => {
            signal?.removeEventListener('abort', aborted);
            resolve(permit());
          },
        };
        function aborted() {
          const at = queue.indexOf(entry);
          if (at >= 0) queue.splice(at, 1);
          reject(new RideOutAborted());
        }
        signal?.addEventListener('abort', aborted, { once: true });
        if (retry) queue.unshift(entry);
        else queue.push(entry);
      });
    },
    enterWait(why) {
      waiting++;
      reason = why;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        waiting--;
      };
    },
  };
}

export interface ProviderWait {
  reason: ProviderFailureReason;
  /** How long this wait lasts. */
  waitMs: number;
  /** 1 for the piece's first wait. */
  wait: number;
}

export interface RideOutOptions {
  /** How long after its first transient failure the work may still be tried (PROVIDER_PATIENCE_MS; 0: no waiting). */
  patienceMs: number;
  /** Ends a wait (and a wait for the limiter's slot) with RideOutAborted. */
  signal?: AbortSignal;
  /** Told before each wait (awaited): progress says that the work waits, and why. */
  onWait?: (wait: ProviderWait) => unknown;
  /** The batch's limiter: each attempt holds one of its slots. */
  limiter?: AdaptiveLimiter;
}

/**
 * Runs `fn`, and runs it again while it fails in a way time may cure, until the patience is spent:
 * then the last error is thrown as it was (a 502 LLM_PROVIDER_ERROR or 503 LLM_UNAVAILABLE with
 * its reason). Any other error is thrown at once. A Retry-After longer than the patience left ends
 * the waiting at once: trying earlier would only be refused again.
 */
export async function rideOut<T>(fn: () => Promise<T>, options: RideOutOptions): Promise<T> {
  const { limiter, signal } = options;
  let troubleSince: number | null = null;
  for (let waits = 0; ; waits++) {
    const slot = limiter ? await limiter.acquire(waits > 0, signal) : null;
    let failure: ReturnType<typeof transientProviderFailure>;
    try {
      const value = await fn();
      slot?.release('served');
      return value;
    } catch (err) {
      failure = transientProviderFailure(err);
      slot?.release(failure ? 'transient' : 'other');
      if (!failure) throw err;
      const now = Date.now();
      troubleSince ??= now;
      const since = Math.min(troubleSince, limiter?.failingSince ?? troubleSince);
      const left = since + options.patienceMs - now;
      if (left <= 0 || (failure.retryAfterMs !== null && failure.retryAfterMs > left)) throw err;
      const waitMs = failure.retryAfterMs ?? Math.min(left, jitteredBackoffMs(waits, BACKOFF_FIRST_MS, BACKOFF_MAX_MS));
      const leave = limiter?.enterWait(failure.reason);
      try {
        await options.onWait?.({ reason: failure.reason, waitMs, wait: waits + 1 });
        await sleep(waitMs, signal);
      } finally {
        leave?.();
      }
    }
  }
}
