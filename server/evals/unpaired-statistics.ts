/*
 * Statistics for comparing two runs that do not share their cases: a live window with a suite run,
 * or two windows of different days. Each run's scores are a sample of its own; nothing is paired.
 * Pure: no I/O, no clock, no global RNG (the same numbers as scipy, checked in
 * test/evals/unpaired-statistics.test.ts).
 *
 * - Significance test: two-sided Mann-Whitney U (Wilcoxon rank-sum), normal approximation with the
 *   tie-corrected variance and a continuity correction of one half towards the null mean, as
 *   scipy.stats.mannwhitneyu(method='asymptotic', use_continuity=True) computes it. With 1-5 judge
 *   scores nearly every value ties, so an exact distribution would not apply anyway. p_value is null
 *   when either run has fewer than 2 scores, and 1 when every score of both runs is the same value.
 * - Confidence interval: percentile bootstrap of mean(a) - mean(b), each run resampled on its own
 *   (10,000 resamples; xoroshiro128+ seeded 42 for this run and 43 for the other, the same draws
 *   as the paired bootstrap), so the same scores always give the same interval. Null when either
 *   run has fewer than 2 scores.
 */
import { quantileSorted } from 'simple-statistics';
import { averageRanks, DEFAULT_RESAMPLES, DEFAULT_SEED, erfc, noNegativeZero, resampleMeans } from './statistics.js';

/** Name of the significance test reported in {@link UnpairedComparison.test}. */
export const UNPAIRED_TEST_NAME = 'mann_whitney_u';

export interface UnpairedScores {
  /** This run's scores. */
  a: readonly number[];
  /** The other run's scores. */
  b: readonly number[];
}

export interface UnpairedComparison {
  n_a: number;
  n_b: number;
  /** mean(a) - mean(b); null when either run has no score. */
  mean_diff: number | null;
  ci95: [number, number] | null;
  p_value: number | null;
  test: typeof UNPAIRED_TEST_NAME;
  p_value_method: 'normal_approx' | null;
}

const meanOf = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** The comparison of each series (the overall scores, then each judge dimension's). */
export function compareUnpairedSeries(series: readonly UnpairedScores[], options: { resamples?: number; seed?: number } = {}): UnpairedComparison[] {
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  const seed = options.seed ?? DEFAULT_SEED;
  return series.map(({ a, b }) => {
    if (![...a, ...b].every(Number.isFinite)) throw new RangeError('scores must be finite numbers');
    const test = rankSumTest(a, b);
    return {
      n_a: a.length,
      n_b: b.length,
      mean_diff: a.length && b.length ? noNegativeZero(meanOf(a) - meanOf(b)) : null,
      ci95: a.length >= 2 && b.length >= 2 ? differenceInterval(a, b, resamples, seed) : null,
      p_value: test.pValue,
      test: UNPAIRED_TEST_NAME,
      p_value_method: test.method,
    };
  });
}

/** Percentile bootstrap 95% interval of mean(a) - mean(b), each sample resampled on its own. */
function differenceInterval(a: readonly number[], b: readonly number[], resamples: number, seed: number): [number, number] {
  const [meansA] = resampleMeans([a], a.length, resamples, seed);
  const [meansB] = resampleMeans([b], b.length, resamples, seed + 1);
  const diffs = new Float64Array(resamples);
  for (let r = 0; r < resamples; r += 1) diffs[r] = meansA[r] - meansB[r];
  const sorted = Array.from(diffs.sort());
  return [noNegativeZero(quantileSorted(sorted, 0.025)), noNegativeZero(quantileSorted(sorted, 0.975))];
}

function rankSumTest(a: readonly number[], b: readonly number[]): { pValue: number | null; method: 'normal_approx' | null } {
  const na = a.length;
  const nb = b.length;
  if (na < 2 || nb < 2) return { pValue: null, method: null };
  const all = [...a, ...b];
  const n = na + nb;
  const ranks = averageRanks(all);
  let rankSumA = 0;
  for (let i = 0; i < na; i += 1) rankSumA += ranks[i];
  const u = rankSumA - (na * (na + 1)) / 2;
  const mean = (na * nb) / 2;
  // Tie correction: each group of t equal values takes t^3 - t from the variance's (n + 1) term.
  const tieSizes = new Map<number, number>();
  for (const rank of ranks) tieSizes.set(rank, (tieSizes.get(rank) ?? 0) + 1);
  let ties = 0;
  for (const t of tieSizes.values()) ties += t * t * t - t;
  const variance = ((na * nb) / 12) * (n + 1 - ties / (n * (n - 1)));
  if (!(variance > 0)) return { pValue: 1, method: null };
  const z = Math.max(0, Math.abs(u - mean) - 0.5) / Math.sqrt(variance);
  const pValue = erfc(z / Math.SQRT2);
  return { pValue: noNegativeZero(Math.min(1, Math.max(0, pValue))), method: 'normal_approx' };
}
