// The monitors' decision rule on its own: a time-uniform bound, so noise at the threshold looked at
// after every sample does not fire, and a real shift does, once, with hysteresis on the way back.
import { describe, expect, it } from 'vitest';
import { confidenceRadius, judgeMonitor, type MonitorState } from '../../server/evals/monitor-statistics.js';

/** A seeded generator (mulberry32): the same sequences on every run. */
function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const RULE = { direction: 'below' as const, threshold: 3, minSamples: 30, confidence: 0.95 };

/** Feeds the values one by one into a window of `size`, judging after each; answers every state change. */
function replay(values: number[], size: number, rule = RULE): MonitorState[] {
  let state: MonitorState = 'ok';
  const changes: MonitorState[] = [];
  for (let i = 1; i <= values.length; i++) {
    const next: MonitorState = judgeMonitor(state, { values: values.slice(Math.max(0, i - size), i), range: [1, 5] }, rule).state;
    if (next !== state) changes.push(next);
    state = next;
  }
  return changes;
}

describe('judgeMonitor', () => {
  it('pure noise at the threshold never fires: 1,000 seeded sequences of 300 scores, each judged after every score', () => {
    const random = seeded(7);
    let fired = 0;
    for (let s = 0; s < 1000; s++) {
      // Scores 1-5, uniform: mean 3, the threshold.
      const values = Array.from({ length: 300 }, () => 1 + Math.floor(random() * 5));
      if (replay(values, 100).length > 0) fired++;
    }
    expect(fired).toBe(0);
  });

  it('a real drop fires once and resolves once when it is over', () => {
    const values = [...Array(60).fill(5), ...Array(60).fill(1.5), ...Array(80).fill(5)];
    expect(replay(values, 40)).toEqual(['firing', 'ok']);
  });

  it('below min_samples nothing changes, however bad', () => {
    const j = judgeMonitor('ok', { values: Array(29).fill(1), range: [1, 5] }, RULE);
    expect(j).toMatchObject({ state: 'ok', insufficient: true, n: 29, value: 1 });
  });

  it('rises are the mirror image (direction above), and an unbounded metric uses its spread', () => {
    const rule = { direction: 'above' as const, threshold: 100, minSamples: 10, confidence: 0.95 };
    const slow = judgeMonitor('ok', { values: Array.from({ length: 50 }, (_, i) => 200 + (i % 5)), range: null }, rule);
    expect(slow.state).toBe('firing');
    expect(slow.bound!).toBeGreaterThan(100);
    const fine = judgeMonitor('firing', { values: Array.from({ length: 50 }, (_, i) => 50 + (i % 5)), range: null }, rule);
    expect(fine.state).toBe('ok');
  });

  it('the radius shrinks with the samples and grows with the confidence', () => {
    expect(confidenceRadius(100, 2, 0.95)).toBeLessThan(confidenceRadius(40, 2, 0.95));
    expect(confidenceRadius(100, 2, 0.99)).toBeGreaterThan(confidenceRadius(100, 2, 0.95));
  });
});
