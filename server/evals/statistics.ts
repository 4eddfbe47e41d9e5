/*
 * Statistics for comparing two evaluation runs case by case. Pure: no I/O, no clock, no global RNG.
 *
 * Decisions a reviewer should know about:
 *
 * - Significance test: two-sided Wilcoxon signed-rank on the paired differences a - b, computed
 *   here the way @stdlib/stats-wilcoxon (lib/main.js) computes it, without the 25 MB of @stdlib
 *   packages that library brings to an install; test/evals/statistics.test.ts checks both paths
 *   against scipy to 1e-10 and better.
 * - Zero differences: Pratt (1959). Zeros are ranked together with the other |a - b| (taking the
 *   lowest ranks), then excluded from the rank sums, and the null mean/variance are adjusted
 *   for them. With 1-5 judge scores most cases often tie; scipy's default 'wilcox' discards them,
 *   so the test is effectively run on the handful of changed cases and its p-value ignores how many
 *   cases did not move (Pratt showed dropping zeros can even rank a uniformly better sample as less
 *   significant). 'zsplit' also keeps zeros but is a less established convention; Pratt is the
 *   textbook treatment and stdlib and scipy implement it identically (zeros left out of the tie
 *   correction too), so our numbers can be checked against scipy.
 * - Exact vs normal approximation, as stdlib decides, and `p_value_method` reports which: the exact
 *   signed-rank distribution only when n <= 50 and there are no zero differences and no tied
 *   |differences|; otherwise the normal approximation with tie-corrected variance. With integer
 *   scores that means almost always the approximation. (scipy's method='auto' would run a
 *   permutation test for small tied samples instead, so references use method='asymptotic'.)
 * - Continuity correction: on (0.5 towards the null mean), as in R's wilcox.test and stdlib's
 *   default; it is conservative, which suits a statistic that moves in half-rank steps. scipy's
 *   default is off, so the reference values in the tests pass correction=True.
 * - p_value is null when n < 2 (one pair carries no evidence), and 1 when every difference is
 *   zero (no evidence of a difference). Exact two-sided p-values are clamped to [0, 1]: twice the
 *   tail is more than 1 when W+ equals its null mean (scipy clips the same way).
 * - Confidence interval: percentile bootstrap of the mean difference, 10,000 resamples, quantiles
 *   by linear interpolation (R type 7), xoroshiro128+ seeded with DEFAULT_SEED (42), so the same
 *   pairs always give the same interval. comparePaired sorts pairs by caseId first so database row
 *   order cannot change the interval. Percentile (not BCa/studentised) because it is simple and
 *   adequate for a mean of bounded scores; it under-covers a little for small n. The CI is null
 *   when n < 2 (one pair resamples only to itself), and [d, d] when every difference equals d.
 * - Nothing is rounded; -0 is turned into 0 so equality checks and snapshots do not trip over it.
 */
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { mean, quantileSorted } from 'simple-statistics';

/** Seed used by the bootstrap when none is given. */
export const DEFAULT_SEED = 42;
/** Bootstrap resamples used when none are given. */
export const DEFAULT_RESAMPLES = 10_000;
/** Name of the significance test reported in {@link PairedComparison.test}. */
export const PAIRED_TEST_NAME = 'wilcoxon_signed_rank_pratt';

export interface PairedScores {
  caseId: string;
  /** This run's score for the case. */
  a: number;
  /** The other run's score for the same case. */
  b: number;
}

/** How the Wilcoxon p-value was obtained; null when no test was run. */
export type PValueMethod = 'exact' | 'normal_approx';

export interface PairedComparison {
  n_shared: number;
  /** Mean of (a - b); null when there are no pairs. */
  mean_diff: number | null;
  /** Percentile bootstrap 95% CI of the mean difference; null when n_shared < 2. */
  ci95: [number, number] | null;
  /** Two-sided Wilcoxon signed-rank p-value (Pratt zeros, continuity correction); null when n_shared < 2. */
  p_value: number | null;
  test: typeof PAIRED_TEST_NAME;
  /** null when p_value is null or was fixed at 1 because every difference is zero. */
  p_value_method: PValueMethod | null;
  /** Cases with a > b. */
  wins: number;
  /** Cases with a < b. */
  losses: number;
  /** Cases with a == b. */
  ties: number;
}

export interface BootstrapOptions {
  /** Number of bootstrap resamples (positive integer). Default 10,000. */
  resamples?: number;
  /** PRNG seed (integer; only its low 32 bits matter). Default 42. */
  seed?: number;
  /** Confidence level, strictly between 0 and 1. Default 0.95. */
  level?: number;
}

/**
 * Compares two runs over the cases both of them scored.
 *
 * Pairs are sorted by caseId before anything else, so the result does not depend on input order.
 *
 * @param pairs - one entry per shared case; caseIds must be unique and scores finite.
 * @param options.resamples - bootstrap resamples for ci95, default 10,000.
 * @param options.seed - bootstrap seed, default 42.
 * @throws RangeError on a duplicate caseId, a non-finite score or invalid options.
 */
export function comparePaired(
  pairs: readonly PairedScores[],
  options: { resamples?: number; seed?: number } = {},
): PairedComparison {
  return comparePairedSeries([pairs], options)[0];
}

/**
 * comparePaired of each series (the overall scores and each judge dimension of one comparison),
 * with exactly its results: the bootstraps of series with the same number of pairs share their
 * resampled indices (the indices depend only on the seed and n), which halves the work of a
 * comparison (the random draws are most of it).
 *
 * @throws RangeError as comparePaired, for the first series (in order) that has the fault.
 */
export function comparePairedSeries(
  series: readonly (readonly PairedScores[])[],
  options: { resamples?: number; seed?: number } = {},
): PairedComparison[] {
  const prepared = series.map((pairs) => {
    const seen = new Set<string>();
    for (const pair of pairs) {
      if (seen.has(pair.caseId)) {
        // Counting a case twice would silently inflate n and shrink both the CI and the p-value.
        throw new RangeError(`duplicate caseId in paired scores: ${pair.caseId}`);
      }
      seen.add(pair.caseId);
      if (!Number.isFinite(pair.a) || !Number.isFinite(pair.b)) {
        throw new RangeError(`non-finite score for case ${pair.caseId}`);
      }
    }
    const ordered = [...pairs].sort((x, y) => (x.caseId < y.caseId ? -1 : x.caseId > y.caseId ? 1 : 0));
    return ordered.map((pair) => pair.a - pair.b);
  });

  const cis = bootstrapMeanCis(prepared, { resamples: options.resamples, seed: options.seed, level: 0.95 });
  return prepared.map((diffs, k): PairedComparison => {
    let wins = 0;
    let losses = 0;
    let ties = 0;
    for (const d of diffs) {
      // For finite doubles a - b === 0 exactly when a === b, so the sign of the difference decides.
      if (d > 0) wins += 1;
      else if (d < 0) losses += 1;
      else ties += 1;
    }
    const { pValue, method } = signedRankTest(diffs);
    return {
      n_shared: diffs.length,
      mean_diff: diffs.length === 0 ? null : noNegativeZero(mean(diffs)),
      ci95: cis[k],
      p_value: pValue,
      test: PAIRED_TEST_NAME,
      p_value_method: method,
      wins,
      losses,
      ties,
    };
  });
}

/**
 * Percentile bootstrap confidence interval of the mean of `diffs`.
 *
 * Deterministic for a given input, seed and resample count.
 *
 * @param diffs - finite values, in a fixed order (resampling draws by index).
 * @param options.resamples - number of resamples, default 10,000.
 * @param options.seed - xoroshiro128+ seed, default 42.
 * @param options.level - confidence level, default 0.95.
 * @returns [lower, upper], [d, d] when every value equals d, or null with fewer than 2 values.
 * @throws RangeError on non-finite values or invalid options.
 */
export function bootstrapMeanCi(
  diffs: readonly number[],
  options: BootstrapOptions = {},
): [number, number] | null {
  return bootstrapMeanCis([diffs], options)[0];
}

/**
 * bootstrapMeanCi of each series, with exactly its results. Series of the same length are
 * resampled together: one draw of an index serves all of them, and each series still sums its
 * values in the same order as alone, so every mean is the same double.
 */
function bootstrapMeanCis(series: readonly (readonly number[])[], options: BootstrapOptions): ([number, number] | null)[] {
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  const seed = options.seed ?? DEFAULT_SEED;
  const level = options.level ?? 0.95;
  if (!Number.isSafeInteger(resamples) || resamples < 1) {
    throw new RangeError(`resamples must be a positive integer, got ${resamples}`);
  }
  if (!Number.isSafeInteger(seed)) {
    throw new RangeError(`seed must be an integer, got ${seed}`);
  }
  if (!(level > 0 && level < 1)) {
    throw new RangeError(`level must be strictly between 0 and 1, got ${level}`);
  }
  const results: ([number, number] | null)[] = [];
  /** The series left to resample, by length. */
  const byLength = new Map<number, number[]>();
  for (const [k, diffs] of series.entries()) {
    if (!diffs.every(Number.isFinite)) {
      throw new RangeError('bootstrap values must be finite numbers');
    }
    results.push(null);
    if (diffs.length < 2) continue;
    const first = diffs[0];
    // Summing n copies of d and dividing by n need not give back d exactly, so the constant case is answered directly.
    if (diffs.every((d) => d === first)) {
      const d = noNegativeZero(first);
      results[k] = [d, d];
      continue;
    }
    byLength.set(diffs.length, [...(byLength.get(diffs.length) ?? []), k]);
  }

  const tail = (1 - level) / 2;
  for (const [n, members] of byLength) {
    const means = resampleMeans(members.map((k) => series[k]), n, resamples, seed);
    for (const [j, k] of members.entries()) {
      // Float64Array#sort is numeric, unlike Array#sort's default string order.
      const sorted = Array.from(means[j].sort());
      results[k] = [noNegativeZero(quantileSorted(sorted, tail)), noNegativeZero(quantileSorted(sorted, 1 - tail))];
    }
  }
  return results;
}

/**
 * `resamples` bootstrap means of each of `series` (all of length `n`), drawing the same indices for
 * all of them.
 *
 * The draws are pure-rand's xoroshiro128+ (v8: its state is four signed 32-bit words and `next()`
 * answers the low word of the 64-bit sum): the generator is seeded by pure-rand and stepped here
 * in local variables, which the compiler keeps in registers, with the same sequence
 * (test/evals/statistics.test.ts checks it against pure-rand). An index is the 32-bit
 * draw scaled to [0, n) (a bias of at most n / 2^32, immaterial here): five times faster than
 * uniformInt's rejection sampling, which mattered at 10,000 resamples of thousands of cases.
 */
export function resampleMeans(series: readonly (readonly number[])[], n: number, resamples: number, seed: number): Float64Array[] {
  const width = series.length;
  // Row i holds the i-th value of every series: one index reads one cache line.
  const values = new Float64Array(n * width);
  for (let j = 0; j < width; j += 1) for (let i = 0; i < n; i += 1) values[i * width + j] = series[j][i];
  const means = series.map(() => new Float64Array(resamples));
  const sums = new Float64Array(width);
  let [s01, s00, s11, s10] = xoroshiro128plus(seed).getState() as [number, number, number, number];
  for (let r = 0; r < resamples; r += 1) {
    sums.fill(0);
    for (let i = 0; i < n; i += 1) {
      const out = (s00 + s10) | 0;
      const a0 = s10 ^ s00;
      const a1 = s11 ^ s01;
      const old00 = s00;
      const old01 = s01;
      s00 = (old00 << 24) ^ (old01 >>> 8) ^ a0 ^ (a0 << 16);
      s01 = (old01 << 24) ^ (old00 >>> 8) ^ a1 ^ ((a1 << 16) | (a0 >>> 16));
      s10 = (a1 << 5) ^ (a0 >>> 27);
      s11 = (a0 << 5) ^ (a1 >>> 27);
      const row = Math.floor(((out >>> 0) * n) / 4294967296) * width;
      for (let j = 0; j < width; j += 1) sums[j] += values[row + j];
    }
    for (let j = 0; j < width; j += 1) means[j][r] = sums[j] / n;
  }
  return means;
}

/**
 * Difference in pass rates over paired cases: passA[i] and passB[i] are the same case.
 *
 * @returns a's pass rate minus b's, in [-1, 1]; null when there are no cases.
 * @throws RangeError when the arrays differ in length (they would not be paired).
 */
export function passRateDiff(passA: readonly boolean[], passB: readonly boolean[]): number | null {
  if (passA.length !== passB.length) {
    throw new RangeError(`paired pass arrays differ in length: ${passA.length} vs ${passB.length}`);
  }
  const n = passA.length;
  if (n === 0) return null;
  let delta = 0;
  for (let i = 0; i < n; i += 1) {
    delta += Number(passA[i]) - Number(passB[i]);
  }
  // One division of an exact integer count, rather than subtracting two rounded rates.
  return noNegativeZero(delta / n);
}

function signedRankTest(diffs: readonly number[]): { pValue: number | null; method: PValueMethod | null } {
  const n = diffs.length;
  if (n < 2) return { pValue: null, method: null };
  if (diffs.every((d) => d === 0)) return { pValue: 1, method: null };

  // Pratt: every |d| is ranked, zeros included (they take the lowest ranks); W+ sums the ranks of
  // the positive differences.
  const ranks = averageRanks(diffs.map(Math.abs));
  let wPlus = 0;
  let zeros = 0;
  for (let i = 0; i < n; i += 1) {
    if (diffs[i] > 0) wPlus += ranks[i];
    else if (diffs[i] === 0) zeros += 1;
  }
  const hasTiedMagnitudes = new Set(ranks).size !== n;
  if (n <= 50 && zeros === 0 && !hasTiedMagnitudes) {
    return { pValue: noNegativeZero(Math.min(1, exactSignedRankPValue(wPlus, n))), method: 'exact' };
  }

  // Null mean and variance, less the zeros' share (Pratt), less the ties among the non-zero ranks.
  const mean = (n * (n + 1) - zeros * (zeros + 1)) / 4;
  let variance = n * (n + 1) * (2 * n + 1) - zeros * (zeros + 1) * (2 * zeros + 1);
  const tieSizes = new Map<number, number>();
  for (let i = 0; i < n; i += 1) if (diffs[i] !== 0) tieSizes.set(ranks[i], (tieSizes.get(ranks[i]) ?? 0) + 1);
  for (const t of tieSizes.values()) variance -= 0.5 * t * (t * t - 1);
  const sd = Math.sqrt(variance / 24);
  // Continuity correction: half a rank towards the null mean.
  const z = (wPlus - mean - 0.5 * Math.sign(wPlus - mean)) / sd;
  const pValue = erfc(Math.abs(z) / Math.SQRT2);
  if (!Number.isFinite(pValue)) return { pValue: null, method: null };
  return { pValue: noNegativeZero(Math.min(1, Math.max(0, pValue))), method: 'normal_approx' };
}

/** Ranks 1..n of `values`, tied values sharing the mean of their ranks. */
export function averageRanks(values: readonly number[]): number[] {
  const order = values.map((_, i) => i).sort((i, j) => values[i] - values[j]);
  const ranks = new Array<number>(values.length);
  for (let start = 0; start < order.length; ) {
    let end = start + 1;
    while (end < order.length && values[order[end]] === values[order[start]]) end += 1;
    const rank = (start + 1 + end) / 2;
    for (let k = start; k < end; k += 1) ranks[order[k]] = rank;
    start = end;
  }
  return ranks;
}

/**
 * Two-sided exact p-value of W+ = `w` among `n` untied, non-zero differences: twice the tail on
 * w's side of the null mean (more than 1 at the mean: the caller clamps). The null distribution
 * counts the subsets of the ranks 1..n by their sum; the counts stay below 2^50 for n <= 50, so
 * every sum is exact in a double.
 */
function exactSignedRankPValue(w: number, n: number): number {
  const max = (n * (n + 1)) / 2;
  const counts = new Float64Array(max + 1);
  counts[0] = 1;
  for (let rank = 1; rank <= n; rank += 1) {
    for (let sum = max; sum >= rank; sum -= 1) counts[sum] += counts[sum - rank];
  }
  let tail = 0;
  if (w > max / 2) for (let sum = w; sum <= max; sum += 1) tail += counts[sum];
  else for (let sum = 0; sum <= w; sum += 1) tail += counts[sum];
  return (2 * tail) / 2 ** n;
}

/**
 * The complementary error function to double precision, as the regularized upper incomplete gamma
 * function Q(1/2, x^2): its series below x^2 = 1.5, its continued fraction (modified Lentz) above
 * (Numerical Recipes, 6.2). The fraction keeps the relative precision of tiny p-values.
 */
export function erfc(x: number): number {
  if (x < 0) return 2 - erfc(-x);
  if (x === 0) return 1;
  const t = x * x;
  const LN_SQRT_PI = 0.5723649429247001; // ln Γ(1/2)
  const prefactor = Math.exp(-t + 0.5 * Math.log(t) - LN_SQRT_PI);
  if (t < 1.5) {
    let a = 0.5;
    let term = 1 / a;
    let sum = term;
    for (let i = 0; i < 200 && Math.abs(term) > Math.abs(sum) * 1e-17; i += 1) {
      a += 1;
      term *= t / a;
      sum += term;
    }
    return 1 - sum * prefactor;
  }
  const TINY = 1e-300;
  let b = t + 0.5;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 300; i += 1) {
    const an = -i * (i - 0.5);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return prefactor * h;
}

export function noNegativeZero(x: number): number {
  return x === 0 ? 0 : x;
}
