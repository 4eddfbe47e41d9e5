// A poison run: whichever process executes it dies (here: the test kills it with SIGKILL the moment
// the run's http_request step reaches the recorder, as an out-of-memory crash would end it). Each
// new process recovers the run and dies again, until the run has crashed MAX_RUN_CRASHES + 1 times:
// then the next process fails it with RUN_CRASHED instead of executing it, and stays up.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RUN_CRASHES } from '../../server/workflows/engine/run-workflow.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import pg from 'pg';
import { answeredDuring, expectAnsweredDuring } from '../support/health-watch.js';
import { ADMIN_SECRET, createTestDatabase } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

const HEARTBEAT_MS = 300;
let databaseUrl: string;
let recorder: http.Server;
let recorderUrl: string;
const procs: ServerProcess[] = [];
let current: ServerProcess | null = null;
let hits = 0;

/**
 * Starts a process; it is the one the recorder kills from the moment it exists (it may take the run
 * up while it is still starting). Resolves null when it died before it was ready.
 */
const start = async (name: string): Promise<ServerProcess | null> => {
  try {
    return await startServerProcess(
      name,
      { LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, ADMIN_SECRET, WORKER: '1', HEARTBEAT_MS: String(HEARTBEAT_MS), OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' },
      undefined,
      (proc) => {
        procs.push(proc);
        current = proc;
      },
    );
  } catch (err) {
    if (current?.child.signalCode === 'SIGKILL') return null;
    throw err;
  }
};

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  // Every request to /poison kills the process that sent it, before it can answer.
  recorder = http.createServer((req, res) => {
    if (req.url === '/poison') {
      hits++;
      current?.child.kill('SIGKILL');
      res.on('close', () => undefined);
      return;
    }
    res.end('ok');
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const proc of procs) await stopServerProcess(proc);
  recorder?.closeAllConnections();
  await new Promise((resolve) => recorder?.close(resolve));
});

describe('a run that kills every process executing it', () => {
  it(`is continued ${MAX_RUN_CRASHES} times after crashes, then failed with RUN_CRASHED; the server stays up`, { timeout: 120_000 }, async () => {
    const proc = (await start('first'))!;
    const a: SignedUpTenant = await signupTenant(proc.api, { companyName: 'Poison A' });
    const b: SignedUpTenant = await signupTenant(proc.api, { companyName: 'Poison B' });
    const poison = await createWorkflow(proc.api, a.apiKey, 'Poison', [
      MANUAL_TRIGGER,
      { id: 'boom', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${recorderUrl}/poison`, timeout_ms: 60_000 } },
    ]);
    const other = await createWorkflow(proc.api, b.apiKey, 'Fine', [MANUAL_TRIGGER, { id: 'out', step_type: 'end', config: { output: { ok: true } } }]);
    const accepted = await proc.api.post(`/v1/workflows/${poison.id}/run`, { input: {}, mode: 'async' }, { headers: bearer(a.apiKey) });
    expect(accepted.status, accepted.text).toBe(202);
    const runId = accepted.body.data.run_id as string;

    // Each process that takes the run up dies at its step: the first, then one per recovery (which
    // may come while that process is still starting).
    for (let crash = 1; crash <= MAX_RUN_CRASHES + 1; crash++) {
      await waitFor(() => hits >= crash, `crash ${crash}`, 30_000);
      await current!.exited;
      if (crash <= MAX_RUN_CRASHES) await start(`after crash ${crash}`);
    }
    const last = (await start('survivor'))!;
    const watched = await answeredDuring(last.url, async () => {
      const run = await waitFor(async () => {
        const res = await last.api.get(`/v1/workflows/${poison.id}/runs/${runId}`, { headers: bearer(a.apiKey) });
        return res.body?.data?.run?.status === 'failed' ? res.body.data.run : null;
      }, 'the poison run to be failed', 30_000);
      const otherRun = await last.api.post(`/v1/workflows/${other.id}/run`, { input: {} }, { headers: bearer(b.apiKey) });
      return { failed: run, otherRun };
    });
    const { failed, otherRun } = watched.result;
    console.log(`[poison run] ${hits} processes died executing it, then it failed; ${watched.answeredDuring} health probes answered on the survivor meanwhile`);

    expect(failed.error).toMatchObject({ code: 'RUN_CRASHED', step_id: 'boom', crashes: MAX_RUN_CRASHES + 1 });
    expect(failed.can_retry).toBe(true);
    expect(hits).toBe(MAX_RUN_CRASHES + 1);
    expect(otherRun.body.data.status).toBe('completed');
    expectAnsweredDuring(watched);
    // The survivor is still up, and no further attempt reached the step while it beat four more
    // times (a dead owner is noticed after four missed beats, so a retry would have come by then).
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const beats = new Set<string>();
      await waitFor(async () => {
        const { rows } = await db.query<{ seen: string }>(`select max(last_seen_at)::text as seen from worker_heartbeats where worker_id like 'process:%'`);
        beats.add(rows[0]!.seen);
        return beats.size > 4;
      }, 'four more heartbeats of the survivor', 30_000);
    } finally {
      await db.end();
    }
    expect(last.child.exitCode).toBeNull();
    expect(last.child.signalCode).toBeNull();
    expect(hits).toBe(MAX_RUN_CRASHES + 1);
  });
});
