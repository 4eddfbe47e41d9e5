// `liya evals ...`: evaluation suites through the API key routes. `run` starts a suite run and
// follows it (a live view on a terminal, a line per change elsewhere) to a summary, and is a CI gate:
// the exit code says whether the run completed and met --min-pass-rate / --min-score, and --junit
// writes the cases as JUnit XML. `compare` prints the statistics of two runs (paired, or as two samples), `report` writes
// a self-contained HTML page of a run, `runs` and `suites` list what there is.
import { Command, InvalidArgumentError, Option } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { EXIT_FAILURE } from '../errors.js';
import {
  loadAllSuites,
  loadResults,
  loadRun,
  MAX_WAIT_MS,
  resolveSuite,
  runPath,
  suitePath,
  withEvalErrors,
  writeReport,
  type RunsPage,
} from '../eval-api.js';
import { buildJUnitReport } from '../evals-junit.js';
import { dimensionsOf, formatDuration, formatPercent, formatScore, formatUsd, passRateOf, runErrorText, type EvalRun } from '../evals-report.js';
import { followRun, progressLine } from '../evals-follow.js';
import { printJson, show, withSpinner } from '../output.js';
import { parseInteger, parseSeconds } from '../options.js';
import { Details } from '../ui/details.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { dateTime, plural } from '../format.js';
import { compareRuns, writeHtmlReport } from './eval-compare.js';
import { addOnlineCommands } from './eval-online.js';

// ---------------------------------------------------------------- flags

/** --min-pass-rate: a fraction (0.9) or a percentage (90%), checked before any request. */
export function parsePassRate(value: string): number {
  const text = value.trim();
  const percent = text.endsWith('%');
  const digits = (percent ? text.slice(0, -1) : text).trim();
  const n = Number(digits);
  if (!digits || !Number.isFinite(n)) throw new InvalidArgumentError('Not a number; give a fraction such as 0.9 or a percentage such as 90%.');
  const rate = percent ? n / 100 : n;
  if (rate < 0 || rate > 1) throw new InvalidArgumentError('Must be between 0 and 1 (or 0% and 100%).');
  return rate;
}

/** --min-score: a judge score between 1 and 5. */
export function parseMinScore(value: string): number {
  const text = value.trim();
  const n = Number(text);
  if (!text || !Number.isFinite(n)) throw new InvalidArgumentError('Not a number.');
  if (n < 1 || n > 5) throw new InvalidArgumentError('Must be between 1 and 5 (the judge\'s scale).');
  return n;
}

// ---------------------------------------------------------------- the verdict

export interface Thresholds {
  minPassRate?: number;
  minScore?: number;
}

/** What keeps the run from passing as a CI gate: its status, then each threshold it misses. Empty: it passes. */
export function thresholdFailures(run: EvalRun, thresholds: Thresholds): string[] {
  const failures: string[] = [];
  if (run.status !== 'completed') {
    const error = runErrorText(run.error);
    failures.push(`the run is ${run.status}${error ? `: ${error}` : ''}`);
  }
  if (thresholds.minPassRate !== undefined) {
    const rate = passRateOf(run);
    if (rate === null) failures.push(`--min-pass-rate ${formatPercent(thresholds.minPassRate)}: the run has no cases`);
    else if (rate < thresholds.minPassRate) {
      failures.push(`pass rate ${formatPercent(rate)} (${run.cases_passed}/${run.cases_total}) is below --min-pass-rate ${formatPercent(thresholds.minPassRate)}`);
    }
  }
  if (thresholds.minScore !== undefined) {
    if (run.mean_score === null) failures.push(`--min-score ${thresholds.minScore}: no case was scored`);
    else if (run.mean_score < thresholds.minScore) failures.push(`mean score ${formatScore(run.mean_score)} is below --min-score ${thresholds.minScore}`);
  }
  return failures;
}

function runFields(run: EvalRun): [string, string][] {
  const notScored = Math.max(0, run.cases_total - run.cases_done);
  const fields: [string, string][] = [
    ['Run', run.id],
    ['Suite', `${run.name ?? '—'}${run.suite_id ? ` (${run.suite_id})` : ''}`],
    ['Intent', [run.domain_key, run.intent_key].filter(Boolean).join('/') || '—'],
    ['Status', run.status],
    ['Cases', `${run.cases_passed}/${run.cases_total} passed · ${run.cases_errored} errored${notScored ? ` · ${notScored} not scored` : ''}`],
    ['Pass rate', `${formatPercent(passRateOf(run))} (a case passes when its check passes and its score is at least ${run.pass_threshold})`],
    ['Mean score', `${formatScore(run.mean_score)} / 5`],
    ['Judge', `${run.judge_model ?? '—'} · ${plural(run.judge_calls ?? 0, 'call')} · ${plural(run.judge_failures ?? 0, 'failure')} · ${formatUsd(run.judge_total_cost_usd ?? 0)}`],
    ['Judge cap reached', run.judge_cap_reached ? 'yes (the month\'s judge budget ran out; the cases after it were skipped)' : 'no'],
    ['Model', run.model_override ?? 'the intent\'s own'],
    ['Duration', formatDuration(run.started_at, run.completed_at)],
  ];
  const error = runErrorText(run.error);
  if (error) fields.push(['Error', error]);
  return fields;
}

function dimensionRows(run: EvalRun): string[][] {
  return dimensionsOf(run).map((d) => [d, formatScore(run.dimension_scores?.[d])]);
}

// ---------------------------------------------------------------- run

interface RunFlags {
  model?: string;
  minPassRate?: number;
  minScore?: number;
  junit?: string;
  maxWait: number;
  json?: boolean;
}

async function runSuite(ref: string, flags: RunFlags, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withEvalErrors('run', async () => {
    const started = await withSpinner(`Starting a run of suite ${ref}`, async () => {
      const suiteId = await resolveSuite(client, ref);
      const body = flags.model ? { model: flags.model } : {};
      return (await client.post<{ run: EvalRun }>(`${suitePath(suiteId)}/run`, { auth: 'bearer', body })).run;
    });
    const { run, stopped } = await followRun((id, signal) => loadRun(client, id, signal), started, { json: Boolean(flags.json), maxWaitMs: flags.maxWait });

    if (stopped) {
      // The run does not depend on the CLI: it goes on, and can be read (or cancelled) later.
      // --json still prints the run as last seen, so a script reading stdout has its id and state.
      if (flags.json) printJson(run);
      await show(
        h(StatusLine, {
          kind: 'warning',
          message:
            stopped === 'interrupted'
              ? `Stopped watching: eval run ${run.id} goes on on the server`
              : `Eval run ${run.id} is still ${run.status} after --max-wait; it goes on on the server`,
          lines: [progressLine(run)],
          hints: [
            `See how it ends: GET ${runPath(run.id)}, or liya evals report ${run.id} --html report.html once it has`,
            `Stop it: POST ${runPath(run.id)}/cancel`,
            ...(stopped === 'max-wait' ? ['Wait longer with --max-wait <seconds>.'] : []),
            ...(flags.junit ? [`No JUnit report was written to ${flags.junit}.`] : []),
          ],
        }),
        process.stderr,
      );
      return EXIT_FAILURE;
    }

    if (flags.junit) {
      const results = await loadResults(client, run.id);
      await writeReport(flags.junit, buildJUnitReport({ run, results }), 'JUnit report');
    }
    const failures = thresholdFailures(run, { minPassRate: flags.minPassRate, minScore: flags.minScore });
    const ok = failures.length === 0;
    const verdict = ok
      ? h(StatusLine, {
          kind: run.judge_cap_reached ? 'warning' : 'success',
          message: `Eval run ${run.id} completed: ${run.cases_passed}/${run.cases_total} passed (${formatPercent(passRateOf(run))}), mean score ${formatScore(run.mean_score)}`,
          lines: run.judge_cap_reached ? ['The judge budget ran out during the run: some cases were not scored.'] : [],
          hints: [
            ...(flags.junit ? [`JUnit report: ${flags.junit}`] : []),
            `HTML report: liya evals report ${run.id} --html report.html`,
            `Compare with an earlier run: liya evals compare ${run.id} --against <run>`,
          ],
        })
      : h(StatusLine, {
          kind: 'error',
          message: run.status === 'completed' ? `Eval run ${run.id} did not meet the thresholds` : `Eval run ${run.id} did not complete`,
          lines: failures,
          hints: [...(flags.junit ? [`JUnit report: ${flags.junit}`] : []), `HTML report: liya evals report ${run.id} --html report.html`],
        });

    if (flags.json) {
      printJson(run);
      if (!ok) await show(verdict, process.stderr);
      return ok ? 0 : EXIT_FAILURE;
    }
    await show(
      h(
        Stack,
        null,
        h(Details, { title: `Eval run ${run.name ?? run.id}`, fields: runFields(run) }),
        h(Table, { headers: ['DIMENSION', 'MEAN'], rows: dimensionRows(run), align: ['left', 'right'] }),
      ),
    );
    await show(verdict, ok ? process.stdout : process.stderr);
    return ok ? 0 : EXIT_FAILURE;
  });
}

// ---------------------------------------------------------------- runs, suites

async function listRuns(ref: string, flags: { limit: number; json?: boolean }, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withEvalErrors('runs', async () => {
    const page = await withSpinner(`Loading runs of suite ${ref}`, async () => {
      const suiteId = await resolveSuite(client, ref);
      return client.get<RunsPage>(`${suitePath(suiteId)}/runs`, { auth: 'bearer', query: { pageSize: flags.limit } });
    });
    if (flags.json) return printJson(page);
    const latest = page.runs[0];
    await show(
      h(
        Stack,
        null,
        h(Table, {
          headers: ['RUN', 'STATUS', 'PASSED', 'PASS RATE', 'MEAN', 'JUDGE $', 'MODEL', 'STARTED'],
          rows: page.runs.map((r) => [
            r.id,
            r.status,
            `${r.cases_passed}/${r.cases_total}`,
            formatPercent(passRateOf(r)),
            formatScore(r.mean_score),
            formatUsd(r.judge_total_cost_usd ?? 0),
            r.model_override ?? '—',
            dateTime(r.started_at),
          ]),
          align: ['left', 'left', 'right', 'right', 'right', 'right'],
          empty: 'No runs.',
        }),
        h(StatusLine, {
          kind: 'info',
          message: runsSummary(page),
          hints: latest
            ? [`Report: liya evals report ${latest.id} --html report.html`, ...(page.runs[1] ? [`Compare the newest two: liya evals compare ${latest.id} --against ${page.runs[1].id}`] : [])]
            : [`Run it: liya evals run ${ref}`],
        }),
      ),
    );
  });
}

/** `3 runs.`, or `The newest 20 of 45 runs.` (the server counts only so far past the page: "more than"). */
function runsSummary(page: RunsPage): string {
  const { total, total_is_exact } = page.pagination;
  const all = total_is_exact === false ? `more than ${plural(total - 1, 'run')}` : plural(total, 'run');
  return page.runs.length < total ? `The newest ${page.runs.length} of ${all}.` : `${all}.`;
}

async function listSuites(flags: { json?: boolean }, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withEvalErrors('suites', async () => {
    const suites = await withSpinner('Loading suites', () => loadAllSuites(client));
    if (flags.json) return printJson(suites);
    await show(
      h(
        Stack,
        null,
        h(Table, {
          headers: ['ID', 'NAME', 'INTENT', 'PASS THRESHOLD', 'BASELINE RUN'],
          rows: suites.map((s) => [s.id, s.name, `${s.domain_key}/${s.intent_key}`, String(s.pass_threshold), s.baseline_run_id ?? '—']),
          align: ['left', 'left', 'left', 'right'],
          empty: 'No suites.',
        }),
        h(StatusLine, {
          kind: 'info',
          message: `${plural(suites.length, 'suite')}.`,
          hints: suites[0] ? [`Run one: liya evals run ${suites[0].id}`] : ['Create one with POST /v1/evals/suites (a dataset, an intent and the judge rubric).'],
        }),
      ),
    );
  });
}

// ---------------------------------------------------------------- commands

export function evalsCommand(): Command {
  const evals = new Command('evals').description('Run evaluation suites as a CI gate, compare runs, write HTML and JUnit reports; needs --api-key');

  evals
    .command('run')
    .description(
      'Start a run of a suite and follow it until it ends (a live view on a terminal, a line per change elsewhere), then print a summary: ' +
        'status, cases passed, pass rate, mean score, per-dimension means, judge calls, failures and spend, duration',
    )
    .argument('<suite>', 'suite id, or its exact name (liya evals suites lists them)')
    .option('--model <model>', 'run the intent on this model instead of its own')
    .option('--min-pass-rate <rate>', 'fail (exit 1) when cases passed / cases total is below this: 0-1 or a percentage (0.9, 90%)', parsePassRate)
    .option('--min-score <score>', 'fail (exit 1) when the mean judge score is below this (1-5)', parseMinScore)
    .option('--junit <file>', 'write the cases as JUnit XML to this file (for CI test reports)')
    .addOption(new Option('--max-wait <seconds>', 'how long to follow the run').argParser(parseSeconds).default(MAX_WAIT_MS, String(MAX_WAIT_MS / 1000)))
    .option('--json', 'print only the final run as JSON (progress and threshold failures go to stderr)')
    .addHelpText(
      'after',
      `
Exit codes: 0 the run completed and met --min-pass-rate and --min-score (when given); 1 it failed or
was cancelled, missed a threshold, could not start (plan, judge budget, rate limit), or liya stopped
following it (Ctrl-C, --max-wait; the run goes on on the server); 2 usage error (bad flag value,
unknown suite name, missing key). LIYA_EVAL_POLL_MS sets how often the run is read (default 500).`,
    )
    .action(action((ref: string, flags: RunFlags, command: Command) => runSuite(ref, flags, command)));

  evals
    .command('compare')
    .description(
      'Compare two runs case by case (this run minus the other, over the scored cases both share): mean difference with its bootstrap 95% CI, ' +
        'Wilcoxon signed-rank p-value, wins/losses/ties, pass-rate difference, and the same per judge dimension. ' +
        'Runs that share no case (a live window and a suite run) are compared as two samples: difference of the means, Mann-Whitney U p-value',
    )
    .argument('<run>', 'run id')
    .requiredOption('--against <run>', 'the run to compare with (a baseline, an earlier run, a live window)')
    .option('--json', 'print the comparison as JSON')
    .action(action((runId: string, flags: { against: string; json?: boolean }, command: Command) => compareRuns(runId, flags, command)));

  evals
    .command('report')
    .description(
      'Write one self-contained HTML page of a run (no external assets): its facts, the score distribution, the per-dimension means ' +
        '(with the 95% CI of the difference against --against), and every case with its check, judge reasoning, reviews and data',
    )
    .argument('<run>', 'run id')
    .requiredOption('--html <file>', 'the HTML file to write')
    .option('--against <run>', 'compare with this run (statistics, error bars, per-case differences)')
    .action(action((runId: string, flags: { against?: string; html: string }, command: Command) => writeHtmlReport(runId, flags, command)));

  evals
    .command('runs')
    .description('List a suite\'s runs, newest first: status, cases passed, pass rate, mean score, judge spend')
    .argument('<suite>', 'suite id, or its exact name')
    .option('--limit <n>', 'how many runs (1-100)', parseInteger(1, 100), 20)
    .option('--json', 'print {runs, pagination} as JSON')
    .action(action((ref: string, flags: { limit: number; json?: boolean }, command: Command) => listRuns(ref, flags, command)));

  evals
    .command('suites')
    .description('List the tenant\'s evaluation suites')
    .option('--json', 'print the suites as a JSON array')
    .action(action((flags: { json?: boolean }, command: Command) => listSuites(flags, command)));

  return addOnlineCommands(evals);
}
