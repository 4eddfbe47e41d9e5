// `liya evals compare` (the statistics of two runs: paired, or as two samples) and `liya evals report` (a self-contained
// HTML page of a run).
import type { Command } from 'commander';
import { createElement as h } from 'react';
import { commandContext } from '../context.js';
import { loadComparison, loadResults, loadRun, withEvalErrors, writeReport } from '../eval-api.js';
import {
  buildEvalReport,
  FINAL_EVAL_RUN_STATUSES,
  formatCi,
  formatDiff,
  formatPoints,
  formatPValue,
  JUDGE_DIMENSIONS,
  type DimensionComparison,
  type EvalComparison,
} from '../evals-report.js';
import { printJson, show, withSpinner } from '../output.js';
import { Details } from '../ui/details.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { plural } from '../format.js';

// ---------------------------------------------------------------- compare

function comparisonFields(c: EvalComparison): [string, string][] {
  const unpaired = c.pairing === 'unpaired';
  return [
    unpaired
      ? ['Cases', `${c.n_a} and ${c.n_b}, none shared: compared as two samples`]
      : ['Shared cases', `${c.n_shared} (scored in both runs)`],
    ['Mean diff', `${formatDiff(c.mean_diff)}  95% CI ${formatCi(c.ci95)}`],
    ['p-value', `${formatPValue(c.p_value)}  (${c.test}${c.p_value_method ? `, ${c.p_value_method}` : ''})`],
    ...(unpaired ? [] : [['Wins/losses/ties', `${c.wins} / ${c.losses} / ${c.ties}`] as [string, string]]),
    ['Pass-rate diff', formatPoints(c.pass_rate_diff)],
  ];
}

/** One row per dimension: shared cases, mean diff, CI, p-value, wins/losses/ties. */
export function comparisonRows(c: EvalComparison): string[][] {
  const row = (label: string, d: DimensionComparison, n: number | undefined) => [
    label,
    n === undefined ? '—' : String(n),
    formatDiff(d.mean_diff),
    formatCi(d.ci95),
    formatPValue(d.p_value),
    `${d.wins}/${d.losses}/${d.ties}`,
  ];
  const known: readonly string[] = JUDGE_DIMENSIONS;
  const dims = Object.keys(c.per_dimension ?? {});
  const ordered = [...known.filter((d) => dims.includes(d)), ...dims.filter((d) => !known.includes(d)).sort()];
  return ordered.map((d) => row(d, c.per_dimension[d], c.per_dimension[d].n_shared));
}

/** A sentence about what the comparison shows, at the 5% level. */
export function comparisonVerdict(c: EvalComparison): { kind: 'info' | 'success' | 'warning'; message: string } {
  if (c.pairing === 'unpaired') {
    if (c.p_value === null) return { kind: 'info', message: `Too few scored cases for a significance test (${c.n_a} and ${c.n_b}; it needs 2 in each run).` };
  } else {
    if (c.n_shared === 0) return { kind: 'warning', message: 'The runs share no scored case: there is nothing to compare.' };
    if (c.p_value === null) return { kind: 'info', message: `Too few shared cases for a significance test (${c.n_shared}; it needs 2).` };
  }
  if (c.p_value < 0.05 && c.mean_diff !== null && c.mean_diff !== 0) {
    const better = c.mean_diff > 0;
    return {
      kind: better ? 'success' : 'warning',
      message: `Run ${c.run_id} scores ${better ? 'higher' : 'lower'} than run ${c.against} (mean diff ${formatDiff(c.mean_diff)}, p ${formatPValue(c.p_value)}).`,
    };
  }
  return { kind: 'info', message: `No significant difference at the 5% level (p ${formatPValue(c.p_value)}).` };
}

export async function compareRuns(runId: string, flags: { against: string; json?: boolean }, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withEvalErrors('compare', async () => {
    const comparison = await withSpinner(`Comparing run ${runId} with ${flags.against}`, () => loadComparison(client, runId, flags.against));
    if (flags.json) return printJson(comparison);
    const verdict = comparisonVerdict(comparison);
    await show(
      h(
        Stack,
        null,
        h(Details, { title: `Run ${comparison.run_id} vs ${comparison.against} (this run minus the other)`, fields: comparisonFields(comparison) }),
        h(Table, {
          headers: ['DIMENSION', 'SHARED', 'MEAN DIFF', '95% CI', 'P-VALUE', 'W/L/T'],
          rows: comparisonRows(comparison),
          align: ['left', 'right', 'right', 'right', 'right', 'right'],
          empty: 'No dimension scores.',
        }),
        h(StatusLine, { ...verdict, hints: [`Both on one page: liya evals report ${comparison.run_id} --against ${comparison.against} --html report.html`] }),
      ),
    );
  });
}

// ---------------------------------------------------------------- report

export async function writeHtmlReport(runId: string, flags: { against?: string; html: string }, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withEvalErrors('report', async () => {
    const { run, results, comparison } = await withSpinner(`Loading run ${runId}`, async () => {
      const [run, results, comparison] = await Promise.all([
        loadRun(client, runId),
        loadResults(client, runId),
        flags.against ? loadComparison(client, runId, flags.against) : Promise.resolve(null),
      ]);
      return { run, results, comparison };
    });
    const html = buildEvalReport({ run, results, comparison });
    await writeReport(flags.html, html, 'HTML report');
    const unfinished = !FINAL_EVAL_RUN_STATUSES.has(run.status);
    await show(
      h(StatusLine, {
        kind: unfinished ? 'warning' : 'success',
        message: `Wrote ${flags.html}: eval run ${run.name ?? run.id}, ${plural(results.length, 'case')}${comparison ? `, compared with ${comparison.against}` : ''} (${Math.ceil(Buffer.byteLength(html) / 1024)} KB)`,
        lines: unfinished ? [`The run is still ${run.status}: the report shows it as it is now.`] : [],
        hints: ['It is one self-contained file: open it in a browser, or keep it as a CI artifact.'],
      }),
    );
  });
}

