// Admission for heavy requests of one kind on this process (deploys as code: plans, deployments,
// publishes): at most `running` at once, a bounded queue behind them, and per key (a tenant) a limit
// on requests in progress and on requests a minute. Taken before the request's body is read, so a
// burst of large bodies waits (or is refused) instead of being parsed all at once.
import { AppError } from '../errors.js';

export interface WorkGateLimits {
  /** Requests doing the work at once. */
  running: number;
  /** Requests waiting for a place; beyond: 429 CONCURRENCY_LIMIT. */
  waiting: number;
  /** Requests of one key in progress (running or waiting); beyond: 429 RATE_LIMITED. */
  perKey: number;
  /** Requests of one key a minute; beyond: 429 RATE_LIMITED. */
  perKeyPerMinute: number;
}

export class WorkGate {
  private active = 0;
  private readonly queue: (() => void)[] = [];
  private readonly inProgress = new Map<string, number>();
  private readonly recent = new Map<string, number[]>();

  constructor(
    readonly what: string,
    readonly limits: WorkGateLimits,
  ) {}

  /** Waits for a place for `key`; the function it answers gives the place back (once, whatever calls it). */
  async enter(key: string, now = Date.now()): Promise<() => void> {
    const times = (this.recent.get(key) ?? []).filter((t) => now - t < 60_000);
    if (times.length >= this.limits.perKeyPerMinute) {
      const retryAfter = Math.max(1, Math.ceil((60_000 - (now - times[0])) / 1000));
      throw new AppError('RATE_LIMITED', `At most ${this.limits.perKeyPerMinute} ${this.what} requests a minute`, { limit_per_minute: this.limits.perKeyPerMinute, retry_after_seconds: retryAfter }, { 'Retry-After': String(retryAfter) });
    }
    const mine = this.inProgress.get(key) ?? 0;
    if (mine >= this.limits.perKey) {
      throw new AppError('RATE_LIMITED', `${mine} ${this.what} requests of this tenant are in progress; wait for them`, { in_progress: mine, retry_after_seconds: 5 }, { 'Retry-After': '5' });
    }
    if (this.active >= this.limits.running && this.queue.length >= this.limits.waiting) {
      throw new AppError('CONCURRENCY_LIMIT', `The server is busy with ${this.what} requests; try again shortly`, { retryable: true, retry_after_seconds: 5 }, { 'Retry-After': '5' });
    }
    times.push(now);
    this.recent.set(key, times);
    if (this.recent.size > 10_000) this.forgetOldKeys(now);
    this.inProgress.set(key, mine + 1);
    if (this.active < this.limits.running) this.active++;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inProgress.get(key) ?? 1) - 1;
      if (left > 0) this.inProgress.set(key, left);
      else this.inProgress.delete(key);
      // The place passes to the next in line, or is freed.
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    };
  }

  private forgetOldKeys(now: number) {
    for (const [key, times] of this.recent) if (times.every((t) => now - t >= 60_000)) this.recent.delete(key);
  }
}
