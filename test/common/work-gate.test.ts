// The admission of heavy requests of one kind (deploys as code): places, a bounded queue, per-key
// limits in progress and per minute. Driven by counters and explicit times, never the clock.
import { describe, expect, it } from 'vitest';
import { AppError } from '../../server/errors.js';
import { WorkGate } from '../../server/common/work-gate.js';

const gate = (limits: Partial<ConstructorParameters<typeof WorkGate>[1]> = {}) =>
  new WorkGate('deploy', { running: 2, waiting: 2, perKey: 2, perKeyPerMinute: 10, ...limits });

const refusal = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected a refusal');
};

describe('WorkGate', () => {
  it('lets `running` in, queues the next in order, refuses past the queue with CONCURRENCY_LIMIT and Retry-After', async () => {
    const g = gate();
    const a = await g.enter('a');
    const b = await g.enter('b');
    const order: string[] = [];
    const c = g.enter('c').then((release) => (order.push('c'), release));
    const d = g.enter('d').then((release) => (order.push('d'), release));
    const refused = await refusal(g.enter('e'));
    expect(refused.code).toBe('CONCURRENCY_LIMIT');
    expect(refused.headers).toEqual({ 'Retry-After': '5' });
    a();
    a(); // a second release gives nothing back twice
    const releaseC = await c;
    expect(order).toEqual(['c']);
    b();
    const releaseD = await d;
    expect(order).toEqual(['c', 'd']);
    releaseC();
    releaseD();
    // All places free again: two run at once without waiting.
    const [x, y] = await Promise.all([g.enter('x'), g.enter('y')]);
    x();
    y();
  });

  it('one key has at most `perKey` requests in progress; others are not held back by it', async () => {
    const g = gate({ running: 1, waiting: 10 });
    const first = await g.enter('tenant');
    const second = g.enter('tenant');
    const third = await refusal(g.enter('tenant'));
    expect(third.code).toBe('RATE_LIMITED');
    const other = g.enter('other');
    first();
    (await second)();
    (await other)();
  });

  it('one key has at most `perKeyPerMinute` requests a minute, counted over the last 60 seconds', async () => {
    const g = gate({ perKeyPerMinute: 3 });
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) (await g.enter('tenant', t0 + i * 1000))();
    const refused = await refusal(g.enter('tenant', t0 + 10_000));
    expect(refused.code).toBe('RATE_LIMITED');
    expect(refused.details).toMatchObject({ limit_per_minute: 3, retry_after_seconds: 50 });
    expect(refused.headers).toEqual({ 'Retry-After': '50' });
    // Another key is not limited by it; a minute after the first, the key has room again.
    (await g.enter('other', t0 + 10_000))();
    (await g.enter('tenant', t0 + 60_001))();
  });
});
