// How commands put things on the terminal: ink elements rendered once (final frame, then unmount),
// JSON for scripts, and a spinner on stderr only where someone is watching.
import { render } from 'ink';
import type { ReactNode } from 'react';
import { ApiError } from './api-client.js';
import { describeError, type FieldLabels } from './errors.js';
import { PasswordPrompt } from './ui/password-prompt.js';
import { Spinner } from './ui/spinner.js';
import { StatusLine } from './ui/status.js';

type Stream = NodeJS.WriteStream;

function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.CI === '0' || env.CI === 'false') return false;
  return Boolean(env.CI || env.CONTINUOUS_INTEGRATION || env.BUILD_NUMBER);
}

/** A terminal a person is looking at (not a pipe, not CI). */
export function isInteractive(stream: Stream = process.stdout): boolean {
  return Boolean(stream.isTTY) && !inCi();
}

// Pipes and files have no width: ink would assume 80 columns and wrap long lines. Output for a
// file or another program reads better unwrapped, so give such streams a wide one.
const PIPE_COLUMNS = 500;

function widen(stream: Stream): Stream {
  if (!stream.isTTY && !stream.columns) (stream as { columns?: number }).columns = PIPE_COLUMNS;
  return stream;
}

/** Renders `node` once and unmounts; non-interactive streams (pipes, CI) get the final frame only. */
export async function show(node: ReactNode, stream: Stream = process.stdout): Promise<void> {
  const instance = render(node, { stdout: widen(stream), patchConsole: false, exitOnCtrlC: false });
  instance.unmount();
  await instance.waitUntilExit();
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Runs `task` with a spinner on stderr when interactive; otherwise just runs it. */
export async function withSpinner<T>(label: string, task: () => Promise<T>): Promise<T> {
  if (!isInteractive(process.stderr)) return task();
  const instance = render(<Spinner label={label} />, { stdout: process.stderr, patchConsole: false, exitOnCtrlC: false });
  try {
    return await task();
  } finally {
    instance.clear();
    instance.unmount();
    await instance.waitUntilExit();
  }
}

/**
 * Prints the error on stderr and returns the exit code to use. `hint` adds a command's own advice
 * for an API error (after the general hints).
 */
export async function reportError(err: unknown, labels?: FieldLabels, hint?: (err: ApiError) => string | undefined): Promise<number> {
  const report = describeError(err, labels);
  const hints = [...report.hints];
  const extra = hint && err instanceof ApiError ? hint(err) : undefined;
  if (extra && !hints.includes(extra)) hints.push(extra);
  await show(<StatusLine kind="error" message={report.title} lines={report.issues} hints={hints} />, process.stderr);
  return report.exitCode;
}

/** Runs `task`; an API error is reported by `report` (any other error goes on to the usual reporting). */
export async function withApiErrors(task: () => Promise<number | void>, report: (err: ApiError) => Promise<number>): Promise<number | void> {
  try {
    return await task();
  } catch (err) {
    if (err instanceof ApiError) return report(err);
    throw err;
  }
}

/** Asks for a password on the terminal; null when cancelled. Needs a TTY stdin with raw mode. */
export async function promptPassword(label: string): Promise<string | null> {
  let answer: string | null = null;
  const instance = render(
    <PasswordPrompt
      label={label}
      onSubmit={(value) => {
        answer = value;
        instance.unmount();
      }}
      onCancel={() => instance.unmount()}
    />,
    { stdout: process.stderr, patchConsole: false, exitOnCtrlC: false, interactive: true },
  );
  await instance.waitUntilExit();
  return answer;
}
