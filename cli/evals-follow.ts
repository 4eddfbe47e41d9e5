// Following an evaluation run while it works: a live ink view on a terminal (bar, percent, stage,
// cases, pass rate so far, mean score, judge spend), one line per change elsewhere, and the polling
// itself through cli/poll.ts (Ctrl-C stops watching, not the run; transient failures are looked past).
import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import { FINAL_EVAL_RUN_STATUSES, formatPercent, formatScore, formatUsd, type EvalRun } from './evals-report.js';
import { isInteractive } from './output.js';
import { pollUntil } from './poll.js';
import { progressBar } from './ui/ingestion-progress.js';
import { renderLiveView } from './ui/live-view.js';

/** One line about a run in progress (pipes and CI get one per change). */
export function progressLine(run: EvalRun): string {
  const parts = [
    run.stage && run.stage !== run.status ? `${run.status} · ${run.stage}` : run.status,
    `${Math.round(run.progress)}%`,
    `${run.cases_done}/${run.cases_total} cases`,
    `${run.cases_passed} passed`,
  ];
  if (run.cases_errored) parts.push(`${run.cases_errored} errored`);
  parts.push(`mean ${formatScore(run.mean_score)}`, `judge ${formatUsd(run.judge_total_cost_usd ?? 0)}`);
  return parts.join(' · ');
}

const STATUS_COLOR: Record<string, string> = { completed: 'green', failed: 'red', cancelled: 'yellow' };

/** The live view on a terminal: bar, percent, stage; cases, pass rate so far, mean score, judge spend. */
function EvalRunProgress({ run }: { run: EvalRun }) {
  const done = FINAL_EVAL_RUN_STATUSES.has(run.status);
  const soFar = run.cases_done > 0 ? run.cases_passed / run.cases_done : null;
  return h(
    Box,
    { flexDirection: 'column', flexShrink: 0 },
    h(Text, null, h(Text, { bold: true }, `Eval run ${run.name ?? ''}`.trim()), h(Text, { dimColor: true }, ` ${run.id}`)),
    h(
      Text,
      null,
      h(Text, { color: STATUS_COLOR[run.status] ?? 'cyan' }, progressBar(run.progress)),
      ` ${`${Math.round(run.progress)}%`.padStart(4)} `,
      h(Text, { dimColor: !done }, done ? run.status : (run.stage ?? run.status)),
    ),
    h(
      Text,
      null,
      `cases ${run.cases_done}/${run.cases_total} · passed ${run.cases_passed} (${formatPercent(soFar)}${done ? '' : ' so far'})`,
      run.cases_errored ? h(Text, { color: 'red' }, ` · errored ${run.cases_errored}`) : '',
      ` · mean ${formatScore(run.mean_score)} · judge ${formatUsd(run.judge_total_cost_usd ?? 0)}`,
    ),
  );
}

/** Shows the run as it moves: ink on a terminal, one line per change elsewhere, nothing for --json off a terminal. */
function progressView(current: () => EvalRun, json: boolean) {
  const stream = json ? process.stderr : process.stdout;
  if (isInteractive(stream)) {
    return renderLiveView(stream, () => h(EvalRunProgress, { run: current() }), json);
  }
  let seen = '';
  const update = () => {
    if (json) return;
    const run = current();
    const key = `${run.status}/${run.cases_done}/${run.stage ?? ''}`;
    if (key === seen) return;
    seen = key;
    stream.write(`${progressLine(run)}\n`);
  };
  return { update, finish: async () => update() };
}

export interface Followed {
  run: EvalRun;
  /** Why following stopped before the run ended. */
  stopped?: 'interrupted' | 'max-wait';
}

/** Polls the run until it ends, Ctrl-C (a second one exits at once) or `maxWaitMs`. */
export async function followRun(load: (id: string, signal: AbortSignal) => Promise<EvalRun>, initial: EvalRun, options: { json: boolean; maxWaitMs: number }): Promise<Followed> {
  const { value, stopped } = await pollUntil(initial, load, (run) => FINAL_EVAL_RUN_STATUSES.has(run.status), (current) => progressView(current, options.json), options.maxWaitMs);
  return stopped ? { run: value, stopped } : { run: value };
}
