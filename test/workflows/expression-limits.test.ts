// Expressions cannot stall the server or exhaust its memory: a workflow condition or an eval
// suite's custom scorer that concatenates a large input with itself (a balanced tree of 256 `+`,
// each level doubling the list) ends with the documented limit error while the server stays
// responsive and another tenant's work goes on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLAN_LIMITS } from '../../server/tenants/plan-limits.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { answeredDuring, expectAnsweredDuring, rssMiB, watchRss } from '../support/health-watch.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;

const ITEMS = 300_000;
/** Resident memory the abuse may add to the server (the 600 KB input itself is parsed, stored and read back a few times). */
const RSS_GROWTH_MIB = 200;
const TRIAL = DEFAULT_PLAN_LIMITS.trial;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });

/** `(x + x) + (x + x) ...` with `terms` leaves: each level of the tree doubles the list it builds. */
function balancedSum(leaf: string, terms: number): string {
  if (terms === 1) return leaf;
  const half = balancedSum(leaf, terms / 2);
  return `(${half} + ${half})`;
}

beforeAll(async () => {
  fake = await startFakeLlm();
  // These tests are about the size limit: the time limit (100 ms on trial), which a loaded machine
  // can reach first, is raised so the size limit is always the one that ends the expression.
  t = await startTestServer({
    OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0',
    PLAN_LIMITS: JSON.stringify({ trial: { expression_ms: 10_000 } }),
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('an expression that builds a huge list', () => {
  it('as a workflow condition: the run fails with expression_result_size, the server stays live, another tenant runs meanwhile', { timeout: 120_000 }, async () => {
    const abuser = await signupTenant(t.api, { companyName: 'Expression Abuser' });
    const neighbour = await signupTenant(t.api, { companyName: 'Expression Neighbour' });
    const expression = `size(${balancedSum('trigger.l', 256)}) > 0`;
    const wf = await createWorkflow(t.api, abuser.apiKey, 'Doubling', [
      MANUAL_TRIGGER,
      { id: 'grow', step_type: 'condition', config: { expression }, on_success_ref: 'done' },
      { id: 'done', step_type: 'end', config: { output: 'grown' } },
    ]);
    const calm = await createWorkflow(t.api, neighbour.apiKey, 'Calm', [
      MANUAL_TRIGGER,
      { id: 'check', step_type: 'condition', config: { expression: 'trigger.amount > 100' }, on_success_ref: 'big', on_failure_ref: 'small' },
      { id: 'big', step_type: 'end', config: { output: 'big' } },
      { id: 'small', step_type: 'end', config: { output: 'small' } },
    ]);

    const input = { l: Array.from({ length: ITEMS }, () => 0) };
    const rssBefore = rssMiB();
    const rss = watchRss();
    // The neighbour runs its workflow again and again for as long as the abusive run is in flight.
    const neighbourRuns: { status: number; runStatus: string | undefined; output: unknown }[] = [];
    const watched = await answeredDuring(t.url, async () => {
      let done = false;
      const abusive = t.api.post(`/v1/workflows/${wf.workflow_key}/run`, { input }, key(abuser)).finally(() => {
        done = true;
      });
      while (!done) {
        const other = await t.api.post(`/v1/workflows/${calm.workflow_key}/run`, { input: { amount: 150 } }, key(neighbour));
        neighbourRuns.push({ status: other.status, runStatus: other.body.data?.status, output: other.body.data?.output });
      }
      return abusive;
    });
    const res = watched.result;
    const peak = rss.stop();

    expect(res.status, res.text.slice(0, 500)).toBe(200);
    const detail = await t.api.get(`/v1/workflows/${wf.workflow_key}/runs/${res.body.data.run_id}`, key(abuser));
    const run = detail.body.data.run as { status: string; error: { code: string; step_id?: string; message: string } | null };
    console.log(
      `workflow condition over ${ITEMS} items: run ${run.status} (${run.error?.message?.slice(0, 160)}); ` +
        `${watched.answeredDuring} health probes answered meanwhile; RSS ${rssBefore} -> peak ${peak} MiB; neighbour: ${neighbourRuns.length} runs`,
    );
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ step_id: 'grow' });
    expect(run.error!.message).toContain('expression_result_size');
    expect(run.error!.message).toContain(TRIAL.expression_result_size.toLocaleString('en-US'));
    expectAnsweredDuring(watched);
    expect(peak - rssBefore).toBeLessThan(RSS_GROWTH_MIB);
    expect(neighbourRuns.length).toBeGreaterThan(0);
    for (const other of neighbourRuns) expect(other).toMatchObject({ status: 200, runStatus: 'completed', output: 'big' });
  });

  it('as an eval suite custom scorer: the case errors with expression_result_size, the run completes, the server stays live', { timeout: 120_000 }, async () => {
    const owner = await signupTenant(t.api, { companyName: 'Scorer Abuser' });
    const cases = [
      { input: { user_id: 'u-1', resume_text: 'Resume: ten years of Go and PostgreSQL.', l: Array.from({ length: ITEMS }, () => 0) } },
      { input: { user_id: 'u-2', resume_text: 'Resume: five years of TypeScript.', l: [1, 2, 3] } },
    ];
    const ds = await t.api.post('/v1/evals/datasets', { name: 'Big inputs', cases }, key(owner));
    expect(ds.status, ds.text.slice(0, 500)).toBe(201);
    const suite = await t.api.post(
      '/v1/evals/suites',
      { name: 'Doubling scorer', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: ds.body.data.dataset.id, custom_scorer_expression: `size(${balancedSum('input.l', 256)})` },
      key(owner),
    );
    expect(suite.status, suite.text).toBe(201);

    const rssBefore = rssMiB();
    const rss = watchRss();
    const startRes = await t.api.post(`/v1/evals/suites/${suite.body.data.suite.id}/run`, {}, key(owner));
    expect(startRes.status, startRes.text).toBe(202);
    const runId = startRes.body.data.run.id as string;
    const watched = await answeredDuring(t.url, () =>
      waitFor(async () => {
        const r = (await t.api.get(`/v1/evals/runs/${runId}`, key(owner))).body.data.run;
        return ['completed', 'failed', 'cancelled'].includes(r.status) ? r : null;
      }, 'the eval run to end', 60_000),
    );
    const run = watched.result;
    const peak = rss.stop();
    const results = (await t.api.get(`/v1/evals/runs/${runId}/results`, key(owner))).body.data.results as { input: { user_id: string }; status: string; custom_score: number | null; error: string | null }[];
    const big = results.find((r) => r.input.user_id === 'u-1')!;
    const small = results.find((r) => r.input.user_id === 'u-2')!;
    console.log(
      `custom scorer over ${ITEMS} items: run ${run.status}; big case ${big.status} (${big.error?.slice(0, 160) ?? big.custom_score}); ` +
        `${watched.answeredDuring} health probes answered meanwhile; RSS ${rssBefore} -> peak ${peak} MiB`,
    );
    expect(run.status).toBe('completed');
    expect(big).toMatchObject({ status: 'errored', custom_score: null });
    expect(big.error).toContain('expression_result_size');
    // Three items doubled eight times: 768, well under the cap.
    expect(small).toMatchObject({ status: 'scored', custom_score: 768 });
    expectAnsweredDuring(watched);
    expect(peak - rssBefore).toBeLessThan(RSS_GROWTH_MIB);
  });
});
