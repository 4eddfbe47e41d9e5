// `--input <file|->`: a JSON object read from a file or stdin, for the commands that run something
// (intents, workflows). Anything but a JSON object is a usage error (exit 2) with the command's hints.
import { readFile } from 'node:fs/promises';
import { createElement as h } from 'react';
import { CliError } from './errors.js';
import { show } from './output.js';
import { StatusLine } from './ui/status.js';

/** What each command tells the user when its input is wrong. */
export interface InputHints {
  /** When the file cannot be read. */
  unreadable: string;
  /** When the input is empty. */
  empty: string;
  /** When the input is not JSON. */
  invalidJson: string[];
  /** When the JSON is not an object. */
  notObject: string;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    await show(h(StatusLine, { kind: 'info', message: 'Reading the input JSON from stdin; end it with Ctrl-D' }), process.stderr);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

export async function readJsonObjectInput(source: string, hints: InputHints): Promise<Record<string, unknown>> {
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
      throw new CliError(`Cannot read the --input file ${source}: ${reason}`, [hints.unreadable]);
    }
  }
  if (!text.trim()) throw new CliError(`The --input from ${where} is empty`, [hints.empty]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new CliError(`The --input from ${where} is not valid JSON: ${(err as Error).message}`, hints.invalidJson);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    throw new CliError(`The --input from ${where} must be a JSON object, not ${kind}`, [hints.notObject]);
  }
  return parsed as Record<string, unknown>;
}
