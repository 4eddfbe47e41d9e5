// Unit tests of the run-comparison statistics (server/evals/statistics.ts). Reference p-values come
// from scipy 1.17.1; each is preceded by the exact command that produced it.
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { describe, expect, it } from 'vitest';
import { quantileSorted } from 'simple-statistics';
import {
  bootstrapMeanCi,
  comparePaired,
  comparePairedSeries,
  DEFAULT_SEED,
  PAIRED_TEST_NAME,
  passRateDiff,
  type PairedScores,
} from '../../server/evals/statistics.js';

function pairsOf(a: readonly number[], b: readonly number[]): PairedScores[] {
  expect(a.length).toBe(b.length);
  return a.map((score, i) => ({ caseId: `case-${String(i).padStart(3, '0')}`, a: score, b: b[i] }));
}

/** Pairs whose differences a - b are exactly `diffs`. */
function pairsWithDiffs(diffs: readonly number[]): PairedScores[] {
  return pairsOf(
    diffs.map((d) => 100 + d),
    diffs.map(() => 100),
  );
}

// Seeded 1-5 scores for the large-sample checks, so the data is fixed without a 1000-element literal.
function seededScores(n: number, seed: number): { a: number[]; b: number[] } {
  const rng = xoroshiro128plus(seed);
  const b = Array.from({ length: n }, () => uniformInt(rng, 1, 5));
  const a = b.map((score) => Math.min(5, Math.max(1, score + uniformInt(rng, -1, 2))));
  return { a, b };
}

function sampleSd(xs: readonly number[]): number {
  const m = xs.reduce((s, x) => s + x, 0) / xs.length;
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
}

describe('comparePaired: Wilcoxon p-value against scipy', () => {
  it('Cureton (1967) plant heights, no ties or zeros: exact distribution', () => {
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75], zero_method='pratt', method='exact'))"
    // -> statistic=24.0, pvalue=0.041259765625 (the stdlib README example)
    const result = comparePaired(pairsWithDiffs([6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75]));
    expect(result.p_value).toBeCloseTo(0.041259765625, 12);
    expect(result.p_value_method).toBe('exact');
    expect(result.test).toBe(PAIRED_TEST_NAME);
  });

  it('Hollander & Wolfe (1973) paired visits, given as two samples', () => {
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30], [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29], zero_method='pratt', method='exact'))"
    // -> statistic=5.0, pvalue=0.0390625
    const result = comparePaired(
      pairsOf(
        [1.83, 0.5, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.3],
        [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29],
      ),
    );
    expect(result.p_value).toBeCloseTo(0.0390625, 12);
    expect(result.p_value_method).toBe('exact');
  });

  it('clamps the exact two-sided p-value to 1 when W+ sits at its null mean', () => {
    // stdlib itself returns 1.25 here.
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([1, 2, -3], zero_method='pratt', method='exact'))"
    // -> statistic=3.0, pvalue=1.0
    const result = comparePaired(pairsWithDiffs([1, 2, -3]));
    expect(result.p_value).toBe(1);
    expect(result.p_value_method).toBe('exact');
  });

  it('zero differences are ranked (Pratt) and force the normal approximation', () => {
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([0, 2, 3, -1, -4, 0, 0, 8, 9], zero_method='pratt', correction=True, method='asymptotic'))"
    // -> statistic=11.0, pvalue=0.331084984475984 (the stdlib README Pratt example)
    const result = comparePaired(pairsWithDiffs([0, 2, 3, -1, -4, 0, 0, 8, 9]));
    expect(result.p_value).toBeCloseTo(0.331084984475984, 10);
    expect(result.p_value_method).toBe('normal_approx');
  });

  it('1-5 judge scores with many ties and zeros (n = 20)', () => {
    const a = [4, 5, 3, 4, 4, 2, 5, 3, 4, 5, 3, 4, 2, 4, 5, 3, 4, 4, 5, 3];
    const b = [3, 5, 3, 2, 4, 3, 4, 3, 3, 4, 3, 2, 2, 5, 4, 3, 3, 4, 4, 2];
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([4, 5, 3, 4, 4, 2, 5, 3, 4, 5, 3, 4, 2, 4, 5, 3, 4, 4, 5, 3], [3, 5, 3, 2, 4, 3, 4, 3, 3, 4, 3, 2, 2, 5, 4, 3, 3, 4, 4, 2], zero_method='pratt', correction=True, method='asymptotic'))"
    // -> statistic=27.0, pvalue=0.01920903474577439
    // (for contrast: zero_method='wilcox' gives 0.02090017699463495, correction=False gives 0.01821957130112533)
    const result = comparePaired(pairsOf(a, b));
    expect(result.p_value).toBeCloseTo(0.01920903474577439, 10);
    expect(result.p_value_method).toBe('normal_approx');
    expect([result.wins, result.losses, result.ties]).toEqual([10, 2, 8]);
  });

  it('1-5 judge scores, n = 60', () => {
    const a = [
      3, 3, 4, 1, 1, 5, 1, 4, 5, 1, 5, 2, 2, 1, 4, 5, 1, 2, 2, 4, 3, 2, 5, 1, 2, 5, 1, 5, 4, 5,
      1, 3, 2, 5, 2, 4, 4, 3, 5, 2, 5, 2, 4, 2, 1, 5, 5, 1, 2, 2, 5, 1, 5, 2, 5, 2, 4, 5, 4, 4,
    ];
    const b = [
      3, 2, 4, 1, 1, 5, 1, 3, 5, 1, 5, 2, 1, 1, 4, 4, 1, 2, 1, 5, 4, 1, 5, 1, 2, 5, 1, 5, 5, 4,
      1, 2, 1, 5, 2, 3, 4, 2, 5, 1, 5, 3, 5, 2, 1, 5, 5, 2, 3, 1, 5, 1, 5, 1, 5, 2, 4, 5, 4, 3,
    ];
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([3, 3, 4, 1, 1, 5, 1, 4, 5, 1, 5, 2, 2, 1, 4, 5, 1, 2, 2, 4, 3, 2, 5, 1, 2, 5, 1, 5, 4, 5, 1, 3, 2, 5, 2, 4, 4, 3, 5, 2, 5, 2, 4, 2, 1, 5, 5, 1, 2, 2, 5, 1, 5, 2, 5, 2, 4, 5, 4, 4], [3, 2, 4, 1, 1, 5, 1, 3, 5, 1, 5, 2, 1, 1, 4, 4, 1, 2, 1, 5, 4, 1, 5, 1, 2, 5, 1, 5, 5, 4, 1, 2, 1, 5, 2, 3, 4, 2, 5, 1, 5, 3, 5, 2, 1, 5, 5, 2, 3, 1, 5, 1, 5, 1, 5, 2, 4, 5, 4, 3], zero_method='pratt', correction=True, method='asymptotic'))"
    // -> statistic=346.5, pvalue=0.08888692217416395
    const result = comparePaired(pairsOf(a, b));
    expect(result.p_value).toBeCloseTo(0.08888692217416395, 10);
    expect(result.p_value_method).toBe('normal_approx');
    expect([result.n_shared, result.wins, result.losses, result.ties]).toEqual([60, 15, 7, 38]);
  });

  it('uses the exact distribution up to n = 50 and the normal approximation above, even without ties', () => {
    const signedRanks = (n: number) => Array.from({ length: n }, (_, i) => (i + 1) * (i % 3 === 0 ? -1 : 1));
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([(i+1)*(1 if i%3 else -1) for i in range(50)], zero_method='pratt', method='exact'))"
    // -> statistic=425.0, pvalue=0.03996834652842374 (method='asymptotic' would give 0.04070768613514751)
    const at50 = comparePaired(pairsWithDiffs(signedRanks(50)));
    expect(at50.p_value).toBeCloseTo(0.03996834652842374, 10);
    expect(at50.p_value_method).toBe('exact');
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([(i+1)*(1 if i%3 else -1) for i in range(60)], zero_method='pratt', correction=True, method='asymptotic'))"
    // -> statistic=590.0, pvalue=0.016901653275967533 (method='exact' would give 0.01613712308755133)
    const at60 = comparePaired(pairsWithDiffs(signedRanks(60)));
    expect(at60.p_value).toBeCloseTo(0.016901653275967533, 10);
    expect(at60.p_value_method).toBe('normal_approx');
  });
});

describe('comparePaired: counts, mean and edge cases', () => {
  it('hand-checked small example', () => {
    const pairs: PairedScores[] = [
      { caseId: 'c1', a: 4, b: 3 }, // +1
      { caseId: 'c2', a: 2, b: 5 }, // -3
      { caseId: 'c3', a: 3, b: 3 }, // 0
      { caseId: 'c4', a: 5, b: 4 }, // +1
      { caseId: 'c5', a: 1, b: 1 }, // 0
    ];
    const result = comparePaired(pairs);
    expect(result).toMatchObject({ n_shared: 5, wins: 2, losses: 1, ties: 2, test: PAIRED_TEST_NAME });
    expect(result.mean_diff).toBeCloseTo(-0.2, 12);
    // python3 -c "from scipy.stats import wilcoxon; print(wilcoxon([4, 2, 3, 5, 1], [3, 5, 3, 4, 1], zero_method='pratt', correction=True, method='asymptotic'))"
    // -> statistic=5.0, pvalue=0.8869743120400594
    expect(result.p_value).toBeCloseTo(0.8869743120400594, 10);
    expect(result.ci95).not.toBeNull();
    const [lo, hi] = result.ci95!;
    expect(lo).toBeLessThanOrEqual(-0.2);
    expect(hi).toBeGreaterThanOrEqual(-0.2);
    expect(lo).toBeGreaterThanOrEqual(-3);
    expect(hi).toBeLessThanOrEqual(1);
  });

  it('empty input gives nulls and zero counts', () => {
    expect(comparePaired([])).toEqual({
      n_shared: 0,
      mean_diff: null,
      ci95: null,
      p_value: null,
      test: PAIRED_TEST_NAME,
      p_value_method: null,
      wins: 0,
      losses: 0,
      ties: 0,
    });
  });

  it('a single pair has a mean but no interval and no test', () => {
    expect(comparePaired([{ caseId: 'only', a: 2, b: 5 }])).toMatchObject({
      n_shared: 1,
      mean_diff: -3,
      ci95: null,
      p_value: null,
      p_value_method: null,
      losses: 1,
    });
  });

  it('all differences zero: p_value 1, degenerate interval at 0, no negative zero', () => {
    const result = comparePaired(pairsOf([3, 4, 5, 1, 2], [3, 4, 5, 1, 2]));
    expect(result).toMatchObject({ n_shared: 5, ties: 5, wins: 0, losses: 0, p_value: 1, p_value_method: null });
    expect(Object.is(result.mean_diff, 0)).toBe(true);
    expect(result.ci95).toEqual([0, 0]);
    expect(Object.is(result.ci95![0], 0)).toBe(true);
  });

  it('does not depend on the order of the pairs', () => {
    const { a, b } = seededScores(40, 3);
    const pairs = pairsOf(a, b);
    const shuffled = [...pairs].reverse();
    shuffled.push(shuffled.shift()!);
    expect(comparePaired(shuffled)).toEqual(comparePaired(pairs));
  });

  it('swapping the runs mirrors the result', () => {
    const { a, b } = seededScores(40, 4);
    const forward = comparePaired(pairsOf(a, b));
    const backward = comparePaired(pairsOf(b, a));
    expect(backward.p_value).toBeCloseTo(forward.p_value!, 12);
    expect(backward.mean_diff).toBeCloseTo(-forward.mean_diff!, 12);
    expect([backward.wins, backward.losses, backward.ties]).toEqual([forward.losses, forward.wins, forward.ties]);
    expect(backward.ci95![0]).toBeCloseTo(-forward.ci95![1], 12);
    expect(backward.ci95![1]).toBeCloseTo(-forward.ci95![0], 12);
  });

  it('rejects duplicate case ids and non-finite scores', () => {
    expect(() =>
      comparePaired([
        { caseId: 'x', a: 1, b: 2 },
        { caseId: 'x', a: 3, b: 2 },
      ]),
    ).toThrow(/duplicate caseId/);
    expect(() => comparePaired([{ caseId: 'x', a: Number.NaN, b: 2 }])).toThrow(/non-finite/);
  });
});

describe('bootstrapMeanCi', () => {
  const { a, b } = seededScores(40, 11);
  const diffs = a.map((score, i) => score - b[i]);
  const meanDiff = diffs.reduce((s, d) => s + d, 0) / diffs.length;

  it('is deterministic for a fixed seed, and the default seed is the documented one', () => {
    const first = bootstrapMeanCi(diffs, { seed: 7 });
    expect(bootstrapMeanCi(diffs, { seed: 7 })).toEqual(first);
    expect(bootstrapMeanCi(diffs)).toEqual(bootstrapMeanCi(diffs, { seed: DEFAULT_SEED }));
  });

  it('a different seed gives a slightly different interval', () => {
    // Integer differences make the resampled means multiples of 1/n, so two seeds often land on the
    // same atoms; spread the values so a change of seed has to show.
    const spread = diffs.map((d, i) => d + (i % 7) / 10);
    const one = bootstrapMeanCi(spread, { seed: 1 })!;
    const two = bootstrapMeanCi(spread, { seed: 2 })!;
    expect(one).not.toEqual(two);
    expect(Math.abs(one[0] - two[0])).toBeLessThan(0.05);
    expect(Math.abs(one[1] - two[1])).toBeLessThan(0.05);
  });

  it('contains the mean difference and is ordered', () => {
    const [lo, hi] = bootstrapMeanCi(diffs)!;
    expect(lo).toBeLessThan(meanDiff);
    expect(hi).toBeGreaterThan(meanDiff);
  });

  it('a lower level gives a nested, narrower interval', () => {
    const [lo95, hi95] = bootstrapMeanCi(diffs)!;
    const [lo50, hi50] = bootstrapMeanCi(diffs, { level: 0.5 })!;
    expect(lo50).toBeGreaterThan(lo95);
    expect(hi50).toBeLessThan(hi95);
  });

  it('constant differences give a degenerate interval', () => {
    expect(bootstrapMeanCi([0.1, 0.1, 0.1])).toEqual([0.1, 0.1]);
    expect(bootstrapMeanCi([-2, -2, -2, -2])).toEqual([-2, -2]);
  });

  it('agrees with the normal-theory interval for large n', () => {
    const large = seededScores(1000, 99);
    const d = large.a.map((score, i) => score - large.b[i]);
    const m = d.reduce((s, x) => s + x, 0) / d.length;
    const halfWidth = (1.96 * sampleSd(d)) / Math.sqrt(d.length);
    const [lo, hi] = bootstrapMeanCi(d)!;
    // Monte Carlo error of a 2.5% quantile from 10,000 resamples is ~1.5% of the half-width;
    // a wrong level (90% -> 1.645) or an sd instead of a standard error would be far outside 10%.
    expect(Math.abs(lo - (m - halfWidth))).toBeLessThan(0.1 * halfWidth);
    expect(Math.abs(hi - (m + halfWidth))).toBeLessThan(0.1 * halfWidth);
  });

  it('needs at least two values', () => {
    expect(bootstrapMeanCi([])).toBeNull();
    expect(bootstrapMeanCi([3])).toBeNull();
  });

  it('rejects invalid options and values', () => {
    expect(() => bootstrapMeanCi(diffs, { resamples: 0 })).toThrow(RangeError);
    expect(() => bootstrapMeanCi(diffs, { resamples: 2.5 })).toThrow(RangeError);
    expect(() => bootstrapMeanCi(diffs, { seed: 0.5 })).toThrow(RangeError);
    expect(() => bootstrapMeanCi(diffs, { level: 1 })).toThrow(RangeError);
    expect(() => bootstrapMeanCi([1, Number.POSITIVE_INFINITY])).toThrow(RangeError);
  });
});

describe('the bootstrap against its reference (one series at a time, pure-rand\'s generator object)', () => {
  /** The interval as it was first computed: pure-rand's next() per draw, one series per loop. */
  function referenceCi(diffs: readonly number[], seed = DEFAULT_SEED, resamples = 10_000): [number, number] | null {
    const n = diffs.length;
    if (n < 2) return null;
    if (diffs.every((d) => d === diffs[0])) return [diffs[0] === 0 ? 0 : diffs[0], diffs[0] === 0 ? 0 : diffs[0]];
    const rng = xoroshiro128plus(seed);
    const means = new Float64Array(resamples);
    for (let r = 0; r < resamples; r += 1) {
      let sum = 0;
      for (let i = 0; i < n; i += 1) sum += diffs[Math.floor(((rng.next() >>> 0) * n) / 4294967296)];
      means[r] = sum / n;
    }
    const sorted = Array.from(means.sort());
    const fix = (x: number) => (x === 0 ? 0 : x);
    return [fix(quantileSorted(sorted, 0.025)), fix(quantileSorted(sorted, 0.975))];
  }

  it('gives bit for bit the reference interval, for several seeds and sizes', () => {
    for (const [n, seed] of [[2, 42], [3, 1], [40, 7], [997, 42], [1500, -5], [64, 2 ** 40 + 3]]) {
      const { a, b } = seededScores(n, seed % 1000);
      const diffs = a.map((score, i) => score - b[i] + (i % 3) / 7);
      expect(bootstrapMeanCi(diffs, { seed }), `n=${n} seed=${seed}`).toEqual(referenceCi(diffs, seed));
    }
  });

  it('series compared together (shared draws for equal lengths) give each one\'s own comparison', () => {
    const sets = [seededScores(300, 1), seededScores(300, 2), seededScores(299, 3), seededScores(300, 4), seededScores(1, 5), seededScores(300, 6)];
    const series = sets.map(({ a, b }) => pairsOf(a, b));
    series.push(pairsOf([3, 3, 3], [1, 1, 1])); // constant differences: [2, 2], no resampling
    const together = comparePairedSeries(series);
    expect(together).toEqual(series.map((pairs) => comparePaired(pairs)));
    for (const [k, pairs] of series.entries()) {
      const diffs = [...pairs].sort((x, y) => (x.caseId < y.caseId ? -1 : 1)).map((p) => p.a - p.b);
      expect(together[k].ci95, `series ${k}`).toEqual(referenceCi(diffs));
    }
    // The first faulty series (in order) is the one reported, as when compared one by one.
    expect(() => comparePairedSeries([series[0], [{ caseId: 'x', a: Number.NaN, b: 1 }], [{ caseId: 'y', a: 1, b: 1 }, { caseId: 'y', a: 1, b: 1 }]])).toThrow(/non-finite/);
  });
});

describe('passRateDiff', () => {
  it("is a's pass rate minus b's over paired cases", () => {
    expect(passRateDiff([true, true, false, false], [true, false, false, false])).toBe(0.25);
    expect(passRateDiff([false, false], [true, true])).toBe(-1);
    expect(passRateDiff([true, false, true], [false, true, true])).toBe(0);
    expect(Object.is(passRateDiff([true, false, true], [false, true, true]), 0)).toBe(true);
  });

  it('is null without cases and refuses unpaired arrays', () => {
    expect(passRateDiff([], [])).toBeNull();
    expect(() => passRateDiff([true], [true, false])).toThrow(RangeError);
  });
});
