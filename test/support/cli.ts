// Runs the real `liya` CLI (bin/liya.mjs) as a subprocess, as a user would.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { inject } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRunOptions {
  /** Added to (and overriding) this process's environment; undefined removes a variable. */
  env?: Record<string, string | undefined>;
  /** Written to the process's stdin, which is then closed. */
  stdin?: string;
  /** Resolves with the output so far once stdout or stderr contains this; the caller stops the process. */
  until?: string;
}

/**
 * Output without colours or cursor codes; CI=true makes ink print its final frame once. The CLI
 * runs the test run's own build of the current sources (LIYA_DIST), never a dist/ left from before.
 */
export function runLiya(args: string[], options: CliRunOptions = {}): Promise<CliRun> & { child: ChildProcess } {
  const env: Record<string, string | undefined> = {
    ...process.env,
    CI: 'true',
    NO_COLOR: '1',
    FORCE_COLOR: undefined,
    LIYA_DIST: inject('liyaDist'),
    ...options.env,
  };
  const child = spawn(process.execPath, ['bin/liya.mjs', ...args], {
    cwd: root,
    env: env as NodeJS.ProcessEnv,
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  let stdout = '';
  let stderr = '';
  const promise = new Promise<CliRun>((resolve, reject) => {
    const check = () => {
      if (options.until && (stdout + stderr).includes(options.until)) resolve({ code: null, stdout, stderr });
    };
    child.stdout!.on('data', (d: Buffer) => {
      stdout += stripVTControlCharacters(d.toString());
      check();
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += stripVTControlCharacters(d.toString());
      check();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return Object.assign(promise, { child });
}
