// Evaluation runs while the provider rate-limits them, over HTTP with the real openai SDK and the
// fake provider: a case refused with a rate limit waits and tries again (fewer cases at once) and
// the run's stage says it waits, so a burst of 429s no longer fails the run; a case the provider
// keeps refusing past PROVIDER_PATIENCE_MS errors alone with the provider's code and reason, and the
// run completes with the others. Then the adaptive limiter and rideOut on their own.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../server/errors.js';
import { createAdaptiveLimiter, rideOut } from '../../server/llm/ride-out.js';
import { bearer } from '../support/client.js';
import { promptOf, schemaNameOf, startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;

const key = () => ({ headers: bearer(a.apiKey) });
const INTENT = 'resume-analysis';
const caseInput = (marker: string) => ({ user_id: `user-${marker}`, resume_text: `Resume ${marker}: ten years of Go, PostgreSQL and Kubernetes at scale.` });
const isJudge = (req: FakeRequest) => schemaNameOf(req) === 'eval_judge';
const verdict = { content: { score: 5, dimension_scores: { correctness: 5, completeness: 5, relevance: 5, safety: 5 }, reasoning: 'fine' } };
/** A rate limit with `retry-after: 0`: the provider names no wait; the gateway reports one second. */
const rateLimited = { status: 429, retry_after: '0', error: { message: 'Rate limit reached for requests' } };

let named = 0;
async function suite(cases: unknown[]) {
  const dataset = await t.api.post('/v1/evals/datasets', { name: `Rate-limited set ${++named}`, cases }, key());
  expect(dataset.status, dataset.text).toBe(201);
  const res = await t.api.post('/v1/evals/suites', { name: `Rate-limited suite ${named}`, domain_key: 'hiring', intent_key: INTENT, dataset_id: dataset.body.data.dataset.id }, key());
  expect(res.status, res.text).toBe(201);
  return res.body.data.suite.id as string;
}

async function start(suiteId: string) {
  const res = await t.api.post(`/v1/evals/suites/${suiteId}/run`, {}, key());
  expect(res.status, res.text).toBe(202);
  return res.body.data.run.id as string;
}

/** Polls the run until it ends, keeping every stage it showed on the way. */
const settled = (id: string, stages: Set<string> = new Set()) =>
  waitFor(async () => {
    const run = (await t.api.get(`/v1/evals/runs/${id}`, key())).body.data.run;
    if (run.stage) stages.add(run.stage);
    return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : null;
  }, `eval run ${id} to end`, 25_000);
const results = async (id: string) => (await t.api.get(`/v1/evals/runs/${id}/results?pageSize=100`, key())).body.data.results;
const intentCallsFor = (marker: string) => fake.chatRequests().filter((r) => !isJudge(r) && promptOf(r).includes(`Resume ${marker}:`));

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', EVAL_CONCURRENCY: '10',
    // One provider call per gateway call, and a breaker that opens only after 20 calls and cools
    // down briefly: the waiting under test is the run's own.
    LLM_MAX_RETRIES: '0', LLM_BREAKER_MIN_CALLS: '20', LLM_BREAKER_COOLDOWN_MS: '200',
  });
  a = await signupTenant(t.api, { companyName: 'Rate-limited evals' });
});
beforeEach(() => fake.reset());
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('an evaluation run the provider rate-limits', () => {
  it('30 cases through a burst of 429s (every case of the first wave refused, judges too): the run waits, says so, and scores every case', async () => {
    // The first 15 chat requests and the first 5 judge requests are refused. Before, the first
    // refusal failed the whole run with 0 of 30 cases done.
    let refused = 0;
    let judgesRefused = 0;
    fake.script((req) => {
      if (refused < 15) {
        refused++;
        return rateLimited;
      }
      if (!isJudge(req)) return undefined;
      if (judgesRefused < 5) {
        judgesRefused++;
        return rateLimited;
      }
      return verdict;
    });
    const runId = await start(await suite(Array.from({ length: 30 }, (_, i) => ({ input: caseInput(`C${i}`) }))));
    const stages = new Set<string>();
    const run = await settled(runId, stages);
    expect(run).toMatchObject({ status: 'completed', error: null, cases_total: 30, cases_done: 30, cases_passed: 30, cases_errored: 0, judge_failures: 0, stage: null, progress: 100 });
    expect(refused).toBe(15);
    expect(judgesRefused).toBe(5);
    const rows = await results(runId);
    expect(rows).toHaveLength(30);
    expect(rows.every((r: { status: string; score: number; error: string | null }) => r.status === 'scored' && r.score === 5 && r.error === null)).toBe(true);
    // Progress showed the run waiting for the provider while its cases did.
    expect([...stages].some((s) => /^case \d+\/30, waiting for the provider \(rate limited\)$/.test(s)), [...stages].join(' | ')).toBe(true);
    // Each case's intent served once in the end; the refused ones were asked again.
    for (let i = 0; i < 30; i++) expect(intentCallsFor(`C${i}`).length).toBeGreaterThanOrEqual(1);
    expect(fake.chatRequests()).toHaveLength(30 + 30 + 15 + 5);
  });

  it('a case refused past PROVIDER_PATIENCE_MS errors with the provider code and reason; the run completes with the others', async () => {
    fake.script((req) => {
      if (promptOf(req).includes('Resume STUCK:') && !isJudge(req)) return rateLimited;
      return isJudge(req) ? verdict : undefined;
    });
    const cases = [...Array.from({ length: 5 }, (_, i) => ({ input: caseInput(`P${i}`) })), { input: caseInput('STUCK') }];
    const config = t.server.deps.config;
    const patience = config.PROVIDER_PATIENCE_MS;
    try {
      // A second and a half: the case is refused, waits the second the gateway reports, is refused
      // again, and gives up (the next wait would end past its patience).
      config.PROVIDER_PATIENCE_MS = 1500;
      const runId = await start(await suite(cases));
      const run = await settled(runId);
      expect(run).toMatchObject({ status: 'completed', error: null, cases_total: 6, cases_done: 6, cases_passed: 5, cases_errored: 1 });
      const rows = await results(runId);
      const stuck = rows.find((r: { input: { resume_text: string } }) => r.input.resume_text.includes('STUCK'));
      expect(stuck).toMatchObject({ status: 'errored', passed: false, score: null });
      expect(stuck.error).toMatch(/^LLM_PROVIDER_ERROR: The model provider "openai" is rate limiting requests \(HTTP 429\) \(reason: rate_limited;/);
      expect(rows.filter((r: { status: string }) => r.status === 'scored')).toHaveLength(5);
      expect(intentCallsFor('STUCK').length).toBeGreaterThanOrEqual(2);

      // 0: no waiting at all, the case errors at its first refusal.
      config.PROVIDER_PATIENCE_MS = 0;
      fake.reset();
      fake.script((req) => {
        if (promptOf(req).includes('Resume STUCK:') && !isJudge(req)) return rateLimited;
        return isJudge(req) ? verdict : undefined;
      });
      const again = await settled(await start(await suite(cases)));
      expect(again).toMatchObject({ status: 'completed', cases_done: 6, cases_passed: 5, cases_errored: 1 });
      expect(intentCallsFor('STUCK')).toHaveLength(1);
    } finally {
      config.PROVIDER_PATIENCE_MS = patience;
    }
  });
});

describe('the adaptive limiter', () => {
  it('halves once per window of failures, down to one; adds one back after as many successes as it allows; retries go first', async () => {
    const limiter = createAdaptiveLimiter(8);
    const first = await Promise.all(Array.from({ length: 8 }, () => limiter.acquire(false)));
    let ninth = false;
    const queued = limiter.acquire(false).then((slot) => {
      ninth = true;
      return slot;
    });
    await Promise.resolve();
    expect(ninth).toBe(false);
    // Eight refusals of one window (all started before the first halving): one halving.
    for (const slot of first) slot.release('transient');
    expect(limiter.limit).toBe(4);
    (await queued).release('transient');
    expect(limiter.limit).toBe(2);
    (await limiter.acquire(true)).release('transient');
    (await limiter.acquire(true)).release('transient');
    expect(limiter.limit).toBe(1);
    expect(limiter.failingSince).not.toBeNull();

    // At one slot: a retry waiting for it goes before a first attempt that asked earlier.
    const holder = await limiter.acquire(false);
    const order: string[] = [];
    const fresh = limiter.acquire(false).then((slot) => (order.push('first attempt'), slot));
    const retry = limiter.acquire(true).then((slot) => (order.push('retry'), slot));
    holder.release('served');
    expect(limiter.failingSince).toBeNull();
    // One success at a limit of one: back to two, so both get a slot, the retry first.
    (await retry).release('served');
    (await fresh).release('served');
    expect(order).toEqual(['retry', 'first attempt']);

    // Successes add one per window (as many in a row as the limit), never past the maximum.
    for (let i = 0; i < 100; i++) (await limiter.acquire(false)).release('served');
    expect(limiter.limit).toBe(8);
  });

  it('rideOut: other errors pass at once; a transient one is tried again until it serves, told to onWait; patience 0 never waits', async () => {
    const transient = () => new AppError('LLM_PROVIDER_ERROR', 'The model provider "openai" answered with a server error (HTTP 503)', { reason: 'server_error', retryable: true });
    const refused = new AppError('LLM_PROVIDER_ERROR', 'The model provider "openai" refused the credentials (HTTP 401)', { reason: 'unauthorized', retryable: false });
    let calls = 0;
    await expect(rideOut(async () => {
      calls++;
      throw refused;
    }, { patienceMs: 60_000 })).rejects.toBe(refused);
    expect(calls).toBe(1);

    calls = 0;
    const waits: string[] = [];
    const limiter = createAdaptiveLimiter(4);
    const value = await rideOut(async () => {
      if (++calls < 3) throw transient();
      return 'served';
    }, { patienceMs: 60_000, limiter, onWait: (w) => waits.push(`${w.wait}:${w.reason}:${limiter.waitingFor()}`) });
    expect(value).toBe('served');
    expect(calls).toBe(3);
    expect(waits).toEqual(['1:server_error:server_error', '2:server_error:server_error']);
    expect(limiter.waitingFor()).toBeNull();
    // Halved twice (4 -> 2 -> 1), then one success at a limit of one: two.
    expect(limiter.limit).toBe(2);

    calls = 0;
    const last = transient();
    await expect(rideOut(async () => {
      calls++;
      throw last;
    }, { patienceMs: 0 })).rejects.toBe(last);
    expect(calls).toBe(1);
  });
});
