// Runs that start from outside an API call: signed webhook deliveries (Standard Webhooks), secret
// rotation, events published with POST /v1/events, and schedules (cron with seconds) — including a
// second server process on the same database, where each tick must still run once.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { ADMIN_SECRET, JWT_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { waitFor } from '../support/wait-for.js';
import { refuseWrites } from '../support/db-faults.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const FINAL = ['completed', 'failed', 'cancelled', 'rejected'];

async function create(s: SignedUpTenant, name: string, steps: unknown[]) {
  const res = await t.api.post('/v1/workflows', { name, steps }, key(s));
  expect(res.status, res.text).toBe(201);
  return res.body.data.workflow as { id: string; workflow_key: string };
}

async function deploy(s: SignedUpTenant, workflowKey: string) {
  const dep = await t.api.post(`/v1/workflows/${workflowKey}/deploy`, undefined, key(s));
  expect(dep.status, dep.text).toBe(200);
  return dep.body.data as { workflow: any; webhook_url?: string; webhook_secret?: string };
}

async function toggle(s: SignedUpTenant, workflowKey: string, active: boolean) {
  const res = await t.api.patch(`/v1/workflows/${workflowKey}/toggle`, undefined, key(s));
  expect(res.status, res.text).toBe(200);
  expect(res.body.data.workflow.is_active).toBe(active);
}

const runDetail = async (s: SignedUpTenant, workflowKey: string, runId: string) => {
  const res = await t.api.get(`/v1/workflows/${workflowKey}/runs/${runId}`, key(s));
  expect(res.status, res.text).toBe(200);
  return res.body.data.run;
};

/** Polls the run until it has ended. */
const finished = (s: SignedUpTenant, workflowKey: string, runId: string, timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const run = await runDetail(s, workflowKey, runId);
      return FINAL.includes(run.status) ? run : null;
    },
    `run ${runId} of ${workflowKey} to end`,
    timeoutMs,
  );

const runTotal = async (s: SignedUpTenant, workflowKey: string) => {
  const res = await t.api.get(`/v1/workflows/${workflowKey}/runs?pageSize=100`, key(s));
  expect(res.status, res.text).toBe(200);
  return res.body.data.pagination.total as number;
};

interface Delivery {
  id?: string;
  /** When the message is signed (default now). */
  at?: Date;
  /** Headers sent instead of / in addition to the signed ones. */
  headers?: Record<string, string>;
}

/** A Standard Webhooks delivery of `payload` to the path of `webhookUrl`, signed with `secret`. */
function deliver(webhookUrl: string, secret: string | null, payload: unknown, options: Delivery = {}) {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const id = options.id ?? `msg_${crypto.randomUUID()}`;
  const at = options.at ?? new Date();
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)) };
  if (secret) headers['webhook-signature'] = new Webhook(secret).sign(id, at, body);
  return t.api.post(new URL(webhookUrl).pathname, undefined, { raw: body, contentType: 'application/json', headers: { ...headers, ...options.headers } });
}

beforeAll(async () => {
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', DB_POOL_MAX: '8' });
  [a, b] = await Promise.all([signupTenant(t.api, { companyName: 'Triggers A' }), signupTenant(t.api, { companyName: 'Triggers B' })]);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const webhookSteps = (output: unknown = { got: '{{trigger.candidate}}', n: '{{trigger.n}}' }) => [
  { id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } },
  { id: 'done', step_type: 'end', config: { output } },
];

describe('webhook triggers', () => {
  let wf: { id: string; workflow_key: string };
  let url: string;
  let secret: string;
  /** The newest secret of `wf`. */
  let current: string;

  it('the first deploy mints the URL and the secret; a redeploy keeps them and shows neither', async () => {
    wf = await create(a, 'Inbound candidates', webhookSteps());
    const first = await deploy(a, wf.workflow_key);
    expect(first.webhook_url).toMatch(/^http:\/\/localhost:\d+\/webhooks\/workflows\/[A-Za-z0-9_-]+$/);
    expect(first.webhook_secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    url = first.webhook_url!;
    secret = first.webhook_secret!;
    const slug = url.split('/').at(-1);
    expect(first.workflow).toMatchObject({ trigger_type: 'webhook', trigger_config: { slug, has_secret: true }, version: 1, is_active: true });

    const again = await deploy(a, wf.workflow_key);
    expect(again.webhook_url).toBeUndefined();
    expect(again.webhook_secret).toBeUndefined();
    expect(again.workflow).toMatchObject({ version: 2, trigger_config: { slug, has_secret: true } });
    const read = await t.api.get(`/v1/workflows/${wf.workflow_key}`, key(a));
    expect(read.body.data.workflow.trigger_config).toEqual({ slug, has_secret: true });
    // The secret is never shown by a read.
    expect(read.text).not.toContain(secret);
  });

  it('a signed delivery answers 202 with the run; the run executes on the job runner with the body as input', async () => {
    const res = await deliver(url, secret, { candidate: 'Ana', n: 3 });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ success: true, data: { run_id: expect.any(String) } });
    const run = await finished(a, wf.workflow_key, res.body.data.run_id);
    expect(run).toMatchObject({ status: 'completed', triggered_by: 'webhook', version: 2, scope: 'live', output: { got: 'Ana', n: 3 }, input: { candidate: 'Ana', n: 3 } });
  });

  it('refuses missing, wrong and stale signatures (401), unknown slugs and bodies that are not objects', async () => {
    const before = await runTotal(a, wf.workflow_key);
    const missing = await deliver(url, null, { candidate: 'x' });
    expect(missing.status, missing.text).toBe(401);
    expect(missing.body.error.code).toBe('INVALID_SIGNATURE');

    const wrong = await deliver(url, `whsec_${Buffer.alloc(32, 7).toString('base64')}`, { candidate: 'x' });
    expect(wrong.status, wrong.text).toBe(401);
    expect(wrong.body.error.code).toBe('INVALID_SIGNATURE');

    // Signed correctly, but the body was changed on the way.
    const body = JSON.stringify({ candidate: 'x' });
    const id = 'msg_tampered';
    const now = new Date();
    const tampered = await t.api.post(new URL(url).pathname, undefined, {
      raw: JSON.stringify({ candidate: 'y' }),
      contentType: 'application/json',
      headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, now, body) },
    });
    expect(tampered.status, tampered.text).toBe(401);

    // A valid signature over a timestamp older than 5 minutes (a replay), or too far ahead.
    const stale = await deliver(url, secret, { candidate: 'x' }, { at: new Date(Date.now() - 6 * 60_000) });
    expect(stale.status, stale.text).toBe(401);
    expect(stale.body.error.code).toBe('INVALID_SIGNATURE');
    const future = await deliver(url, secret, { candidate: 'x' }, { at: new Date(Date.now() + 6 * 60_000) });
    expect(future.status, future.text).toBe(401);
    // Within the window it is fine.
    const recent = await deliver(url, secret, { candidate: 'recent' }, { at: new Date(Date.now() - 2 * 60_000) });
    expect(recent.status, recent.text).toBe(202);

    const unknown = await deliver(`${t.url}/webhooks/workflows/no-such-slug`, secret, { candidate: 'x' });
    expect(unknown.status, unknown.text).toBe(404);

    const array = await deliver(url, secret, [1, 2]);
    expect(array.status, array.text).toBe(400);
    expect(array.body.error.code).toBe('INVALID_INPUT');

    await finished(a, wf.workflow_key, recent.body.data.run_id);
    expect(await runTotal(a, wf.workflow_key)).toBe(before + 1);
  });

  it('a correctly signed body that is not JSON is 400 INVALID_JSON; an empty body is the input {}', async () => {
    const before = await runTotal(a, wf.workflow_key);
    const empty = await deliver(url, secret, '');
    expect(empty.status, empty.text).toBe(202);
    expect((await finished(a, wf.workflow_key, empty.body.data.run_id)).input).toEqual({});
    const notJson = await deliver(url, secret, 'not json');
    expect(notJson.status, notJson.text).toBe(400);
    expect(notJson.body.error.code).toBe('INVALID_JSON');
    // A NUL character (which PostgreSQL cannot store) is a 400 naming the field, in the body or the slug.
    const nul = await deliver(url, secret, '{"candidate":"a\\u0000b"}');
    expect(nul.status, nul.text).toBe(400);
    expect(nul.body.error).toMatchObject({ code: 'INVALID_INPUT', details: { issues: [{ path: 'candidate' }] } });
    const nulSlug = await t.api.post(`${new URL(url).pathname}%00`, undefined, { raw: '{}', contentType: 'application/json' });
    expect(nulSlug.status, nulSlug.text).toBe(400);
    expect(await runTotal(a, wf.workflow_key)).toBe(before + 1);
  });

  it('a repeated webhook-id answers the first run and starts no second one', async () => {
    const before = await runTotal(a, wf.workflow_key);
    const first = await deliver(url, secret, { candidate: 'Bo' }, { id: 'msg_repeat_1' });
    expect(first.status, first.text).toBe(202);
    expect(first.body.data.duplicate).toBeUndefined();
    // A redelivery is signed again (a new timestamp) but keeps its id.
    const again = await deliver(url, secret, { candidate: 'Bo' }, { id: 'msg_repeat_1', at: new Date(Date.now() - 1000) });
    expect(again.status, again.text).toBe(202);
    expect(again.body.data).toEqual({ run_id: first.body.data.run_id, duplicate: true });
    // At once, several times over.
    const burst = await Promise.all(Array.from({ length: 5 }, () => deliver(url, secret, { candidate: 'Bo' }, { id: 'msg_repeat_1' })));
    for (const res of burst) expect(res.body.data, res.text).toEqual({ run_id: first.body.data.run_id, duplicate: true });
    await finished(a, wf.workflow_key, first.body.data.run_id);
    expect(await runTotal(a, wf.workflow_key)).toBe(before + 1);

    // Several new ids at once: one run each.
    const fresh = await Promise.all(Array.from({ length: 5 }, (_, i) => deliver(url, secret, { candidate: `C${i}` }, { id: `msg_burst_${i}` })));
    expect(fresh.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    expect(new Set(fresh.map((r) => r.body.data.run_id)).size).toBe(5);
    await Promise.all(fresh.map((r) => finished(a, wf.workflow_key, r.body.data.run_id)));
    expect(await runTotal(a, wf.workflow_key)).toBe(before + 6);
  });

  it('a burst of deliveries, each id sent three times at once, is one run per id (accepted together in one statement); each run stores its trigger once', async () => {
    const before = await runTotal(a, wf.workflow_key);
    const ids = Array.from({ length: 8 }, (_, i) => `msg_together_${i}_${Date.now()}`);
    // Interleaved, so the repeats of an id arrive in the same moment as the other ids.
    const sends = [0, 1, 2].flatMap(() => ids.map((id, i) => ({ id, i })));
    const answers = await Promise.all(sends.map(({ id, i }) => deliver(url, secret, { candidate: `T${i}`, n: i }, { id })));
    for (const res of answers) expect(res.status, res.text).toBe(202);
    const runOf = new Map<string, Set<string>>();
    sends.forEach(({ id }, k) => runOf.set(id, (runOf.get(id) ?? new Set()).add(answers[k].body.data.run_id)));
    // Every answer for an id names the same run; different ids have different runs.
    for (const id of ids) expect(runOf.get(id)!.size, id).toBe(1);
    const runIds = ids.map((id) => [...runOf.get(id)!][0]);
    expect(new Set(runIds).size).toBe(ids.length);
    // Each id: exactly one answer started its run, the others are marked duplicates.
    for (const id of ids) expect(sends.filter((x, k) => x.id === id && answers[k].body.data.duplicate === undefined).length, id).toBe(1);
    const runs = await Promise.all(runIds.map((runId) => finished(a, wf.workflow_key, runId)));
    runs.forEach((run, i) => {
      expect(run).toMatchObject({ status: 'completed', output: { got: `T${i}`, n: i }, input: { candidate: `T${i}`, n: i } });
      // The trigger step, stored with the run at intake, then the end step: each once, in order.
      expect(run.trace.map((s: { step_id: string; status: string }) => [s.step_id, s.status])).toEqual([['t', 'completed'], ['done', 'completed']]);
      expect(run.trace[0]).toMatchObject({ step_type: 'trigger', input: null, output: { candidate: `T${i}`, n: i } });
    });
    expect(await runTotal(a, wf.workflow_key)).toBe(before + ids.length);
  });

  it('a redelivery while the first run still holds the only slot (max_concurrent_runs) answers the first run, not 429', async () => {
    const slow = await create(a, 'Inbound, one at a time', [
      { id: 't', step_type: 'trigger', config: { trigger_subtype: 'webhook' } },
      { id: 'pause', step_type: 'delay', config: { seconds: 3600 } },
      { id: 'done', step_type: 'end', config: { output: 1 } },
    ]);
    const dep = await deploy(a, slow.workflow_key);
    const patched = await t.api.patch(`/v1/workflows/${slow.workflow_key}`, { max_concurrent_runs: 1 }, key(a));
    expect(patched.status, patched.text).toBe(200);
    const first = await deliver(dep.webhook_url!, dep.webhook_secret!, { n: 1 }, { id: 'msg_slot_1' });
    expect(first.status, first.text).toBe(202);
    await waitFor(async () => (await runDetail(a, slow.workflow_key, first.body.data.run_id)).status === 'waiting', 'the run to wait');
    // Another delivery is refused: the workflow is full.
    const other = await deliver(dep.webhook_url!, dep.webhook_secret!, { n: 2 }, { id: 'msg_slot_2' });
    expect(other.status, other.text).toBe(429);
    expect(other.body.error.code).toBe('CONCURRENCY_LIMIT');
    expect(other.headers.get('retry-after')).toBe('1');
    // The sender redelivers the first message (it did not see the answer): that delivery was accepted.
    const redelivery = await deliver(dep.webhook_url!, dep.webhook_secret!, { n: 1 }, { id: 'msg_slot_1' });
    expect(redelivery.status, redelivery.text).toBe(202);
    expect(redelivery.body.data).toEqual({ run_id: first.body.data.run_id, duplicate: true });
    expect(await runTotal(a, slow.workflow_key)).toBe(1);
  });

  it('an inactive workflow answers 404; switched on again it takes deliveries', async () => {
    await toggle(a, wf.workflow_key, false);
    const off = await deliver(url, secret, { candidate: 'off' });
    expect(off.status, off.text).toBe(404);
    await toggle(a, wf.workflow_key, true);
    const on = await deliver(url, secret, { candidate: 'on' });
    expect(on.status, on.text).toBe(202);
    expect((await finished(a, wf.workflow_key, on.body.data.run_id)).output).toMatchObject({ got: 'on' });
  });

  it('another tenant cannot read or rotate the workflow behind a slug', async () => {
    expect((await t.api.get(`/v1/workflows/${wf.workflow_key}`, key(b))).status).toBe(404);
    expect((await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, {}, key(b))).status).toBe(404);
  });

  it('rotation: both secrets verify during the grace period; with grace 0 the old one fails at once', async () => {
    const rotated = await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, { grace_period_seconds: 120 }, key(a));
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.data).toEqual({ webhook_url: url, webhook_secret: expect.stringMatching(/^whsec_/), callback_secret: expect.stringMatching(/^whsec_/), previous_secret_valid_until: expect.any(String) });
    const second = rotated.body.data.webhook_secret as string;
    expect(second).not.toBe(secret);
    const until = Date.parse(rotated.body.data.previous_secret_valid_until);
    expect(Math.abs(until - (Date.now() + 120_000))).toBeLessThan(10_000);

    const withOld = await deliver(url, secret, { candidate: 'old' });
    expect(withOld.status, withOld.text).toBe(202);
    const withNew = await deliver(url, second, { candidate: 'new' });
    expect(withNew.status, withNew.text).toBe(202);
    // Signed by both (as a sender mid-rotation might): fine.
    const body = JSON.stringify({ candidate: 'both' });
    const id = 'msg_both';
    const now = new Date();
    const both = await t.api.post(new URL(url).pathname, undefined, {
      raw: body,
      contentType: 'application/json',
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': `${new Webhook(secret).sign(id, now, body)} ${new Webhook(second).sign(id, now, body)}`,
      },
    });
    expect(both.status, both.text).toBe(202);

    const defaults = await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, {}, key(a));
    expect(defaults.status, defaults.text).toBe(200);
    expect(Math.abs(Date.parse(defaults.body.data.previous_secret_valid_until) - (Date.now() + 300_000))).toBeLessThan(10_000);
    const third = defaults.body.data.webhook_secret as string;
    // The secret before is still valid (grace 300 s); the one before that is gone.
    expect((await deliver(url, second, { candidate: 'second' })).status).toBe(202);
    expect((await deliver(url, third, { candidate: 'third' })).status).toBe(202);
    const first = await deliver(url, secret, { candidate: 'first' });
    expect(first.status, first.text).toBe(401);

    const now0 = await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, { grace_period_seconds: 0 }, key(a));
    expect(now0.status, now0.text).toBe(200);
    const fourth = now0.body.data.webhook_secret as string;
    const stale = await deliver(url, third, { candidate: 'third again' });
    expect(stale.status, stale.text).toBe(401);
    expect(stale.body.error.code).toBe('INVALID_SIGNATURE');
    const fresh = await deliver(url, fourth, { candidate: 'fourth' });
    expect(fresh.status, fresh.text).toBe(202);
    expect((await finished(a, wf.workflow_key, fresh.body.data.run_id)).output).toMatchObject({ got: 'fourth' });

    // A redeploy keeps the rotated secret.
    const redeployed = await deploy(a, wf.workflow_key);
    expect(redeployed.webhook_secret).toBeUndefined();
    expect((await deliver(url, fourth, { candidate: 'after redeploy' })).status).toBe(202);
    current = fourth;
  });

  it('rotation checks its input and refuses workflows without a webhook', async () => {
    const tooLong = await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, { grace_period_seconds: 3601 }, key(a));
    expect(tooLong.status, tooLong.text).toBe(400);
    const negative = await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, { grace_period_seconds: -1 }, key(a));
    expect(negative.status, negative.text).toBe(400);
    const max = await t.api.post(`/v1/workflows/${wf.workflow_key}/webhook-secret/rotate`, { grace_period_seconds: 3600 }, key(a));
    expect(max.status, max.text).toBe(200);
    current = max.body.data.webhook_secret;

    const manual = await create(a, 'Manual only', [{ id: 't', step_type: 'trigger', config: { trigger_subtype: 'manual' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);
    const manualDeploy = await deploy(a, manual.workflow_key);
    expect(manualDeploy.webhook_url).toBeUndefined();
    expect(manualDeploy.webhook_secret).toBeUndefined();
    expect(manualDeploy.workflow.trigger_config).toEqual({ slug: null, has_secret: false });
    const notWebhook = await t.api.post(`/v1/workflows/${manual.workflow_key}/webhook-secret/rotate`, {}, key(a));
    expect(notWebhook.status, notWebhook.text).toBe(409);
    expect(notWebhook.body.error.code).toBe('NOT_A_WEBHOOK_WORKFLOW');

    const draft = await create(a, 'Webhook draft', webhookSteps());
    const neverDeployed = await t.api.post(`/v1/workflows/${draft.workflow_key}/webhook-secret/rotate`, {}, key(a));
    expect(neverDeployed.status, neverDeployed.text).toBe(409);
    expect(neverDeployed.body.error.code).toBe('NOT_A_WEBHOOK_WORKFLOW');

    expect((await t.api.post('/v1/workflows/no-such-workflow/webhook-secret/rotate', {}, key(a))).status).toBe(404);
  });

  it('each webhook workflow has its own slug and secret; one secret does not open another workflow', async () => {
    const other = await create(a, 'Other inbound', webhookSteps({ other: true }));
    const dep = await deploy(a, other.workflow_key);
    expect(dep.webhook_url).not.toBe(url);
    const crossed = await deliver(dep.webhook_url!, secret, { candidate: 'x' });
    expect(crossed.status, crossed.text).toBe(401);
    const own = await deliver(dep.webhook_url!, dep.webhook_secret!, { candidate: 'x' });
    expect(own.status, own.text).toBe(202);
    // The same webhook-id on two workflows: two deliveries, two runs.
    const shared = 'msg_shared_between_workflows';
    const one = await deliver(dep.webhook_url!, dep.webhook_secret!, {}, { id: shared });
    const two = await deliver(url, current, {}, { id: shared });
    expect(one.status, one.text).toBe(202);
    expect(two.status, two.text).toBe(202);
    expect(one.body.data.duplicate).toBeUndefined();
    expect(two.body.data.duplicate).toBeUndefined();
    expect(two.body.data.run_id).not.toBe(one.body.data.run_id);

    // Deleted, the workflow's URL is gone.
    expect((await t.api.delete(`/v1/workflows/${other.workflow_key}`, key(a))).status).toBe(200);
    const gone = await deliver(dep.webhook_url!, dep.webhook_secret!, { candidate: 'x' });
    expect(gone.status, gone.text).toBe(404);
  });
});

const eventSteps = (eventName: string, output: unknown) => [
  { id: 't', step_type: 'trigger', config: { trigger_subtype: 'event', event_name: eventName } },
  { id: 'done', step_type: 'end', config: { output } },
];

describe('event triggers', () => {
  it('POST /v1/events runs every active workflow of the tenant listening to the event, and nothing else', async () => {
    const listening = await create(a, 'On candidate', eventSteps('candidate.created', { hello: '{{trigger.name}}', id: '{{trigger.id}}' }));
    await deploy(a, listening.workflow_key);
    const alsoListening = await create(a, 'Also on candidate', eventSteps('candidate.created', { second: '{{trigger.name}}' }));
    await deploy(a, alsoListening.workflow_key);
    const off = await create(a, 'Switched off', eventSteps('candidate.created', 'should not run'));
    await deploy(a, off.workflow_key);
    await toggle(a, off.workflow_key, false);
    const otherEvent = await create(a, 'On hire', eventSteps('candidate.hired', 'hired'));
    await deploy(a, otherEvent.workflow_key);
    const draft = await create(a, 'Never deployed listener', eventSteps('candidate.created', 'draft'));
    const foreign = await create(b, 'Foreign listener', eventSteps('candidate.created', { foreign: '{{trigger.name}}' }));
    await deploy(b, foreign.workflow_key);

    const res = await t.api.post('/v1/events', { name: 'candidate.created', payload: { name: 'Ana', id: 42 } }, key(a));
    expect(res.status, res.text).toBe(202);
    expect(res.body.data).toEqual({ runs: [expect.any(String), expect.any(String)], skipped: [] });
    const [r1, r2] = res.body.data.runs as string[];
    // The runs belong to the two listening workflows (ordered by workflow_key).
    const byId = await Promise.all(res.body.data.runs.map((id: string) => t.api.get(`/v1/workflows/runs/${id}`, key(a))));
    const keys = byId.map((r) => r.body.data.run.workflow_key).sort();
    expect(keys).toEqual([listening.workflow_key, alsoListening.workflow_key].sort());
    const runOfListening = byId.find((r) => r.body.data.run.workflow_key === listening.workflow_key)!.body.data.run.run_id;
    const done = await finished(a, listening.workflow_key, runOfListening);
    expect(done).toMatchObject({ status: 'completed', triggered_by: 'event', output: { hello: 'Ana', id: 42 }, input: { name: 'Ana', id: 42 } });
    const secondDone = await finished(a, alsoListening.workflow_key, [r1, r2].find((r) => r !== runOfListening)!);
    expect(secondDone.output).toEqual({ second: 'Ana' });

    // Nothing else ran.
    expect(await runTotal(a, off.workflow_key)).toBe(0);
    expect(await runTotal(a, otherEvent.workflow_key)).toBe(0);
    expect(await runTotal(a, draft.workflow_key)).toBe(0);
    expect(await runTotal(b, foreign.workflow_key)).toBe(0);
    // Another tenant cannot see these runs.
    expect((await t.api.get(`/v1/workflows/runs/${r1}`, key(b))).status).toBe(404);

    // Tenant B's event runs B's workflow only.
    const fromB = await t.api.post('/v1/events', { name: 'candidate.created', payload: { name: 'Bea' } }, key(b));
    expect(fromB.status, fromB.text).toBe(202);
    expect(fromB.body.data.runs).toHaveLength(1);
    expect((await finished(b, foreign.workflow_key, fromB.body.data.runs[0])).output).toEqual({ foreign: 'Bea' });
    expect(await runTotal(a, listening.workflow_key)).toBe(1);

    // An event nobody listens to, and an event whose listener is switched off.
    const nobody = await t.api.post('/v1/events', { name: 'nobody.listens', payload: {} }, key(a));
    expect(nobody.status, nobody.text).toBe(202);
    expect(nobody.body.data).toEqual({ runs: [], skipped: [] });
    const hired = await t.api.post('/v1/events', { name: 'candidate.hired' }, key(a));
    expect(hired.status, hired.text).toBe(202);
    expect(hired.body.data.runs).toHaveLength(1);

    // Switched back on, the workflow listens again.
    await toggle(a, off.workflow_key, true);
    const again = await t.api.post('/v1/events', { name: 'candidate.created', payload: { name: 'Cy' } }, key(a));
    expect(again.body.data.runs).toHaveLength(3);
    expect(await runTotal(a, off.workflow_key)).toBe(1);

    // Bad requests.
    expect((await t.api.post('/v1/events', { payload: {} }, key(a))).status).toBe(400);
    expect((await t.api.post('/v1/events', { name: 'x', payload: [1] }, key(a))).status).toBe(400);
    expect((await t.api.post('/v1/events', { name: 'x' })).status).toBe(401);
  });

  it('a workflow at its max_concurrent_runs is skipped and listed', async () => {
    const waiting = await create(a, 'Slow listener', [
      { id: 't', step_type: 'trigger', config: { trigger_subtype: 'event', event_name: 'slot.test' } },
      { id: 'pause', step_type: 'delay', config: { seconds: 3600 } },
      { id: 'done', step_type: 'end', config: { output: 1 } },
    ]);
    await deploy(a, waiting.workflow_key);
    const patched = await t.api.patch(`/v1/workflows/${waiting.workflow_key}`, { max_concurrent_runs: 1 }, key(a));
    expect(patched.status, patched.text).toBe(200);
    const first = await t.api.post('/v1/events', { name: 'slot.test' }, key(a));
    expect(first.body.data.runs).toHaveLength(1);
    await waitFor(async () => (await runDetail(a, waiting.workflow_key, first.body.data.runs[0])).status === 'waiting', 'the run to wait');
    const second = await t.api.post('/v1/events', { name: 'slot.test' }, key(a));
    expect(second.status, second.text).toBe(202);
    expect(second.body.data).toEqual({ runs: [], skipped: [{ workflow_key: waiting.workflow_key, reason: 'CONCURRENCY_LIMIT' }] });
    expect(await runTotal(a, waiting.workflow_key)).toBe(1);
  });

  it('Idempotency-Key: a repeat answers the first runs; another body is 422', async () => {
    const wf = await create(a, 'Idempotent listener', eventSteps('order.placed', { order: '{{trigger.order}}' }));
    await deploy(a, wf.workflow_key);
    const headers = { ...bearer(a.apiKey), 'idempotency-key': 'evt-order-1' };
    const first = await t.api.post('/v1/events', { name: 'order.placed', payload: { order: 1 } }, { headers });
    expect(first.status, first.text).toBe(202);
    expect(first.body.data.runs).toHaveLength(1);
    expect(first.body.data.idempotent_replay).toBeUndefined();
    const replay = await t.api.post('/v1/events', { name: 'order.placed', payload: { order: 1 } }, { headers });
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body.data).toEqual({ runs: first.body.data.runs, skipped: [], idempotent_replay: true });
    const other = await t.api.post('/v1/events', { name: 'order.placed', payload: { order: 2 } }, { headers });
    expect(other.status, other.text).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // Concurrent repeats of a new key: one set of runs.
    const burstHeaders = { ...bearer(a.apiKey), 'idempotency-key': 'evt-order-burst' };
    const burst = await Promise.all(Array.from({ length: 8 }, () => t.api.post('/v1/events', { name: 'order.placed', payload: { order: 3 } }, { headers: burstHeaders })));
    const ok = burst.filter((r) => r.status === 202);
    for (const r of burst) expect([202, 409], r.text).toContain(r.status);
    expect(new Set(ok.map((r) => JSON.stringify(r.body.data.runs))).size).toBe(1);
    // The key is the tenant's: tenant B may use the same one.
    const fromB = await t.api.post('/v1/events', { name: 'order.placed', payload: { order: 2 } }, { headers: { ...bearer(b.apiKey), 'idempotency-key': 'evt-order-1' } });
    expect(fromB.status, fromB.text).toBe(202);
    expect(fromB.body.data.runs).toEqual([]);

    await waitFor(async () => (await runTotal(a, wf.workflow_key)) >= 2, 'both runs');
    expect(await runTotal(a, wf.workflow_key)).toBe(2);
    const bad = await t.api.post('/v1/events', { name: 'order.placed' }, { headers: { ...bearer(a.apiKey), 'idempotency-key': 'x'.repeat(256) } });
    expect(bad.status, bad.text).toBe(400);
  });

  it('a workflow that cannot start after others did is listed as skipped (INTERNAL_ERROR); the key keeps that answer', async () => {
    const first = await create(a, 'Partial first', eventSteps('partial.test', 'first'));
    await deploy(a, first.workflow_key);
    const second = await create(a, 'Partial second', eventSteps('partial.test', 'second'));
    await deploy(a, second.workflow_key);
    const [breaking, working] = [first, second].sort((x, y) => (x.workflow_key < y.workflow_key ? 1 : -1));
    // A real failure of the database on the run of the workflow started second.
    const allow = await refuseWrites(t.sql, 'test_refuse_run', 'workflow_runs', 'insert', `new.workflow_id = '${breaking.id}'`);
    try {
      const headers = { ...bearer(a.apiKey), 'idempotency-key': 'evt-partial-1' };
      const res = await t.api.post('/v1/events', { name: 'partial.test' }, { headers });
      expect(res.status, res.text).toBe(202);
      expect(res.body.data).toEqual({ runs: [expect.any(String)], skipped: [{ workflow_key: breaking.workflow_key, reason: 'INTERNAL_ERROR' }] });
      const replay = await t.api.post('/v1/events', { name: 'partial.test' }, { headers });
      expect(replay.body.data).toEqual({ ...res.body.data, idempotent_replay: true });
      await waitFor(async () => (await runTotal(a, working.workflow_key)) === 1, 'the one run');
      expect(await runTotal(a, working.workflow_key)).toBe(1);
    } finally {
      await allow();
    }
  });

  it('Idempotency-Key: a request that failed before starting anything does not keep its key', async () => {
    const wf = await create(a, 'Attachment listener', eventSteps('file.received', { text: '{{trigger.attachments_text}}' }));
    await deploy(a, wf.workflow_key);
    const headers = { ...bearer(a.apiKey), 'idempotency-key': 'evt-file-1' };
    const bad = { attachments: [{ file_name: 'x.exe', file_base64: Buffer.from('MZ\x90\x00').toString('base64') }] };
    const failed = await t.api.post('/v1/events', { name: 'file.received', payload: bad }, { headers });
    expect(failed.status, failed.text).toBe(400);
    expect(failed.body.error.code).toBe('UNSUPPORTED_ATTACHMENT');
    expect(await runTotal(a, wf.workflow_key)).toBe(0);
    // As POST /run does: nothing was started, so the key is free for the corrected request (the
    // request that failed left no claim on it for the next one to wait out).
    expect(await t.sql(`select 1 from idempotency_keys where tenant_id = $1 and key = 'evt-file-1'`, [a.tenantId])).toHaveLength(0);
    const fixed = await t.api.post('/v1/events', { name: 'file.received', payload: { attachments: [{ file_name: 'note.txt', file_base64: Buffer.from('hello').toString('base64') }] } }, { headers });
    expect(fixed.status, fixed.text).toBe(202);
    expect(fixed.body.data.runs).toHaveLength(1);
    expect(fixed.body.data.idempotent_replay).toBeUndefined();
  });
});

// ---- Schedules ----------------------------------------------------------------------------------

/** A second server process on the test database. */
const startSecondProcess = () => startServerProcess('the second process', { DATABASE_URL: t.databaseUrl, ADMIN_SECRET, JWT_SECRET, DB_POOL_MAX: '5', WORKER_CONCURRENCY: '2', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });

describe('schedule triggers', () => {
  let second: ServerProcess | undefined;
  afterAll(() => stopServerProcess(second));

  const scheduleSteps = (cron: string) => [
    { id: 't', step_type: 'trigger', config: { trigger_subtype: 'schedule', cron, timezone: 'Europe/Berlin' } },
    { id: 'done', step_type: 'end', config: { output: { at: '{{trigger.scheduled_at}}' } } },
  ];

  /** Tick jobs of the workflow still queued or running (`due`: only those due now). */
  const tickJobsOf = async (workflowId: string, due = false) =>
    (
      await t.sql<{ n: number }>(
        `select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
          where k.identifier = 'workflow_schedule' and j.payload->>'workflow_id' = $1 and ($2::boolean is false or j.run_at <= now())`,
        [workflowId, due],
      )
    )[0]!.n;
  const scheduledRuns = (workflowId: string) =>
    t.sql<{ id: string; scheduled_at: string; fired_at: string; status: string; triggered_by: string }>(
      `select id::text, input->>'scheduled_at' as scheduled_at, input->>'fired_at' as fired_at, status, triggered_by from workflow_runs where workflow_id = $1 order by started_at`,
      [workflowId],
    );

  it('rejects bad cron expressions and time zones', async () => {
    for (const config of [
      { trigger_subtype: 'schedule', cron: '* * *' },
      { trigger_subtype: 'schedule', cron: '61 * * * *' },
      { trigger_subtype: 'schedule', cron: '* * * * *', timezone: 'Mars/Olympus' },
      { trigger_subtype: 'schedule' },
    ]) {
      const res = await t.api.post('/v1/workflows', { name: 'Bad schedule', steps: [{ id: 't', step_type: 'trigger', config }] }, key(a));
      expect(res.status, `${JSON.stringify(config)}: ${res.text}`).toBe(400);
    }
  });

  it('a tick whose run cannot start does not stop the schedule: the next tick is planned first', async () => {
    const wf = await create(a, 'Schedule through failures', scheduleSteps('0 0 * * * *'));
    // A real failure of the database on every run of this workflow.
    const allow = await refuseWrites(t.sql, 'test_refuse_scheduled_run', 'workflow_runs', 'insert', `new.workflow_id = '${wf.id}'`);
    try {
      await deploy(a, wf.workflow_key);
      const planned = (await t.sql<{ tick: string }>(`select payload->>'tick' as tick from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`]))[0].tick;
      // Its tick comes now (instead of at the top of the hour) and its run fails.
      await t.sql(`update graphile_worker._private_jobs set run_at = now() where key = $1`, [`wf-schedule:${wf.id}`]);
      await waitFor(async () => ((await t.sql(`select 1 from graphile_worker._private_jobs where payload->>'workflow_id' = $1 and payload->>'tick' = $2 and last_error is not null`, [wf.id, planned])).length ? true : null), 'the tick to fail');
      const next = await t.sql<{ tick: string }>(`select payload->>'tick' as tick from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`]);
      expect(next).toHaveLength(1);
      expect(Date.parse(next[0].tick)).toBeGreaterThan(Date.parse(planned));
    } finally {
      await allow();
      await t.api.delete(`/v1/workflows/${wf.id}`, key(a));
    }
  });

  it('runs about once a second after deploy (triggered_by schedule); switched off, it stops', async ({ annotate }) => {
    const wf = await create(a, 'Every second', scheduleSteps('*/1 * * * * *'));
    // Nothing runs before the deploy: no tick is planned.
    expect(await t.sql(`select 1 from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`])).toHaveLength(0);
    expect(await runTotal(a, wf.workflow_key)).toBe(0);
    const deployedAt = Date.now();
    await deploy(a, wf.workflow_key);
    await waitFor(async () => (await runTotal(a, wf.workflow_key)) >= 3, 'three scheduled runs', 12_000);
    const list = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs?pageSize=100`, key(a));
    expect(list.body.data.runs.every((r: any) => r.triggered_by === 'schedule')).toBe(true);
    const last = list.body.data.runs.at(-1);
    const run = await finished(a, wf.workflow_key, last.run_id);
    expect(run.status).toBe('completed');
    expect(run.input).toEqual({ scheduled_at: expect.any(String), fired_at: expect.any(String) });
    expect(run.output).toEqual({ at: run.input.scheduled_at });
    // Whole seconds, after the deploy.
    const rows = await scheduledRuns(wf.id);
    for (const r of rows) {
      expect(Date.parse(r.scheduled_at) % 1000).toBe(0);
      expect(Date.parse(r.scheduled_at)).toBeGreaterThan(deployedAt - 1000);
      expect(Date.parse(r.fired_at)).toBeGreaterThanOrEqual(Date.parse(r.scheduled_at));
    }
    expect(new Set(rows.map((r) => r.scheduled_at)).size).toBe(rows.length);
    const gaps = rows.slice(1).map((r, i) => (Date.parse(r.scheduled_at) - Date.parse(rows[i].scheduled_at)) / 1000);
    // How promptly ticks come is the machine's business (a loaded one lags): recorded, not bounded.
    // What the scheduler owes is whole, increasing seconds, none run twice.
    await annotate(`seconds between ticks: ${gaps.join(', ')}`);
    expect(gaps.every((gap) => Number.isInteger(gap) && gap >= 1)).toBe(true);

    await toggle(a, wf.workflow_key, false);
    // No tick is planned any more; one already in flight may still finish, and then nothing is left
    // that could start a run.
    const [{ n }] = await t.sql<{ n: number }>(`select count(*)::int as n from graphile_worker.jobs where key = $1`, [`wf-schedule:${wf.id}`]);
    expect(n).toBe(0);
    await waitFor(async () => (await tickJobsOf(wf.id)) === 0, 'the tick in flight to finish');
    await waitFor(async () => (await scheduledRuns(wf.id)).every((r) => r.status === 'completed'), 'every scheduled run to end');
    expect(await runTotal(a, wf.workflow_key)).toBe((await scheduledRuns(wf.id)).length);
  }, 120_000);

  it('a minute schedule (5 fields) plans its next tick at the next minute; a delete removes the tick', async () => {
    const wf = await create(a, 'Every minute', scheduleSteps('* * * * *'));
    await deploy(a, wf.workflow_key);
    const [job] = await t.sql<{ run_at: Date; payload: any }>(`select run_at, payload from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`]);
    expect(job).toBeDefined();
    expect(job.run_at.getTime() % 60_000).toBe(0);
    expect(job.run_at.getTime()).toBeGreaterThan(Date.now() - 1000);
    expect(job.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 61_000);
    expect(job.payload).toMatchObject({ workflow_id: wf.id, tick: job.run_at.toISOString() });

    // Switched off, the tick is removed; switched on, it is planned again.
    await toggle(a, wf.workflow_key, false);
    expect(await t.sql(`select 1 from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`])).toHaveLength(0);
    await toggle(a, wf.workflow_key, true);
    expect(await t.sql(`select 1 from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`])).toHaveLength(1);
    // A live change to a manual trigger removes it too.
    const manual = await t.api.patch(`/v1/workflows/${wf.workflow_key}`, { steps: [{ id: 't', step_type: 'trigger', config: { trigger_subtype: 'manual' } }] }, key(a));
    expect(manual.status, manual.text).toBe(200);
    expect(manual.body.data.workflow.trigger_type).toBe('manual');
    expect(await t.sql(`select 1 from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`])).toHaveLength(0);
    const back = await t.api.patch(`/v1/workflows/${wf.workflow_key}`, { steps: scheduleSteps('* * * * *') }, key(a));
    expect(back.status, back.text).toBe(200);
    expect(await t.sql(`select 1 from graphile_worker._private_jobs where key = $1`, [`wf-schedule:${wf.id}`])).toHaveLength(1);
    const del = await t.api.delete(`/v1/workflows/${wf.workflow_key}`, key(a));
    expect(del.status, del.text).toBe(200);
    expect(await t.sql(`select 1 from graphile_worker.jobs where key = $1`, [`wf-schedule:${wf.id}`])).toHaveLength(0);
  });

  it('missed ticks: a late tick job makes one catch-up run and plans the next tick from now', async () => {
    // Once a year (New Year in Berlin): no real tick comes during the test.
    const wf = await create(a, 'Yearly', scheduleSteps('0 0 1 1 *'));
    await deploy(a, wf.workflow_key);
    const jobKey = `wf-schedule:${wf.id}`;
    const [planned] = await t.sql<{ run_at: Date }>(`select run_at from graphile_worker._private_jobs where key = $1`, [jobKey]);
    expect(planned.run_at.getTime()).toBeGreaterThan(Date.now());
    // Midnight of New Year in Berlin (UTC+1 in winter) is 23:00 UTC on 31 December.
    expect(planned.run_at.toISOString()).toMatch(/^\d{4}-12-31T23:00:00\.000Z$/);
    // The server was down when the tick was due, five minutes ago: its job is late.
    const missed = new Date(Math.floor(Date.now() / 1000) * 1000 - 5 * 60_000);
    await t.sql(`update graphile_worker._private_jobs set run_at = now(), payload = jsonb_set(payload::jsonb, '{tick}', to_jsonb($2::text))::json where key = $1`, [jobKey, missed.toISOString()]);
    await waitFor(async () => (await scheduledRuns(wf.id)).length > 0, 'the catch-up run', 10_000);
    await waitFor(async () => ((await t.sql<{ run_at: Date }>(`select run_at from graphile_worker._private_jobs where key = $1`, [jobKey]))[0]?.run_at.getTime() ?? 0) > Date.now(), 'the next tick to be planned');
    // The late job is done (the next tick replaced it): nothing else due could start a run.
    await waitFor(async () => (await tickJobsOf(wf.id, true)) === 0, 'the late tick job to be done');
    const runs = await scheduledRuns(wf.id);
    expect(runs.map((r) => r.scheduled_at)).toEqual([missed.toISOString()]);
    const [next] = await t.sql<{ run_at: Date }>(`select run_at from graphile_worker._private_jobs where key = $1`, [jobKey]);
    expect(next.run_at.getTime()).toBe(planned.run_at.getTime());
    await toggle(a, wf.workflow_key, false);
  });

  it('with a second server process on the database, each tick runs once', async () => {
    second = await startSecondProcess();
    const started = second;
    const wf = await create(a, 'Every second, two processes', scheduleSteps('*/1 * * * * *'));
    await deploy(a, wf.workflow_key);
    // The tick's guard row makes a tick run once even if its job ran twice: enqueue the same
    // future tick several times over, without a job key, for both processes to take.
    const tick = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
    for (let i = 0; i < 6; i++) {
      await t.sql(`select graphile_worker.add_job('workflow_schedule', $1::json, run_at => $2)`, [JSON.stringify({ workflow_id: wf.id, tenant_id: a.tenantId, tick: tick.toISOString() }), tick]);
    }
    await waitFor(async () => (await scheduledRuns(wf.id)).length >= 7, 'seven scheduled runs', 20_000);
    await waitFor(async () => Date.now() > tick.getTime() + 2500 && (await t.sql(`select 1 from graphile_worker.jobs where task_identifier = 'workflow_schedule' and run_at <= $1`, [tick])).length === 0, 'the duplicated tick jobs to be done', 15_000);
    await toggle(a, wf.workflow_key, false);
    await waitFor(async () => (await tickJobsOf(wf.id)) === 0, 'the ticks in flight to finish');
    const rows = await scheduledRuns(wf.id);
    const ticks = rows.map((r) => r.scheduled_at);
    expect(new Set(ticks).size, `ticks: ${ticks.join(', ')}`).toBe(ticks.length);
    expect(ticks.filter((x) => x === tick.toISOString())).toHaveLength(1);
    await waitFor(async () => (await scheduledRuns(wf.id)).every((r) => r.status === 'completed'), 'every scheduled run to complete');
    // Both processes serve the runs.
    const fromSecond = await started.api.get(`/v1/workflows/${wf.workflow_key}/runs?pageSize=100`, key(a));
    expect(fromSecond.status, fromSecond.text).toBe(200);
    expect(fromSecond.body.data.pagination.total).toBe((await scheduledRuns(wf.id)).length);
  }, 120_000);
});
