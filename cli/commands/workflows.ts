// `liya workflows ...`: the tenant's workflows through the API key routes: list (deployed and
// active), show (the live steps in order with their successors, and the versions), deploy, toggle,
// and run, synchronously or over the streaming endpoint (Server-Sent Events), printing each step
// of the trace, the output and a line about the run. Runs are durable: `runs` lists a workflow's
// runs, `retry` continues a failed one from where it failed, `cancel` stops one that waits.
import { readFile } from 'node:fs/promises';
import { styleText } from 'node:util';
import { Command, InvalidArgumentError } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { ApiError, type ApiClient } from '../api-client.js';
import { commandContext, type GlobalOptions } from '../context.js';
import { CliError, EXIT_FAILURE, type FieldLabels } from '../errors.js';
import { isInteractive, printJson, reportError, show, withApiErrors, withSpinner } from '../output.js';
import { parseInteger } from '../options.js';
import { postEventStream, StreamCancelled, StreamIdle, type JsonEvent, type StreamOutcome } from '../sse.js';
import { Details } from '../ui/details.js';
import { Stack } from '../ui/stack.js';
import { StatusLine, type StatusKind } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { dateTime, oneLine, plural, segment } from '../format.js';

// ---------------------------------------------------------------- API types

export interface WorkflowStep {
  id: string;
  step_type: string;
  name: string | null;
  action_id: string | null;
  action_name: string | null;
  config: Record<string, unknown>;
  step_order: number;
  on_success_step_id: string | null;
  on_failure_step_id: string | null;
}

export type WorkflowStatus = 'draft' | 'active' | 'inactive' | 'error';

export interface Workflow {
  id: string;
  tenant_id: string;
  name: string;
  workflow_key: string;
  description: string | null;
  is_active: boolean;
  status: WorkflowStatus;
  trigger_type: string;
  trigger_config: { slug: string | null; has_secret: boolean } | null;
  max_concurrent_runs: number | null;
  version: number | null;
  has_draft: boolean;
  draft_steps: WorkflowStep[] | null;
  created_at: string;
  updated_at: string;
  steps: WorkflowStep[];
}

export type WorkflowListItem = Omit<Workflow, 'draft_steps'> & { endpoint: string; method: 'POST' };

export interface WorkflowVersion {
  version: number;
  name: string;
  description?: string | null;
  steps_count: number;
  created_by: string | null;
  created_at: string;
}

export interface TraceEntry {
  step_id: string | null;
  step_type: string;
  name: string;
  status: string;
  input: unknown;
  output: unknown;
  error: string | null;
  started_at: string;
  completed_at: string;
}

export const WORKFLOW_RUN_STATUSES = ['running', 'completed', 'needs_input', 'awaiting_approval', 'waiting', 'rejected', 'cancelled', 'failed'] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/** The end of a run: the `data` of POST /v1/workflows/{ref}/run (and of a retry), and the last event of the stream. */
export interface WorkflowRunResult {
  run_id: string;
  conversation_id: string;
  status: WorkflowRunStatus;
  output: unknown;
  trace: TraceEntry[];
  /** The approval a run `awaiting_approval` waits for. */
  approval_id?: string | null;
  /** When a run `waiting` at a delay goes on. */
  resume_at?: string | null;
  /** Only when the server failed unexpectedly during a stream. */
  error?: { code?: string; message?: string };
}

/** A run in a workflow's list of runs (GET /v1/workflows/{ref}/runs), and the run of a cancel. */
export interface WorkflowRunSummary {
  run_id: string;
  conversation_id: string;
  /** null for a builder test run. */
  version: number | null;
  scope: 'live' | 'test';
  status: WorkflowRunStatus;
  triggered_by: string;
  output: unknown;
  error: Record<string, unknown> | null;
  steps: number;
  can_retry: boolean;
  can_cancel: boolean;
  approval_id: string | null;
  resume_at: string | null;
  started_at: string;
  completed_at: string | null;
}

/** One run by its id alone (GET /v1/workflows/runs/{runId}): the summary with its workflow, input and trace. */
export interface WorkflowRunDetail extends WorkflowRunSummary {
  workflow_id: string;
  workflow_key: string;
  input: Record<string, unknown>;
  trace: TraceEntry[];
}

export interface WorkflowRunPage {
  runs: WorkflowRunSummary[];
  pagination: { total: number; limit: number; offset: number };
}

/**
 * Statuses a run (or a retry) may answer with and still count as done (exit code 0): completed, or
 * paused where the workflow means to wait (for input, at a delay, for an approval); the run goes on.
 */
export const SUCCESSFUL_WORKFLOW_RUN_STATUSES: ReadonlySet<string> = new Set(['completed', 'needs_input', 'waiting', 'awaiting_approval']);

/** The time limit of a synchronous run (model calls, web requests) unless --timeout / LIYA_TIMEOUT says otherwise. */
export const WORKFLOW_RUN_TIMEOUT_MS = 300_000;

/**
 * How long the run stream may stay silent (no event, no heartbeat) unless --timeout / LIYA_TIMEOUT
 * says otherwise. The server sends a heartbeat every 15 s, so only a stuck connection hits it.
 */
export const WORKFLOW_STREAM_IDLE_MS = 120_000;

/** The events that end a run stream. */
const FINAL_EVENTS: ReadonlySet<string> = new Set(['run.completed', 'run.waiting', 'run.awaiting_approval', 'run.failed']);

const workflowPath = (ref: string) => `/v1/workflows/${segment(ref)}`;


// ---------------------------------------------------------------- errors

/** What to do next, by error code (on top of the general hints). */
const WORKFLOW_HINTS: Record<string, string> = {
  PAYLOAD_TOO_LARGE: 'The --input is too large for the server.',
};

/** Validation issues name what the user typed. */
const RUN_FIELD_LABELS: FieldLabels = { input: '--input', conversation_id: '--conversation', workflowIdOrKey: '<ref>' };
const RUNS_FIELD_LABELS: FieldLabels = { status: '--status', pageSize: '--limit', workflowIdOrKey: '<workflow>' };
const RUN_ID_FIELD_LABELS: FieldLabels = { runId: '<run>' };

type Operation = 'list' | 'show' | 'deploy' | 'toggle' | 'run' | 'runs' | 'retry' | 'cancel';

const FIELD_LABELS: Partial<Record<Operation, FieldLabels>> = { run: RUN_FIELD_LABELS, runs: RUNS_FIELD_LABELS, retry: RUN_ID_FIELD_LABELS, cancel: RUN_ID_FIELD_LABELS };

/** For retry and cancel, `ref` is the run id. */
function hintFor(err: ApiError, ref: string, operation: Operation): string | undefined {
  const onRun = operation === 'retry' || operation === 'cancel';
  if (err.code === 'NOT_FOUND') {
    if (operation === 'show') return `A workflow is found once deployed (liya workflows deploy ${ref}); list the active ones: liya workflows list`;
    if (operation === 'run') return `Only deployed workflows that are switched on run; list them: liya workflows list`;
    if (onRun) return 'Check the run id; a workflow\'s runs are listed by: liya workflows runs <workflow>';
    return 'List the deployed, active workflows: liya workflows list';
  }
  // The run changed between our look at it and the request (another client acted, a delay ended).
  if (onRun && err.status === 409) return `See what the run can do now (the ACTIONS column): liya workflows runs <workflow>`;
  if (err.code === 'DEPLOY_REQUIRED') return `Deploy it first: liya workflows deploy ${ref}`;
  if (err.code === 'INVALID_INPUT' && operation === 'deploy') return `Fix the steps (PATCH /v1/workflows/${ref} with steps), then deploy again.`;
  return WORKFLOW_HINTS[err.code];
}

/** The error as for every command (title, issues, exit code), with hints for workflows. */
const reportWorkflowError = (err: unknown, ref: string, operation: Operation) =>
  reportError(err, FIELD_LABELS[operation] ?? { workflowIdOrKey: '<ref>' }, (e) => hintFor(e, ref, operation));

/** Runs `task`; an API error is reported with the workflow hints (others go to the usual reporting). */
const withWorkflowErrors = (ref: string, operation: Operation, task: () => Promise<number | void>) =>
  withApiErrors(task, (err) => reportWorkflowError(err, ref, operation));

// ---------------------------------------------------------------- the --input file

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    await show(h(StatusLine, { kind: 'info', message: 'Reading the input JSON from stdin; end it with Ctrl-D' }), process.stderr);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

const INPUT_EXAMPLE = 'For example {"amount": 150} (the trigger payload, {{trigger.amount}} in the steps).';

/** The run's input object from a JSON file or stdin (`-`); anything but a JSON object is a usage error (exit 2). */
export async function readWorkflowInput(source: string): Promise<Record<string, unknown>> {
  const where = source === '-' ? 'stdin' : source;
  let text: string;
  if (source === '-') {
    text = await readStdin();
  } else {
    try {
      text = await readFile(source, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
      throw new CliError(`Cannot read the --input file ${source}: ${reason}`, ['Give a JSON file holding the input object, or - to read it from stdin.']);
    }
  }
  if (!text.trim()) throw new CliError(`The --input from ${where} is empty`, [`It must hold a JSON object. ${INPUT_EXAMPLE}`]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new CliError(`The --input from ${where} is not valid JSON: ${(err as Error).message}`, [INPUT_EXAMPLE]);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    throw new CliError(`The --input from ${where} must be a JSON object, not ${kind}`, [INPUT_EXAMPLE]);
  }
  return parsed as Record<string, unknown>;
}

// ---------------------------------------------------------------- rendering a run

type Style = Parameters<typeof styleText>[0];

/** Milliseconds between two ISO times, as text. */
export function stepDuration(entry: Pick<TraceEntry, 'started_at' | 'completed_at'>): string {
  const ms = Date.parse(entry.completed_at) - Date.parse(entry.started_at);
  return Number.isFinite(ms) ? `${Math.max(0, ms)} ms` : '? ms';
}

/** The question of a step waiting for input, when it has one. */
function questionOf(entry: TraceEntry): string | null {
  const output = entry.output as { question?: unknown } | null;
  return output && typeof output === 'object' && typeof output.question === 'string' ? output.question : null;
}

/** One step of the trace as a line: `✓ check condition 3 ms`, with the error of a failed one and the question of a paused one. */
export function traceLine(entry: TraceEntry, paint: (style: Style, text: string) => string = (_s, t) => t): string {
  const symbol =
    entry.status === 'completed' ? paint('green', '✓') : entry.status === 'failed' ? paint('red', '✗') : entry.status === 'needs_input' ? paint('yellow', '⏸') : paint('yellow', '•');
  const id = entry.step_id ?? '(step)';
  const name = entry.name && entry.name !== entry.step_id ? ` ${paint('dim', `(${oneLine(entry.name, 80)})`)}` : '';
  const status = ['completed', 'failed', 'needs_input'].includes(entry.status) ? '' : ` ${entry.status}`;
  let line = `${symbol} ${paint('bold', id)}${name} ${entry.step_type} ${paint('dim', stepDuration(entry))}${status}`;
  if (entry.error) line += `: ${oneLine(entry.error, 300)}`;
  const question = entry.status === 'needs_input' ? questionOf(entry) : null;
  if (question) line += `: asks "${oneLine(question, 300)}"`;
  return line;
}

/** Steps as plain lines on `out` (no re-rendering, so pipes and CI read it as a terminal does). */
export class TracePrinter {
  private readonly colors: boolean;

  constructor(private readonly out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout) {
    this.colors = isInteractive(out as NodeJS.WriteStream);
  }

  step(entry: TraceEntry): void {
    this.out.write(`${traceLine(entry, (style, text) => (this.colors ? styleText(style, text) : text))}\n`);
  }

  /** The run's output as pretty JSON (nothing when there is none). */
  output(value: unknown): void {
    if (value === null || value === undefined) return;
    this.out.write(`${JSON.stringify(value, null, 2)}\n`);
  }
}

const RUN_STATUS_KIND: Record<string, StatusKind> = { completed: 'success', needs_input: 'info', waiting: 'warning', awaiting_approval: 'warning' };

/** One line about the run: status, steps, run and conversation. */
export function workflowRunSummary(r: Pick<WorkflowRunResult, 'status' | 'run_id' | 'conversation_id' | 'trace'>): string {
  return [r.status, plural(r.trace.length, 'step'), `run ${r.run_id}`, `conversation ${r.conversation_id}`].join(' · ');
}

const shellQuote = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

/** The summary on stderr: what happened, why it failed, what to do next. */
async function showRunSummary(result: WorkflowRunResult, key: string): Promise<void> {
  const lines: string[] = [];
  const hints: string[] = [];
  const last = result.trace.at(-1);
  if (result.status === 'needs_input') {
    const question = last ? questionOf(last) : null;
    if (question) lines.push(`question: ${oneLine(question, 500)}`);
    hints.push(`Answer it: echo '{"message": "<answer>"}' | liya workflows run ${shellQuote(key)} --input - --conversation ${result.conversation_id}`);
  } else if (result.status === 'awaiting_approval') {
    if (result.approval_id) {
      lines.push(`approval ${result.approval_id}`);
      hints.push(`Decide it: liya approvals decide ${result.approval_id} approve|reject [--comment <text>]`);
    }
  } else if (result.status === 'waiting') {
    if (result.resume_at) lines.push(`resumes at ${dateTime(result.resume_at)}`);
    if (result.run_id) hints.push(`It goes on by itself; to stop it: liya workflows cancel ${result.run_id}`);
  } else if (result.status !== 'completed') {
    const failed = [...result.trace].reverse().find((s) => s.status === 'failed');
    if (failed?.error) lines.push(`step ${failed.step_id ?? failed.name} failed: ${oneLine(failed.error, 500)}`);
    if (result.error?.message) lines.push(`${result.error.code ?? 'ERROR'}: ${result.error.message}`);
    // The server retries a run that failed at a step after others completed (can_retry, which a run's
    // answer does not carry); a failed trigger means a new run.
    if (result.status === 'failed' && result.run_id && failed?.step_id && result.trace.some((s) => s.status === 'completed')) {
      hints.push(`Once the cause is fixed, continue it from the failed step: liya workflows retry ${result.run_id}`);
    }
  }
  if (result.run_id) hints.push(`Run details: GET /v1/workflows/${segment(key)}/runs/${result.run_id}`);
  await show(h(StatusLine, { kind: RUN_STATUS_KIND[result.status] ?? 'error', message: workflowRunSummary(result), lines, hints }), process.stderr);
}

/**
 * The end of a run as `workflows run` prints it: with --json (no printer) the result alone;
 * otherwise the output after the trace lines `printer` has printed, then the summary on stderr.
 */
async function printRunResult(result: WorkflowRunResult, key: string, printer: TracePrinter | null): Promise<void> {
  if (!printer) return printJson(result);
  printer.output(result.output);
  await showRunSummary(result, key);
}

// ---------------------------------------------------------------- the run

interface RunFlags {
  input?: string;
  conversation?: string;
  stream?: boolean;
  json?: boolean;
}

/** A run result from a final stream event, completed with what the stream told before (an unexpected failure carries no run). */
function resultFromStream(final: JsonEvent, started: { run_id: string; conversation_id: string } | undefined, trace: TraceEntry[]): WorkflowRunResult {
  const data = (typeof final.data === 'object' && final.data !== null ? final.data : {}) as Partial<WorkflowRunResult>;
  return {
    ...data,
    run_id: data.run_id ?? started?.run_id ?? '',
    conversation_id: data.conversation_id ?? started?.conversation_id ?? '',
    status: data.status ?? (final.event === 'run.completed' ? 'completed' : 'failed'),
    output: data.output ?? null,
    trace: Array.isArray(data.trace) ? data.trace : trace,
  };
}

async function runWorkflow(ref: string, flags: RunFlags, command: Command): Promise<number> {
  const ctx = commandContext(command);
  const client = ctx.withApiKey({ timeoutMs: WORKFLOW_RUN_TIMEOUT_MS }); // a usage error (exit 2) when there is no key
  const input = flags.input === undefined ? {} : await readWorkflowInput(flags.input);
  const body = { input, ...(flags.conversation !== undefined ? { conversation_id: flags.conversation } : {}) };
  const printer = flags.json ? null : new TracePrinter(process.stdout);

  let result: WorkflowRunResult;
  let key = ref;
  if (!flags.stream) {
    try {
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
      const why = interruption instanceof StreamIdle ? `the stream sent nothing for ${interruption.ms / 1000} s` : (interruption?.message ?? 'the stream ended early');
      await show(
        h(StatusLine, {
          kind: 'error',
          message: `The run of ${key} did not report its end: ${why}`,
          hints: [...runHints, ...(interruption instanceof StreamIdle ? ['Allow longer silences with --timeout <seconds>.'] : [])],
        }),
        process.stderr,
      );
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

/** `3 failed runs of workflow x.`, or which part of them is shown. */
export function runsPageSummary(page: WorkflowRunPage, ref: string, status?: string): string {
  const { total, offset } = page.pagination;
  const shown = page.runs.length;
  const which = status ? `${status} run` : 'run';
  if (shown === 0 || (offset === 0 && shown >= total)) return `${plural(total, which)} of workflow ${ref}.`;
  return `The newest ${offset + shown} of ${plural(total, which)} of workflow ${ref}.`;
}

interface RunsFlags {
  status?: WorkflowRunStatus;
  limit: number;
  json?: boolean;
}

async function listRuns(ref: string, flags: RunsFlags, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  return withWorkflowErrors(ref, 'runs', async () => {
    const page = await withSpinner(`Loading runs of workflow ${ref}`, () =>
      client.get<WorkflowRunPage>(`${workflowPath(ref)}/runs`, { auth: 'bearer', query: { status: flags.status, pageSize: flags.limit } }),
    );
    if (flags.json) return printJson(page);
    const more = page.runs.length < page.pagination.total && flags.limit < 100 ? [`Show more: --limit <n> (up to 100)`] : [];
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
          message: runsPageSummary(page, ref, flags.status),
          hints: [...runHints(page.runs), ...more, ...(page.pagination.total === 0 && !flags.status ? [`Run it: liya workflows run ${ref} --input input.json`] : [])],
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

async function retryRun(runId: string, flags: { json?: boolean }, command: Command): Promise<number | void> {
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

async function cancelRun(runId: string, flags: { json?: boolean }, command: Command): Promise<number | void> {
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

// ---------------------------------------------------------------- show

/** A step's type, with the action it runs. */
function stepTypeText(step: WorkflowStep): string {
  return step.step_type === 'action' && step.action_id ? `action:${step.action_id}` : step.step_type;
}

/** Where the run goes after `step` (the next step by order when it names none). */
export function successorsText(step: WorkflowStep, nextByOrder: string | null): string {
  const next = step.on_success_step_id ?? nextByOrder;
  const onFailure = step.on_failure_step_id;
  const end = '(end)';
  const failurePart = onFailure ? [`on failure → ${onFailure}`] : [];
  switch (step.step_type) {
    case 'end':
      return end;
    case 'condition':
      return [`true → ${next ?? end}`, `false → ${onFailure ?? end}`].join(' · ');
    case 'switch': {
      const cases = Array.isArray(step.config.cases) ? (step.config.cases as { value?: unknown; next_ref?: unknown }[]) : [];
      const parts = cases.map((c) => `${JSON.stringify(c.value)} → ${String(c.next_ref)}`);
      const fallback = typeof step.config.default_ref === 'string' ? step.config.default_ref : end;
      return [...parts, `default → ${fallback}`, ...failurePart].join(' · ');
    }
    case 'loop': {
      const body = typeof step.config.step_ref === 'string' ? [`each item → ${step.config.step_ref}`] : [];
      return [...body, `then → ${next ?? end}`, ...failurePart].join(' · ');
    }
    default:
      return [`→ ${next ?? end}`, ...failurePart].join(' · ');
  }
}

/** The steps in the order they are defined, with their successors. */
function stepRows(steps: WorkflowStep[]): string[][] {
  const ordered = [...steps].sort((a, b) => a.step_order - b.step_order);
  return ordered.map((step, i) => [String(i + 1), step.id, stepTypeText(step), step.name ?? '—', successorsText(step, ordered[i + 1]?.id ?? null)]);
}

function workflowFields(w: Workflow): [string, string][] {
  const state = w.is_active ? 'on' : 'off';
  return [
    ['Key', w.workflow_key],
    ['Name', w.name],
    ['Status', `${w.status} (${state})`],
    ['Version', w.version === null ? '— (never deployed)' : String(w.version)],
    ['Draft', w.has_draft ? `unpublished changes (liya workflows deploy ${w.workflow_key} publishes them)` : 'none'],
    ['Trigger', w.trigger_type],
    ['ID', w.id],
    ['Description', w.description ? oneLine(w.description, 160) : '—'],
    ['Max concurrent', w.max_concurrent_runs === null ? 'no limit' : String(w.max_concurrent_runs)],
    ['Endpoint', `POST /v1/workflows/${w.workflow_key}/run (and /run/stream)`],
    ['Created', dateTime(w.created_at)],
    ['Updated', dateTime(w.updated_at)],
  ];
}

// ---------------------------------------------------------------- commands

export function workflowsCommand(): Command {
  const workflows = new Command('workflows').description('List, inspect, deploy, switch on/off and run the tenant\'s workflows, and list, retry and cancel their runs; needs --api-key');

  workflows
    .command('list')
    .description('List the tenant\'s deployed, active workflows')
    .option('--json', 'print the workflows as a JSON array')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors('', 'list', async () => {
          const list = await withSpinner('Loading workflows', () => client.get<WorkflowListItem[]>('/v1/workflows', { auth: 'bearer' }));
          if (flags.json) return printJson(list);
          const first = list[0]?.workflow_key;
          await show(
            h(
              Stack,
              null,
              h(Table, {
                headers: ['KEY', 'NAME', 'VERSION', 'TRIGGER', 'STEPS'],
                rows: list.map((w) => [w.workflow_key, oneLine(w.name, 60), w.version === null ? '—' : String(w.version), w.trigger_type, String(w.steps.length)]),
                align: ['left', 'left', 'right', 'left', 'right'],
                empty: 'No active workflows.',
              }),
              h(StatusLine, {
                kind: 'info',
                message: `${plural(list.length, 'active workflow')}.`,
                hints: first
                  ? [`Run one: liya workflows run ${first} --input input.json`, `Details: liya workflows show ${first}`]
                  : ['Create one with POST /v1/workflows, then: liya workflows deploy <ref>'],
              }),
            ),
          );
        });
      }),
    );

  workflows
    .command('show')
    .description('Show one deployed workflow (active or switched off): its live steps in order with their successors, and its versions')
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--json', 'print {workflow, versions} as JSON')
    .action(
      action(async (ref: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors(ref, 'show', async () => {
          const [{ workflow }, { versions }] = await withSpinner(`Loading workflow ${ref}`, () =>
            Promise.all([
              client.get<{ workflow: Workflow }>(workflowPath(ref), { auth: 'bearer' }),
              client.get<{ versions: WorkflowVersion[] }>(`${workflowPath(ref)}/versions`, { auth: 'bearer' }),
            ]),
          );
          if (flags.json) return printJson({ workflow, versions });
          await show(
            h(
              Stack,
              null,
              h(Details, { title: `Workflow ${workflow.name}`, fields: workflowFields(workflow) }),
              h(
                Stack,
                { gap: 0 },
                h(StatusLine, { kind: 'info', message: `Steps (${plural(workflow.steps.length, 'step')}, live version)` }),
                h(Table, { headers: ['#', 'STEP', 'TYPE', 'NAME', 'NEXT'], rows: stepRows(workflow.steps), align: ['right'], empty: 'No steps.' }),
              ),
              h(
                Stack,
                { gap: 0 },
                h(StatusLine, { kind: 'info', message: 'Versions' }),
                h(Table, {
                  headers: ['VERSION', 'NAME', 'STEPS', 'CREATED BY', 'CREATED'],
                  rows: versions.map((v) => [
                    v.version === workflow.version ? `${v.version} (live)` : String(v.version),
                    oneLine(v.name, 60),
                    String(v.steps_count),
                    v.created_by ?? '—',
                    dateTime(v.created_at),
                  ]),
                  align: ['left', 'left', 'right'],
                  empty: 'No versions.',
                }),
              ),
            ),
          );
        });
      }),
    );

  workflows
    .command('deploy')
    .description('Validate the workflow\'s draft and publish it as a new version (the workflow is switched on)')
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--json', 'print the deployed workflow as JSON')
    .action(
      action(async (ref: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors(ref, 'deploy', async () => {
          const deployed = await withSpinner(`Deploying workflow ${ref}`, () =>
            client.post<{ workflow: Workflow; webhook_url?: string; webhook_secret?: string; callback_secret?: string }>(`${workflowPath(ref)}/deploy`, { auth: 'bearer' }),
          );
          const { workflow, ...minted } = deployed;
          // A webhook workflow's first deploy shows its URL and secrets this once: they must not be lost.
          if (flags.json) return printJson({ ...workflow, ...minted });
          const secrets = minted.webhook_secret
            ? [`Webhook URL: ${minted.webhook_url}`, `Webhook secret (shown once): ${minted.webhook_secret}`, `Callback secret (verifies run callbacks): ${minted.callback_secret}`]
            : [];
          await show(
            h(StatusLine, {
              kind: 'success',
              message: `Deployed workflow ${workflow.workflow_key} (${workflow.name}): version ${workflow.version}, status ${workflow.status}`,
              hints: [...secrets, `Run it: liya workflows run ${workflow.workflow_key} --input input.json`],
            }),
          );
        });
      }),
    );

  workflows
    .command('toggle')
    .description('Switch a deployed workflow on or off (an inactive workflow cannot run)')
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--json', 'print the workflow as JSON')
    .action(
      action(async (ref: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withWorkflowErrors(ref, 'toggle', async () => {
          const { workflow } = await withSpinner(`Switching workflow ${ref}`, () => client.patch<{ workflow: Workflow }>(`${workflowPath(ref)}/toggle`, { auth: 'bearer' }));
          if (flags.json) return printJson(workflow);
          const on = workflow.is_active;
          await show(
            h(StatusLine, {
              kind: on ? 'success' : 'warning',
              message: `Workflow ${workflow.workflow_key} is now ${on ? 'on' : 'off'} (status ${workflow.status})`,
              hints: [on ? `Run it: liya workflows run ${workflow.workflow_key} --input input.json` : `It cannot run until switched on again: liya workflows toggle ${workflow.workflow_key}`],
            }),
          );
        });
      }),
    );

  workflows
    .command('run')
    .description(
      'Run a deployed, active workflow (POST /v1/workflows/{ref}/run, or /run/stream with --stream): prints each step of the trace ' +
        '(✓ completed, ✗ failed, ⏸ waiting for input) and the output as JSON on stdout, then a line about the run (status, steps, run, conversation) on stderr',
    )
    .argument('<ref>', 'workflow id or workflow_key')
    .option('--input <file>', 'JSON file with the input object (the trigger payload), or - for stdin (default {})')
    .option('--conversation <id>', 'continue the run of this conversation that waits for input (needs_input); the answer goes in the input as "message"')
    .option('--stream', 'follow the run over Server-Sent Events: each step is printed as it completes')
    .option('--json', 'print only the result {run_id, conversation_id, status, output, trace} as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 the run completed or paused where the workflow waits (needs_input, waiting at a delay or
callback, awaiting_approval); 1 it failed, was refused or the server was unreachable; 2 usage error (unreadable or invalid
--input, missing key). --timeout limits the whole run (default ${WORKFLOW_RUN_TIMEOUT_MS / 1000} s here) or, with --stream, how long
the stream may stay silent (default ${WORKFLOW_STREAM_IDLE_MS / 1000} s). Ctrl-C stops watching; the run goes on on the server.`,
    )
    .action(action((ref: string, flags: RunFlags, command: Command) => runWorkflow(ref, flags, command)));

  workflows
    .command('runs')
    .description('List a workflow\'s runs, newest first: status, how each started, steps done, times, and whether it can be retried or cancelled')
    .argument('<workflow>', 'workflow id or workflow_key')
    .option('--status <status>', `only runs with this status: ${WORKFLOW_RUN_STATUSES.join(', ')}`, parseRunStatus)
    .option('--limit <n>', 'how many runs (1-100)', parseInteger(1, 100), 20)
    .option('--json', 'print {runs, pagination} as JSON')
    .action(action((ref: string, flags: RunsFlags, command: Command) => listRuns(ref, flags, command)));

  workflows
    .command('retry')
    .description('Continue a failed run from the step that failed; prints the trace, the output and a line about the run as run does')
    .argument('<run>', 'run id (liya workflows runs <workflow> lists them)')
    .option('--json', 'print only the result {run_id, conversation_id, status, output, trace} as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 the run completed or paused again (for input, at a delay, for an approval); 1 it failed again
(or ended rejected or cancelled), cannot be retried, or the request failed; 2 usage error (missing key).
--timeout limits the whole retry (default ${WORKFLOW_RUN_TIMEOUT_MS / 1000} s here).`,
    )
    .action(action((runId: string, flags: { json?: boolean }, command: Command) => retryRun(runId, flags, command)));

  workflows
    .command('cancel')
    .description('Cancel a run that waits (at a delay step, for example): it will not go on')
    .argument('<run>', 'run id (liya workflows runs <workflow> lists them)')
    .option('--json', 'print the cancelled run as JSON')
    .action(action((runId: string, flags: { json?: boolean }, command: Command) => cancelRun(runId, flags, command)));

  return workflows;
}
