// The JUnit XML report of an evaluation run (`liya evals run --junit`), the format CI systems
// (GitHub Actions reporters, GitLab, Jenkins, Azure DevOps, CircleCI) display as tests: one
// <testsuite> for the run, one <testcase> per case (<failure> when it did not pass, <error> when it
// errored, <skipped/> when it was not scored), with the score and the judge's reasoning in
// <system-out>. A run that did not complete adds one <testcase name="run"> with an <error>, so a
// failed run never reads as a green suite of skipped cases. Pure: data in, text out.
import {
  formatPercent,
  formatScore,
  formatUsd,
  passRateOf,
  runErrorText,
  type EvalResult,
  type EvalRun,
} from './evals-report.js';
import { dateTime } from './format.js';

// Characters XML 1.0 cannot carry at all (control characters, lone surrogates, U+FFFE/U+FFFF).
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** Text content: & < > escaped, characters XML cannot hold replaced by U+FFFD. */
export function escapeXmlText(value: unknown): string {
  return String(value ?? '')
    .replace(NOT_XML, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

/** An attribute value (double-quoted): also quotes, and line breaks and tabs kept as references. */
export function escapeXmlAttr(value: unknown): string {
  return escapeXmlText(value)
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;')
    .replace(/\t/g, '&#9;');
}

const attrs = (values: Record<string, string | number | null | undefined>) =>
  Object.entries(values)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => ` ${k}="${escapeXmlAttr(v)}"`)
    .join('');

const seconds = (ms: number | null | undefined) => (typeof ms === 'number' && Number.isFinite(ms) ? (Math.max(0, ms) / 1000).toFixed(3) : '0');

/** The name CI shows for a case: its position in the run and its dataset case id. */
export const junitCaseName = (r: Pick<EvalResult, 'position' | 'case_id'>) => `position ${r.position} · case ${r.case_id ?? 'inline'}`;

/** Why a scored case did not pass: its check, its score under the threshold, or both. */
export function failureReason(r: EvalResult, passThreshold: number): string {
  const reasons: string[] = [];
  if (r.check && r.check.passed === false) reasons.push(`check ${r.check.kind} failed${r.check.detail ? ` (${r.check.detail})` : ''}`);
  if (typeof r.score === 'number' && r.score < passThreshold) reasons.push(`judge score ${r.score} is below the pass threshold ${passThreshold}`);
  return reasons.length ? reasons.join('; ') : 'did not pass';
}

/** The error code of a case error such as `JUDGE_FAILED: OUTPUT_INVALID ...`. */
const errorType = (error: string | null) => /^([A-Z][A-Z0-9_]+)(?::|$)/.exec(error ?? '')?.[1] ?? 'ERROR';

function systemOut(r: EvalResult, passThreshold: number): string {
  const lines = [
    `status: ${r.status}${r.passed === true ? ', passed' : r.passed === false ? ', not passed' : ''}`,
    `score: ${formatScore(r.score)} (pass threshold ${passThreshold})`,
  ];
  if (r.dimension_scores && Object.keys(r.dimension_scores).length) {
    lines.push(`dimensions: ${Object.entries(r.dimension_scores).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  }
  if (typeof r.custom_score === 'number') lines.push(`custom score: ${r.custom_score}`);
  if (r.check && r.check.kind !== 'none') {
    lines.push(`check: ${r.check.kind} ${r.check.passed === true ? 'passed' : r.check.passed === false ? 'failed' : '—'}${r.check.detail ? ` (${r.check.detail})` : ''}`);
  }
  lines.push(`latency: ${typeof r.latency_ms === 'number' ? `${r.latency_ms} ms` : '—'} · cost ${formatUsd(r.cost_usd)}`);
  if (r.error) lines.push(`error: ${r.error}`);
  for (const v of r.reviews ?? []) {
    lines.push(`review: ${v.verdict}${typeof v.corrected_score === 'number' ? ` → ${v.corrected_score}` : ''}${v.note ? `: ${v.note}` : ''} (${dateTime(v.created_at)})`);
  }
  if (r.judge_reasoning) lines.push('judge reasoning:', r.judge_reasoning);
  return lines.join('\n');
}

function testcase(run: EvalRun, r: EvalResult, classname: string): string {
  const open = `    <testcase${attrs({ name: junitCaseName(r), classname, time: seconds(r.latency_ms) })}>`;
  let verdict = '';
  if (r.status === 'errored') {
    const message = r.error ?? 'the case errored';
    verdict = `      <error${attrs({ message, type: errorType(r.error) })}>${escapeXmlText(message)}</error>\n`;
  } else if (r.status === 'skipped' || r.status === 'pending') {
    const message = r.status === 'pending' ? 'not run: the run ended before this case' : (r.error ?? 'not scored');
    verdict = `      <skipped${attrs({ message })}/>\n`;
  } else if (r.passed !== true) {
    const message = failureReason(r, run.pass_threshold);
    verdict = `      <failure${attrs({ message, type: 'not_passed' })}>${escapeXmlText(message)}</failure>\n`;
  }
  return `${open}\n${verdict}      <system-out>${escapeXmlText(systemOut(r, run.pass_threshold))}</system-out>\n    </testcase>\n`;
}

export interface JUnitReportInput {
  run: EvalRun;
  results: EvalResult[];
}

/** The run as JUnit XML: a <testsuites> with one <testsuite>, one <testcase> per result in position order. */
export function buildJUnitReport({ run, results }: JUnitReportInput): string {
  const ordered = [...results].sort((a, b) => a.position - b.position);
  const classname = ['liya', 'evals', run.domain_key, run.intent_key].filter(Boolean).join('.');
  const suiteName = `${run.name ?? 'eval run'} (run ${run.id})`;
  const runEnded = run.status === 'completed';
  const counts = { tests: ordered.length, failures: 0, errors: 0, skipped: 0 };
  for (const r of ordered) {
    if (r.status === 'errored') counts.errors++;
    else if (r.status === 'skipped' || r.status === 'pending') counts.skipped++;
    else if (r.passed !== true) counts.failures++;
  }
  let runCase = '';
  if (!runEnded) {
    counts.tests++;
    counts.errors++;
    const message = `the run is ${run.status}${runErrorText(run.error) ? `: ${runErrorText(run.error)}` : ''}`;
    runCase =
      `    <testcase${attrs({ name: 'run', classname })}>\n` +
      `      <error${attrs({ message, type: `RUN_${run.status.toUpperCase()}` })}>${escapeXmlText(message)}</error>\n    </testcase>\n`;
  }
  const durationMs = run.completed_at ? Date.parse(run.completed_at) - Date.parse(run.started_at) : null;
  const time = seconds(durationMs);
  const properties = {
    run_id: run.id,
    suite_id: run.suite_id,
    status: run.status,
    cases_total: run.cases_total,
    cases_passed: run.cases_passed,
    cases_errored: run.cases_errored,
    pass_rate: formatPercent(passRateOf(run)),
    mean_score: formatScore(run.mean_score),
    pass_threshold: run.pass_threshold,
    ...Object.fromEntries(Object.entries(run.dimension_scores ?? {}).map(([k, v]) => [`dimension.${k}`, formatScore(v)])),
    judge_model: run.judge_model,
    judge_calls: run.judge_calls,
    judge_failures: run.judge_failures,
    judge_total_cost_usd: run.judge_total_cost_usd,
    judge_cap_reached: String(run.judge_cap_reached),
    model_override: run.model_override,
  };
  const propertyLines = Object.entries(properties)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([name, value]) => `      <property${attrs({ name, value: String(value) })}/>\n`)
    .join('');
  const timestamp = run.started_at.replace(/\.\d+Z$/, '').replace(/Z$/, '');
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites${attrs({ name: 'liya evals', ...counts, time })}>\n` +
    `  <testsuite${attrs({ name: suiteName, ...counts, time, timestamp })}>\n` +
    `    <properties>\n${propertyLines}    </properties>\n` +
    runCase +
    ordered.map((r) => testcase(run, r, classname)).join('') +
    `  </testsuite>\n</testsuites>\n`
  );
}
