// The statistics of a run comparison (compare-runs.ts) as one computation over plain columns: the
// overall scores and each judge dimension's, of the cases both runs scored. It runs inline for a
// small comparison and on the shared worker-thread pool for a large one (10,000 bootstrap
// resamples per series: ~0.6 s of CPU for 5,000 shared cases on four dimensions, which used to
// hold the event loop); the same function either way, so the numbers are the same. An unpaired
// comparison (two runs without a shared case, unpaired-statistics.ts) goes the same way.
import { definePoolTask, runPoolTask } from '../common/worker-pool.js';
import { MAX_CASES_PER_DATASET } from './evals.schemas.js';
import { comparePairedSeries, passRateDiff, type PairedComparison, type PairedScores } from './statistics.js';
import { compareUnpairedSeries, type UnpairedComparison, type UnpairedScores } from './unpaired-statistics.js';

/** One series of scores over the shared cases: `a[i]` and `b[i]` belong to `keys[i]`. */
export interface ScoreSeries {
  a: Float64Array;
  b: Float64Array;
  /** 1 where both runs have a score for the case; absent when both always do. */
  present?: Uint8Array;
}

/**
 * Columns rather than one object per case: a structured clone of a few typed arrays and one array
 * of strings is far cheaper, on the main thread that sends it, than of thousands of small objects.
 */
export interface CompareStatisticsInput {
  /** The shared cases' pair keys (unique). */
  keys: string[];
  overall: ScoreSeries;
  dimensions: { name: string; series: ScoreSeries }[];
  passedA: Uint8Array;
  passedB: Uint8Array;
}

export interface CompareStatistics {
  overall: PairedComparison;
  perDimension: { name: string; comparison: PairedComparison }[];
  passRateDiff: number | null;
}

function pairsOf(keys: readonly string[], series: ScoreSeries): PairedScores[] {
  const pairs: PairedScores[] = [];
  for (let i = 0; i < keys.length; i += 1) if (!series.present || series.present[i] === 1) pairs.push({ caseId: keys[i], a: series.a[i], b: series.b[i] });
  return pairs;
}

export function computeCompareStatistics(input: CompareStatisticsInput): CompareStatistics {
  const [overall, ...dimensions] = comparePairedSeries([input.overall, ...input.dimensions.map((d) => d.series)].map((series) => pairsOf(input.keys, series)));
  return {
    overall,
    perDimension: input.dimensions.map((d, i) => ({ name: d.name, comparison: dimensions[i] })),
    passRateDiff: passRateDiff(Array.from(input.passedA, Boolean), Array.from(input.passedB, Boolean)),
  };
}

/** The pairs of all series: what the statistics cost is proportional to. */
function pairCount(input: CompareStatisticsInput): number {
  const countOf = (series: ScoreSeries) => (series.present ? series.present.reduce((sum, p) => sum + p, 0) : series.a.length);
  return countOf(input.overall) + input.dimensions.reduce((sum, d) => sum + countOf(d.series), 0);
}

export const compareStatisticsTask = definePoolTask<CompareStatisticsInput, CompareStatistics>({
  name: 'evals.compare-statistics',
  run: computeCompareStatistics,
  size: pairCount,
  // Two runs share at most a dataset's cases, in the overall series and each of the four dimensions.
  maxSize: 5 * MAX_CASES_PER_DATASET,
});

/**
 * Up to this many pairs (over all series) the statistics run inline: 3-5 ms of CPU on a slow
 * 2-core server (25-50 µs per pair), a pause the event loop can afford, and less than the trip to
 * a thread and back costs the request when the thread has to be started (tens of ms; the pool keeps
 * no idle thread). A comparison of 20 cases scored on four dimensions is 100 pairs; the suites
 * people compare most often are that small.
 */
export const COMPARE_INLINE_MAX_PAIRS = 100;

/** The statistics of a comparison: inline when small, else on the worker pool. The same numbers either way. */
export async function compareStatistics(input: CompareStatisticsInput): Promise<CompareStatistics> {
  return pairCount(input) <= COMPARE_INLINE_MAX_PAIRS ? computeCompareStatistics(input) : runPoolTask(compareStatisticsTask, input);
}

/** The scores of all series of an unpaired comparison, both runs': what its bootstraps cost is proportional to. */
const scoreCount = (series: UnpairedScores[]) => series.reduce((sum, s) => sum + s.a.length + s.b.length, 0);

export const compareUnpairedTask = definePoolTask<UnpairedScores[], UnpairedComparison[]>({
  name: 'evals.compare-unpaired',
  run: (series) => compareUnpairedSeries(series),
  size: scoreCount,
  // Two runs of a dataset's size each, in the overall series and each of the four dimensions (the
  // bootstraps then cost what a paired comparison of that size does); past it, a 422 says so.
  maxSize: 2 * 5 * MAX_CASES_PER_DATASET,
});

/** The statistics of an unpaired comparison (two runs without a shared case): inline when small, else on the worker pool. */
export async function compareUnpaired(series: UnpairedScores[]): Promise<UnpairedComparison[]> {
  return scoreCount(series) <= COMPARE_INLINE_MAX_PAIRS ? compareUnpairedSeries(series) : runPoolTask(compareUnpairedTask, series);
}
