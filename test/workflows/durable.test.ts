// Durable waits over HTTP: approvals (also inside loops and with timeouts), delays continued by a
// job, wait_for_callback with single-use callback URLs, retry of a failed run and cancel.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { refuseWrites } from '../support/db-faults.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let web: http.Server;
let webUrl: string;
let a: SignedUpTenant;
let b: SignedUpTenant;
/** What the local server received, by path. */
const received: Record<string, unknown[]> = {};
let failNext = 0;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const trigger = MANUAL_TRIGGER;
const deployed = (name: string, steps: unknown[]) => createWorkflow(t.api, a.apiKey, name, steps);
const run = (ref: string, body: Record<string, unknown>) => t.api.post(`/v1/workflows/${ref}/run`, body, key(a));
const detail = async (ref: string, runId: string) => (await t.api.get(`/v1/workflows/${ref}/runs/${runId}`, key(a))).body.data.run;
const settled = (ref: string, runId: string, status: string) =>
  waitFor(async () => {
    const r = await detail(ref, runId);
    return r.status === status ? r : null;
  }, `run ${runId} to be ${status}`);
const decide = (id: string, body: Record<string, unknown>, who = a) => t.api.post(`/v1/workflows/approvals/${id}/decision`, body, key(who));

beforeAll(async () => {
  web = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      (received[req.url ?? ''] ??= []).push(body ? JSON.parse(body) : null);
      if (req.url === '/flaky' && failNext > 0) {
        failNext--;
        res.writeHead(503, { 'content-type': 'text/plain' });
        return res.end('down');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Durable A' });
  b = await signupTenant(t.api, { companyName: 'Durable B' });
});
afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => web?.close(resolve));
});

describe('approval steps', () => {
  const steps = (extra: Record<string, unknown> = {}) => [
    trigger,
    { id: 'ask', step_type: 'approval', config: { message: 'Hire {{trigger.name}}?' }, ...extra },
    { id: 'yes', step_type: 'end', config: { output: { hired: true, by: '{{steps.ask.output.decided_by}}', comment: '{{steps.ask.output.comment}}' } } },
    // Reachable only through on_failure.
    ...(extra.on_failure_ref ? [{ id: 'no', step_type: 'end', config: { output: { hired: false } } }] : []),
  ];

  it('waits with an approval id; approve continues the same run; a second decision is 409', async () => {
    const wf = await deployed('Approve me', steps());
    const started = await run(wf.workflow_key, { input: { name: 'Ada' } });
    expect(started.status, started.text).toBe(200);
    expect(started.body.data).toMatchObject({ status: 'awaiting_approval', approval_id: expect.any(String) });
    const runId = started.body.data.run_id;
    const waiting = await detail(wf.workflow_key, runId);
    expect(waiting).toMatchObject({ status: 'awaiting_approval', approval_id: started.body.data.approval_id, can_cancel: true, can_retry: false });
    expect(waiting.trace.at(-1)).toMatchObject({ step_id: 'ask', status: 'awaiting_approval', output: { message: 'Hire Ada?' } });

    // Another tenant cannot see or decide it.
    expect((await decide(started.body.data.approval_id, { decision: 'approve' }, b)).status).toBe(404);
    const decided = await decide(started.body.data.approval_id, { decision: 'approve', comment: 'great' });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body.data.approval).toMatchObject({ status: 'approved', comment: 'great', run_id: runId, step_id: 'ask', workflow_key: wf.workflow_key });
    const done = await settled(wf.workflow_key, runId, 'completed');
    expect(done.output).toMatchObject({ hired: true, comment: 'great' });
    expect(done.trace.map((s: any) => [s.step_id, s.status])).toEqual([['start', 'completed'], ['ask', 'awaiting_approval'], ['ask', 'completed'], ['yes', 'completed']]);
    expect(done.approval_id).toBeNull();

    const again = await decide(started.body.data.approval_id, { decision: 'reject' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('APPROVAL_DECIDED');
    expect((await detail(wf.workflow_key, runId)).status).toBe('completed');
  });

  it('reject ends the run rejected, or follows on_failure when set', async () => {
    const plain = await deployed('Reject plain', steps());
    const r1 = await run(plain.workflow_key, { input: { name: 'Bob' } });
    expect((await decide(r1.body.data.approval_id, { decision: 'reject' })).status).toBe(200);
    const rejected = await settled(plain.workflow_key, r1.body.data.run_id, 'rejected');
    expect(rejected.trace.map((s: any) => s.step_id)).toEqual(['start', 'ask', 'ask']);

    const branched = await deployed('Reject branch', steps({ on_success_ref: 'yes', on_failure_ref: 'no' }));
    const r2 = await run(branched.workflow_key, { input: { name: 'Cy' } });
    expect((await decide(r2.body.data.approval_id, { decision: 'reject', comment: null })).status).toBe(200);
    const ended = await settled(branched.workflow_key, r2.body.data.run_id, 'completed');
    expect(ended.output).toEqual({ hired: false });
  });

  it('an approval that times out follows on_failure, else fails the run; the late decision is 409', async () => {
    const wf = await deployed('Timeout', [
      trigger,
      { id: 'ask', step_type: 'approval', config: { message: 'quick?', timeout_seconds: 1 }, on_failure_ref: 'late' },
      { id: 'ok', step_type: 'end', config: { output: { late: false } } },
      { id: 'late', step_type: 'end', config: { output: { late: true } } },
    ]);
    const started = await run(wf.workflow_key, { input: {} });
    expect(started.body.data.status).toBe('awaiting_approval');
    const ended = await settled(wf.workflow_key, started.body.data.run_id, 'completed');
    expect(ended.output).toEqual({ late: true });
    const late = await decide(started.body.data.approval_id, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(late.body.error.details.status).toBe('timed_out');
  });

  it('approvals inside a loop resume at the right iteration', async () => {
    const wf = await deployed('Loop approvals', [
      trigger,
      { id: 'each', step_type: 'loop', config: { items: 'trigger.names', step_ref: 'ask' }, on_success_ref: 'done' },
      { id: 'ask', step_type: 'approval', config: { message: 'Approve {{loop.item}} (#{{loop.index}})?' } },
      { id: 'done', step_type: 'end', config: { output: { decisions: '{{steps.each.output}}' } } },
    ]);
    const started = await run(wf.workflow_key, { input: { names: ['a', 'b', 'c'] } });
    expect(started.body.data.status).toBe('awaiting_approval');
    let approvalId = started.body.data.approval_id;
    const decisions = ['approve', 'reject', 'approve'];
    for (const [i, decision] of decisions.entries()) {
      const res = await decide(approvalId, { decision, comment: `#${i}` });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.approval).toMatchObject({ loop_index: i, message: `Approve ${['a', 'b', 'c'][i]} (#${i})?`, step_id: 'ask' });
      if (i < 2) {
        const next = await waitFor(async () => {
          const r = await detail(wf.workflow_key, started.body.data.run_id);
          return r.status === 'awaiting_approval' && r.approval_id !== approvalId ? r : null;
        }, "the next approval");
        approvalId = next.approval_id;
      }
    }
    const done = await settled(wf.workflow_key, started.body.data.run_id, 'completed');
    expect(done.output.decisions.map((d: any) => [d.decision, d.comment])).toEqual([['approve', '#0'], ['reject', '#1'], ['approve', '#2']]);
  });

  it('refuses malformed decisions and unknown approvals', async () => {
    expect((await decide('00000000-0000-0000-0000-000000000000', { decision: 'approve' })).status).toBe(404);
    expect((await decide('not-a-uuid', { decision: 'approve' })).status).toBe(404);
    const bad = await decide('00000000-0000-0000-0000-000000000000', { decision: 'maybe' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_INPUT');
  });
});

describe('delay steps', () => {
  it('waits with resume_at and is continued by a job; an `until` in the past does not wait', async () => {
    const wf = await deployed('Delay', [trigger, { id: 'nap', step_type: 'delay', config: { seconds: 1 } }, { id: 'done', step_type: 'end', config: { output: { woke: '{{steps.nap.output.resumed_at}}' } } }]);
    const t0 = Date.now();
    const started = await run(wf.workflow_key, { input: {} });
    expect(started.body.data).toMatchObject({ status: 'waiting', resume_at: expect.any(String) });
    expect(Date.parse(started.body.data.resume_at)).toBeGreaterThanOrEqual(t0 + 900);
    const done = await settled(wf.workflow_key, started.body.data.run_id, 'completed');
    expect(Date.parse(done.output.woke)).toBeGreaterThanOrEqual(Date.parse(started.body.data.resume_at));

    const past = await deployed('Delay past', [trigger, { id: 'nap', step_type: 'delay', config: { until: '{{trigger.at}}' } }, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
    const quick = await run(past.workflow_key, { input: { at: '2020-01-01T00:00:00Z' } });
    expect(quick.body.data.status).toBe('completed');
  });

  it('cancel stops a waiting run and removes its timer; a finished run cannot be cancelled', async () => {
    const wf = await deployed('Cancel me', [trigger, { id: 'nap', step_type: 'delay', config: { seconds: 2 } }, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
    const started = await run(wf.workflow_key, { input: {} });
    const runId = started.body.data.run_id;
    expect((await t.api.post(`/v1/workflows/${wf.id}/runs/${runId}/cancel`, {}, key(b))).status).toBe(404);
    const cancelled = await t.api.post(`/v1/workflows/${wf.id}/runs/${runId}/cancel`, {}, key(a));
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data.run).toMatchObject({ status: 'cancelled', can_cancel: false, resume_at: null });
    // Its timer is gone: no wake-up can come for it.
    expect(await t.sql('select 1 from graphile_worker._private_jobs where key = $1', [`wf-wake:${runId}`])).toHaveLength(0);
    expect((await detail(wf.workflow_key, runId)).status).toBe('cancelled');
    const twice = await t.api.post(`/v1/workflows/${wf.workflow_key}/runs/${runId}/cancel`, {}, key(a));
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('RUN_NOT_CANCELLABLE');
  });
});

describe('wait_for_callback', () => {
  it('posts its callback URL out, continues with the callback body; the URL works once', async () => {
    const wf = await deployed('Callback', [
      trigger,
      { id: 'send', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${webUrl}/register`, body: { callback: '{{run.callback_url}}' } } },
      { id: 'wait', step_type: 'action', action_id: 'wait_for_callback', config: {} },
      { id: 'done', step_type: 'end', config: { output: { verdict: '{{steps.wait.output.verdict}}' } } },
    ]);
    const started = await run(wf.workflow_key, { input: {} });
    expect(started.body.data.status, started.text).toBe('waiting');
    const url = new URL((received['/register'].at(-1) as { callback: string }).callback);
    expect(url.pathname).toMatch(/^\/webhooks\/workflow-callbacks\/[A-Za-z0-9_-]{22}\.0\.[A-Za-z0-9_-]{32}$/);
    // A forged token is unknown.
    const forged = await t.api.post(url.pathname.replace(/.{4}$/, 'AAAA'), { verdict: 'x' });
    expect(forged.status).toBe(404);
    // A NUL character (which PostgreSQL cannot store) is a 400, in JSON or in a text body; the wait goes on.
    const nulJson = await t.api.post(url.pathname, { verdict: 'a\u0000b' });
    expect(nulJson.status, nulJson.text).toBe(400);
    expect(nulJson.body.error).toMatchObject({ code: 'INVALID_INPUT', details: { issues: [{ path: 'verdict' }] } });
    const nulText = await t.api.post(url.pathname, undefined, { raw: 'a\u0000b', contentType: 'text/plain' });
    expect(nulText.status, nulText.text).toBe(400);
    const first = await t.api.post(url.pathname, { verdict: 'pass' });
    expect(first.status, first.text).toBe(202);
    const done = await settled(wf.workflow_key, started.body.data.run_id, 'completed');
    expect(done.output).toEqual({ verdict: 'pass' });
    const second = await t.api.post(url.pathname, { verdict: 'fail' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('CALLBACK_ALREADY_RECEIVED');
    expect((await detail(wf.workflow_key, started.body.data.run_id)).output).toEqual({ verdict: 'pass' });
  });

  it('a callback that arrives before the run reaches its wait is kept for it', async () => {
    const wf = await deployed('Early callback', [
      trigger,
      { id: 'send', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${webUrl}/early`, body: { callback: '{{run.callback_url}}' } } },
      { id: 'nap', step_type: 'delay', config: { seconds: 1 } },
      { id: 'wait', step_type: 'action', action_id: 'wait_for_callback', config: { timeout_seconds: 60 } },
      { id: 'done', step_type: 'end', config: { output: '{{steps.wait.output}}' } },
    ]);
    const started = await run(wf.workflow_key, { input: {} });
    expect(started.body.data.status).toBe('waiting');
    const url = new URL((received['/early'].at(-1) as { callback: string }).callback);
    // The run is still in its delay.
    const early = await t.api.post(url.pathname, { early: true });
    expect(early.status, early.text).toBe(202);
    expect((await t.api.post(url.pathname, { early: 'again' })).status).toBe(409);
    const done = await settled(wf.workflow_key, started.body.data.run_id, 'completed');
    expect(done.output).toEqual({ early: true });
  });

  it('a callback wait times out and fails the step', async () => {
    const wf = await deployed('Callback timeout', [
      trigger,
      { id: 'wait', step_type: 'action', action_id: 'wait_for_callback', config: { timeout_seconds: 1 } },
      { id: 'done', step_type: 'end', config: { output: { ok: true } } },
    ]);
    const started = await run(wf.workflow_key, { input: {} });
    const failed = await settled(wf.workflow_key, started.body.data.run_id, 'failed');
    expect(failed.trace.at(-1)).toMatchObject({ step_id: 'wait', status: 'failed', error: 'no callback arrived before the timeout' });
  });
});

describe('retry', () => {
  it('continues a failed run from the failed step, reusing earlier outputs', async () => {
    const wf = await deployed('Retry me', [
      trigger,
      { id: 'first', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${webUrl}/first`, body: { n: '{{trigger.n}}' } } },
      { id: 'second', step_type: 'action', action_id: 'http_request', config: { method: 'POST', url: `${webUrl}/flaky`, body: { from: '{{steps.first.output.body.path}}' } } },
      { id: 'done', step_type: 'end', config: { output: { second: '{{steps.second.output.body.path}}' } } },
    ]);
    failNext = 1;
    const before = received['/first']?.length ?? 0;
    const failed = await run(wf.workflow_key, { input: { n: 1 } });
    expect(failed.body.data.status).toBe('failed');
    const stored = await detail(wf.workflow_key, failed.body.data.run_id);
    expect(stored).toMatchObject({ can_retry: true, can_cancel: false });

    const retried = await t.api.post(`/v1/workflows/${wf.id}/runs/${failed.body.data.run_id}/retry`, {}, key(a));
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.data).toMatchObject({ run_id: failed.body.data.run_id, status: 'completed', output: { second: '/flaky' } });
    expect(retried.body.data.trace.map((s: any) => [s.step_id, s.status])).toEqual([
      ['start', 'completed'], ['first', 'completed'], ['second', 'failed'], ['second', 'completed'], ['done', 'completed'],
    ]);
    // The first step ran once.
    expect(received['/first'].length - before).toBe(1);
    const again = await t.api.post(`/v1/workflows/${wf.id}/runs/${failed.body.data.run_id}/retry`, {}, key(a));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('RUN_NOT_RETRYABLE');
    expect((await t.api.post(`/v1/workflows/${wf.id}/runs/${failed.body.data.run_id}/retry`, {}, key(b))).status).toBe(404);
  });

  it("a run whose job fails until its attempts are used up ends failed (not running), retryable from the step it was at", async () => {
    const wf = await deployed('Gives up', [
      trigger,
      { id: 'nap', step_type: 'delay', config: { seconds: 1 } },
      { id: 'after', step_type: 'action', action_id: 'log', config: { message: 'after the nap' } },
      { id: 'done', step_type: 'end', config: { output: { ok: true } } },
    ]);
    // A real failure of the database on every write of the step after the delay.
    const allow = await refuseWrites(t.sql, 'test_refuse_step', 'run_steps', 'insert', `new.tenant_id = '${a.tenantId}' and new.step_id = 'after'`);
    try {
      const started = await run(wf.workflow_key, { input: {} });
      expect(started.body.data.status, started.text).toBe('waiting');
      const runId = started.body.data.run_id as string;
      const jobKey = `wf-wake:${runId}`;
      await waitFor(async () => ((await t.sql<{ last_error: string | null }>('select last_error from graphile_worker.jobs where key = $1', [jobKey]))[0]?.last_error ? true : null), 'the first attempt to fail');
      // Skip to the last attempt instead of waiting out the backoff (between attempts, never during one).
      await waitFor(
        async () => (await t.sql(`update graphile_worker._private_jobs set attempts = max_attempts - 1, run_at = now() where key = $1 and locked_at is null returning 1`, [jobKey])).length > 0,
        'the job between two attempts',
      );
      const failed = await settled(wf.workflow_key, runId, 'failed');
      expect(failed).toMatchObject({ error: { code: 'INTERNAL_ERROR', step_id: 'after' }, can_retry: true, can_cancel: false });
      expect(JSON.stringify(failed.error)).not.toContain('refused');
      await allow();
      const retried = await t.api.post(`/v1/workflows/${wf.id}/runs/${runId}/retry`, {}, key(a));
      expect(retried.status, retried.text).toBe(200);
      expect(retried.body.data).toMatchObject({ status: 'completed', output: { ok: true } });
    } finally {
      await allow();
    }
  });

  it('a run is found by its id alone', async () => {
    const wf = await deployed('By id', [trigger, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
    const done = await run(wf.workflow_key, { input: {} });
    const byId = await t.api.get(`/v1/workflows/runs/${done.body.data.run_id}`, key(a));
    expect(byId.status, byId.text).toBe(200);
    expect(byId.body.data.run).toMatchObject({ run_id: done.body.data.run_id, workflow_key: wf.workflow_key, status: 'completed' });
    expect((await t.api.get(`/v1/workflows/runs/${done.body.data.run_id}`, key(b))).status).toBe(404);
  });
});
