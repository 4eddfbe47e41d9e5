// `liya workflows run|runs|retry|cancel`: running a deployed workflow, synchronously or over the
// streaming endpoint (Server-Sent Events), printing each step of the trace, the output and a line
// about the run; and the durable runs: `runs` lists a workflow's runs, `retry` continues a failed
// one from where it failed, `cancel` stops one that waits.
import { Command, InvalidArgumentError } from 'commander';
import { createElement as h } from 'react';
import type { WorkflowRunStatus } from '../../db/column-values.js';
import type { HistoryPagination } from '../../server/common/pagination.js';
import type { RunWorkflowInput, TraceEntry, WorkflowRunDetail, WorkflowRunResult, WorkflowRunSummary } from '../../server/workflows/workflows.schemas.js';
import { ApiError, type ApiClient } from '../api-client.js';
import { commandContext, type GlobalOptions } from '../context.js';
import { CliError, EXIT_FAILURE } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { postEventStream, StreamCancelled, unfinishedStreamReport, type JsonEvent, type StreamOutcome } from '../sse.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { readJsonObjectInput, type InputHints } from '../read-json-input.js';
import { Table } from '../ui/table.js';
import { dateTime, plural, segment } from '../format.js';
import { printRunResult, TracePrinter, type RunEnd } from '../workflow-trace.js';
import { reportWorkflowError, withWorkflowErrors, workflowPath } from './workflow-errors.js';

/** The run statuses --status accepts: a copy of the server's list (a value the CLI may not import), kept equal to it by the checks below. */
export const WORKFLOW_RUN_STATUSES = ['running', 'completed', 'needs_input', 'awaiting_approval', 'waiting', 'rejected', 'cancelled', 'failed'] as const satisfies readonly WorkflowRunStatus[];
type MissingRunStatuses = Exclude<WorkflowRunStatus, (typeof WORKFLOW_RUN_STATUSES)[number]>;
// Fails to compile when the server knows a status the copy lacks.
true satisfies MissingRunStatuses extends never ? true : never;

/** A page of a workflow's runs (GET /v1/workflows/{ref}/runs). */
export interface WorkflowRunPage {
  runs: WorkflowRunSummary[];
  pagination: Pick<HistoryPagination, 'total' | 'limit' | 'offset'> & Partial<HistoryPagination>;
}

/**
 * Statuses a run (or a retry) may answer with and still count as done (exit code 0): completed, or
 * paused where the workflow means to wait (for input, at a delay, for an approval); the run goes on.
 */
const SUCCESSFUL_WORKFLOW_RUN_STATUSES: ReadonlySet<string> = new Set<WorkflowRunStatus>(['completed', 'needs_input', 'waiting', 'awaiting_approval']);

/** The time limit of a synchronous run (model calls, web requests) unless --timeout / LIYA_TIMEOUT says otherwise. */
export const WORKFLOW_RUN_TIMEOUT_MS = 300_000;

/**
 * How long the run stream may stay silent (no event, no heartbeat) unless --timeout / LIYA_TIMEOUT
 * says otherwise. The server sends a heartbeat every 15 s, so only a stuck connection hits it.
 */
export const WORKFLOW_STREAM_IDLE_MS = 120_000;

/** The events that end a run stream. */
const FINAL_EVENTS: ReadonlySet<string> = new Set(['run.completed', 'run.waiting', 'run.awaiting_approval', 'run.failed']);

// ---------------------------------------------------------------- the --input file

const INPUT_EXAMPLE = 'For example {"amount": 150} (the trigger payload, {{trigger.amount}} in the steps).';

const INPUT_HINTS: InputHints = {
  unreadable: 'Give a JSON file holding the input object, or - to read it from stdin.',
  empty: `It must hold a JSON object. ${INPUT_EXAMPLE}`,
  invalidJson: [INPUT_EXAMPLE],
  notObject: INPUT_EXAMPLE,
};

// ---------------------------------------------------------------- the run

export interface RunFlags {
  input?: string;
  conversation?: string;
  stream?: boolean;
  json?: boolean;
}

/** A run result from a final stream event, completed with what the stream told before (an unexpected failure carries no run). */
function resultFromStream(final: JsonEvent, started: { run_id: string; conversation_id: string } | undefined, trace: TraceEntry[]): RunEnd {
  const data = (typeof final.data === 'object' && final.data !== null ? final.data : {}) as Partial<RunEnd>;
  return {
    ...data,
    run_id: data.run_id ?? started?.run_id ?? '',
    conversation_id: data.conversation_id ?? started?.conversation_id ?? '',
    status: data.status ?? (final.event === 'run.completed' ? 'completed' : 'failed'),
    output: data.output ?? null,
    trace: Array.isArray(data.trace) ? data.trace : trace,
  };
}

export async function runWorkflow(ref: string, flags: RunFlags, command: Command): Promise<number> {
  const ctx = commandContext(command);
  const client = ctx.withApiKey({ timeoutMs: WORKFLOW_RUN_TIMEOUT_MS }); // a usage error (exit 2) when there is no key
  const input = flags.input === undefined ? {} : await readJsonObjectInput(flags.input, INPUT_HINTS);
  const body: Omit<RunWorkflowInput, 'workflowIdOrKey'> = { input, ...(flags.conversation !== undefined ? { conversation_id: flags.conversation } : {}) };
  const printer = flags.json ? null : new TracePrinter(process.stdout);

  let result: RunEnd;
  let key = ref;
  if (!flags.stream) {
    try {
      // Without `mode` the run is synchronous: the answer is the run's end, never the async 202.
      result = await withSpinner(`Running workflow ${ref}`, () => client.post<WorkflowRunResult>(`${workflowPath(ref)}/run`, { auth: 'bearer', body }));
    } catch (err) {
      if (err instanceof ApiError) return reportWorkflowError(err, ref, 'run');
      throw err;
    }
    result.trace.forEach((entry) => printer?.step(entry));
  } else {
    const options = command.optsWithGlobals<GlobalOptions>();
    const userSetTimeout = ['cli', 'env'].includes(command.getOptionValueSourceWithGlobals('timeout') ?? '');
    const target = { baseUrl: ctx.url, apiKey: options.apiKey!.trim(), idleMs: userSetTimeout ? options.timeout : WORKFLOW_STREAM_IDLE_MS };
    let started: { run_id: string; conversation_id: string } | undefined;
    const trace: TraceEntry[] = [];
    const onEvent = (event: JsonEvent) => {
      if (event.event === 'run.started') {
        const data = event.data as { run_id: string; conversation_id: string; workflow_key?: string };
        started = { run_id: data.run_id, conversation_id: data.conversation_id };
        if (data.workflow_key) key = data.workflow_key;
      } else if (event.event === 'step.completed') {
        trace.push(event.data as TraceEntry);
        printer?.step(event.data as TraceEntry);
      }
    };
    const path = `${workflowPath(ref)}/run/stream`;
    const isFinal = (event: JsonEvent) => FINAL_EVENTS.has(event.event);
    let outcome: StreamOutcome;
    try {
      outcome = flags.json
        ? await withSpinner(`Running workflow ${ref}`, () => postEventStream(target, path, body, onEvent, isFinal))
        : await postEventStream(target, path, body, onEvent, isFinal);
    } catch (err) {
      if (err instanceof ApiError) return reportWorkflowError(err, ref, 'run');
      throw err;
    }
    if (!outcome.final) {
      // A workflow run does not stop when the client leaves: it goes on, and can be read later.
      const { interruption } = outcome;
      const runHints = started ? [`run ${started.run_id} · conversation ${started.conversation_id}`, `See how it ends: GET /v1/workflows/${segment(key)}/runs/${started.run_id}`] : [];
      if (interruption instanceof StreamCancelled) {
        await show(
          h(StatusLine, {
            kind: 'warning',
            message: started ? `Stopped watching: run ${started.run_id} goes on on the server` : 'Cancelled before the run started',
            hints: started ? runHints.slice(1) : [],
          }),
          process.stderr,
        );
        return EXIT_FAILURE;
      }
      await show(h(StatusLine, { kind: 'error', ...unfinishedStreamReport(key, interruption, runHints) }), process.stderr);
      return EXIT_FAILURE;
    }
    result = resultFromStream(outcome.final, started, trace);
  }

  await printRunResult(result, key, printer);
  return SUCCESSFUL_WORKFLOW_RUN_STATUSES.has(result.status) ? 0 : EXIT_FAILURE;
}

// ---------------------------------------------------------------- durable runs: list, retry, cancel

/** --status: one of the run statuses, checked before any request (a typo would otherwise list nothing). */
export function parseRunStatus(value: string): WorkflowRunStatus {
  const status = value.trim().toLowerCase();
  if (!(WORKFLOW_RUN_STATUSES as readonly string[]).includes(status)) {
    throw new InvalidArgumentError(`Not a run status; use one of ${WORKFLOW_RUN_STATUSES.join(', ')}.`);
  }
  return status as WorkflowRunStatus;
}

/** A run by its id alone: retry and cancel need its workflow, which the user should not have to name. */
const runPath = (runId: string) => `/v1/workflows/runs/${segment(runId)}`;
const runActionPath = (run: WorkflowRunDetail, verb: 'retry' | 'cancel') => `${workflowPath(run.workflow_id)}/runs/${segment(run.run_id)}/${verb}`;

async function loadRun(client: ApiClient, runId: string): Promise<WorkflowRunDetail> {
  const { run } = await client.get<{ run: WorkflowRunDetail }>(runPath(runId), { auth: 'bearer' });
  return run;
}

/** What can be done with a run next, for the ACTIONS column. */
export function runActionsText(run: Pick<WorkflowRunSummary, 'can_retry' | 'can_cancel'>): string {
  const actions = [run.can_retry ? 'retry' : null, run.can_cancel ? 'cancel' : null].filter((a) => a !== null);
  return actions.length ? actions.join(', ') : '—';
}

function runRows(runs: WorkflowRunSummary[]): string[][] {
  return runs.map((r) => [r.run_id, r.status, r.triggered_by, String(r.steps), dateTime(r.started_at), dateTime(r.completed_at), runActionsText(r)]);
}

/** What to do next, for the newest run of each kind that someone has to act on. */
function runHints(runs: WorkflowRunSummary[]): string[] {
  const hints: string[] = [];
  const approval = runs.find((r) => r.status === 'awaiting_approval' && r.approval_id);
  if (approval) hints.push(`Decide the approval run ${approval.run_id} waits for: liya approvals decide ${approval.approval_id} approve|reject`);
  const retry = runs.find((r) => r.can_retry);
  if (retry) hints.push(`Continue a failed run from the failed step: liya workflows retry ${retry.run_id}`);
  const cancel = runs.find((r) => r.can_cancel);
  if (cancel) hints.push(`Stop a run that waits: liya workflows cancel ${cancel.run_id}${cancel.resume_at ? ` (it resumes at ${dateTime(cancel.resume_at)})` : ''}`);
  return hints;
}

/** `3 failed runs of workflow x.`, or which part of them is shown (`continued`: a page after a --cursor). */
export function runsPageSummary(page: WorkflowRunPage, ref: string, status?: string, continued = false): string {
  const { total, offset, total_is_exact } = page.pagination;
  const shown = page.runs.length;
  const which = status ? `${status} run` : 'run';
  // The server counts only 100 rows past the page: its total then means "at least".
  const all = total_is_exact === false ? `more than ${plural(total - 1, which)}` : plural(total, which);
  if (continued) return `${plural(shown, which)} after the cursor, of ${all} of workflow ${ref}.`;
  if (shown === 0 || (offset === 0 && shown >= total)) return `${all} of workflow ${ref}.`;
  return `The newest ${offset + shown} of ${all} of workflow ${ref}.`;
}

export interface RunsFlags {
  status?: WorkflowRunStatus;
  limit: number;
  cursor?: string;
  json?: boolean;
}

export async function listRuns(ref: string, flags: RunsFlags, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withWorkflowErrors(ref, 'runs', async () => {
    const page = await withSpinner(`Loading runs of workflow ${ref}`, () =>
      client.get<WorkflowRunPage>(`${workflowPath(ref)}/runs`, { auth: 'bearer', query: { status: flags.status, pageSize: flags.limit, cursor: flags.cursor } }),
    );
    if (flags.json) return printJson(page);
    const more = page.runs.length < page.pagination.total && flags.limit < 100 && !flags.cursor ? [`Show more: --limit <n> (up to 100)`] : [];
    const next = page.pagination.next_cursor
      ? [`Next page: liya workflows runs ${ref}${flags.status ? ` --status ${flags.status}` : ''} --limit ${flags.limit} --cursor ${page.pagination.next_cursor}`]
      : [];
    await show(
      h(
        Stack,
        null,
        h(Table, {
          headers: ['RUN', 'STATUS', 'TRIGGERED BY', 'STEPS', 'STARTED', 'COMPLETED', 'ACTIONS'],
          rows: runRows(page.runs),
          align: ['left', 'left', 'left', 'right'],
          empty: flags.status ? `No ${flags.status} runs.` : 'No runs.',
        }),
        h(StatusLine, {
          kind: 'info',
          message: runsPageSummary(page, ref, flags.status, flags.cursor !== undefined),
          hints: [...runHints(page.runs), ...more, ...next, ...(page.pagination.total === 0 && !flags.status ? [`Run it: liya workflows run ${ref} --input input.json`] : [])],
        }),
      ),
    );
  });
}

/**
 * Why the run cannot be retried or cancelled, from what the server says it can do (can_retry,
 * can_cancel): said before asking, as a sentence instead of a bare 409.
 */
function refusal(run: WorkflowRunDetail, operation: 'retry' | 'cancel'): CliError {
  const key = run.workflow_key;
  if (operation === 'retry') {
    const why =
      run.status === 'failed'
        ? `It has no failed step to continue from (it failed at its trigger or outside a step); start a new run: liya workflows run ${key}`
        : 'Only a failed run can be retried.';
    return new CliError(`Run ${run.run_id} cannot be retried: it is ${run.status}`, [why, `Runs that can be retried say "retry" in: liya workflows runs ${key}`], EXIT_FAILURE);
  }
  const ended = ['completed', 'failed', 'rejected', 'cancelled'].includes(run.status);
  return new CliError(
    `Run ${run.run_id} cannot be cancelled: it is ${run.status}`,
    [...(ended ? ['It has ended already.'] : []), `Runs that can be cancelled say "cancel" in: liya workflows runs ${key}`],
    EXIT_FAILURE,
  );
}

export async function retryRun(runId: string, flags: { json?: boolean }, command: Command): Promise<number | void> {
  // The retry answers once the remaining steps have run, like a synchronous run.
  const client = commandContext(command).withApiKey({ timeoutMs: WORKFLOW_RUN_TIMEOUT_MS });
  return withWorkflowErrors(runId, 'retry', async () => {
    const { run, result } = await withSpinner(`Retrying run ${runId}`, async () => {
      const run = await loadRun(client, runId);
      if (!run.can_retry) throw refusal(run, 'retry');
      return { run, result: await client.post<WorkflowRunResult>(runActionPath(run, 'retry'), { auth: 'bearer', body: {} }) };
    });
    const printer = flags.json ? null : new TracePrinter(process.stdout);
    result.trace.forEach((entry) => printer?.step(entry));
    await printRunResult(result, run.workflow_key, printer);
    return SUCCESSFUL_WORKFLOW_RUN_STATUSES.has(result.status) ? 0 : EXIT_FAILURE;
  });
}

export async function cancelRun(runId: string, flags: { json?: boolean }, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withWorkflowErrors(runId, 'cancel', async () => {
    const { before, run } = await withSpinner(`Cancelling run ${runId}`, async () => {
      const before = await loadRun(client, runId);
      if (!before.can_cancel) throw refusal(before, 'cancel');
      const { run } = await client.post<{ run: WorkflowRunSummary }>(runActionPath(before, 'cancel'), { auth: 'bearer', body: {} });
      return { before, run };
    });
    const cancelled = run.status === 'cancelled';
    if (flags.json) {
      printJson(run);
      return cancelled ? 0 : EXIT_FAILURE;
    }
    await show(
      h(StatusLine, {
        kind: cancelled ? 'success' : 'warning',
        message: cancelled ? `Run ${run.run_id} cancelled` : `Run ${run.run_id} is ${run.status}, not cancelled`,
        lines: [`workflow ${before.workflow_key} · was ${before.status} · ${plural(run.steps, 'step')} done`],
      }),
    );
    return cancelled ? 0 : EXIT_FAILURE;
  });
}
