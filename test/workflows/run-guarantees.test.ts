// What POST /v1/workflows/{key}/run guarantees: Idempotency-Key (a repeat answers the first run,
// even 50 at once), max_concurrent_runs decided in PostgreSQL (under a burst, for runs that wait,
// and across two server processes on one database), and async runs whose final state is POSTed
// to a callback_url, signed (Standard Webhooks) and retried.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ApiClient, type ApiResponse } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { ADMIN_SECRET, JWT_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow } from '../support/workflows.js';

let t: TestServer;
let a: SignedUpTenant;
let web: http.Server;
let webUrl: string;

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}
/** Every request the local web service received at /cb…, by path. */
const received = new Map<string, Received[]>();
const receivedAt = (p: string) => received.get(p) ?? [];
/** /flaky-step answers 500 until this is true. */
let stepHealthy = false;

const key = (s: SignedUpTenant = a) => ({ headers: bearer(s.apiKey) });
const trigger = { id: 't', step_type: 'trigger', config: { trigger_subtype: 'manual' } };
const FINAL = ['completed', 'failed', 'cancelled', 'rejected'];

async function deployed(name: string, steps: unknown[], maxConcurrentRuns?: number) {
  const { id, workflow_key: workflowKey, webhook_secret: webhookSecret } = await createWorkflow(t.api, a.apiKey, name, steps);
  if (maxConcurrentRuns !== undefined) {
    const patched = await t.api.patch(`/v1/workflows/${workflowKey}`, { max_concurrent_runs: maxConcurrentRuns }, key());
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.workflow.max_concurrent_runs).toBe(maxConcurrentRuns);
  }
  return { workflowKey, id, webhookSecret };
}

/** A workflow whose run calls the local web service and waits `ms` for its answer. */
const slowSteps = (ms: number) => [
  trigger,
  { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/slow?ms=${ms}` } },
  { id: 'done', step_type: 'end', config: { output: { n: '{{trigger.n}}', slow: '{{steps.call.output.body.slow}}' } } },
];

const run = (workflowKey: string, body: Record<string, unknown>, headers: Record<string, string> = {}, api: ApiClient = t.api) =>
  api.post(`/v1/workflows/${workflowKey}/run`, body, { headers: { ...bearer(a.apiKey), ...headers } });

const runTotal = async (workflowKey: string) => {
  const res = await t.api.get(`/v1/workflows/${workflowKey}/runs?pageSize=100`, key());
  expect(res.status, res.text).toBe(200);
  return res.body.data.pagination.total as number;
};

const runDetail = async (workflowKey: string, runId: string) => {
  const res = await t.api.get(`/v1/workflows/${workflowKey}/runs/${runId}`, key());
  expect(res.status, res.text).toBe(200);
  return res.body.data.run;
};

const finished = (workflowKey: string, runId: string, timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const r = await runDetail(workflowKey, runId);
      return FINAL.includes(r.status) ? r : null;
    },
    `run ${runId} to end`,
    timeoutMs,
  );

/** Waits until no run of the workflow is running or waiting. */
const drained = (workflowKey: string) =>
  waitFor(async () => {
    const res = await t.api.get(`/v1/workflows/${workflowKey}/runs?pageSize=100`, key());
    return res.body.data.runs.every((r: any) => FINAL.includes(r.status));
  }, `the runs of ${workflowKey} to end`);

const statusCounts = (responses: ApiResponse[]) =>
  responses.reduce<Record<number, number>>((acc, r) => ((acc[r.status] = (acc[r.status] ?? 0) + 1), acc), {});

function expectLimited(res: ApiResponse, limit: number) {
  expect(res.status, res.text).toBe(429);
  expect(res.body.error.code).toBe('CONCURRENCY_LIMIT');
  expect(res.body.error.details).toMatchObject({ max_concurrent_runs: limit });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

beforeAll(async () => {
  web = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/slow') {
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}'), Number(url.searchParams.get('ms') ?? 300));
        return;
      }
      if (url.pathname === '/flaky-step') {
        if (!stepHealthy) return res.writeHead(500, { 'content-type': 'text/plain' }).end('down');
        return res.writeHead(200, { 'content-type': 'application/json' }).end('{"up":true}');
      }
      if (url.pathname.startsWith('/cb')) {
        const list = received.get(url.pathname) ?? [];
        list.push({ path: url.pathname, headers: req.headers as Record<string, string>, body });
        received.set(url.pathname, list);
        // /cb-flaky/… fails its first delivery.
        if (url.pathname.startsWith('/cb-flaky') && list.length === 1) {
          return res.writeHead(500, { 'content-type': 'text/plain' }).end('try again');
        }
        return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Run Guarantees' });
}, 120_000);

afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => web?.close(resolve));
});

describe('Idempotency-Key on POST /run', () => {
  it('the same key and body answer the first run; another body is 422; keys are per workflow', async () => {
    const wf = await deployed('Idempotent', [trigger, { id: 'done', step_type: 'end', config: { output: { n: '{{trigger.n}}' } } }]);
    const first = await run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'order-1' });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ status: 'completed', output: { n: 1 } });
    expect(first.body.data.idempotent_replay).toBeUndefined();
    const replay = await run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'order-1' });
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body.data).toMatchObject({ run_id: first.body.data.run_id, conversation_id: first.body.data.conversation_id, status: 'completed', output: { n: 1 }, idempotent_replay: true });
    expect(replay.body.data.trace).toHaveLength(2);

    const other = await run(wf.workflowKey, { input: { n: 2 } }, { 'idempotency-key': 'order-1' });
    expect(other.status, other.text).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // The mode is part of the request too.
    const asAsync = await run(wf.workflowKey, { input: { n: 1 }, mode: 'async' }, { 'idempotency-key': 'order-1' });
    expect(asAsync.status, asAsync.text).toBe(422);
    expect(await runTotal(wf.workflowKey)).toBe(1);

    // Without a key, every request is a run; another key is another run.
    expect((await run(wf.workflowKey, { input: { n: 1 } })).body.data.run_id).not.toBe(first.body.data.run_id);
    expect((await run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'order-2' })).body.data.run_id).not.toBe(first.body.data.run_id);
    expect(await runTotal(wf.workflowKey)).toBe(3);

    // The same key on another workflow is its own.
    const otherWf = await deployed('Idempotent too', [trigger, { id: 'done', step_type: 'end', config: { output: 'other' } }]);
    const elsewhere = await run(otherWf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'order-1' });
    expect(elsewhere.status, elsewhere.text).toBe(200);
    expect(elsewhere.body.data.idempotent_replay).toBeUndefined();
    expect(elsewhere.body.data.output).toBe('other');
  });

  it('50 requests at once with one key make exactly one run; each answers it or 409 IDEMPOTENCY_IN_PROGRESS', async () => {
    const wf = await deployed('Idempotent burst', slowSteps(300));
    const responses = await Promise.all(Array.from({ length: 50 }, () => run(wf.workflowKey, { input: { n: 7 } }, { 'idempotency-key': 'burst-key' })));
    const ok = responses.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    const runIds = new Set(ok.map((r) => r.body.data.run_id));
    expect(runIds.size, JSON.stringify(statusCounts(responses))).toBe(1);
    for (const r of responses) {
      if (r.status === 200) {
        expect(r.body.data).toMatchObject({ status: 'completed', output: { n: 7, slow: true } });
      } else {
        expect(r.status, r.text).toBe(409);
        expect(r.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
        expect(r.headers.get('retry-after')).toBeTruthy();
      }
    }
    // Exactly one of them was the first.
    expect(ok.filter((r) => r.body.data.idempotent_replay === undefined)).toHaveLength(1);
    expect(await runTotal(wf.workflowKey)).toBe(1);
    const [{ n }] = await t.sql<{ n: number }>(`select count(*)::int as n from workflow_runs r join workflows w on w.id = r.workflow_id where w.workflow_key = $1`, [wf.workflowKey]);
    expect(n).toBe(1);
  });

  it('refuses a malformed key with 400 and starts nothing', async () => {
    const wf = await deployed('Idempotent keys', [trigger, { id: 'done', step_type: 'end', config: { output: 1 } }]);
    for (const bad of ['k'.repeat(256), 'k'.repeat(300), 'schl\u00fcssel', 'tab\there']) {
      const res = await run(wf.workflowKey, { input: {} }, { 'idempotency-key': bad });
      expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
    }
    expect(await runTotal(wf.workflowKey)).toBe(0);
    const longest = await run(wf.workflowKey, { input: {} }, { 'idempotency-key': 'k'.repeat(255) });
    expect(longest.status, longest.text).toBe(200);
  });

  it('a run that failed is answered as it ended; the key is not freed by a failure', async () => {
    const wf = await deployed('Idempotent failure', [trigger, { id: 'boom', step_type: 'condition', config: { expression: 'trigger.missing.deeper > 1' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);
    const first = await run(wf.workflowKey, { input: {} }, { 'idempotency-key': 'fails' });
    expect(first.body.data.status).toBe('failed');
    const again = await run(wf.workflowKey, { input: {} }, { 'idempotency-key': 'fails' });
    expect(again.body.data).toMatchObject({ run_id: first.body.data.run_id, status: 'failed', idempotent_replay: true });
    expect(await runTotal(wf.workflowKey)).toBe(1);
  });

  it('async runs: a repeat answers 202 with the first run', async () => {
    const wf = await deployed('Idempotent async', slowSteps(200));
    const first = await run(wf.workflowKey, { input: { n: 1 }, mode: 'async' }, { 'idempotency-key': 'async-1' });
    expect(first.status, first.text).toBe(202);
    const again = await run(wf.workflowKey, { input: { n: 1 }, mode: 'async' }, { 'idempotency-key': 'async-1' });
    expect(again.status, again.text).toBe(202);
    expect(again.body.data).toMatchObject({ run_id: first.body.data.run_id, idempotent_replay: true });
    await finished(wf.workflowKey, first.body.data.run_id);
    const later = await run(wf.workflowKey, { input: { n: 1 }, mode: 'async' }, { 'idempotency-key': 'async-1' });
    expect(later.body.data).toEqual({ run_id: first.body.data.run_id, status: 'completed', idempotent_replay: true });
    expect(await runTotal(wf.workflowKey)).toBe(1);
  });
});

describe('max_concurrent_runs', () => {
  it('20 requests at once with a limit of 3: three run, 17 are 429 CONCURRENCY_LIMIT with Retry-After', async () => {
    const wf = await deployed('Limited', slowSteps(600), 3);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, n) => run(wf.workflowKey, { input: { n } })));
    expect(statusCounts(responses)).toEqual({ 200: 3, 429: 17 });
    for (const r of responses.filter((r) => r.status === 200)) expect(r.body.data.status).toBe('completed');
    for (const r of responses.filter((r) => r.status !== 200)) expectLimited(r, 3);
    expect(await runTotal(wf.workflowKey)).toBe(3);
    // The slots are free again once the runs ended.
    const after = await run(wf.workflowKey, { input: { n: 99 } });
    expect(after.status, after.text).toBe(200);
  });

  it('a request refused at the limit does not use up its Idempotency-Key', async () => {
    const wf = await deployed('Limited with keys', [trigger, { id: 'pause', step_type: 'delay', config: { seconds: 3600 } }], 1);
    const holder = await run(wf.workflowKey, { input: {} });
    expect(holder.body.data.status).toBe('waiting');
    const refused = await run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'after-limit' });
    expectLimited(refused, 1);
    const again = await run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'after-limit' });
    expectLimited(again, 1);
    await t.api.post(`/v1/workflows/${wf.workflowKey}/runs/${holder.body.data.run_id}/cancel`, undefined, key());
    const admitted = await run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'after-limit' });
    expect(admitted.status, admitted.text).toBe(200);
    expect(admitted.body.data.idempotent_replay).toBeUndefined();
    expect(await runTotal(wf.workflowKey)).toBe(2);
  });

  it('async runs take slots too; without a limit every request runs', async () => {
    const wf = await deployed('Limited async', slowSteps(800), 2);
    const responses = await Promise.all(Array.from({ length: 6 }, (_, n) => run(wf.workflowKey, { input: { n }, mode: 'async' })));
    expect(statusCounts(responses)).toEqual({ 202: 2, 429: 4 });
    for (const r of responses.filter((r) => r.status === 429)) expectLimited(r, 2);
    await drained(wf.workflowKey);
    expect(await runTotal(wf.workflowKey)).toBe(2);

    const lifted = await t.api.patch(`/v1/workflows/${wf.workflowKey}`, { max_concurrent_runs: null }, key());
    expect(lifted.status, lifted.text).toBe(200);
    expect(lifted.body.data.workflow.max_concurrent_runs).toBeNull();
    const free = await Promise.all(Array.from({ length: 6 }, (_, n) => run(wf.workflowKey, { input: { n }, mode: 'async' })));
    expect(statusCounts(free)).toEqual({ 202: 6 });
    await drained(wf.workflowKey);

    for (const bad of [0, -1, 1.5, '3']) {
      const res = await t.api.patch(`/v1/workflows/${wf.workflowKey}`, { max_concurrent_runs: bad }, key());
      expect(res.status, `${bad}: ${res.text}`).toBe(400);
    }
  });

  it('runs waiting at a delay hold their slots until they are cancelled', async () => {
    const wf = await deployed('Limited waits', [trigger, { id: 'pause', step_type: 'delay', config: { seconds: 3600 } }, { id: 'done', step_type: 'end', config: { output: 'later' } }], 2);
    const one = await run(wf.workflowKey, { input: {} });
    const two = await run(wf.workflowKey, { input: {} });
    expect(one.body.data.status, one.text).toBe('waiting');
    expect(two.body.data.status, two.text).toBe('waiting');
    expectLimited(await run(wf.workflowKey, { input: {} }), 2);
    expectLimited(await run(wf.workflowKey, { input: {}, mode: 'async' }), 2);
    expect(await runTotal(wf.workflowKey)).toBe(2);

    const cancelled = await t.api.post(`/v1/workflows/${wf.workflowKey}/runs/${one.body.data.run_id}/cancel`, undefined, key());
    expect(cancelled.status, cancelled.text).toBe(200);
    const three = await run(wf.workflowKey, { input: {} });
    expect(three.status, three.text).toBe(200);
    expect(three.body.data.status).toBe('waiting');
    expectLimited(await run(wf.workflowKey, { input: {} }), 2);
  });

  it('a retry counts against the limit like a new run', async () => {
    const wf = await deployed(
      'Limited retry',
      [
        trigger,
        { id: 'route', step_type: 'condition', config: { expression: 'trigger.wait == true' }, on_success_ref: 'pause', on_failure_ref: 'call' },
        { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/nope` } },
        { id: 'pause', step_type: 'delay', config: { seconds: 3600 } },
      ],
      1,
    );
    const failed = await run(wf.workflowKey, { input: { wait: false } });
    expect(failed.body.data.status, failed.text).toBe('failed');
    const waiting = await run(wf.workflowKey, { input: { wait: true } });
    expect(waiting.body.data.status, waiting.text).toBe('waiting');
    expectLimited(await t.api.post(`/v1/workflows/${wf.workflowKey}/runs/${failed.body.data.run_id}/retry`, undefined, key()), 1);
    // Refused, the run is still failed and retryable.
    expect(await runDetail(wf.workflowKey, failed.body.data.run_id)).toMatchObject({ status: 'failed', can_retry: true });
    await t.api.post(`/v1/workflows/${wf.workflowKey}/runs/${waiting.body.data.run_id}/cancel`, undefined, key());
    const retried = await t.api.post(`/v1/workflows/${wf.workflowKey}/runs/${failed.body.data.run_id}/retry`, undefined, key());
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.data).toMatchObject({ run_id: failed.body.data.run_id, status: 'failed' });
  });
});

// ---- A second server process ------------------------------------------------------------------

/** A second server process on the test database. */
const startSecondProcess = () => startServerProcess('the second process', { DATABASE_URL: t.databaseUrl, ADMIN_SECRET, JWT_SECRET, DB_POOL_MAX: '5', WORKER_CONCURRENCY: '2', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });

describe('two server processes on one database', () => {
  let second: ServerProcess;
  beforeAll(async () => {
    second = await startSecondProcess();
  }, 120_000);
  afterAll(() => stopServerProcess(second));

  it('20 requests split over both processes with a limit of 3: exactly three runs', async () => {
    const wf = await deployed('Limited across processes', slowSteps(700), 3);
    // Both processes know the workflow.
    expect((await second.api.get(`/v1/workflows/${wf.workflowKey}`, key())).body.data.workflow.max_concurrent_runs).toBe(3);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, n) => run(wf.workflowKey, { input: { n } }, {}, n % 2 ? second.api : t.api)));
    expect(statusCounts(responses), responses.map((r) => r.status).join(',')).toEqual({ 200: 3, 429: 17 });
    for (const r of responses.filter((r) => r.status === 429)) expectLimited(r, 3);
    expect(await runTotal(wf.workflowKey)).toBe(3);
  });

  it('one Idempotency-Key sent to both processes at once: exactly one run', async () => {
    const wf = await deployed('Idempotent across processes', slowSteps(300));
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => run(wf.workflowKey, { input: { n: 1 } }, { 'idempotency-key': 'cross-process' }, i % 2 ? second.api : t.api)));
    const ok = responses.filter((r) => r.status === 200);
    for (const r of responses) expect([200, 409], r.text).toContain(r.status);
    expect(new Set(ok.map((r) => r.body.data.run_id)).size).toBe(1);
    expect(await runTotal(wf.workflowKey)).toBe(1);
  });

  it('webhook deliveries to both processes with one webhook-id: one run', async () => {
    const res = await t.api.post('/v1/workflows', { name: 'Webhook across processes', steps: [{ id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'done', step_type: 'end', config: { output: 1 } }] }, key());
    const workflowKey = res.body.data.workflow.workflow_key;
    const dep = await t.api.post(`/v1/workflows/${workflowKey}/deploy`, undefined, key());
    const pathname = new URL(dep.body.data.webhook_url).pathname;
    const body = JSON.stringify({ hello: 'both' });
    const now = new Date();
    const headers = { 'webhook-id': 'msg_cross', 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(dep.body.data.webhook_secret).sign('msg_cross', now, body) };
    const deliveries = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? second.api : t.api).post(pathname, undefined, { raw: body, contentType: 'application/json', headers })));
    expect(deliveries.map((d) => d.status)).toEqual(Array(10).fill(202));
    expect(new Set(deliveries.map((d) => d.body.data.run_id)).size).toBe(1);
    expect(deliveries.filter((d) => !d.body.data.duplicate)).toHaveLength(1);
    expect(await runTotal(workflowKey)).toBe(1);
  });
});

// ---- Async runs and callbacks -------------------------------------------------------------------

/** The secret that signs run callbacks, derived from the workflow's webhook secret as documented. */
const callbackSecretOf = (webhookSecret: string) =>
  `whsec_${createHmac('sha256', Buffer.from(webhookSecret.slice('whsec_'.length), 'base64')).update('liya/run-callback/v1').digest('base64')}`;

/** The callback deliveries at `p`, each verified with the callback secret of the webhook `secret`; their parsed bodies. */
function verified(p: string, secret: string) {
  return receivedAt(p).map((d) => {
    const wh = new Webhook(callbackSecretOf(secret));
    wh.verify(d.body, { 'webhook-id': d.headers['webhook-id'], 'webhook-timestamp': d.headers['webhook-timestamp'], 'webhook-signature': d.headers['webhook-signature'] });
    return JSON.parse(d.body);
  });
}

describe('async runs with a callback_url', () => {
  let wf: { workflowKey: string; id: string };
  let secret: string;

  it('answers 202 at once; the run completes on the job runner; one signed callback carries the run', async () => {
    wf = await deployed('Async', slowSteps(300));
    const res = await run(wf.workflowKey, { input: { n: 5 }, mode: 'async', callback_url: `${webUrl}/cb/one` });
    expect(res.status, res.text).toBe(202);
    expect(res.body.data).toEqual({ run_id: expect.any(String), status: 'running', webhook_secret: expect.stringMatching(/^whsec_/), callback_secret: expect.stringMatching(/^whsec_/) });
    secret = res.body.data.webhook_secret;
    expect(res.body.data.callback_secret).toBe(callbackSecretOf(secret));
    const runId = res.body.data.run_id;
    const done = await finished(wf.workflowKey, runId);
    expect(done).toMatchObject({ status: 'completed', triggered_by: 'api', output: { n: 5, slow: true } });
    // The workflow now has a secret (a manual workflow: no webhook URL).
    const read = await t.api.get(`/v1/workflows/${wf.workflowKey}`, key());
    expect(read.body.data.workflow.trigger_config).toEqual({ slug: null, has_secret: true });

    await waitFor(() => receivedAt('/cb/one').length > 0, 'the callback', 10_000);
    const [delivery] = receivedAt('/cb/one');
    expect(delivery.headers['content-type']).toMatch(/application\/json/);
    expect(delivery.headers["webhook-id"]).toMatch(new RegExp(`^msg_run_${runId}_\\d+$`));
    const [body] = verified('/cb/one', secret);
    expect(body).toEqual({ type: 'workflow.run.completed', timestamp: expect.any(String), data: expect.objectContaining({ run_id: runId, status: 'completed', output: { n: 5, slow: true } }) });
    expect(body.data).toEqual(done);
    // A wrong secret does not verify it.
    expect(() => verified('/cb/one', `whsec_${Buffer.alloc(32, 1).toString('base64')}`)).toThrow();
    // Delivered once: its delivery job is done, so no other delivery can come.
    await waitFor(async () => (await t.sql('select 1 from graphile_worker._private_jobs where key = $1', [`wf-callback:${runId}`])).length === 0, 'the delivery job to be done');
    expect(receivedAt('/cb/one')).toHaveLength(1);
  });

  it('later async runs reuse the secret without showing it; a failed run calls back as failed', async () => {
    const res = await run(wf.workflowKey, { input: { n: 6 }, mode: 'async', callback_url: `${webUrl}/cb/two` });
    expect(res.status, res.text).toBe(202);
    expect(res.body.data.webhook_secret).toBeUndefined();
    await waitFor(() => receivedAt('/cb/two').length > 0, 'the second callback', 10_000);
    expect(verified('/cb/two', secret)[0]).toMatchObject({ type: 'workflow.run.completed', data: { run_id: res.body.data.run_id, output: { n: 6, slow: true } } });

    const failing = await deployed('Async failing', [trigger, { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/missing` } }]);
    const f = await run(failing.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/failed` });
    expect(f.status, f.text).toBe(202);
    await waitFor(() => receivedAt('/cb/failed').length > 0, 'the failure callback', 10_000);
    const [body] = verified('/cb/failed', f.body.data.webhook_secret);
    expect(body).toMatchObject({ type: 'workflow.run.failed', data: { run_id: f.body.data.run_id, status: 'failed', error: { code: 'STEP_FAILED', step_id: 'call' } } });
  });

  it('an async run without a callback_url just runs; callback_url needs mode async and an http(s) URL', async () => {
    const plain = await deployed('Async plain', slowSteps(100));
    const res = await run(plain.workflowKey, { input: { n: 1 }, mode: 'async' });
    expect(res.status, res.text).toBe(202);
    expect(res.body.data).toEqual({ run_id: expect.any(String), status: 'running' });
    expect((await finished(plain.workflowKey, res.body.data.run_id)).status).toBe('completed');
    // No secret was minted for a run without a callback.
    expect((await t.api.get(`/v1/workflows/${plain.workflowKey}`, key())).body.data.workflow.trigger_config.has_secret).toBe(false);

    const syncWithCallback = await run(plain.workflowKey, { input: {}, callback_url: `${webUrl}/cb/never` });
    expect(syncWithCallback.status, syncWithCallback.text).toBe(400);
    expect(syncWithCallback.body.error.code).toBe('INVALID_INPUT');
    const explicitSync = await run(plain.workflowKey, { input: {}, mode: 'sync', callback_url: `${webUrl}/cb/never` });
    expect(explicitSync.status, explicitSync.text).toBe(400);
    for (const bad of ['ftp://example.com/x', 'not a url', '']) {
      const res2 = await run(plain.workflowKey, { input: {}, mode: 'async', callback_url: bad });
      expect(res2.status, `${bad}: ${res2.text}`).toBe(400);
    }
    expect((await run(plain.workflowKey, { input: {}, mode: 'later' })).status).toBe(400);
    expect(await runTotal(plain.workflowKey)).toBe(1);
  });

  it('two first async runs at once: only one shows the secret, and it signs both callbacks', async () => {
    const fresh = await deployed('Async race', [trigger, { id: 'done', step_type: 'end', config: { output: '{{trigger.n}}' } }]);
    const [r1, r2] = await Promise.all([1, 2].map((n) => run(fresh.workflowKey, { input: { n }, mode: 'async', callback_url: `${webUrl}/cb/race-${n}` })));
    expect([r1.status, r2.status]).toEqual([202, 202]);
    const shown = [r1, r2].map((r) => r.body.data.webhook_secret).filter(Boolean);
    expect(shown).toHaveLength(1);
    await waitFor(() => receivedAt('/cb/race-1').length > 0 && receivedAt('/cb/race-2').length > 0, 'both callbacks', 10_000);
    expect(verified('/cb/race-1', shown[0])[0].data.output).toBe(1);
    expect(verified('/cb/race-2', shown[0])[0].data.output).toBe(2);
  });

  it('a first async run refused at max_concurrent_runs keeps no secret: the next accepted one shows it', async () => {
    const full = await deployed('Async full', [trigger, { id: 'pause', step_type: 'delay', config: { seconds: 3600 } }], 1);
    const holder = await run(full.workflowKey, { input: {} });
    expect(holder.body.data.status, holder.text).toBe('waiting');
    const refused = await run(full.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/full` });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.text).not.toContain('whsec_');
    expect((await t.api.post(`/v1/workflows/${full.id}/runs/${holder.body.data.run_id}/cancel`, {}, key())).status).toBe(200);
    const accepted = await run(full.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/full` });
    expect(accepted.status, accepted.text).toBe(202);
    expect(accepted.body.data.webhook_secret).toMatch(/^whsec_/);
  });

  it('a webhook workflow signs its callbacks with the key derived from its webhook secret', async () => {
    const hook = await deployed('Async webhook workflow', [{ id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'done', step_type: 'end', config: { output: 'hooked' } }]);
    expect(hook.webhookSecret).toMatch(/^whsec_/);
    const res = await run(hook.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/hook` });
    expect(res.status, res.text).toBe(202);
    expect(res.body.data.webhook_secret).toBeUndefined();
    await waitFor(() => receivedAt('/cb/hook').length > 0, 'the callback', 10_000);
    expect(verified('/cb/hook', hook.webhookSecret!)[0].data.output).toBe('hooked');
  });

  it('a run that waits calls back when it ends: after its delay, or cancelled', async () => {
    const later = await deployed('Async delayed', [trigger, { id: 'pause', step_type: 'delay', config: { seconds: 1 } }, { id: 'done', step_type: 'end', config: { output: 'after the delay' } }]);
    const res = await run(later.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/delayed` });
    expect(res.status, res.text).toBe(202);
    const secretOfLater = res.body.data.webhook_secret;
    await waitFor(() => receivedAt('/cb/delayed').length > 0, 'the callback after the delay', 15_000);
    expect(verified('/cb/delayed', secretOfLater)[0]).toMatchObject({ type: 'workflow.run.completed', data: { status: 'completed', output: 'after the delay' } });

    const long = await deployed('Async long wait', [trigger, { id: 'pause', step_type: 'delay', config: { seconds: 3600 } }]);
    const waiting = await run(long.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/cancelled` });
    await waitFor(async () => (await runDetail(long.workflowKey, waiting.body.data.run_id)).status === 'waiting', 'the run to wait');
    // Waiting is not an end: no callback yet.
    expect(receivedAt('/cb/cancelled')).toHaveLength(0);
    const cancelled = await t.api.post(`/v1/workflows/${long.workflowKey}/runs/${waiting.body.data.run_id}/cancel`, undefined, key());
    expect(cancelled.status, cancelled.text).toBe(200);
    await waitFor(() => receivedAt('/cb/cancelled').length > 0, 'the cancel callback', 10_000);
    expect(verified('/cb/cancelled', waiting.body.data.webhook_secret)[0]).toMatchObject({ type: 'workflow.run.cancelled', data: { run_id: waiting.body.data.run_id, status: 'cancelled' } });
  });

  it('a failed async run that is retried calls back again, as a new message (its own webhook-id)', async () => {
    stepHealthy = false;
    const flaky = await deployed('Async retried', [trigger, { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/flaky-step` } }, { id: 'done', step_type: 'end', config: { output: '{{steps.call.output.body}}' } }]);
    const res = await run(flaky.workflowKey, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/retried` });
    expect(res.status, res.text).toBe(202);
    const runSecret = res.body.data.webhook_secret;
    await waitFor(() => receivedAt('/cb/retried').length > 0, 'the failure callback', 10_000);
    expect(verified('/cb/retried', runSecret)[0].type).toBe('workflow.run.failed');
    stepHealthy = true;
    const retried = await t.api.post(`/v1/workflows/${flaky.workflowKey}/runs/${res.body.data.run_id}/retry`, undefined, key());
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.data).toMatchObject({ status: 'completed', output: { up: true } });
    await waitFor(() => receivedAt('/cb/retried').length > 1, 'the callback after the retry', 10_000);
    const bodies = verified('/cb/retried', runSecret);
    expect(bodies.map((b) => b.type)).toEqual(['workflow.run.failed', 'workflow.run.completed']);
    // Receivers drop a repeated webhook-id as a redelivery: the new outcome needs its own.
    const [failedMsg, completedMsg] = receivedAt('/cb/retried');
    expect(completedMsg.headers['webhook-id']).not.toBe(failedMsg.headers['webhook-id']);
  });

  it('a callback answered with 500 is delivered again with backoff, under the same webhook-id', async () => {
    const res = await run(wf.workflowKey, { input: { n: 8 }, mode: 'async', callback_url: `${webUrl}/cb-flaky/one` });
    expect(res.status, res.text).toBe(202);
    await waitFor(() => receivedAt('/cb-flaky/one').length >= 2, 'the retried callback', 20_000);
    const [firstTry, secondTry] = receivedAt('/cb-flaky/one');
    expect(secondTry.headers['webhook-id']).toBe(firstTry.headers['webhook-id']);
    // The server stamps each attempt (webhook-timestamp, Unix seconds): the retry waited its backoff.
    expect(Number(secondTry.headers['webhook-timestamp'])).toBeGreaterThan(Number(firstTry.headers['webhook-timestamp']));
    const bodies = verified('/cb-flaky/one', secret);
    expect(bodies.map((b) => b.data.run_id)).toEqual([res.body.data.run_id, res.body.data.run_id]);
    await waitFor(async () => (await t.sql('select 1 from graphile_worker._private_jobs where key = $1', [`wf-callback:${res.body.data.run_id}`])).length === 0, 'the delivery job to be done');
    expect(receivedAt('/cb-flaky/one')).toHaveLength(2);
  }, 120_000);

  it('without OUTBOUND_ALLOWED_HOSTS, a callback to a private address is not sent', async () => {
    const closed = await startTestServer({});
    try {
      const tenant = await signupTenant(closed.api, { companyName: 'No private callbacks' });
      const headers = bearer(tenant.apiKey);
      const created = await closed.api.post('/v1/workflows', { name: 'Private callback', steps: [trigger, { id: 'done', step_type: 'end', config: { output: 1 } }] }, { headers });
      const workflowKey = created.body.data.workflow.workflow_key;
      await closed.api.post(`/v1/workflows/${workflowKey}/deploy`, undefined, { headers });
      const res = await closed.api.post(`/v1/workflows/${workflowKey}/run`, { input: {}, mode: 'async', callback_url: `${webUrl}/cb/private` }, { headers });
      expect(res.status, res.text).toBe(202);
      await waitFor(async () => (await closed.api.get(`/v1/workflows/${workflowKey}/runs/${res.body.data.run_id}`, { headers })).body.data.run.status === 'completed', 'the run');
      const job = await waitFor(
        async () => (await closed.sql<{ last_error: string | null; attempts: number }>(`select last_error, attempts from graphile_worker.jobs where key = $1`, [`wf-callback:${res.body.data.run_id}`]))[0]?.last_error,
        'the callback job to fail',
      );
      expect(job).toMatch(/refused|not allowed|private/i);
      expect(receivedAt('/cb/private')).toHaveLength(0);
    } finally {
      await closed.close();
    }
  }, 120_000);
});
