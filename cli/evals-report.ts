// The HTML report of an evaluation run (`liya evals report --html`): one self-contained page (inline
// CSS, inline SVG charts drawn here, no script, no external asset) with the run's facts, the score
// distribution, the per-dimension means (with the 95% CI of the paired difference against another
// run when one is given) and every case. Pure: data in, text out. Also the run and result types the
// CLI reads from /v1/evals and the number formats its commands share.
import type { EvalComparison, EvalResultDto, EvalRunDto, ReviewDto } from '../server/evals/eval-runs.schemas.js';
import { dateTime } from './format.js';

// ---------------------------------------------------------------- API types

/** GET /v1/evals/runs/{id} `data.run` (without the fields the CLI never reads; triggered_by is shown when present). */
export type EvalRun = Omit<EvalRunDto, 'tenant_id' | 'execution_mode' | 'triggered_by'> & Partial<Pick<EvalRunDto, 'triggered_by'>>;
type EvalRunStatus = EvalRun['status'];
export const FINAL_EVAL_RUN_STATUSES: ReadonlySet<string> = new Set<EvalRunStatus>(['completed', 'failed', 'cancelled']);

/** The judge's dimensions, in the order they are shown (a run may carry others; they follow). */
export const JUDGE_DIMENSIONS = ['correctness', 'completeness', 'relevance', 'safety'] as const;

/** A human review of a case (without the ids the CLI never reads). */
type EvalReview = Omit<ReviewDto, 'tenant_id' | 'run_result_id'>;

/** One case of GET /v1/evals/runs/{id}/results. */
export type EvalResult = Omit<EvalResultDto, 'run_id' | 'reviews'> & { reviews: EvalReview[] };

export type { EvalComparison };
export type DimensionComparison = EvalComparison['per_dimension'][string];

// ---------------------------------------------------------------- shared formats

const finite = (n: number | null | undefined): n is number => typeof n === 'number' && Number.isFinite(n);

/** `4.25`, or — when there is none. */
export const formatScore = (n: number | null | undefined) => (finite(n) ? n.toFixed(2) : '—');

/** `+0.42` / `-0.10` / `0.00`. */
export function formatDiff(n: number | null | undefined, digits = 2): string {
  if (!finite(n)) return '—';
  const text = Math.abs(n).toFixed(digits);
  if (Number(text) === 0) return (0).toFixed(digits);
  return `${n > 0 ? '+' : '-'}${text}`;
}

/** A 0-1 fraction as `75.0%`. */
export const formatPercent = (n: number | null | undefined) => (finite(n) ? `${(n * 100).toFixed(1)}%` : '—');

/** A -1..1 difference of rates in percentage points: `+16.7 pp`. */
export const formatPoints = (n: number | null | undefined) => (finite(n) ? `${formatDiff(n * 100, 1)} pp` : '—');

/** Dollars with as many digits as small judge spends need: `$1.25`, `$0.0420`, `$0.000123`. */
export function formatUsd(n: number | null | undefined): string {
  if (!finite(n)) return '—';
  if (n === 0) return '$0.00';
  if (Math.abs(n) >= 1) return `$${n.toFixed(2)}`;
  if (Math.abs(n) >= 0.01) return `$${n.toFixed(4)}`;
  return `$${n.toFixed(6)}`;
}

/** `0.031`, `< 0.001`, or — when no test was run. */
export function formatPValue(p: number | null | undefined): string {
  if (!finite(p)) return '—';
  if (p < 0.001) return '< 0.001';
  return p.toFixed(3);
}

/** `[+0.10, +0.80]`. */
export const formatCi = (ci: [number, number] | null | undefined) => (ci ? `[${formatDiff(ci[0])}, ${formatDiff(ci[1])}]` : '—');

/** Seconds between two ISO times as `3.2 s` / `4 min 05 s`; — while the run has not ended. */
export function formatDuration(startedAt: string, completedAt: string | null): string {
  if (!completedAt) return '—';
  const ms = Date.parse(completedAt) - Date.parse(startedAt);
  if (!Number.isFinite(ms)) return '—';
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${String(Math.round(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
}


/** Cases passed over all cases of the run (0-1); null for a run without cases. */
export const passRateOf = (run: Pick<EvalRun, 'cases_passed' | 'cases_total'>) => (run.cases_total > 0 ? run.cases_passed / run.cases_total : null);

/** The run's dimensions: the judge's four in their order, then any other the run carries. */
export function dimensionsOf(run: Pick<EvalRun, 'dimension_scores'>, comparison?: Pick<EvalComparison, 'per_dimension'> | null): string[] {
  const extra = new Set([...Object.keys(run.dimension_scores ?? {}), ...Object.keys(comparison?.per_dimension ?? {})]);
  JUDGE_DIMENSIONS.forEach((d) => extra.delete(d));
  return [...JUDGE_DIMENSIONS, ...[...extra].sort()];
}

/** The error of a failed run as one line (`CODE: message`). */
export function runErrorText(error: Record<string, unknown> | null): string | null {
  if (!error) return null;
  const code = typeof error.code === 'string' ? error.code : null;
  const message = typeof error.message === 'string' ? error.message : null;
  if (code || message) return [code, message].filter(Boolean).join(': ');
  return JSON.stringify(error);
}

// ---------------------------------------------------------------- HTML

/** Text for HTML content and (double- or single-quoted) attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const esc = escapeHtml;

/** A JSON value as indented text (a string as it is). */
function jsonText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** SVG coordinates with at most two decimals. */
const num = (n: number) => String(Math.round(n * 100) / 100);

const SCORE_COLORS = ['#d64545', '#e8833a', '#e3b341', '#8cc265', '#3f9e5a'];

/** Counts of scored cases by score, rounded into 1-5. */
export function scoreHistogram(results: readonly Pick<EvalResult, 'status' | 'score'>[]): number[] {
  const bins = [0, 0, 0, 0, 0];
  for (const r of results) {
    if (r.status !== 'scored' || !finite(r.score)) continue;
    const bin = Math.min(5, Math.max(1, Math.round(r.score)));
    bins[bin - 1]++;
  }
  return bins;
}

function histogramSvg(bins: number[]): string {
  const width = 440;
  const height = 230;
  const left = 40;
  const right = 10;
  const top = 18;
  const bottom = 36;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const max = Math.max(1, ...bins);
  const slot = plotW / bins.length;
  const barW = slot * 0.7;
  const ticks = max <= 6 ? Array.from({ length: max + 1 }, (_, i) => i) : [...new Set([0, Math.round(max / 4), Math.round(max / 2), Math.round((3 * max) / 4), max])];
  const y = (count: number) => top + plotH - (count / max) * plotH;
  const parts: string[] = [];
  for (const t of ticks) {
    parts.push(`<line class="grid" x1="${left}" x2="${width - right}" y1="${num(y(t))}" y2="${num(y(t))}"/>`);
    parts.push(`<text class="tick" x="${left - 6}" y="${num(y(t) + 4)}" text-anchor="end">${t}</text>`);
  }
  bins.forEach((count, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const h = (count / max) * plotH;
    parts.push(
      `<rect class="bar" x="${num(x)}" y="${num(top + plotH - h)}" width="${num(barW)}" height="${num(h)}" fill="${SCORE_COLORS[i]}" data-score="${i + 1}" data-count="${count}"><title>score ${i + 1}: ${count} case${count === 1 ? '' : 's'}</title></rect>`,
    );
    parts.push(`<text class="value" x="${num(x + barW / 2)}" y="${num(top + plotH - h - 5)}" text-anchor="middle">${count}</text>`);
    parts.push(`<text class="tick" x="${num(x + barW / 2)}" y="${height - bottom + 16}" text-anchor="middle">${i + 1}</text>`);
  });
  parts.push(`<line class="axis" x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}"/>`);
  parts.push(`<text class="label" x="${num(left + plotW / 2)}" y="${height - 4}" text-anchor="middle">judge score</text>`);
  return `<svg class="chart" id="score-histogram" role="img" aria-label="Score distribution" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${parts.join('')}</svg>`;
}

interface DimensionRow {
  label: string;
  mean: number | null;
  diff?: DimensionComparison;
}

/**
 * Horizontal bars of the means on the 0-5 scale. With a comparison, each bar carries the 95% CI of
 * the paired difference moved so its estimate sits at the bar's end, and a diamond at the bar's end
 * minus the difference (where the other run stands): the whisker misses the diamond exactly when the
 * CI excludes 0.
 */
function dimensionsSvg(rows: DimensionRow[], comparing: boolean): string {
  const labelW = 110;
  const width = 560;
  const right = 70;
  const top = 10;
  const rowH = 34;
  const barH = 18;
  const plotW = width - labelW - right;
  const height = top + rows.length * rowH + 30;
  const x = (score: number) => labelW + (Math.min(5, Math.max(0, score)) / 5) * plotW;
  const parts: string[] = [];
  for (let t = 0; t <= 5; t++) {
    parts.push(`<line class="grid" x1="${num(x(t))}" x2="${num(x(t))}" y1="${top}" y2="${top + rows.length * rowH}"/>`);
    parts.push(`<text class="tick" x="${num(x(t))}" y="${top + rows.length * rowH + 16}" text-anchor="middle">${t}</text>`);
  }
  rows.forEach((row, i) => {
    const yMid = top + i * rowH + rowH / 2;
    parts.push(`<text class="label" x="${labelW - 8}" y="${num(yMid + 4)}" text-anchor="end">${esc(row.label)}</text>`);
    if (!finite(row.mean)) {
      parts.push(`<text class="tick" x="${labelW + 4}" y="${num(yMid + 4)}">no scores</text>`);
      return;
    }
    parts.push(
      `<rect class="dim-bar" x="${labelW}" y="${num(yMid - barH / 2)}" width="${num(x(row.mean) - labelW)}" height="${barH}" data-dimension="${esc(row.label)}"><title>${esc(row.label)}: ${formatScore(row.mean)}</title></rect>`,
    );
    // The value in its own column right of the scale, clear of the bar's whisker.
    parts.push(`<text class="value" x="${labelW + plotW + 10}" y="${num(yMid + 4)}">${formatScore(row.mean)}</text>`);
    const d = row.diff;
    if (comparing && d && finite(d.mean_diff)) {
      const other = row.mean - d.mean_diff;
      const ox = x(other);
      parts.push(
        `<path class="other" d="M${num(ox)} ${num(yMid - 6)} L${num(ox + 5)} ${num(yMid)} L${num(ox)} ${num(yMid + 6)} L${num(ox - 5)} ${num(yMid)} Z"><title>other run ≈ ${formatScore(other)}</title></path>`,
      );
      if (d.ci95) {
        const lo = x(row.mean - d.mean_diff + d.ci95[0]);
        const hi = x(row.mean - d.mean_diff + d.ci95[1]);
        const title = `difference ${formatDiff(d.mean_diff)}, 95% CI ${formatCi(d.ci95)}, p ${formatPValue(d.p_value)}`;
        parts.push(
          `<g class="error-bar" data-dimension="${esc(row.label)}"><title>${esc(title)}</title>` +
            `<line x1="${num(lo)}" x2="${num(hi)}" y1="${num(yMid)}" y2="${num(yMid)}"/>` +
            `<line x1="${num(lo)}" x2="${num(lo)}" y1="${num(yMid - 7)}" y2="${num(yMid + 7)}"/>` +
            `<line x1="${num(hi)}" x2="${num(hi)}" y1="${num(yMid - 7)}" y2="${num(yMid + 7)}"/></g>`,
        );
      }
    }
  });
  return `<svg class="chart" id="dimension-means" role="img" aria-label="Mean score per dimension" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${parts.join('')}</svg>`;
}

const STYLE = `
:root { color-scheme: light; --fg: #1d2330; --muted: #5d6778; --line: #dde2ea; --bg-soft: #f5f7fa; --pass: #2f8a4c; --fail: #c23b3b; --warn: #b7791f; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0; padding: 24px 32px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.sub { color: var(--muted); margin: 0 0 16px; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 8px 24px; margin: 0; }
.facts div { background: var(--bg-soft); border-radius: 6px; padding: 8px 10px; }
.facts dt { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
.facts dd { margin: 2px 0 0; font-weight: 600; word-break: break-word; }
.status-completed, .pass { color: var(--pass); }
.status-failed, .status-cancelled, .fail { color: var(--fail); }
.status-running, .status-pending, .warn { color: var(--warn); }
.charts { display: flex; flex-wrap: wrap; gap: 32px; align-items: flex-start; }
figure { margin: 0; }
figcaption { color: var(--muted); font-size: 12px; max-width: 560px; margin-top: 4px; }
svg.chart { font: 12px system-ui, sans-serif; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .axis { stroke: var(--muted); stroke-width: 1; }
svg .tick, svg .label { fill: var(--muted); }
svg .value { fill: var(--fg); font-weight: 600; }
svg .dim-bar { fill: #4f7cc4; }
svg .other { fill: #1d2330; opacity: .75; }
svg .error-bar line { stroke: #1d2330; stroke-width: 1.6; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg-soft); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.stats { width: auto; }
tr.status-errored td { background: #fdf1f1; }
tr.status-skipped td, tr.status-pending td { color: var(--muted); }
.reasoning { max-width: 420px; white-space: pre-wrap; }
.error { color: var(--fail); white-space: pre-wrap; max-width: 320px; }
details { margin: 2px 0; }
summary { cursor: pointer; color: #2d5fa8; }
pre { background: var(--bg-soft); padding: 8px; border-radius: 4px; max-width: 560px; max-height: 360px; overflow: auto; white-space: pre-wrap; word-break: break-word; margin: 4px 0; }
ul.reviews { margin: 0; padding-left: 16px; }
.muted { color: var(--muted); }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
`;

function fact(label: string, value: string, cls = ''): string {
  return `<div><dt>${esc(label)}</dt><dd${cls ? ` class="${cls}"` : ''}>${value}</dd></div>`;
}

function passedCell(r: EvalResult): string {
  if (r.passed === true) return '<span class="pass">yes</span>';
  if (r.passed === false) return '<span class="fail">no</span>';
  return '<span class="muted">—</span>';
}

function checkCell(check: EvalResult['check']): string {
  if (!check || check.kind === 'none') return '<span class="muted">none</span>';
  const verdict = check.passed === true ? '<span class="pass">passed</span>' : check.passed === false ? '<span class="fail">failed</span>' : '<span class="muted">—</span>';
  return `<code>${esc(check.kind)}</code> ${verdict}${check.detail ? `<br><span class="muted">${esc(check.detail)}</span>` : ''}`;
}

function reviewsCell(reviews: EvalReview[]): string {
  if (!reviews.length) return '<span class="muted">—</span>';
  const items = reviews.map((v) => {
    const corrected = finite(v.corrected_score) ? ` → ${esc(v.corrected_score)}` : '';
    const note = v.note ? `: ${esc(v.note)}` : '';
    return `<li><strong>${esc(v.verdict)}</strong>${corrected}${note} <span class="muted">(${esc(dateTime(v.created_at))})</span></li>`;
  });
  return `<ul class="reviews">${items.join('')}</ul>`;
}

function block(label: string, value: unknown, open = false): string {
  if (value === null || value === undefined) return '';
  return `<details${open ? ' open' : ''}><summary>${esc(label)}</summary><pre>${esc(jsonText(value))}</pre></details>`;
}

function caseRow(r: EvalResult, diffByCase: Map<string, { score_a: number; score_b: number }> | null): string {
  const dims = r.dimension_scores
    ? Object.entries(r.dimension_scores)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')
    : '';
  const pair = diffByCase && r.case_id ? diffByCase.get(r.case_id) : undefined;
  const diffCell = diffByCase
    ? `<td class="num">${pair ? `${esc(formatDiff(pair.score_a - pair.score_b, 0))} <span class="muted">(${esc(pair.score_b)})</span>` : '<span class="muted">—</span>'}</td>`
    : '';
  const data = [block('input', r.input), block('message', r.message), block('output', r.output), block('expected output', r.expected_output)].join('');
  return (
    `<tr class="case status-${esc(r.status)}" id="case-${esc(r.position)}" data-case-id="${esc(r.case_id ?? '')}">` +
    `<td class="num">${esc(r.position)}</td>` +
    `<td><code>${esc(r.case_id ?? 'inline')}</code></td>` +
    `<td>${esc(r.status)}</td>` +
    `<td>${passedCell(r)}</td>` +
    `<td class="num"${dims ? ` title="${esc(dims)}"` : ''}>${esc(formatScore(r.score))}</td>` +
    diffCell +
    `<td class="num">${finite(r.custom_score) ? esc(r.custom_score) : '<span class="muted">—</span>'}</td>` +
    `<td>${checkCell(r.check)}</td>` +
    `<td class="reasoning">${r.judge_reasoning ? esc(r.judge_reasoning) : '<span class="muted">—</span>'}</td>` +
    `<td>${reviewsCell(r.reviews ?? [])}</td>` +
    `<td class="error">${r.error ? esc(r.error) : ''}</td>` +
    `<td class="num">${finite(r.latency_ms) ? `${esc(r.latency_ms)} ms` : '—'}<br><span class="muted">${esc(formatUsd(r.cost_usd))}</span></td>` +
    `<td>${data || '<span class="muted">—</span>'}</td>` +
    `</tr>`
  );
}

function comparisonSection(c: EvalComparison, dims: string[]): string {
  const row = (label: string, d: DimensionComparison, n?: number) =>
    `<tr><th scope="row">${esc(label)}</th><td class="num">${esc(n ?? d.n_shared ?? '—')}</td><td class="num">${esc(formatDiff(d.mean_diff))}</td><td class="num">${esc(formatCi(d.ci95))}</td>` +
    `<td class="num">${esc(formatPValue(d.p_value))}</td><td class="num">${esc(`${d.wins} / ${d.losses} / ${d.ties}`)}</td></tr>`;
  const rows = [row('overall score', c, c.n_shared), ...dims.filter((d) => c.per_dimension[d]).map((d) => row(d, c.per_dimension[d]))];
  return (
    `<section id="comparison"><h2>Compared with run <code>${esc(c.against)}</code></h2>` +
    (c.pairing === 'unpaired'
      ? `<p class="sub">The runs share no case: their ${esc(c.n_a)} and ${esc(c.n_b)} scored cases are compared as two samples (this run's mean minus the other's). Test: <code>${esc(c.test)}</code>`
      : `<p class="sub">This run minus the other over the ${esc(c.n_shared)} scored case${c.n_shared === 1 ? '' : 's'} both share. Test: <code>${esc(c.test)}</code>`) +
    `${c.p_value_method ? ` (${esc(c.p_value_method)})` : ''}; 95% CI: bootstrap of the mean difference. Pass-rate difference: <strong>${esc(formatPoints(c.pass_rate_diff))}</strong>.</p>` +
    `<table class="stats"><thead><tr><th></th><th>shared</th><th>mean diff</th><th>95% CI</th><th>p-value</th><th>wins / losses / ties</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`
  );
}

export interface EvalReportInput {
  run: EvalRun;
  results: EvalResult[];
  /** The comparison of this run against another (GET /v1/evals/runs/{id}/compare). */
  comparison?: EvalComparison | null;
  /** When the report was made (default now); shown in the footer. */
  generatedAt?: Date;
}

/** The report as one self-contained HTML page; every value from the data is escaped. */
export function buildEvalReport({ run, results, comparison = null, generatedAt = new Date() }: EvalReportInput): string {
  const ordered = [...results].sort((a, b) => a.position - b.position);
  const title = `Eval run ${run.name ?? run.id}`;
  const passRate = passRateOf(run);
  const notScored = ordered.filter((r) => r.status === 'skipped' || r.status === 'pending').length;
  const runError = runErrorText(run.error);
  const facts = [
    fact('Status', esc(run.status), `status-${esc(run.status)}`),
    fact('Cases passed', `${esc(run.cases_passed)} / ${esc(run.cases_total)} <span class="muted">(${esc(formatPercent(passRate))})</span>`),
    fact('Mean score', `${esc(formatScore(run.mean_score))} <span class="muted">/ 5</span>`),
    fact('Pass threshold', `score ≥ ${esc(run.pass_threshold)}`),
    fact('Errored', esc(run.cases_errored), run.cases_errored ? 'fail' : ''),
    fact('Not scored', esc(notScored), notScored ? 'warn' : ''),
    fact('Intent', esc([run.domain_key, run.intent_key].filter(Boolean).join(' / ') || '—')),
    fact('Model', esc(run.model_override ?? "the intent's own")),
    fact('Judge', `${esc(run.judge_model ?? '—')} <span class="muted">· ${esc(run.judge_calls ?? 0)} calls · ${esc(run.judge_failures ?? 0)} failures</span>`),
    fact('Judge spend', esc(formatUsd(run.judge_total_cost_usd))),
    fact('Judge budget cap reached', run.judge_cap_reached ? 'yes' : 'no', run.judge_cap_reached ? 'warn' : ''),
    fact('Started', esc(dateTime(run.started_at))),
    fact('Completed', esc(dateTime(run.completed_at))),
    fact('Duration', esc(formatDuration(run.started_at, run.completed_at))),
  ];
  if (runError) facts.push(fact('Error', esc(runError), 'fail'));

  const dims = dimensionsOf(run, comparison);
  const dimRows: DimensionRow[] = [
    { label: 'overall', mean: run.mean_score, diff: comparison ?? undefined },
    ...dims.map((d) => ({ label: d, mean: run.dimension_scores?.[d] ?? null, diff: comparison?.per_dimension[d] })),
  ];
  const comparing = Boolean(comparison);
  const diffByCase = comparison ? new Map(comparison.cases.filter((c) => c.case_id).map((c) => [c.case_id as string, c])) : null;
  const scored = ordered.filter((r) => r.status === 'scored' && finite(r.score)).length;

  const dimCaption = comparing
    ? `Bars: this run's means (0-5). Whiskers: the 95% CI of the paired difference against run ${esc(comparison!.against)}, placed so its estimate sits at the bar's end; ` +
      `the diamond marks the bar minus the mean difference (where the other run stands). A whisker that misses its diamond is a difference whose CI excludes 0.`
    : `This run's mean judge score per dimension (0-5) over its scored cases.`;

  const headers = ['pos', 'case', 'status', 'passed', 'score', ...(diffByCase ? ['Δ vs other'] : []), 'custom', 'check', 'judge reasoning', 'reviews', 'error', 'latency / cost', 'data'];

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="liya evals report">
<title>${esc(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${esc(title)}</h1>
<p class="sub">run <code>${esc(run.id)}</code>${run.suite_id ? ` · suite <code>${esc(run.suite_id)}</code>` : ''}${run.triggered_by ? ` · triggered by ${esc(run.triggered_by)}` : ''}</p>
<dl class="facts">${facts.join('')}</dl>
</header>
<section id="charts">
<h2>Scores</h2>
<div class="charts">
<figure>${histogramSvg(scoreHistogram(ordered))}<figcaption>Score distribution of the ${scored} scored case${scored === 1 ? '' : 's'} (judge score rounded to 1-5).</figcaption></figure>
<figure>${dimensionsSvg(dimRows, comparing)}<figcaption>${dimCaption}</figcaption></figure>
</div>
</section>
${comparison ? comparisonSection(comparison, dims) : ''}
<section id="cases">
<h2>Cases (${ordered.length})</h2>
<table class="cases">
<thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead>
<tbody>
${ordered.length ? ordered.map((r) => caseRow(r, diffByCase)).join('\n') : `<tr><td colspan="${headers.length}" class="muted">No results.</td></tr>`}
</tbody>
</table>
</section>
<footer><p class="muted">Generated by liya evals report on ${esc(dateTime(generatedAt.toISOString()))}.</p></footer>
</body>
</html>
`;
}
