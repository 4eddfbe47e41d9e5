// Judging a rule's monitors after its live windows scored new cases (the evaluation engine calls
// this at the end of each slice of an online window): each monitor's metric over its window, the
// time-uniform bound (monitor-statistics.ts), and a state change recorded with its event.
import type { AppDeps } from '../deps.js';
import { observeMonitorChange } from '../observability/telemetry.js';
import { judgeMonitor, type MetricSample } from './monitor-statistics.js';
import { listRuleMonitors, listWindowValues, recordMonitorJudgement, type RuleMonitor, type WindowValueRow } from './store/monitors.js';

/** Cases one judgement reads at most (the newest). */
export const MAX_MONITOR_SAMPLES = 10_000;

/** The metric's values over the rows (newest first) and the range they lie in. */
export function metricSample(monitor: Pick<RuleMonitor, 'metric' | 'dimension'>, rows: readonly WindowValueRow[]): MetricSample {
  const values: number[] = [];
  switch (monitor.metric) {
    case 'mean_score':
      for (const r of rows) {
        const v = monitor.dimension ? r.dimension_scores?.[monitor.dimension] : r.score;
        if (r.status === 'scored' && typeof v === 'number') values.push(v);
      }
      return { values, range: [1, 5] };
    case 'pass_rate':
      for (const r of rows) if (r.status === 'scored') values.push(r.passed ? 1 : 0);
      return { values, range: [0, 1] };
    case 'check_failure_rate':
      for (const r of rows) if (r.check_failed !== null) values.push(r.check_failed ? 1 : 0);
      return { values, range: [0, 1] };
    case 'cost_usd':
      for (const r of rows) if (r.source_cost_usd !== null) values.push(Number(r.source_cost_usd));
      return { values, range: null };
    default:
      for (const r of rows) if (r.source_latency_ms !== null) values.push(r.source_latency_ms);
      return { values, range: null };
  }
}

/** Judges every enabled monitor of the rule on its window now. */
export async function judgeRuleMonitors(deps: AppDeps, ruleId: string): Promise<void> {
  const monitors = await listRuleMonitors(deps.sql, ruleId);
  for (const monitor of monitors) {
    const limit = Math.min(monitor.window_samples ?? MAX_MONITOR_SAMPLES, MAX_MONITOR_SAMPLES);
    const rows = await listWindowValues(deps.sql, ruleId, monitor.window_minutes, limit);
    const judgement = judgeMonitor(monitor.state, metricSample(monitor, rows), {
      direction: monitor.direction, threshold: monitor.threshold, minSamples: monitor.min_samples, confidence: monitor.confidence,
    });
    const changed = await recordMonitorJudgement(deps.sql, { id: monitor.id, previous: monitor.state, state: judgement.state, value: judgement.value, bound: judgement.bound, n: judgement.n });
    if (changed) {
      observeMonitorChange(judgement.state);
      deps.log.info({ monitor: monitor.id, state: judgement.state, value: judgement.value, bound: judgement.bound, n: judgement.n }, 'online evaluation monitor changed');
    }
  }
}
