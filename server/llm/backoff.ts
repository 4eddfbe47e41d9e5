// How long to wait before trying a provider again when it gave no Retry-After: one rule for a
// request's retries (call-route.ts) and a batch's waits (ride-out.ts).

/**
 * The wait after `waits` earlier waits: the step doubles from `firstMs` up to `maxMs`; half of it
 * is fixed and half random ("equal jitter"), so many callers failing together spread out and none
 * tries again at once.
 */
export function jitteredBackoffMs(waits: number, firstMs: number, maxMs: number): number {
  const step = Math.min(maxMs, firstMs * 2 ** waits);
  return Math.round(step / 2 + (Math.random() * step) / 2);
}
