// A `liya start` child process on a test database (the test run's build of the sources), for tests
// that need several processes on one database or a process to kill.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { createClient, type ApiClient } from './client.js';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ServerProcess {
  name: string;
  child: ChildProcess;
  /** The last 30 kB of its stdout and stderr. */
  output: string;
  exited: Promise<void>;
  /** Its base URL (http://127.0.0.1:<port>). */
  url: string;
  api: ApiClient;
}

/**
 * Starts the process with `env` over the defaults (production, JSON logs, 127.0.0.1, a free port)
 * and resolves once /health/ready answers 200 and `ready(output)` holds.
 */
export async function startServerProcess(
  name: string,
  env: Record<string, string>,
  ready: (output: string) => boolean = () => true,
  /** Called as soon as the process exists, before it is ready (a test that must be able to kill it while it starts). */
  onSpawn?: (proc: ServerProcess) => void,
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['bin/liya.mjs', 'start'], {
    cwd: root,
    env: {
      ...process.env, NODE_ENV: 'production', LOG_FORMAT: 'json', LOG_LEVEL: 'warn', CI: 'true', NO_COLOR: '1', LIYA_DIST: inject('liyaDist'),
      HOST: '127.0.0.1', PORT: String(port), ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc: ServerProcess = {
    name, child, output: '', exited: new Promise((resolve) => child.once('exit', () => resolve())), url: `http://127.0.0.1:${port}`, api: createClient(`http://127.0.0.1:${port}`),
  };
  onSpawn?.(proc);
  const append = (d: Buffer) => (proc.output = (proc.output + d.toString()).slice(-30_000));
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  await waitFor(
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited ${child.exitCode ?? child.signalCode}`);
      return (await proc.api.get('/health/ready').then((r) => r.status === 200, () => false)) && ready(proc.output);
    },
    `${name} to be ready`,
    45_000,
  ).catch((err: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${err.message}\n${proc.output}`);
  });
  return proc;
}

/** SIGTERM, then SIGKILL after 10 s; nothing when it has ended. */
export async function stopServerProcess(proc: ServerProcess | undefined): Promise<void> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
  await proc.exited;
  clearTimeout(timer);
}
