// How a workflow run is shown: each step of its trace as a line, the output, and the summary line
// on stderr with what to do next (answer, decide, wait, retry). Shared by `liya workflows run`,
// `retry` and the run stream.
import { styleText } from 'node:util';
import { createElement as h } from 'react';
import type { TraceEntry, WorkflowRunResult } from '../server/workflows/workflows.schemas.js';
import { isInteractive, printJson, show } from './output.js';
import { StatusLine, type StatusKind } from './ui/status.js';
import { dateTime, oneLine, plural, segment } from './format.js';

/** The end of a run as the CLI reads it: the run's answer, or the last event of its stream (which carries `error` when the server failed unexpectedly). */
export type RunEnd = WorkflowRunResult & { error?: { code?: string; message?: string } };

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

const RUN_STATUS_KIND: Partial<Record<WorkflowRunResult['status'], StatusKind>> = { completed: 'success', needs_input: 'info', waiting: 'warning', awaiting_approval: 'warning' };

/** One line about the run: status, steps, run and conversation. */
export function workflowRunSummary(r: Pick<WorkflowRunResult, 'status' | 'run_id' | 'conversation_id' | 'trace'>): string {
  return [r.status, plural(r.trace.length, 'step'), `run ${r.run_id}`, `conversation ${r.conversation_id}`].join(' · ');
}

const shellQuote = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

/** The summary on stderr: what happened, why it failed, what to do next. */
async function showRunSummary(result: RunEnd, key: string): Promise<void> {
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
export async function printRunResult(result: RunEnd, key: string, printer: TracePrinter | null): Promise<void> {
  if (!printer) return printJson(result);
  printer.output(result.output);
  await showRunSummary(result, key);
}
