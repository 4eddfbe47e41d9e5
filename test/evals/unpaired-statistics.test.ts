// The unpaired comparison's statistics: Mann-Whitney U p-values as scipy computes them
// (scipy.stats.mannwhitneyu(a, b, alternative='two-sided', method='asymptotic', use_continuity=True),
// scipy 1.17.1), the mean difference, and a bootstrap interval that is deterministic and holds it.
import { describe, expect, it } from 'vitest';
import { compareUnpairedSeries } from '../../server/evals/unpaired-statistics.js';

const SCIPY: { a: number[]; b: number[]; p: number }[] = [
  { a: [5, 4, 5, 3, 5, 4, 4, 5], b: [3, 4, 3, 2, 4, 3, 5, 3, 3], p: 0.026316955208490166 },
  { a: [1, 2, 3, 4, 5], b: [1, 2, 3, 4, 5], p: 1.0 },
  { a: [5, 5, 5, 4, 5, 5, 5, 4, 5, 5, 5, 5], b: [4, 4, 5, 3, 4, 4, 4, 5, 4, 3], p: 0.003396188166391593 },
  { a: [2.5, 3.1, 4.8, 1.2, 3.3], b: [2.0, 2.2, 2.9, 3.0, 1.0, 0.5], p: 0.12069080052744556 },
];

describe('unpaired comparison', () => {
  it('gives the Mann-Whitney U p-values scipy gives, ties and continuity correction included', () => {
    const results = compareUnpairedSeries(SCIPY.map(({ a, b }) => ({ a, b })));
    results.forEach((r, i) => {
      expect(r.p_value).toBeCloseTo(SCIPY[i]!.p, 12);
      expect(r).toMatchObject({ n_a: SCIPY[i]!.a.length, n_b: SCIPY[i]!.b.length, test: 'mann_whitney_u' });
    });
  });

  it('reports the difference of the means inside a deterministic bootstrap interval', () => {
    const { a, b } = SCIPY[0]!;
    const [first] = compareUnpairedSeries([{ a, b }]);
    const [again] = compareUnpairedSeries([{ a: [...a], b: [...b] }]);
    expect(first!.mean_diff).toBeCloseTo(4.375 - 30 / 9, 12);
    expect(first!.ci95![0]).toBeLessThan(first!.mean_diff!);
    expect(first!.ci95![1]).toBeGreaterThan(first!.mean_diff!);
    expect(first!.ci95![0]).toBeGreaterThan(0);
    expect(again).toEqual(first);
  });

  it('has no test or interval under two scores a side, and p = 1 when every score is the same', () => {
    expect(compareUnpairedSeries([{ a: [5], b: [3, 4] }])[0]).toMatchObject({ mean_diff: 1.5, ci95: null, p_value: null, p_value_method: null });
    expect(compareUnpairedSeries([{ a: [], b: [3, 4] }])[0]).toMatchObject({ mean_diff: null, ci95: null, p_value: null });
    expect(compareUnpairedSeries([{ a: [4, 4, 4], b: [4, 4] }])[0]).toMatchObject({ mean_diff: 0, ci95: [0, 0], p_value: 1 });
  });
});
