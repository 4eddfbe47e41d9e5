// Online evaluation end to end over HTTP: intent runs sampled by a rule (rate, metadata filter,
// daily cap), scored on the job runner by the suite's judge into the day's live window, the same
// scores as an offline run of the same cases, and a monitor that fires once on a real regression
// and resolves once when it is over.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { promptOf, schemaNameOf, startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let receiver: http.Server;
let receiverUrl: string;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const INTENT = 'resume-analysis';
const isJudge = (req: FakeRequest) => schemaNameOf(req) === 'eval_judge';
const verdict = (score: number) => ({ content: { score, dimension_scores: { correctness: score, completeness: score, relevance: 5, safety: 5 }, reasoning: `scored ${score}` } });

/** The judge scores by a marker in the run's input: BAD 2, MID 4, anything else 5. */
function scriptJudge() {
  fake.script((req) => {
    if (!isJudge(req)) return undefined;
    const prompt = promptOf(req);
    return verdict(prompt.includes('BAD') ? 2 : prompt.includes('MID') ? 4 : 5);
  });
}

let named = 0;
async function suite(owner: SignedUpTenant, extra: Record<string, unknown> = {}) {
  const ds = await t.api.post('/v1/evals/datasets', { name: `Online set ${++named}`, cases: [{ input: { user_id: 'u', resume_text: 'x' } }] }, key(owner));
  expect(ds.status, ds.text).toBe(201);
  const res = await t.api.post('/v1/evals/suites', { name: `Online suite ${++named}`, domain_key: 'hiring', intent_key: INTENT, dataset_id: ds.body.data.dataset.id, ...extra }, key(owner));
  expect(res.status, res.text).toBe(201);
  return res.body.data.suite.id as string;
}

async function rule(owner: SignedUpTenant, body: Record<string, unknown>) {
  const res = await t.api.post('/v1/evals/online', { name: `Rule ${++named}`, ...body }, key(owner));
  expect(res.status, res.text).toBe(201);
  return res.body.data.rule;
}

async function runIntent(owner: SignedUpTenant, marker: string, metadata?: Record<string, unknown>) {
  const res = await t.api.post(`/v1/hiring/${INTENT}`, { input: { user_id: `user-${marker}`, resume_text: `Resume ${marker}: Go and PostgreSQL.` }, ...(metadata ? { metadata } : {}) }, key(owner));
  expect(res.status, res.text).toBe(200);
  return res.body.data.message_id as string;
}

const windowsOf = async (ruleId: string, owner = a) => {
  const res = await t.api.get(`/v1/evals/online/${ruleId}/windows`, key(owner));
  expect(res.status, res.text).toBe(200);
  return res.body.data.windows as { id: string; status: string; cases_total: number; cases_done: number; samples_capped: number; execution_mode: string; window_day: string }[];
};

/** Waits until the rule's window took `total` samples (scored or capped) and scored every one it took. */
const windowSettled = (ruleId: string, total: number, owner = a) =>
  waitFor(async () => {
    const [w] = await windowsOf(ruleId, owner);
    return w && w.cases_total + w.samples_capped === total && w.cases_done === w.cases_total && w.status === 'completed' ? w : null;
  }, `the window of ${ruleId} to hold ${total} samples, all scored`, 60_000);

beforeAll(async () => {
  fake = await startFakeLlm();
  receiver = http.createServer((req, res) => req.on('data', () => undefined).on('end', () => res.writeHead(200).end('{}')));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', EVAL_CONCURRENCY: '4', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
  });
  a = await signupTenant(t.api, { companyName: 'Online A' });
  b = await signupTenant(t.api, { companyName: 'Online B' });
});
beforeEach(() => {
  fake.reset();
  scriptJudge();
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('rules', () => {
  it('are the tenant\'s own: bad input is 400, another tenant\'s rule 404, a name taken 409', async () => {
    const suiteId = await suite(a);
    const created = await rule(a, { suite_id: suiteId, sample_rate: 0.25 });
    expect(created).toMatchObject({ suite_id: suiteId, target: { kind: 'intent', domain_key: 'hiring', intent_key: INTENT }, sample_rate: 0.25, daily_cap: 1000, enabled: true });
    for (const body of [{ name: 'x', suite_id: suiteId, sample_rate: 2 }, { name: 'x', suite_id: suiteId, sample_rate: '0.5' }, { name: 'x' }, { name: 'x', suite_id: 'nope' }, { name: 'x', suite_id: suiteId, daily_cap: 0 }]) {
      const res = await t.api.post('/v1/evals/online', body, key(a));
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await t.api.get(`/v1/evals/online/${created.id}`, key(b))).status).toBe(404);
    expect((await t.api.patch(`/v1/evals/online/${created.id}`, { enabled: false }, key(b))).status).toBe(404);
    expect((await t.api.post('/v1/evals/online', { name: created.name, suite_id: suiteId }, key(a))).body.error.code).toBe('ONLINE_RULE_NAME_TAKEN');
    const paused = await t.api.patch(`/v1/evals/online/${created.id}`, { enabled: false }, key(a));
    expect(paused.body.data.rule.enabled).toBe(false);
    expect((await t.api.delete(`/v1/evals/online/${created.id}`, key(a))).status).toBe(200);
  });
});

describe('sampling', () => {
  it('takes the runs whose metadata matches, scores at most daily_cap of them a day and counts the rest', async () => {
    const suiteId = await suite(a);
    const r = await rule(a, { suite_id: suiteId, sample_rate: 1, filter: { channel: ['web', 'mail'] }, daily_cap: 3 });
    for (let i = 0; i < 5; i++) await runIntent(a, `web-${i}`, { channel: 'web' });
    for (let i = 0; i < 3; i++) await runIntent(a, `app-${i}`, { channel: 'app' });
    await runIntent(a, 'none');
    const w = await windowSettled(r.id, 5);
    expect(w).toMatchObject({ execution_mode: 'online', cases_total: 3, cases_done: 3, samples_capped: 2, window_day: new Date().toISOString().slice(0, 10) });
    const results = (await t.api.get(`/v1/evals/runs/${w.id}/results`, key(a))).body.data.results;
    expect(results.map((x: { source: { kind: string } }) => x.source.kind)).toEqual(['intent', 'intent', 'intent']);
    expect(results.every((x: { input: { resume_text: string } }) => x.input.resume_text.includes('web-'))).toBe(true);
    expect(results.every((x: { score: number; status: string }) => x.status === 'scored' && x.score === 5)).toBe(true);
    await t.api.delete(`/v1/evals/online/${r.id}`, key(a));
  });

  it('picks about sample_rate of the runs (0.5 of 120: within 6 standard deviations)', async () => {
    const suiteId = await suite(a);
    const r = await rule(a, { suite_id: suiteId, sample_rate: 0.5, filter: { rate: 'half' } });
    for (let i = 0; i < 120; i++) await runIntent(a, `rate-${i}`, { rate: 'half' });
    // The sampled count is unknown: wait until every queued sample is taken (nothing left for the rule), then read it.
    // The queue is read first: the intake moves samples into the window in one transaction, so once the
    // queue is seen empty the window read after it holds them all (read the other way round, a move
    // between the two reads hid its samples from both).
    const sampled = await waitFor(async () => {
      const queued = await t.sql<{ n: number }>('select count(*)::int as n from online_eval_samples where rule_id = $1', [r.id]);
      const [w] = await windowsOf(r.id);
      return w && queued[0].n === 0 && w.status === 'completed' ? w.cases_total : null;
    }, 'the sampled runs to be taken', 60_000);
    expect(sampled).toBeGreaterThanOrEqual(60 - 6 * Math.sqrt(30));
    expect(sampled).toBeLessThanOrEqual(60 + 6 * Math.sqrt(30));
    await t.api.delete(`/v1/evals/online/${r.id}`, key(a));
  });
});

describe('agents and workflow steps', () => {
  it('a completed agent run and a workflow\'s ai_intent step are sampled by their own rules, with their source', async () => {
    const suiteId = await suite(a);
    expect((await t.api.post('/v1/agents', { agent_key: 'online-helper', name: 'Helper', goal: 'Help' }, key(a))).status).toBe(201);
    expect((await t.api.post('/v1/agents/online-helper/deploy', undefined, key(a))).status).toBe(200);
    const agentRule = await rule(a, { suite_id: suiteId, sample_rate: 1, target: { kind: 'agent', agent_key: 'online-helper' } });
    const run = await t.api.post('/v1/agents/online-helper/run', { input: { message: 'Hello there' } }, key(a));
    expect(run.status, run.text).toBe(200);
    const w = await windowSettled(agentRule.id, 1);
    const [result] = (await t.api.get(`/v1/evals/runs/${w.id}/results`, key(a))).body.data.results;
    expect(result).toMatchObject({ status: 'scored', input: { message: 'Hello there' }, source: { kind: 'agent', id: run.body.data.run_id } });

    const wf = await t.api.post('/v1/workflows', {
      name: 'Online step',
      steps: [
        { id: 'start', step_type: 'trigger' },
        { id: 'analyse', step_type: 'ai_intent', config: { intent_id: `hiring/${INTENT}` } },
        { id: 'done', step_type: 'end', config: { output: { ok: true } } },
      ],
    }, key(a));
    expect(wf.status, wf.text).toBe(201);
    const workflowKey = wf.body.data.workflow.workflow_key;
    expect((await t.api.post(`/v1/workflows/${workflowKey}/deploy`, undefined, key(a))).status).toBe(200);
    const stepRule = await rule(a, { suite_id: suiteId, sample_rate: 1, target: { kind: 'workflow_step', workflow_key: workflowKey, step_id: 'analyse' } });
    const wfRun = await t.api.post(`/v1/workflows/${workflowKey}/run`, { input: { resume_text: 'Resume STEP: Rust.' } }, key(a));
    expect(wfRun.status, wfRun.text).toBe(200);
    const sw = await windowSettled(stepRule.id, 1);
    const [stepResult] = (await t.api.get(`/v1/evals/runs/${sw.id}/results`, key(a))).body.data.results;
    expect(stepResult).toMatchObject({ status: 'scored', source: { kind: 'workflow_step', id: `${wfRun.body.data.run_id}/analyse` } });
    await t.api.delete(`/v1/evals/online/${agentRule.id}`, key(a));
    await t.api.delete(`/v1/evals/online/${stepRule.id}`, key(a));
  });
});

describe('the same scores online and offline', () => {
  it('an offline run of the window\'s cases scores each as the window did, and compare pairs them', async () => {
    const suiteId = await suite(a, { judge_rubric: 'Be strict', pass_threshold: 4 });
    const r = await rule(a, { suite_id: suiteId, sample_rate: 1, filter: { same: true } });
    for (const marker of ['GOOD-1', 'BAD-1', 'MID-1', 'GOOD-2']) await runIntent(a, marker, { same: true });
    const w = await windowSettled(r.id, 4);
    const live = (await t.api.get(`/v1/evals/runs/${w.id}/results`, key(a))).body.data.results;
    const offline = await t.api.post('/v1/evals/runs', { name: 'replay', rubric: 'Be strict', pass_threshold: 4, cases: live.map((x: { input: unknown; output: unknown }) => ({ input: x.input, response: x.output })) }, key(a));
    expect(offline.status, offline.text).toBe(202);
    const replayId = offline.body.data.run.id;
    await waitFor(async () => (await t.api.get(`/v1/evals/runs/${replayId}`, key(a))).body.data.run.status === 'completed', 'the offline run', 30_000);
    const replayed = (await t.api.get(`/v1/evals/runs/${replayId}/results`, key(a))).body.data.results;
    const scores = (rows: { position: number; score: number; passed: boolean; dimension_scores: unknown }[]) => rows.map((x) => [x.position, x.score, x.passed, x.dimension_scores]);
    expect(scores(live)).toEqual(scores(replayed));
    expect(live.map((x: { score: number }) => x.score).sort()).toEqual([2, 4, 5, 5]);
    const compared = await t.api.get(`/v1/evals/runs/${w.id}/compare?against=${replayId}`, key(a));
    expect(compared.status, compared.text).toBe(200);
    expect(compared.body.data).toMatchObject({ pairing: 'paired', n_a: 4, n_b: 4, n_shared: 4, mean_diff: 0, test: 'wilcoxon_signed_rank_pratt' });

    // A run of other inputs shares no case with the window: the two are compared as samples.
    const others = ['BAD-9', 'BAD-8', 'GOOD-9'].map((marker) => ({ input: { user_id: `other-${marker}`, resume_text: `Resume ${marker}: five years of Java.` }, response: live[0].output }));
    const other = await t.api.post('/v1/evals/runs', { name: 'other inputs', rubric: 'Be strict', pass_threshold: 4, cases: others }, key(a));
    expect(other.status, other.text).toBe(202);
    const otherId = other.body.data.run.id;
    await waitFor(async () => (await t.api.get(`/v1/evals/runs/${otherId}`, key(a))).body.data.run.status === 'completed', 'the other run', 30_000);
    const unpaired = await t.api.get(`/v1/evals/runs/${w.id}/compare?against=${otherId}`, key(a));
    expect(unpaired.status, unpaired.text).toBe(200);
    // Window 2, 4, 5, 5 (mean 4); other 2, 2, 5 (mean 3); scipy's mannwhitneyu (asymptotic, continuity): p = 0.56677.
    expect(unpaired.body.data).toMatchObject({
      pairing: 'unpaired', n_a: 4, n_b: 3, n_shared: 0, wins: 0, losses: 0, ties: 0, cases: [], test: 'mann_whitney_u', p_value_method: 'normal_approx', pass_rate_diff: 0.75 - 1 / 3,
    });
    expect(unpaired.body.data.mean_diff).toBeCloseTo(1, 12);
    expect(unpaired.body.data.p_value).toBeCloseTo(0.5667652473884979, 10);
    expect(unpaired.body.data.ci95[0]).toBeLessThan(1);
    expect(unpaired.body.data.ci95[1]).toBeGreaterThan(1);
    await t.api.delete(`/v1/evals/online/${r.id}`, key(a));
  });
});

describe('monitors', () => {
  it('fire once on a real regression and resolve once when it is over, with events and history', async () => {
    const sub = await t.api.post('/v1/event-subscriptions', { url: receiverUrl, event_types: ['eval.monitor.fired', 'eval.monitor.resolved'] }, key(a));
    expect(sub.status, sub.text).toBe(201);
    const suiteId = await suite(a);
    const r = await rule(a, { suite_id: suiteId, sample_rate: 1, filter: { phase: true } });
    const created = await t.api.post('/v1/evals/monitors', { name: 'Quality', rule_id: r.id, metric: 'mean_score', threshold: 3.5, window_samples: 40, min_samples: 40 }, key(a));
    expect(created.status, created.text).toBe(201);
    const monitorId = created.body.data.monitor.id;
    expect(created.body.data.monitor).toMatchObject({ direction: 'below', state: 'ok', confidence: 0.95 });
    const readMonitor = async () => (await t.api.get(`/v1/evals/monitors/${monitorId}`, key(a))).body.data.monitor;
    // The monitors are judged after the window's slice writes its cases: wait for the judgement of the whole phase.
    const phase = async (marker: string, total: number, judged: (m: { state: string; last_samples: number; evaluated_at: string | null }) => boolean) => {
      for (let i = 0; i < 40; i++) await runIntent(a, `${marker}-${total}-${i}`, { phase: true });
      await windowSettled(r.id, total);
      return waitFor(async () => {
        const m = await readMonitor();
        return judged(m) ? m : null;
      }, `the monitor's judgement after ${total} samples`, 30_000);
    };
    expect(await phase('GOOD', 40, (m) => m.last_samples === 40)).toMatchObject({ state: 'ok', last_samples: 40 });
    const fired = await phase('BAD', 80, (m) => m.state === 'firing');
    expect(fired).toMatchObject({ state: 'firing', last_samples: 40 });
    expect(fired.last_bound).toBeLessThan(3.5);
    const resolved = await phase('GOOD', 120, (m) => m.state === 'ok');
    expect(resolved).toMatchObject({ state: 'ok' });
    expect(resolved.last_bound).toBeGreaterThanOrEqual(3.5);
    const history = (await t.api.get(`/v1/evals/monitors/${monitorId}/history`, key(a))).body.data.changes;
    expect(history.map((c: { state: string }) => c.state)).toEqual(['ok', 'firing']);
    const events = (await t.api.get('/v1/events', key(a))).body.data.events as { type: string; data: { monitor_id: string } }[];
    expect(events.filter((e) => e.data.monitor_id === monitorId).map((e) => e.type)).toEqual(['eval.monitor.resolved', 'eval.monitor.fired']);
    expect((await t.api.get(`/v1/evals/monitors/${monitorId}`, key(b))).status).toBe(404);
  });
});

describe('erasure', () => {
  it('deletes the end user\'s samples still queued, and keeps another user\'s', async () => {
    // A server without the job runner: the samples stay queued, as behind a backlog.
    const api = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', WORKER: 'false' });
    try {
      const c = await signupTenant(api.api, { companyName: 'Online erasure' });
      const ds = await api.api.post('/v1/evals/datasets', { name: 'Erasure set', cases: [{ input: { user_id: 'u', resume_text: 'x' } }] }, key(c));
      const s = await api.api.post('/v1/evals/suites', { name: 'Erasure suite', domain_key: 'hiring', intent_key: INTENT, dataset_id: ds.body.data.dataset.id }, key(c));
      const created = await api.api.post('/v1/evals/online', { name: 'Everything', suite_id: s.body.data.suite.id, sample_rate: 1 }, key(c));
      expect(created.status, created.text).toBe(201);
      for (const userId of ['erased-person', 'erased-person', 'kept-person']) {
        const res = await api.api.post(`/v1/hiring/${INTENT}`, { input: { user_id: userId, resume_text: `Resume of ${userId}` } }, key(c));
        expect(res.status, res.text).toBe(200);
      }
      const queued = (userId: string) => api.sql<{ n: number }>(`select count(*)::int as n from online_eval_samples where tenant_id = $1 and input->>'user_id' = $2`, [c.tenantId, userId]).then(([r]) => r.n);
      expect([await queued('erased-person'), await queued('kept-person')]).toEqual([2, 1]);
      const receipt = await api.api.post('/v1/erasures', { user_id: 'erased-person' }, key(c));
      expect(receipt.status, receipt.text).toBe(200);
      expect(receipt.body.data.deleted.online_eval_samples).toBe(2);
      expect([await queued('erased-person'), await queued('kept-person')]).toEqual([0, 1]);
      // Deleting the rule deletes its samples still queued (the queue holds no foreign key to cascade).
      expect((await api.api.delete(`/v1/evals/online/${created.body.data.rule.id}`, key(c))).status).toBe(200);
      expect(await queued('kept-person')).toBe(0);
    } finally {
      await api.close();
    }
  });
});
