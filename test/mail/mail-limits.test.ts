// Tenant mail cannot be abused: a trial tenant writes only to its own users' verified addresses,
// every tenant has a daily quota by plan (exact under parallel runs), a cap on recipients per mail
// and on a mail's size; the platform's own account mail never counts and is never refused.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseRecipients } from '../../server/mail/mail-recipients.js';
import { DEFAULT_PLAN_LIMITS } from '../../server/tenants/plan-limits.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring, expectAnsweredDuring } from '../support/health-watch.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorkflow, MANUAL_TRIGGER, type TestWorkflow } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;

const TRIAL = DEFAULT_PLAN_LIMITS.trial;
const STARTER = DEFAULT_PLAN_LIMITS.starter;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const addresses = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${i}@example.net`);

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

/** Confirms the owner's address with the token of the verification mail signup queued. */
async function verifyOwner(owner: SignedUpTenant): Promise<void> {
  const [mail] = await t.sql<{ body: string }>(`select body from outbox_messages where to_address = $1 and kind = 'verify_email' order by created_at desc limit 1`, [owner.email]);
  const token = /verify-email\?token=([A-Za-z0-9_-]{43})/.exec(mail.body)![1];
  const res = await t.api.post('/auth/verify-email', { token });
  expect(res.status, res.text).toBe(200);
}

async function setPlan(s: SignedUpTenant, billingPlan: string): Promise<void> {
  const res = await t.api.patch(`/admin/tenants/${s.tenantId}`, { billingPlan }, { headers: adminHeaders });
  expect(res.status, res.text).toBe(200);
}

/** A workflow that sends one mail per item of `trigger.to` (a loop over a send_email step). */
function mailLoop(s: SignedUpTenant, name: string): Promise<TestWorkflow> {
  return createWorkflow(t.api, s.apiKey, name, [
    MANUAL_TRIGGER,
    { id: 'each', step_type: 'loop', config: { items: 'trigger.to', step_ref: 'mail', max_iterations: 1000 }, on_success_ref: 'done' },
    { id: 'mail', step_type: 'action', action_id: 'send_email', config: { to: '{{loop.item}}', subject: 'Offer {{loop.index}}', body: 'Cheap watches' }, on_success_ref: 'done' },
    { id: 'done', step_type: 'end', config: { output: 'sent' } },
  ]);
}

/** A workflow that sends one mail with the trigger's to, subject and body. */
function mailOnce(s: SignedUpTenant, name: string): Promise<TestWorkflow> {
  return createWorkflow(t.api, s.apiKey, name, [
    MANUAL_TRIGGER,
    { id: 'mail', step_type: 'action', action_id: 'send_email', config: { to: '{{trigger.to}}', subject: '{{trigger.subject}}', body: '{{trigger.body}}' } },
  ]);
}

const runWorkflow = (s: SignedUpTenant, wf: TestWorkflow, input: Record<string, unknown>) => t.api.post(`/v1/workflows/${wf.workflow_key}/run`, { input }, key(s));

interface Outcome {
  status: string;
  /** The run's error code (a limit's own code). */
  code: string | undefined;
  message: string;
}

async function outcomeOf(s: SignedUpTenant, wf: TestWorkflow, runId: string): Promise<Outcome> {
  const detail = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs/${runId}`, key(s));
  expect(detail.status, detail.text).toBe(200);
  const run = detail.body.data.run as { status: string; error: { code?: string; message?: string } | null };
  return { status: run.status, code: run.error?.code, message: run.error?.message ?? '' };
}

const countMails = async (where: string, params: unknown[]) =>
  (await t.sql<{ n: number }>(`select count(*)::int as n from outbox_messages where ${where}`, params))[0].n;
const mailsTo = (list: string[]) => countMails(`kind = 'workflow_email' and to_address = any($1)`, [list]);

describe('workflow send_email', () => {
  it('a trial tenant\'s loop over 200 arbitrary addresses queues nothing and fails with MAIL_RECIPIENT_NOT_ALLOWED', async () => {
    const trial = await signupTenant(t.api, { companyName: 'Spam Trial' });
    await verifyOwner(trial);
    const wf = await mailLoop(trial, 'Blast');
    const list = addresses('blast', 200);
    const watched = await answeredDuring(t.url, () => runWorkflow(trial, wf, { to: list }), 10);
    const res = watched.result;
    expect(res.status, res.text).toBe(200);
    const outcome = await outcomeOf(trial, wf, res.body.data.run_id);
    console.log(`trial loop over 200 arbitrary addresses: ${await mailsTo(list)} mails queued, run ${outcome.status}, ${watched.answeredDuring} health answers while it ran`);
    expect(await mailsTo(list)).toBe(0);
    // Stopped by the recipient rule at the loop's first address, not worked through the list.
    expect(outcome).toMatchObject({ status: 'failed', code: 'MAIL_RECIPIENT_NOT_ALLOWED' });
    expect(outcome.message).toContain('blast-0@example.net');
    expect(outcome.message).not.toContain('blast-1@example.net');
    expect(watched.failures).toBe(0);
  });

  it('a trial tenant may not write to its own owner before the address is verified', async () => {
    const trial = await signupTenant(t.api, { companyName: 'Unverified Trial' });
    const wf = await mailOnce(trial, 'To owner');
    const res = await runWorkflow(trial, wf, { to: trial.email, subject: 'Hi', body: 'Hello' });
    expect(await outcomeOf(trial, wf, res.body.data.run_id)).toMatchObject({ status: 'failed', code: 'MAIL_RECIPIENT_NOT_ALLOWED' });
    expect(await mailsTo([trial.email])).toBe(0);

    await verifyOwner(trial);
    const again = await runWorkflow(trial, wf, { to: trial.email.toUpperCase(), subject: 'Hi', body: 'Hello' });
    expect(again.body.data.status, again.text).toBe('completed');
    expect(await mailsTo([trial.email])).toBe(1);
  });

  it('a free tenant sends no mail, not even to its verified owner', async () => {
    const free = await signupTenant(t.api, { companyName: 'Free Co' });
    await verifyOwner(free);
    await setPlan(free, 'free');
    const wf = await mailOnce(free, 'Free mail');
    const res = await runWorkflow(free, wf, { to: free.email, subject: 'Hi', body: 'Hello' });
    expect(await outcomeOf(free, wf, res.body.data.run_id)).toMatchObject({ status: 'failed', code: 'MAIL_QUOTA_EXCEEDED' });
    expect(await mailsTo([free.email])).toBe(0);
  });

  it('parallel loops to the verified owner stop at exactly the daily quota; another tenant\'s mail run completes meanwhile', async () => {
    const trial = await signupTenant(t.api, { companyName: 'Quota Trial' });
    await verifyOwner(trial);
    const wf = await mailLoop(trial, 'Owner loop');
    const other = await signupTenant(t.api, { companyName: 'Neighbour' });
    await setPlan(other, 'starter');
    const otherWf = await mailLoop(other, 'Newsletter');
    const otherList = addresses('neighbour', 200);

    const watched = await answeredDuring(
      t.url,
      () =>
        Promise.all([
          Promise.all(Array.from({ length: 4 }, () => runWorkflow(trial, wf, { to: Array(200).fill(trial.email) }))),
          runWorkflow(other, otherWf, { to: otherList }),
        ]),
      10,
    );
    const [runs, neighbour] = watched.result;

    const queued = await mailsTo([trial.email]);
    console.log(`4 parallel trial loops of 200 to the verified owner: ${queued} mails queued (quota ${TRIAL.mail_per_day}), ${watched.answeredDuring} health answers while they ran; neighbour queued ${await mailsTo(otherList)}`);
    expect(queued).toBe(TRIAL.mail_per_day);
    for (const res of runs) {
      expect(res.status, res.text).toBe(200);
      expect(await outcomeOf(trial, wf, res.body.data.run_id)).toMatchObject({ status: 'failed', code: 'MAIL_QUOTA_EXCEEDED' });
    }
    expect(neighbour.body.data.status, neighbour.text).toBe('completed');
    expect(await mailsTo(otherList)).toBe(200);
    expectAnsweredDuring(watched);

    // The platform's own account mail neither counts nor is refused.
    expect((await t.api.post('/auth/password-reset/request', { email: trial.email })).status).toBe(200);
    expect(await countMails(`to_address = $1 and kind = 'password_reset'`, [trial.email])).toBe(1);
    const more = await runWorkflow(trial, wf, { to: [trial.email] });
    expect(await outcomeOf(trial, wf, more.body.data.run_id)).toMatchObject({ status: 'failed', code: 'MAIL_QUOTA_EXCEEDED' });
    expect(await mailsTo([trial.email])).toBe(TRIAL.mail_per_day);
  });

  it('a starter tenant may write to any address, up to its recipients cap, and the list is stored normalised', async () => {
    const starter = await signupTenant(t.api, { companyName: 'Starter Co' });
    await setPlan(starter, 'starter');
    const loop = await mailLoop(starter, 'Customers');
    const list = addresses('customer', 200);
    const watched = await answeredDuring(t.url, () => runWorkflow(starter, loop, { to: list }), 10);
    const res = watched.result;
    expect(res.body.data.status, res.text).toBe('completed');
    expect(await mailsTo(list)).toBe(200);
    expectAnsweredDuring(watched);

    const once = await mailOnce(starter, 'Once');
    const tooMany = addresses('many', STARTER.mail_recipients + 1);
    const over = await runWorkflow(starter, once, { to: tooMany.join(', '), subject: 'Hi', body: 'Hello' });
    expect(await outcomeOf(starter, once, over.body.data.run_id)).toMatchObject({ status: 'failed', code: 'MAIL_RECIPIENTS_EXCEEDED' });
    // The failed step's output names the limit too, for an on_failure branch to read.
    expect(over.body.data.trace.at(-1)).toMatchObject({ status: 'failed', output: { code: 'MAIL_RECIPIENTS_EXCEEDED', limit: 'mail_recipients', max: STARTER.mail_recipients } });
    expect(await countMails(`kind = 'workflow_email' and to_address like '%many-%'`, [])).toBe(0);

    // A comma list with display names and repeats; an array rendered from a template.
    const listed = await runWorkflow(starter, once, { to: '"Ann" <Ann@Example.COM>, bob@example.org,ann@example.com', subject: 'Hi', body: 'Hello' });
    expect(listed.body.data.status, listed.text).toBe('completed');
    expect(listed.body.data.trace.at(-1).output).toMatchObject({ queued: true, to: 'ann@example.com, bob@example.org', recipients: ['ann@example.com', 'bob@example.org'] });
    const arrayed = await runWorkflow(starter, once, { to: ['carl@example.com', 'Dora <dora@example.com>'], subject: 'Hi', body: 'Hello' });
    expect(arrayed.body.data.status, arrayed.text).toBe('completed');
    const stored = await t.sql<{ to_address: string }>(`select to_address from outbox_messages where to_address like 'ann@%' or to_address like 'carl@%' order by created_at`);
    expect(stored.map((r) => r.to_address)).toEqual(['ann@example.com, bob@example.org', 'carl@example.com, dora@example.com']);
  });

  it('refuses invalid addresses and oversized subjects and bodies, queuing nothing', async () => {
    const starter = await signupTenant(t.api, { companyName: 'Sizes Co' });
    await setPlan(starter, 'starter');
    const once = await mailOnce(starter, 'Once');
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ to: 'sizes@example.com, not-an-address', subject: 'Hi', body: 'x' }, /not-an-address/],
      [{ to: 'sizes@example.com\r\nBcc: victim@example.com', subject: 'Hi', body: 'x' }, /line break|address/],
      [{ to: '', subject: 'Hi', body: 'x' }, /recipient/],
      [{ to: 'sizes@example.com', subject: 's'.repeat(999), body: 'x' }, /subject/],
      [{ to: 'sizes@example.com', subject: 'Hi', body: 'b'.repeat(256 * 1024 + 1) }, /body/],
    ];
    for (const [input, message] of cases) {
      const res = await runWorkflow(starter, once, input);
      expect(res.status, res.text).toBe(200);
      const outcome = await outcomeOf(starter, once, res.body.data.run_id);
      expect(outcome.status, JSON.stringify(input).slice(0, 80)).toBe('failed');
      expect(outcome.message).toMatch(message);
    }
    expect(await countMails(`kind = 'workflow_email' and to_address like '%sizes@%'`, [])).toBe(0);
  });
});

describe('parseRecipients', () => {
  it('reads lists and display names; refuses what a mail header would read differently', () => {
    expect(parseRecipients(['A <a@x.com>', 'b@x.com, "Doe, Jane" <jane@x.com>', 'A@X.COM'])).toEqual(['a@x.com', 'b@x.com', 'jane@x.com']);
    expect(() => parseRecipients('a@x.com b@x.com')).toThrow(/separate addresses with commas/);
    expect(() => parseRecipients('team: a@x.com, b@x.com;')).toThrow(/group/);
    expect(() => parseRecipients('a@x.com\nBcc: c@x.com')).toThrow(/line breaks/);
    expect(() => parseRecipients('a@@x.com')).toThrow(/"a@@x.com" is not an e-mail address/);
    expect(() => parseRecipients('a@localhost')).toThrow(/not an e-mail address/);
    expect(() => parseRecipients(['a@x.com', 42])).toThrow(/to must be/);
    expect(() => parseRecipients(' , ')).toThrow(/no recipient/);
    expect(() => parseRecipients('a@x.com,'.repeat(10_000))).toThrow(/longer than/);
  });
});

describe('agent send_email tool', () => {
  const toolResults = (req: FakeRequest) => (req.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);

  async function mailerAgent(s: SignedUpTenant, agentKey: string, notifyEmail: string) {
    const res = await t.api.post('/v1/agents', { agent_key: agentKey, name: 'Mailer', goal: 'Notify', tools_config: { enabled_platform_tools: ['send_email'], notify_email: notifyEmail } }, key(s));
    expect(res.status, res.text).toBe(201);
    expect((await t.api.post(`/v1/agents/${agentKey}/deploy`, undefined, key(s))).status).toBe(200);
  }

  it('on a trial tenant the tool call fails with the reason unless the notify address is a verified user\'s', async () => {
    const trial = await signupTenant(t.api, { companyName: 'Agent Trial' });
    await verifyOwner(trial);
    await mailerAgent(trial, 'outsider', 'outsider@example.net');
    fake.script([{ tool_calls: [{ name: 'send_email', arguments: { subject: 'Lead', body: 'A lead' } }] }, 'Could not send.']);
    const refused = await t.api.post('/v1/agents/outsider/run', { input: { message: 'notify' } }, key(trial));
    expect(refused.status, refused.text).toBe(200);
    const [answer] = toolResults(fake.chatRequests()[1]);
    expect(answer).toMatch(/^ERROR: .*verified/);
    expect(await countMails(`to_address = 'outsider@example.net'`, [])).toBe(0);

    fake.reset();
    await mailerAgent(trial, 'insider', trial.email);
    fake.script([{ tool_calls: [{ name: 'send_email', arguments: { subject: 'Lead', body: 'A lead' } }] }, 'Sent.']);
    await t.api.post('/v1/agents/insider/run', { input: { message: 'notify' } }, key(trial));
    expect(JSON.parse(toolResults(fake.chatRequests()[1])[0])).toMatchObject({ queued: true });
    expect(await countMails(`to_address = $1 and kind = 'agent_notification'`, [trial.email])).toBe(1);
  });
});
