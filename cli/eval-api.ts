// What the `liya evals` commands share: the API's paths and pages, the evals error hints, and the
// loaders of suites, runs, results and comparisons.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { HistoryPagination } from '../server/common/pagination.js';
import type { SuiteDto } from '../server/evals/evals.schemas.js';
import { ApiError, type ApiClient } from './api-client.js';
import { CliError, EXIT_FAILURE, type FieldLabels } from './errors.js';
import { formatUsd, type EvalComparison, type EvalResult, type EvalRun } from './evals-report.js';
import { reportError, withApiErrors } from './output.js';
import { dateTime, segment } from './format.js';

// ---------------------------------------------------------------- API types

interface ResultsPage {
  results: EvalResult[];
  pagination: HistoryPagination;
}

export interface RunsPage {
  runs: EvalRun[];
  pagination: HistoryPagination;
}

// ---------------------------------------------------------------- constants

/** How long `run` follows a run unless --max-wait says otherwise. */
export const MAX_WAIT_MS = 60 * 60_000;
/** The most results one page may hold. */
const RESULTS_PAGE = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const runPath = (id: string) => `/v1/evals/runs/${segment(id)}`;
export const suitePath = (id: string) => `/v1/evals/suites/${segment(id)}`;

// ---------------------------------------------------------------- errors

type Operation = 'run' | 'runs' | 'compare' | 'report' | 'suites';

const FIELD_LABELS: Record<Operation, FieldLabels> = {
  run: { id: '<suite>', model: '--model' },
  runs: { id: '<suite>', limit: '--limit' },
  compare: { id: '<run>', against: '--against' },
  report: { id: '<run>', against: '--against' },
  suites: {},
};

const KEY_HINTS: Record<string, string> = {
};

function hintFor(err: ApiError, operation: Operation): string | undefined {
  const d = err.details ?? {};
  switch (err.code) {
    case 'NOT_FOUND':
      if (operation === 'run' || operation === 'runs') return 'Check the suite id or name; list the suites: liya evals suites';
      return 'Check the run id; list a suite\'s runs: liya evals runs <suite>';
    case 'EVALS_NOT_AVAILABLE':
      return `Evaluations are not part of the tenant's ${typeof d.plan === 'string' ? `${d.plan} ` : ''}plan; they need a plan that includes them.`;
    case 'EVALS_BUDGET_EXCEEDED': {
      const used = typeof d.used_usd === 'number' ? formatUsd(d.used_usd) : null;
      const budget = typeof d.budget_usd === 'number' ? formatUsd(d.budget_usd) : null;
      const resets = typeof d.resets_at === 'string' ? ` It resets on ${dateTime(d.resets_at)}.` : '';
      return `This month's judge budget is spent${used && budget ? ` (${used} of ${budget})` : ''}.${resets}`;
    }
    case 'RATE_LIMITED': {
      const wait = typeof d.retry_after_seconds === 'number' ? ` Try again in ${d.retry_after_seconds} s.` : ' Try again in a minute.';
      return `Too many runs started${typeof d.limit_per_minute === 'number' ? ` (at most ${d.limit_per_minute} a minute)` : ''}.${wait}`;
    }
    default:
      return KEY_HINTS[err.code];
  }
}

/** Runs `task`; an API error is reported with the evals hints (others go to the usual reporting). */
export const withEvalErrors = (operation: Operation, task: () => Promise<number | void>) =>
  withApiErrors(task, (err) => reportError(err, FIELD_LABELS[operation], (e) => hintFor(e, operation)));

// ---------------------------------------------------------------- loading

/**
 * The suite's id for an id or an exact name: an id of the tenant's suites (or any UUID, for the
 * server to judge) as it is; a name must match exactly one suite, else a usage error (exit 2).
 */
export async function resolveSuite(client: ApiClient, ref: string): Promise<string> {
  const suites = await loadAllSuites(client);
  if (suites.some((s) => s.id === ref)) return ref;
  const named = suites.filter((s) => s.name === ref);
  if (named.length === 1) return named[0].id;
  if (named.length > 1) {
    throw new CliError(`${named.length} suites are named "${ref}"`, [`Give the id of one of them: ${named.map((s) => s.id).join(', ')}`]);
  }
  if (UUID.test(ref)) return ref;
  const names = suites.map((s) => s.name);
  throw new CliError(`The tenant has no suite "${ref}"`, [
    names.length ? `Its suites: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''} (liya evals suites lists them with their ids)` : 'It has no suites yet; create one with POST /v1/evals/suites.',
  ]);
}

/** Every suite of the tenant, page by page (the list is paged, at most 100 a page). */
export async function loadAllSuites(client: ApiClient): Promise<SuiteDto[]> {
  const suites: SuiteDto[] = [];
  for (let page = 1; ; page++) {
    const res = await client.get<{ suites: SuiteDto[]; pagination: { total: number } }>(`/v1/evals/suites?page=${page}&pageSize=100`, { auth: 'bearer' });
    suites.push(...res.suites);
    if (!res.suites.length || suites.length >= res.pagination.total) return suites;
  }
}

export async function loadRun(client: ApiClient, id: string, signal?: AbortSignal): Promise<EvalRun> {
  return (await client.get<{ run: EvalRun }>(runPath(id), { auth: 'bearer', signal })).run;
}

/** Every result of the run, in position order, page by page (by cursor: offset pages stop 10,000 deep). */
export async function loadResults(client: ApiClient, runId: string): Promise<EvalResult[]> {
  const all: EvalResult[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page: ResultsPage = await client.get<ResultsPage>(`${runPath(runId)}/results`, { auth: 'bearer', query: { pageSize: RESULTS_PAGE, cursor } });
    all.push(...page.results);
    if (!page.pagination.next_cursor) return all;
    cursor = page.pagination.next_cursor;
  }
}

export async function loadComparison(client: ApiClient, runId: string, against: string): Promise<EvalComparison> {
  return client.get<EvalComparison>(`${runPath(runId)}/compare`, { auth: 'bearer', query: { against } });
}

/** Writes a report file (its folder is created); a failure is exit 1 with the path and the reason. */
export async function writeReport(file: string, text: string, what: string): Promise<void> {
  try {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    await writeFile(file, text, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : code === 'ENOENT' ? 'no such folder' : (err as Error).message;
    throw new CliError(`Cannot write the ${what} to ${file}: ${reason}`, [], EXIT_FAILURE);
  }
}

