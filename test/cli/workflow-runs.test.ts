// `liya workflows runs|retry|cancel` and `liya approvals decide` as a user runs them: a real
// subprocess (bin/liya.mjs) against a real server, on durable runs (a failed run continued from
// its failed step, a run waiting at a delay, a run waiting for an approval).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAfterDecisionText } from '../../cli/commands/approvals.js';
import { parseRunStatus, runActionsText, runsPageSummary, type WorkflowRunPage } from '../../cli/commands/workflow-runs.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let a: SignedUpTenant;
/** A web service whose /flaky answers HTTP 500 until `healthy`: a step that fails until its cause is fixed. */
let web: http.Server;
let webUrl: string;
let healthy = false;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const SUMMARY = new RegExp(`(\\S+) · (\\d+) steps? · run (${UUID}) · conversation (${UUID})`);

function liya(args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_API_KEY: a.apiKey, LIYA_ADMIN_SECRET: undefined, LIYA_TIMEOUT: undefined, ...options.env };
  return runLiya(args, { ...options, env });
}

const key = () => ({ headers: bearer(a.apiKey) });

const trigger = MANUAL_TRIGGER;

/** Creates and deploys a workflow; returns its workflow_key. */
const deployedKey = async (name: string, steps: unknown[]) => (await createWorkflow(t.api, a.apiKey, name, steps)).workflow_key;

/** Starts a run through the API (not the CLI under test) and returns its result. */
async function startRun(workflowKey: string, input: Record<string, unknown> = {}) {
  const res = await t.api.post(`/v1/workflows/${workflowKey}/run`, { input }, key());
  expect(res.status, res.text).toBe(200);
  return res.body.data as { run_id: string; status: string; approval_id?: string | null; resume_at?: string | null };
}

const runOf = async (workflowKey: string, runId: string) => (await t.api.get(`/v1/workflows/${workflowKey}/runs/${runId}`, key())).body.data?.run;

/** The run's output printed after the trace lines (✓ ✗ ⏸ • ...). */
const outputOf = (stdout: string) => JSON.parse(stdout.split('\n').filter((l) => !/^[✓✗⏸•] /.test(l)).join('\n'));

/** A table row of the run, split on the column gaps. */
const rowOf = (stdout: string, runId: string) => stdout.split('\n').find((l) => l.startsWith(runId))?.split(/ {2,}/);

beforeAll(async () => {
  web = http.createServer((req, res) => {
    req.resume();
    if (!healthy) return res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'CLI Workflow Runs Co' });
}, 120_000);

afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => web?.close(resolve));
});

describe('formatting', () => {
  it('checks --status, and describes actions, pages and the run after a decision', () => {
    expect(parseRunStatus('failed')).toBe('failed');
    expect(parseRunStatus(' Awaiting_Approval ')).toBe('awaiting_approval');
    expect(() => parseRunStatus('done')).toThrow('Not a run status; use one of running, completed, needs_input, awaiting_approval, waiting, rejected, cancelled, failed.');

    expect(runActionsText({ can_retry: true, can_cancel: false })).toBe('retry');
    expect(runActionsText({ can_retry: false, can_cancel: true })).toBe('cancel');
    expect(runActionsText({ can_retry: false, can_cancel: false })).toBe('—');

    const page = (shown: number, total: number) => ({ runs: new Array(shown).fill({}), pagination: { total, limit: 20, offset: 0 } }) as WorkflowRunPage;
    expect(runsPageSummary(page(3, 3), 'picky')).toBe('3 runs of workflow picky.');
    expect(runsPageSummary(page(1, 1), 'picky', 'failed')).toBe('1 failed run of workflow picky.');
    expect(runsPageSummary(page(0, 0), 'picky', 'waiting')).toBe('0 waiting runs of workflow picky.');
    expect(runsPageSummary(page(1, 3), 'picky')).toBe('The newest 1 of 3 runs of workflow picky.');

    expect(runAfterDecisionText({ run_id: 'r', status: 'running' })).toBe('run r continues');
    expect(runAfterDecisionText({ run_id: 'r', status: 'completed' })).toBe('run r is completed');
  });
});

describe('liya workflows runs', () => {
  let picky: string;
  let failedRun: string;
  let completedRuns: string[];

  beforeAll(async () => {
    // Fails when the input has no `missing` (the condition cannot be evaluated), completes otherwise.
    picky = await deployedKey('Picky', [trigger, { id: 'check', step_type: 'condition', config: { expression: 'trigger.missing.x > 1' } }, { id: 'done', step_type: 'end', config: { output: 'ok' } }]);
    completedRuns = [(await startRun(picky, { missing: { x: 2 } })).run_id];
    const failed = await startRun(picky, {});
    expect(failed.status).toBe('failed');
    failedRun = failed.run_id;
    completedRuns.push((await startRun(picky, { missing: { x: 5 } })).run_id);
  });

  it('lists the runs newest first with their status, trigger, steps, times and what can be done; --status and --limit narrow it', async () => {
    const [all, failedOnly, limited, badStatus, badLimit, unknown, noKey] = await Promise.all([
      liya(['workflows', 'runs', picky]),
      liya(['workflows', 'runs', picky, '--status', 'failed']),
      liya(['workflows', 'runs', picky, '--limit', '1']),
      liya(['workflows', 'runs', picky, '--status', 'done']),
      liya(['workflows', 'runs', picky, '--limit', '0']),
      liya(['workflows', 'runs', 'nope']),
      liya(['workflows', 'runs', picky], { env: { LIYA_API_KEY: undefined } }),
    ]);

    expect(all.code, all.stderr).toBe(0);
    expect(all.stderr).toBe('');
    expect(all.stdout).toMatch(/RUN\s+STATUS\s+TRIGGERED BY\s+STEPS\s+STARTED\s+COMPLETED\s+ACTIONS/);
    const rows = all.stdout.split('\n').filter((l) => new RegExp(`^${UUID} `).test(l));
    // Newest first.
    expect(rows.map((l) => l.slice(0, 36))).toEqual([completedRuns[1], failedRun, completedRuns[0]]);
    expect(rowOf(all.stdout, failedRun)).toEqual([failedRun, 'failed', 'api', '2', expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/), expect.stringMatching(/^\d{4}-\d\d-\d\d /), 'retry']);
    expect(rowOf(all.stdout, completedRuns[0])).toEqual([completedRuns[0], 'completed', 'api', '3', expect.any(String), expect.any(String), '—']);
    expect(all.stdout).toContain('3 runs of workflow picky.');
    expect(all.stdout).toContain(`Continue a failed run from the failed step: liya workflows retry ${failedRun}`);

    expect(failedOnly.code, failedOnly.stderr).toBe(0);
    expect(failedOnly.stdout.split('\n').filter((l) => new RegExp(`^${UUID} `).test(l))).toHaveLength(1);
    expect(rowOf(failedOnly.stdout, failedRun)?.[1]).toBe('failed');
    expect(failedOnly.stdout).toContain('1 failed run of workflow picky.');

    expect(limited.code, limited.stderr).toBe(0);
    expect(limited.stdout.split('\n').filter((l) => new RegExp(`^${UUID} `).test(l))).toHaveLength(1);
    expect(limited.stdout).toContain('The newest 1 of 3 runs of workflow picky.');
    expect(limited.stdout).toContain('Show more: --limit <n> (up to 100)');
    // The next page by cursor, as the hint gives it.
    const cursor = /--cursor (\S+)/.exec(limited.stdout)?.[1];
    expect(limited.stdout).toContain(`Next page: liya workflows runs ${picky} --limit 1 --cursor ${cursor}`);
    const next = await liya(['workflows', 'runs', picky, '--limit', '1', '--cursor', cursor!]);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.split('\n').filter((l) => new RegExp(`^${UUID} `).test(l)).map((l) => l.slice(0, 36))).toEqual([failedRun]);
    expect(next.stdout).toContain('1 run after the cursor, of 3 runs of workflow picky.');
    const badCursor = await liya(['workflows', 'runs', picky, '--cursor', 'nonsense']);
    expect(badCursor.code).toBe(1);
    expect(badCursor.stderr).toContain('INVALID_INPUT');

    // Checked before any request: usage errors (exit 2).
    expect(badStatus.code).toBe(2);
    expect(badStatus.stdout).toBe('');
    expect(badStatus.stderr).toContain("option '--status <status>' argument 'done' is invalid");
    expect(badStatus.stderr).toContain('Not a run status; use one of running, completed, needs_input, awaiting_approval, waiting, rejected, cancelled, failed.');
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toContain('Must be between 1 and 100.');

    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('✖ NOT_FOUND (HTTP 404): Workflow "nope" not found');
    expect(unknown.stderr).toContain('liya workflows list');
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');
  }, 120_000);

  it('--json prints {runs, pagination}', async () => {
    const [json, failedJson] = await Promise.all([liya(['workflows', 'runs', picky, '--json']), liya(['workflows', 'runs', picky, '--json', '--status', 'failed', '--limit', '5'])]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stderr).toBe('');
    const page = JSON.parse(json.stdout);
    expect(page.pagination).toMatchObject({ total: 3, offset: 0 });
    expect(page.runs.map((r: { run_id: string }) => r.run_id)).toEqual([completedRuns[1], failedRun, completedRuns[0]]);
    expect(page.runs[1]).toMatchObject({ run_id: failedRun, status: 'failed', triggered_by: 'api', scope: 'live', version: 1, steps: 2, can_retry: true, can_cancel: false });

    expect(failedJson.code, failedJson.stderr).toBe(0);
    const failed = JSON.parse(failedJson.stdout);
    expect(failed.pagination).toMatchObject({ total: 1, limit: 5 });
    expect(failed.runs.map((r: { run_id: string }) => r.run_id)).toEqual([failedRun]);
  }, 120_000);

  it('--json runs carry approval_id and resume_at (null when the run waits for neither)', async () => {
    const json = await liya(['workflows', 'runs', picky, '--json', '--status', 'failed']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).runs[0]).toMatchObject({ run_id: failedRun, approval_id: null, resume_at: null });
  });
});

describe('liya workflows retry', () => {
  it('continues a failed run from its failed step: fails again while the cause remains (exit 1), completes once fixed (exit 0)', async () => {
    const flaky = await deployedKey('Flaky', [
      trigger,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/flaky` } },
      { id: 'done', step_type: 'end', config: { output: '{{steps.call.output.body}}' } },
    ]);
    // The failed run, through the CLI: its summary points to retry.
    healthy = false;
    const first = await liya(['workflows', 'run', flaky]);
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/^✓ start trigger \d+ ms\n✗ call action \d+ ms: the server answered HTTP 500\n$/);
    const summary = first.stderr.match(SUMMARY);
    expect(summary, first.stderr).not.toBeNull();
    const runId = summary![3];
    expect(first.stderr).toContain(`liya workflows retry ${runId}`);

    // Still failing: the result as `run --json` prints it, exit 1.
    const again = await liya(['workflows', 'retry', runId, '--json']);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toBe('');
    const failed = JSON.parse(again.stdout);
    expect(failed).toMatchObject({ run_id: runId, status: 'failed', output: null });
    expect(failed.trace.at(-1)).toMatchObject({ step_id: 'call', status: 'failed', error: 'the server answered HTTP 500' });

    // Fixed: the same run goes on from the call and completes.
    healthy = true;
    const fixed = await liya(['workflows', 'retry', runId]);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stdout).toMatch(/(^|\n)✓ call action \d+ ms\n✓ done end \d+ ms\n/);
    // The trace is the run's whole history: the earlier failed attempts stay in it.
    expect(outputOf(fixed.stdout)).toEqual({ ok: true });
    const fixedSummary = fixed.stderr.match(SUMMARY);
    expect(fixedSummary, fixed.stderr).not.toBeNull();
    expect([fixedSummary![1], fixedSummary![3]]).toEqual(['completed', runId]);
    expect(fixed.stderr).toContain(`GET /v1/workflows/${flaky}/runs/${runId}`);
    expect(await runOf(flaky, runId)).toMatchObject({ status: 'completed', output: { ok: true }, can_retry: false });

    // Completed: refused before any retry request, with the reason.
    const done = await liya(['workflows', 'retry', runId]);
    expect(done.code).toBe(1);
    expect(done.stdout).toBe('');
    expect(done.stderr).toContain(`✖ Run ${runId} cannot be retried: it is completed`);
    expect(done.stderr).toContain('Only a failed run can be retried.');
    expect(done.stderr).toContain(`liya workflows runs ${flaky}`);
  }, 120_000);
});

describe('liya workflows cancel', () => {
  it('cancels a run waiting at a delay step; a second cancel is refused', async () => {
    const later = await deployedKey('Later', [trigger, { id: 'pause', step_type: 'delay', config: { seconds: 3600 } }, { id: 'done', step_type: 'end', config: { output: 'later' } }]);
    const [waiting, other] = [await startRun(later), await startRun(later)];
    for (const run of [waiting, other]) {
      expect(run.status).toBe('waiting');
      expect(Date.parse(run.resume_at ?? '') - Date.now()).toBeGreaterThan(3500_000);
    }

    // Listed as cancellable, with the hint.
    const listed = await liya(['workflows', 'runs', later, '--status', 'waiting']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(rowOf(listed.stdout, waiting.run_id)).toEqual([waiting.run_id, 'waiting', 'api', expect.any(String), expect.any(String), '—', 'cancel']);
    expect(listed.stdout).toMatch(new RegExp(`liya workflows cancel ${UUID} \\(it resumes at \\d{4}-\\d\\d-\\d\\d `));

    const cancelled = await liya(['workflows', 'cancel', waiting.run_id]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stderr).toBe('');
    expect(cancelled.stdout).toContain(`✔ Run ${waiting.run_id} cancelled`);
    expect(cancelled.stdout).toContain(`workflow ${later} · was waiting · `);
    expect(await runOf(later, waiting.run_id)).toMatchObject({ status: 'cancelled', can_cancel: false });

    // --json: the cancelled run.
    const json = await liya(['workflows', 'cancel', other.run_id, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ run_id: other.run_id, status: 'cancelled', can_cancel: false });

    const twice = await liya(['workflows', 'cancel', waiting.run_id]);
    expect(twice.code).toBe(1);
    expect(twice.stdout).toBe('');
    expect(twice.stderr).toContain(`✖ Run ${waiting.run_id} cannot be cancelled: it is cancelled`);
    expect(twice.stderr).toContain('It has ended already.');
  }, 120_000);

  it('an unknown run id is a clear error (exit 1) for retry and cancel', async () => {
    const missing = randomUUID();
    const results = await Promise.all([liya(['workflows', 'retry', missing]), liya(['workflows', 'cancel', missing]), liya(['workflows', 'cancel', missing, '--json'])]);
    for (const r of results) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('✖ NOT_FOUND (HTTP 404)');
      expect(r.stderr).toContain('Check the run id; a workflow\'s runs are listed by: liya workflows runs <workflow>');
    }
  }, 120_000);
});

describe('liya approvals decide', () => {
  it('approves a run awaiting approval (it goes on to its end); deciding again is APPROVAL_DECIDED (exit 1)', async () => {
    const gate = await deployedKey('Gate', [trigger, { id: 'ask', step_type: 'approval', config: { message: 'ok?' } }, { id: 'done', step_type: 'end', config: { output: 'approved' } }]);
    const run = await startRun(gate);
    expect(run.status).toBe('awaiting_approval');
    expect(run.approval_id).toEqual(expect.any(String));
    const approvalId = run.approval_id!;

    // The list points to the decision.
    const listed = await liya(['workflows', 'runs', gate]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(rowOf(listed.stdout, run.run_id)?.[1]).toBe('awaiting_approval');
    expect(listed.stdout).toContain(`liya approvals decide ${approvalId} approve|reject`);

    const approved = await liya(['approvals', 'decide', approvalId, 'approve', '--comment', 'looks fine']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stderr).toBe('');
    expect(approved.stdout).toMatch(new RegExp(`✔ Approval ${approvalId} approved: run ${run.run_id} (continues|is completed)\\n`));
    expect(approved.stdout).toContain(`workflow ${gate} · step ask`);
    expect(approved.stdout).toContain('asked: ok?');
    expect(approved.stdout).toContain('comment: looks fine');
    expect(approved.stdout).toContain(`liya workflows runs ${gate}`);
    const finished = await waitFor(async () => {
      const r = await runOf(gate, run.run_id);
      return r?.status === 'completed' ? r : null;
    }, 'the approved run to end');
    expect(finished.output).toBe('approved');

    const again = await liya(['approvals', 'decide', approvalId, 'reject']);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('✖ APPROVAL_DECIDED (HTTP 409)');
    expect(again.stderr).toContain('An approval is decided once');
  }, 120_000);

  it('--json prints {approval, run}; a rejected run ends rejected', async () => {
    const gate = await deployedKey('Gate two', [trigger, { id: 'ask', step_type: 'approval', config: { message: 'ok?' } }, { id: 'done', step_type: 'end', config: { output: 'approved' } }]);
    const run = await startRun(gate);
    expect(run.status).toBe('awaiting_approval');
    const r = await liya(['approvals', 'decide', run.approval_id!, 'reject', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const result = JSON.parse(r.stdout);
    expect(result.approval).toMatchObject({ id: run.approval_id, run_id: run.run_id, workflow_key: gate, step_id: 'ask', status: 'rejected', message: 'ok?', comment: null });
    expect(result.run).toMatchObject({ run_id: run.run_id, status: expect.any(String) });
    await waitFor(async () => (await runOf(gate, run.run_id))?.status === 'rejected', 'the rejected run to end');
  }, 120_000);

  it('refusals before any request: a decision other than approve|reject, no key (exit 2)', async () => {
    const [maybe, noKey] = await Promise.all([
      liya(['approvals', 'decide', randomUUID(), 'maybe']),
      liya(['approvals', 'decide', randomUUID(), 'approve'], { env: { LIYA_API_KEY: undefined } }),
    ]);
    expect(maybe.code).toBe(2);
    expect(maybe.stdout).toBe('');
    expect(maybe.stderr).toContain("value 'maybe' is invalid for argument 'decision'. Allowed choices are approve, reject.");
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');
  }, 120_000);

  it('an unknown approval is NOT_FOUND (exit 1) with a hint', async () => {
    const unknown = await liya(['approvals', 'decide', randomUUID(), 'approve']);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('✖ NOT_FOUND (HTTP 404)');
    expect(unknown.stderr).toContain('Check the approval id');
  }, 120_000);
});
