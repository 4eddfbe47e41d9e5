// When a monitor fires and resolves. A monitor looks at its rule's recent scored samples again
// every time new ones are scored, so a fixed-sample confidence interval would be checked over and
// over, and noise would cross it sooner or later (the peeking problem). The bound here is a
// time-uniform confidence sequence instead, valid at every sample count at once: Howard, Ramdas,
// McAuliffe and Sekhon (2021), "Time-uniform, nonparametric, nonasymptotic confidence sequences",
// the polynomial stitching boundary for sub-Gaussian observations:
//
//     radius(n) = sigma * 1.7 * sqrt((log log(2n) + 0.72 * log(5.2 / alpha)) / n)
//
// with alpha = 1 - confidence for each side. For a metric whose values lie in [a, b] (scores 1-5,
// pass and fail 0-1) sigma = (b - a) / 2 holds exactly; for cost and latency, which have no upper
// bound, sigma is the window's sample standard deviation (an approximation, stated as such).
//
// A monitor alerting when a metric drops below its threshold fires when the whole interval is
// below it (upper bound < threshold) and resolves only when the whole interval is back at or
// above it (lower bound >= threshold); one alerting on a rise, the mirror image. Between the two it
// keeps its state, so a metric hovering at the threshold neither fires nor flaps. Below
// min_samples nothing changes.

export type MonitorDirection = 'below' | 'above';
export type MonitorState = 'ok' | 'firing';

/** The metric's values over the window (each a sample's score, 0/1, cost or latency). */
export interface MetricSample {
  values: readonly number[];
  /** The range every value lies in, when the metric has one. */
  range: readonly [number, number] | null;
}

export interface MonitorJudgement {
  n: number;
  /** The window's mean (null: no samples). */
  value: number | null;
  lower: number | null;
  upper: number | null;
  /** The bound the decision was made on (upper for a drop, lower for a rise, as the state warrants). */
  bound: number | null;
  state: MonitorState;
  /** Too few samples to decide: the state is the previous one. */
  insufficient: boolean;
}

/** The confidence sequence's half-width for the mean of n observations of scale sigma. */
export function confidenceRadius(n: number, sigma: number, confidence: number): number {
  if (n <= 0) return Number.POSITIVE_INFINITY;
  const alpha = 1 - confidence;
  const loglog = Math.log(Math.max(Math.log(2 * n), 1));
  return sigma * 1.7 * Math.sqrt((loglog + 0.72 * Math.log(5.2 / alpha)) / n);
}

function scaleOf(sample: MetricSample, mean: number): number {
  if (sample.range) return (sample.range[1] - sample.range[0]) / 2;
  const n = sample.values.length;
  if (n < 2) return Number.POSITIVE_INFINITY;
  let sum = 0;
  for (const v of sample.values) sum += (v - mean) ** 2;
  return Math.sqrt(sum / (n - 1));
}

/** Decides the monitor's state from its previous state and the window's values. */
export function judgeMonitor(
  previous: MonitorState,
  sample: MetricSample,
  rule: { direction: MonitorDirection; threshold: number; minSamples: number; confidence: number },
): MonitorJudgement {
  const n = sample.values.length;
  if (n === 0) return { n, value: null, lower: null, upper: null, bound: null, state: previous, insufficient: true };
  let total = 0;
  for (const v of sample.values) total += v;
  const mean = total / n;
  const radius = confidenceRadius(n, scaleOf(sample, mean), rule.confidence);
  const lower = mean - radius;
  const upper = mean + radius;
  const dropping = rule.direction === 'below';
  // Firing is judged on the bound nearest the threshold from the bad side; resolving, from the good side.
  const bound = previous === 'ok' ? (dropping ? upper : lower) : dropping ? lower : upper;
  const round = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(6)) : null);
  const base = { n, value: round(mean), lower: round(lower), upper: round(upper), bound: round(bound) };
  if (n < rule.minSamples) return { ...base, state: previous, insufficient: true };
  let state = previous;
  if (previous === 'ok' && (dropping ? upper < rule.threshold : lower > rule.threshold)) state = 'firing';
  else if (previous === 'firing' && (dropping ? lower >= rule.threshold : upper <= rule.threshold)) state = 'ok';
  return { ...base, state, insufficient: false };
}
