// Comparing runs over HTTP: compare-models starts two runs; compare pairs their scored cases and
// reports the statistics (checked against the statistics module on the same pairs); pairwise judging
// in both orders (a win only when both agree; position bias counted); reviews with their verdict
// rules; scoring one response; external_output runs.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { comparePaired } from '../../server/evals/statistics.js';
import { bearer } from '../support/client.js';
import { promptOf, sampleFromSchema, schemaNameOf, startFakeLlm, type FakeAnswer, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const caseInput = (n: number) => ({ user_id: `user-${n}`, resume_text: `Resume CASE${n}: Go and PostgreSQL for ${n} years.` });

/** Intent answers carry BETTER (model gpt-4o) or WORSE (others) in a free-text field; the judge scores by it. */
let pairwiseMode: 'by-content' | 'always-A' = 'by-content';
function script() {
  fake.script((req): FakeAnswer | undefined => {
    const name = schemaNameOf(req);
    if (name === 'eval_judge') {
      const prompt = promptOf(req);
      const answer = prompt.slice(prompt.indexOf('## Answer to evaluate'));
      // WORSE answers score 3 on even cases and 5 on odd ones: some losses, some ties.
      const n = Number(/CASE(\d+)/.exec(prompt)?.[1] ?? 0);
      const score = answer.includes('BETTER') ? 5 : n % 2 === 0 ? 3 : 5;
      return { content: { score, dimension_scores: { correctness: score, completeness: 4, relevance: 5, safety: 5 }, reasoning: `score ${score}` } };
    }
    if (name === 'eval_pairwise') {
      if (pairwiseMode === 'always-A') return { content: { winner: 'A', reasoning: 'first is better' } };
      const prompt = promptOf(req);
      const sectionA = prompt.slice(prompt.indexOf('## Answer A'), prompt.indexOf('## Answer B'));
      return { content: { winner: sectionA.includes('BETTER') ? 'A' : 'B', reasoning: 'the better one' } };
    }
    const schema = req.body?.response_format?.json_schema?.schema;
    if (!schema) return undefined;
    const output = sampleFromSchema(schema) as Record<string, unknown>;
    const free = Object.entries(schema.properties ?? {}).find(([, s]) => (s as { type?: string; enum?: unknown; format?: unknown; pattern?: unknown }).type === 'string' && !(s as { enum?: unknown }).enum && !(s as { format?: unknown }).format && !(s as { pattern?: unknown }).pattern);
    if (free) output[free[0]] = req.body.model === 'gpt-4o' ? 'BETTER answer' : 'WORSE answer';
    return { content: output } as FakeAnswer;
  });
}

// Dataset and suite names are unique in a tenant.
let named = 0;

async function suite(owner: SignedUpTenant, n: number) {
  const ds = await t.api.post('/v1/evals/datasets', { name: `Compare set ${++named}`, cases: Array.from({ length: n }, (_, i) => ({ input: caseInput(i) })) }, key(owner));
  expect(ds.status, ds.text).toBe(201);
  const s = await t.api.post('/v1/evals/suites', { name: `Compare ${named}`, domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: ds.body.data.dataset.id }, key(owner));
  expect(s.status, s.text).toBe(201);
  return s.body.data.suite.id as string;
}
const settled = (id: string, owner = a) =>
  waitFor(async () => {
    const run = (await t.api.get(`/v1/evals/runs/${id}`, key(owner))).body.data.run;
    return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : null;
  }, `eval run ${id} to end`, 30_000);
const results = async (id: string, owner = a) => (await t.api.get(`/v1/evals/runs/${id}/results`, key(owner))).body.data.results;

let better: string;
let worse: string;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', EVAL_CONCURRENCY: '4' });
  a = await signupTenant(t.api, { companyName: 'Compare A' });
  b = await signupTenant(t.api, { companyName: 'Compare B' });
  script();
  const suiteId = await suite(a, 10);
  const started = await t.api.post(`/v1/evals/suites/${suiteId}/compare-models`, { model_a: 'gpt-4o', model_b: 'gpt-4o-mini' }, key(a));
  expect(started.status, started.text).toBe(202);
  const runs = started.body.data.runs;
  expect(runs.map((r: { model_override: string; status: string }) => [r.model_override, r.status])).toEqual([['gpt-4o', 'pending'], ['gpt-4o-mini', 'pending']]);
  [better, worse] = runs.map((r: { id: string }) => r.id);
  expect((await settled(better)).status).toBe('completed');
  expect((await settled(worse)).status).toBe('completed');
});
beforeEach(() => {
  pairwiseMode = 'by-content';
  script();
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('compare', () => {
  it('pairs the shared cases and reports the statistics the statistics module gives for them', async () => {
    const res = await t.api.get(`/v1/evals/runs/${better}/compare?against=${worse}`, key(a));
    expect(res.status, res.text).toBe(200);
    const c = res.body.data;
    // Cases 0, 2, 4, 6, 8: 5 against 3; the odd ones 5 against 5.
    expect(c).toMatchObject({ run_id: better, against: worse, n_shared: 10, wins: 5, losses: 0, ties: 5, mean_diff: 1, pass_rate_diff: 0.5, test: 'wilcoxon_signed_rank_pratt' });
    const [ra, rb] = [await results(better), await results(worse)];
    const scoreOf = (rows: { case_id: string; score: number }[], id: string) => rows.find((r) => r.case_id === id)!.score;
    const expected = comparePaired(ra.map((r: { case_id: string; score: number }) => ({ caseId: r.case_id, a: r.score, b: scoreOf(rb, r.case_id) })));
    expect(c.p_value).toBeCloseTo(expected.p_value!, 12);
    expect(c.ci95).toEqual(expected.ci95);
    expect(c.p_value).toBeLessThan(0.05);
    expect(c.per_dimension.correctness).toMatchObject({ n_shared: 10, mean_diff: 1, wins: 5 });
    expect(c.per_dimension.relevance).toMatchObject({ mean_diff: 0, wins: 0, ties: 10, p_value: 1 });
    expect(c.cases).toHaveLength(10);

    // The other way round: the signs flip.
    const back = (await t.api.get(`/v1/evals/runs/${worse}/compare?against=${better}`, key(a))).body.data;
    expect(back).toMatchObject({ mean_diff: -1, wins: 0, losses: 5, pass_rate_diff: -0.5 });
    expect(back.ci95).toEqual([-expected.ci95![1], -expected.ci95![0]]);
  });

  it('refuses a missing against, itself, and another tenant\'s runs', async () => {
    expect((await t.api.get(`/v1/evals/runs/${better}/compare`, key(a))).status).toBe(400);
    expect((await t.api.get(`/v1/evals/runs/${better}/compare?against=${better}`, key(a))).status).toBe(400);
    expect((await t.api.get(`/v1/evals/runs/${better}/compare?against=${worse}`, key(b))).status).toBe(404);
    const other = await t.api.get(`/v1/evals/runs/${better}/compare?against=00000000-0000-4000-8000-000000000000`, key(a));
    expect(other.status).toBe(400);
  });
});

describe('pairwise', () => {
  it('a win counts only when both orders agree: the better run wins every case, no position disagreements', async () => {
    const res = await t.api.post(`/v1/evals/runs/${better}/compare-pairwise`, { against: worse }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ n_shared: 10, judged: 10, wins: 10, losses: 0, ties: 0, win_rate: 1, position_disagreements: 0, judge_failures: 0 });
    // Both orders were asked for every case.
    expect(fake.chatRequests().filter((r) => schemaNameOf(r) === 'eval_pairwise')).toHaveLength(20);
  });

  it('a judge that always prefers the first answer shown: every case a tie, every case a position disagreement', async () => {
    pairwiseMode = 'always-A';
    const res = await t.api.post(`/v1/evals/runs/${better}/compare-pairwise`, { against: worse }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ wins: 0, losses: 0, ties: 10, win_rate: 0, position_disagreements: 10 });
    expect(res.body.data.cases[0]).toMatchObject({ first_order: 'run', second_order: 'against', outcome: 'tie' });
  });
});

describe('reviews', () => {
  it('agree, override with corrected_score, flag; the verdict rules; reviews show on the results; delete', async () => {
    const [first] = await results(better);
    const agree = await t.api.post(`/v1/evals/results/${first.id}/reviews`, { verdict: 'agree', note: 'fine' }, key(a));
    expect(agree.status, agree.text).toBe(201);
    expect(agree.body.data.review).toMatchObject({ run_result_id: first.id, verdict: 'agree', corrected_score: null, note: 'fine' });
    expect(agree.body.data.review.reviewer_id).toMatch(/^api_key:/);
    const override = await t.api.post(`/v1/evals/results/${first.id}/reviews`, { verdict: 'override', corrected_score: 2 }, key(a));
    expect(override.status, override.text).toBe(201);
    expect((await t.api.post(`/v1/evals/results/${first.id}/reviews`, { verdict: 'flag' }, key(a))).status).toBe(201);

    for (const body of [{ verdict: 'override' }, { verdict: 'override', corrected_score: 6 }, { verdict: 'agree', corrected_score: 3 }, { verdict: 'maybe' }, { verdict: 'override', corrected_score: '3' }]) {
      const res = await t.api.post(`/v1/evals/results/${first.id}/reviews`, body, key(a));
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const reviewed = (await results(better)).find((r: { id: string }) => r.id === first.id);
    expect(reviewed.reviews.map((r: { verdict: string; corrected_score: number | null }) => [r.verdict, r.corrected_score])).toEqual([['agree', null], ['override', 2], ['flag', null]]);

    expect((await t.api.post(`/v1/evals/results/${first.id}/reviews`, { verdict: 'agree' }, key(b))).status).toBe(404);
    expect((await t.api.delete(`/v1/evals/reviews/${agree.body.data.review.id}`, key(b))).status).toBe(404);
    expect((await t.api.delete(`/v1/evals/reviews/${agree.body.data.review.id}`, key(a))).status).toBe(200);
    expect((await t.api.delete(`/v1/evals/reviews/${agree.body.data.review.id}`, key(a))).status).toBe(404);
    expect((await results(better)).find((r: { id: string }) => r.id === first.id).reviews).toHaveLength(2);
  });
});

describe('scoring responses produced elsewhere', () => {
  it('POST /v1/evals/score: the check, then the judge, answered at once', async () => {
    const res = await t.api.post('/v1/evals/score', { input: { question: 'CASE1 stack?' }, response: 'BETTER: Go and PostgreSQL', expected_output: 'PostgreSQL', rubric: 'Name the stack' }, key(a));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ score: 5, passed: true, check: { kind: 'substring', passed: true }, dimension_scores: { correctness: 5 } });
    const failedCheck = await t.api.post('/v1/evals/score', { response: 'BETTER: Go', expected_output: 'PostgreSQL' }, key(a));
    expect(failedCheck.body.data).toMatchObject({ score: 5, passed: false, check: { kind: 'substring', passed: false } });
    for (const body of [{}, { response: '' }, { response: 5 }, { response: 'x', pass_threshold: 9 }]) {
      expect((await t.api.post('/v1/evals/score', body, key(a))).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('POST /v1/evals/runs: an external_output run, judged on the job runner, comparable by position', async () => {
    fake.reset();
    script();
    const body = (tag: string) => ({
      name: `external ${tag}`,
      cases: [
        { input: { q: 'CASE1' }, response: `${tag} one`, expected_output: tag },
        { input: { q: 'CASE2' }, response: { text: `${tag} two` } },
        { input: { q: 'CASE3' }, response: `${tag} three`, expected_output: 'absent' },
      ],
    });
    const first = await t.api.post('/v1/evals/runs', body('BETTER'), key(a));
    expect(first.status, first.text).toBe(202);
    expect(first.body.data.run).toMatchObject({ execution_mode: 'external_output', suite_id: null, domain_key: null, intent_key: null, status: 'pending', cases_total: 3, name: 'external BETTER' });
    const run = await settled(first.body.data.run.id);
    expect(run).toMatchObject({ status: 'completed', cases_done: 3, cases_passed: 2 });
    const rows = await results(run.id);
    expect(rows.map((r: { output: unknown; passed: boolean; score: number }) => [r.output, r.passed, r.score])).toEqual([
      ['BETTER one', true, 5],
      [{ text: 'BETTER two' }, true, 5],
      ['BETTER three', false, 5],
    ]);
    // No intent was run: only judge calls.
    expect(fake.chatRequests().every((r) => schemaNameOf(r) === 'eval_judge')).toBe(true);

    const second = await t.api.post('/v1/evals/runs', body('WORSE'), key(a));
    const other = await settled(second.body.data.run.id);
    const c = (await t.api.get(`/v1/evals/runs/${run.id}/compare?against=${other.id}`, key(a))).body.data;
    expect(c).toMatchObject({ n_shared: 3, wins: 1, ties: 2, losses: 0 });

    for (const bad of [{ cases: [] }, { cases: [{ input: {} }] }, { cases: [{ input: 'x', response: 'y' }] }, {}]) {
      expect((await t.api.post('/v1/evals/runs', bad, key(a))).status, JSON.stringify(bad)).toBe(400);
    }
  });
});
