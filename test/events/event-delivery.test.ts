// Events out, end to end: a subscription receives what happens as signed Standard Webhooks
// messages; failures are retried by the schedule and logged; a receiver that keeps failing is paused
// and resumed; secrets rotate with a grace; events replay with the same webhook-id; a rolled-back
// change has no event; tenants are sealed; bad input is a 4xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startEventReceiver, verifyDelivery, type EventReceiver } from '../support/event-receiver.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let receiver: EventReceiver;
let a: SignedUpTenant;
let b: SignedUpTenant;
const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const METRICS = 'metrics-token-0123456789abcdef';
/** The value of the /metrics sample named exactly `sample` (0 when absent). */
async function metric(sample: string): Promise<number> {
  const text = (await t.api.get('/metrics', { headers: bearer(METRICS) })).text;
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

beforeAll(async () => {
  receiver = await startEventReceiver();
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', EVENT_RETRY_SCHEDULE: '0.05,0.05', EVENT_PAUSE_AFTER_FAILED_DELIVERIES: '2', METRICS_TOKEN: METRICS });
  a = await signupTenant(t.api, { companyName: 'Events A' });
  b = await signupTenant(t.api, { companyName: 'Events B' });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

async function subscribe(s: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/event-subscriptions', body, key(s));
  expect(res.status, res.text).toBe(201);
  return res.body.data as { subscription: { id: string; status: string }; secret: string };
}

const runWorkflow = async (s: SignedUpTenant, id: string) => {
  const res = await t.api.post(`/v1/workflows/${id}/run`, { input: { n: 1 } }, key(s));
  expect(res.status, res.text).toBe(200);
  return res.body.data as { run_id: string; status: string };
};

describe('subscriptions', () => {
  it('are created with a secret shown once, listed without it, and sealed between tenants', async () => {
    const created = await subscribe(a, { url: `${receiver.url}/list`, event_types: ['key.created'], description: 'keys' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.subscription.status).toBe('active');
    const list = await t.api.get('/v1/event-subscriptions', key(a));
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(created.secret.slice(6, 20));
    expect(list.body.data.subscriptions.map((s: { id: string }) => s.id)).toContain(created.subscription.id);
    // Another tenant: 404 for reads and writes alike, and its list does not show it.
    expect((await t.api.get(`/v1/event-subscriptions/${created.subscription.id}`, key(b))).status).toBe(404);
    expect((await t.api.patch(`/v1/event-subscriptions/${created.subscription.id}`, { enabled: false }, key(b))).status).toBe(404);
    expect((await t.api.delete(`/v1/event-subscriptions/${created.subscription.id}`, key(b))).status).toBe(404);
    expect((await t.api.get('/v1/event-subscriptions', key(b))).body.data.subscriptions).toEqual([]);
    expect((await t.api.delete(`/v1/event-subscriptions/${created.subscription.id}`, key(a))).status).toBe(200);
    expect((await t.api.get(`/v1/event-subscriptions/${created.subscription.id}`, key(a))).status).toBe(404);
  });

  it('refuse bad input with a 4xx naming the field', async () => {
    for (const body of [
      { url: 'ftp://example.com/x' },
      { url: 'not a url' },
      { url: `${receiver.url}/x`, event_types: ['no.such.type'] },
      { url: `${receiver.url}/x`, event_types: [] },
      { url: `${receiver.url}/x`, filter: { colour: 'red' } },
      { url: `${receiver.url}/x`, secret: 'mine' },
      { url: `${receiver.url}/x`, enabled: 'yes' },
    ]) {
      const res = await t.api.post('/v1/event-subscriptions', body, key(a));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
    }
    expect((await t.api.get('/v1/event-subscriptions/not-a-uuid', key(a))).status).toBe(404);
    expect((await t.api.get('/v1/events/evt_nope', key(a))).status).toBe(404);
    expect((await t.api.get('/v1/events?cursor=garbage', key(a))).status).toBe(400);
  });

  it('need events:write to change and events:read to read', async () => {
    const readOnly = await t.api.post('/dashboard/api-keys', { name: 'events-reader', preset: 'read-only' }, { headers: bearer(a.token) });
    expect(readOnly.status, readOnly.text).toBe(201);
    const reader = { headers: bearer(readOnly.body.data.apiKey) };
    expect((await t.api.get('/v1/event-subscriptions', reader)).status).toBe(200);
    const refused = await t.api.post('/v1/event-subscriptions', { url: `${receiver.url}/x` }, reader);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('PERMISSION_DENIED');
  });

  it('stop at the plan\'s limit with 409 EVENT_SUBSCRIPTION_LIMIT', async () => {
    const c = await signupTenant(t.api, { companyName: 'Events C' });
    const max = (await t.sql<{ plan: string }>('select plan from tenants where id = $1', [c.tenantId]))[0].plan === 'free' ? 2 : 5;
    for (let i = 0; i < max; i++) await subscribe(c, { url: `${receiver.url}/c${i}`, enabled: false });
    const res = await t.api.post('/v1/event-subscriptions', { url: `${receiver.url}/over` }, key(c));
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('EVENT_SUBSCRIPTION_LIMIT');
    expect(res.body.error.details).toMatchObject({ limit: 'event_subscriptions', max });
  });
});

describe('delivery', () => {
  it('sends what happened, signed, with the event id as webhook-id; the log shows each attempt', async () => {
    const { subscription, secret } = await subscribe(a, { url: `${receiver.url}/runs`, event_types: ['workflow.run.started', 'workflow.run.completed'] });
    const wf = await createWorkflow(t.api, a.apiKey, 'Evented', [MANUAL_TRIGGER, { id: 'echo', step_type: 'action', action_id: 'transform', config: { output: { n: '{{trigger.n}}' } } }]);
    const run = await runWorkflow(a, wf.id);
    const mine = () => receiver.received.filter((r) => r.path === '/runs' && r.json.data.run_id === run.run_id);
    await waitFor(() => mine().length >= 2, 'both events of the run delivered');
    const [started, completed] = ['workflow.run.started', 'workflow.run.completed'].map((type) => mine().find((r) => r.json.type === type)!);
    expect(started.json.data).toMatchObject({ run_id: run.run_id, workflow_id: wf.id, workflow_key: wf.workflow_key, scope: 'live' });
    expect(completed.json.data).toMatchObject({ run_id: run.run_id, status: 'completed' });
    expect(completed.json.tenant_id).toBe(a.tenantId);
    for (const delivery of [started, completed]) {
      expect(delivery.headers['webhook-id']).toBe(delivery.json.id);
      expect(verifyDelivery(delivery, secret)).toMatchObject({ type: delivery.json.type });
      expect(() => verifyDelivery(delivery, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).toThrow();
    }
    const detail = await t.api.get(`/v1/events/${completed.json.id}`, key(a));
    expect(detail.status).toBe(200);
    await waitFor(async () => (await t.api.get(`/v1/events/${completed.json.id}`, key(a))).body.data.deliveries[0].status === 'delivered', 'delivery settled');
    const settled = (await t.api.get(`/v1/events/${completed.json.id}`, key(a))).body.data;
    expect(settled.deliveries).toHaveLength(1);
    expect(settled.deliveries[0]).toMatchObject({ subscription_id: subscription.id, status: 'delivered', attempts: 1, last_status: 200 });
    expect(settled.deliveries[0].attempt_log).toEqual([expect.objectContaining({ attempt: 1, status_code: 200, response_excerpt: 'ok', error: null })]);
    // The other tenant sees none of it.
    expect((await t.api.get(`/v1/events/${completed.json.id}`, key(b))).status).toBe(404);
    const listed = await t.api.get('/v1/events?type=workflow.run.completed&limit=1', key(a));
    expect(listed.body.data.events[0].id).toBe(completed.json.id);
    await t.api.delete(`/v1/event-subscriptions/${subscription.id}`, key(a));
  });

  it('retries a failing receiver by the schedule, pauses it after failed deliveries, and resuming sends what was kept', async () => {
    const { subscription } = await subscribe(b, { url: `${receiver.url}/failing`, event_types: ['key.created'] });
    receiver.answer(500);
    const makeKey = async (name: string) => expect((await t.api.post('/dashboard/api-keys', { name, preset: 'read-only' }, { headers: bearer(b.token) })).status).toBe(201);
    await makeKey('first');
    await makeKey('second');
    // Two deliveries, each tried 3 times (1 + the schedule's 2 retries), then the subscription is paused.
    const sub = await waitFor(async () => {
      const res = await t.api.get(`/v1/event-subscriptions/${subscription.id}`, key(b));
      return res.body.data.status === 'paused' ? res.body.data : null;
    }, 'the subscription paused');
    expect(sub.paused_reason).toContain('2 deliveries in a row failed every attempt');
    expect(sub.paused_reason).toContain('HTTP 500');
    expect(receiver.received.filter((r) => r.path === '/failing')).toHaveLength(6);
    const log = await t.api.get(`/v1/event-subscriptions/${subscription.id}/deliveries`, key(b));
    expect(log.body.data.deliveries.map((d: { status: string; attempts: number }) => [d.status, d.attempts])).toEqual([['failed', 3], ['failed', 3]]);
    expect(log.body.data.deliveries[0].attempt_log.map((x: { status_code: number }) => x.status_code)).toEqual([500, 500, 500]);
    expect(log.body.data.deliveries[0].attempt_log[0].response_excerpt).toBe('refused with 500');
    // While paused, new events are kept for it, not sent.
    receiver.answer(200);
    await makeKey('third');
    const pending = await waitFor(async () => {
      const res = await t.api.get(`/v1/event-subscriptions/${subscription.id}/deliveries?status=pending`, key(b));
      return res.body.data.deliveries.length === 1 ? res.body.data.deliveries : null;
    }, 'the third key\'s delivery kept');
    expect(pending[0].attempts).toBe(0);
    const resumed = await t.api.post(`/v1/event-subscriptions/${subscription.id}/resume`, undefined, key(b));
    expect(resumed.body.data).toMatchObject({ status: 'active', paused_reason: null, failed_deliveries: 0 });
    await waitFor(() => receiver.received.some((r) => r.path === '/failing' && r.json.data.name === 'third'), 'the kept delivery sent on resume');
    // /metrics counts the attempts by type and outcome, and the lag of first attempts.
    expect(await metric('liya_event_deliveries_total{type="key.created",outcome="failed"}')).toBeGreaterThanOrEqual(2);
    expect(await metric('liya_event_deliveries_total{type="key.created",outcome="retrying"}')).toBeGreaterThanOrEqual(4);
    await waitFor(async () => (await metric('liya_event_deliveries_total{type="key.created",outcome="delivered"}')) >= 1, 'the delivery counted');
    expect(await metric('liya_event_delivery_lag_seconds_count{type="key.created"}')).toBeGreaterThanOrEqual(3);
    await t.api.delete(`/v1/event-subscriptions/${subscription.id}`, key(b));
  });

  it('a rotation signs with both secrets during its grace; a replay sends the same webhook-id again', async () => {
    const { subscription, secret: oldSecret } = await subscribe(a, { url: `${receiver.url}/rotate`, event_types: ['event.test'] });
    const rotated = await t.api.post(`/v1/event-subscriptions/${subscription.id}/rotate-secret`, { grace_period_seconds: 3600 }, key(a));
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.data.subscription.previous_secret_expires_at).not.toBeNull();
    const test = await t.api.post(`/v1/event-subscriptions/${subscription.id}/test`, undefined, key(a));
    expect(test.status).toBe(202);
    const delivery = await waitFor(() => receiver.received.find((r) => r.path === '/rotate'), 'the test event delivered');
    expect(delivery.json).toMatchObject({ id: test.body.data.event_id, type: 'event.test', data: { subscription_id: subscription.id } });
    expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifyDelivery(delivery, oldSecret)).toBeTruthy();
    expect(verifyDelivery(delivery, newSecret)).toBeTruthy();
    // Grace 0: the old secret stops at once.
    await t.api.post(`/v1/event-subscriptions/${subscription.id}/rotate-secret`, { grace_period_seconds: 0 }, key(a));
    const replay = await t.api.post(`/v1/events/${test.body.data.event_id}/replay`, {}, key(a));
    expect(replay.status).toBe(202);
    expect(replay.body.data.deliveries).toHaveLength(1);
    const again = await waitFor(() => receiver.received.filter((r) => r.path === '/rotate')[1], 'the replay delivered');
    expect(again.headers['webhook-id']).toBe(delivery.headers['webhook-id']);
    expect(String(again.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => verifyDelivery(again, newSecret)).toThrow();
    await t.api.delete(`/v1/event-subscriptions/${subscription.id}`, key(a));
  });

  it('an erasure of an end user deletes the events that name them', async () => {
    const { subscription } = await subscribe(a, { url: `${receiver.url}/erasure`, event_types: ['approval.requested'] });
    const wf = await createWorkflow(t.api, a.apiKey, 'Ask about someone', [MANUAL_TRIGGER, { id: 'ask', step_type: 'approval', config: { message: 'Hire {{trigger.user_id}}?' } }]);
    const run = await t.api.post(`/v1/workflows/${wf.id}/run`, { input: { user_id: 'erase-me-1234' } }, key(a));
    const delivered = await waitFor(() => receiver.received.find((r) => r.path === '/erasure'), 'the approval event');
    expect(delivered.json.data.message).toBe('Hire erase-me-1234?');
    expect((await t.api.post(`/v1/workflows/${wf.id}/runs/${run.body.data.run_id}/cancel`, {}, key(a))).status).toBe(200);
    const erased = await t.api.post('/v1/erasures', { user_id: 'erase-me-1234' }, key(a));
    expect(erased.status, erased.text).toBe(200);
    expect(erased.body.data.deleted.events).toBeGreaterThanOrEqual(1);
    expect((await t.api.get(`/v1/events/${delivered.json.id}`, key(a))).status).toBe(404);
    await t.api.delete(`/v1/event-subscriptions/${subscription.id}`, key(a));
  });

  it('records no event for a change that was rolled back', async () => {
    const { subscription } = await subscribe(a, { url: `${receiver.url}/rollback`, event_types: ['key.created'] });
    const before = (await t.sql<{ n: number }>('select count(*)::int as n from events where tenant_id = $1', [a.tenantId]))[0].n;
    // The key row (and the event its trigger records) in a transaction that then fails.
    await expect(
      t.sql(`do $$ begin
        insert into api_keys (tenant_id, key_hash, key_preview, name, created_at) values ('${a.tenantId}', md5(random()::text) || md5(random()::text), 'svc_rolled', 'rolled-back', now());
        raise exception 'roll it back';
      end $$`),
    ).rejects.toThrow('roll it back');
    expect((await t.sql<{ n: number }>('select count(*)::int as n from events where tenant_id = $1', [a.tenantId]))[0].n).toBe(before);
    // A committed one is recorded (and delivered).
    await t.api.post('/dashboard/api-keys', { name: 'committed', preset: 'read-only' }, { headers: bearer(a.token) });
    await waitFor(() => receiver.received.find((r) => r.path === '/rollback'), 'the committed key\'s event');
    expect(receiver.received.filter((r) => r.path === '/rollback').map((r) => r.json.data.name)).toEqual(['committed']);
    await t.api.delete(`/v1/event-subscriptions/${subscription.id}`, key(a));
  });
});
