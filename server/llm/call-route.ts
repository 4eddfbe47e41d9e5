// Serving one request from a route: the targets in order, each with its breaker, its retries (the
// provider's Retry-After honoured, else jittered backoff, within the target's retry budget and the
// call's deadline) and, on a failure another target may cure, the next target.
import { setTimeout as delay } from 'node:timers/promises';
import { AppError } from '../errors.js';
import { jitteredBackoffMs } from './backoff.js';
import type { ModelTarget } from './llm.types.js';
import { circuitOpen, providerError, type ProviderFailure } from './provider-errors.js';
import { CallFailure, type TargetHealth } from './target-health.js';

export interface RoutePolicy {
  health: TargetHealth;
  /** Retries of one target after its first attempt (LLM_MAX_RETRIES). */
  retries: number;
  /** The longest wait for one retry (LLM_MAX_RETRY_WAIT_MS); a longer Retry-After moves on instead. */
  maxWaitMs: number;
  /** Told when a target other than the first serves (metrics). */
  onFallback?: (from: ModelTarget, to: ModelTarget, reason: string) => void;
  /** Told of each failed attempt (logs). */
  onFailure?: (target: ModelTarget, failure: ProviderFailure, attempt: number) => void;
  /** Waits `ms` (tests and benchmarks may shorten nothing: this is the real timer). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface RouteCall {
  /** Epoch ms: no attempt starts and no wait ends past it. */
  deadlineAt?: number;
  signal?: AbortSignal;
  /** Retries for this call instead of the policy's (e.g. a search's embedding: none). */
  retries?: number;
}

export interface Served<T> {
  value: T;
  target: ModelTarget;
  /** Whether a target other than the first served. */
  fallback: boolean;
  /** Provider calls made, failed ones included. */
  attempts: number;
}

const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 8_000;
/** What a caller is told to wait after a failure time may cure when nothing more precise is known. */
const DEFAULT_RETRY_AFTER_MS = 2000;

/** Waits `ms`; an abort of `signal` (the caller went away) ends the wait with the abort's error. */
const sleepFor = (ms: number, signal?: AbortSignal): Promise<void> => (ms <= 0 ? Promise.resolve() : delay(ms, undefined, { signal }));

/**
 * Serves the call from the first target that can: `attempt` makes one provider call and throws a
 * CallFailure for a provider failure (anything else it throws passes through unchanged). Throws
 * the last target's 502 LLM_PROVIDER_ERROR, or 503 LLM_UNAVAILABLE when every target was cooling
 * down, with the soonest Retry-After known.
 */
export async function callRoute<T>(
  policy: RoutePolicy,
  targets: readonly ModelTarget[],
  call: RouteCall,
  /** One provider call: `timeoutMs` is what the deadline leaves (null: no deadline); `tries` is 0 for a target's first attempt. */
  attempt: (target: ModelTarget, timeoutMs: number | null, tries: number) => Promise<T>,
  /** More targets, read only when the ones given cannot serve (a route's fallbacks). */
  more?: () => Promise<readonly ModelTarget[]>,
): Promise<Served<T>> {
  const { health } = policy;
  const sleep = policy.sleep ?? sleepFor;
  const retries = call.retries ?? policy.retries;
  // Copied only when fallbacks are read: a healthy call allocates nothing for its route.
  let chain: readonly ModelTarget[] = targets;
  let loaded = !more;
  const loadMore = async (index: number) => {
    if (!loaded) {
      loaded = true;
      const known = chain;
      chain = [...known, ...(await more!()).filter((t) => !known.some((c) => c.modelRef === t.modelRef))];
    }
    return index < chain.length;
  };
  const hasTarget = (index: number): boolean | Promise<boolean> => index < chain.length || loadMore(index);
  let attempts = 0;
  let last: { failure: ProviderFailure; target: ModelTarget } | null = null;
  let cooling: { retryAfterMs: number; target: ModelTarget } | null = null;
  const deadlineAt = call.deadlineAt;
  const remaining = () => (deadlineAt === undefined ? null : deadlineAt - Date.now());

  for (let index = 0; index < chain.length || (await loadMore(index)); index++) {
    const target = chain[index];
    const entry = health.entryOf(target);
    let waited = false;
    for (let tries = 0; ; tries++) {
      const admission = health.admit(entry, waited);
      if (!admission.ok) {
        // Rate limited a moment ago and no other target to go to: wait it out once, when affordable.
        const leftNow = remaining();
        if (admission.reason === 'rate_limited' && !waited && admission.retryAfterMs <= policy.maxWaitMs && (leftNow === null || admission.retryAfterMs < leftNow) && !(await hasTarget(index + 1))) {
          waited = true;
          await sleep(admission.retryAfterMs, call.signal);
          tries -= 1;
          continue;
        }
        if (!cooling || admission.retryAfterMs < cooling.retryAfterMs) cooling = { retryAfterMs: admission.retryAfterMs, target };
        break;
      }
      const left = remaining();
      if (left !== null && left <= 0) break;
      if (tries === 0) health.noteRequest(entry);
      attempts += 1;
      try {
        const value = await health.run(entry, () => attempt(target, left, tries));
        if (index > 0) policy.onFallback?.(chain[0], target, last?.failure.reason ?? 'circuit_open');
        return { value, target, fallback: index > 0, attempts };
      } catch (thrown) {
        const err = health.refusedAsFailure(entry, thrown);
        if (!(err instanceof CallFailure)) throw err;
        const failure = err.failure;
        if (failure.reason === 'circuit_open') {
          if (!cooling || (failure.retryAfterMs ?? 0) < cooling.retryAfterMs) cooling = { retryAfterMs: failure.retryAfterMs ?? 1000, target };
          attempts -= 1; // no call was made
          break;
        }
        policy.onFailure?.(target, failure, tries);
        last = { failure, target };
        if (failure.reason === 'rate_limited' && failure.retryAfterMs) health.noteRetryAfter(entry, failure.retryAfterMs);
        if (!failure.fallbackable) throw providerError(failure, target, { attempts });
        if (!failure.retryable || tries >= retries) break;
        const wait = failure.retryAfterMs ?? jitteredBackoffMs(tries, BACKOFF_FIRST_MS, BACKOFF_MAX_MS);
        const leftNow = remaining();
        // A wait the call cannot afford, or one a healthy next target makes needless: move on.
        if (wait > policy.maxWaitMs || (leftNow !== null && wait >= leftNow)) break;
        if (failure.retryAfterMs && (await hasTarget(index + 1)) && health.admit(health.entryOf(chain[index + 1])).ok) break;
        if (!health.takeRetry(entry)) break;
        await sleep(wait, call.signal);
        waited = true;
      }
    }
  }
  if (last) {
    // A failure time may cure always says when to come back: the provider's word, a breaker's end, or a short default.
    const soonest = Math.min(cooling?.retryAfterMs ?? Number.POSITIVE_INFINITY, last.failure.retryAfterMs ?? Number.POSITIVE_INFINITY);
    const retryAfterMs = soonest !== Number.POSITIVE_INFINITY ? soonest : last.failure.retryable ? DEFAULT_RETRY_AFTER_MS : null;
    throw providerError({ ...last.failure, retryAfterMs }, last.target, { attempts });
  }
  if (cooling) throw providerError(circuitOpen(cooling.retryAfterMs), cooling.target, { targets: chain.map((t) => t.modelRef) });
  // No attempt and nothing cooling: the deadline had passed before the first call.
  throw new AppError('LLM_PROVIDER_ERROR', 'The call\'s deadline passed before a model provider could be tried', { reason: 'timeout', retryable: true, provider: chain[0]?.provider, model: chain[0]?.modelRef });
}
