// `liya evals run|compare|report|runs|suites` as a user (or a CI job) runs them: a real subprocess
// (bin/liya.mjs) against a real server whose job runner runs the suites, with the fake model
// provider answering the intent and a scripted judge. Plus the pure builders of the HTML and JUnit
// reports, with hostile data.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { comparisonRows, comparisonVerdict } from '../../cli/commands/eval-compare.js';
import { parseMinScore, parsePassRate, thresholdFailures } from '../../cli/commands/evals.js';
import { progressLine } from '../../cli/evals-follow.js';
import { buildJUnitReport, escapeXmlAttr, escapeXmlText } from '../../cli/evals-junit.js';
import {
  buildEvalReport,
  formatCi,
  formatDiff,
  formatPoints,
  formatPValue,
  scoreHistogram,
  type EvalComparison,
  type EvalResult,
  type EvalRun,
} from '../../cli/evals-report.js';
import { bearer } from '../support/client.js';
import { promptOf, schemaNameOf, startFakeLlm, type FakeLlm, type FakeRequest } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let tmp: string;
let suiteId: string;
/** The suite's dataset case ids, by position. */
let caseIds: string[];

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const SUITE_NAME = 'CLI gate suite';
const INTENT = 'resume-analysis';
const INJECTED = '<script>alert("pwned")</script>';
const caseInput = (marker: string, extra = '') => ({ user_id: `user-${marker}`, resume_text: `Resume ${marker}: ten years of Go, PostgreSQL and Kubernetes.${extra}` });

const key = () => ({ headers: bearer(a.apiKey) });
const isJudge = (req: FakeRequest) => schemaNameOf(req) === 'eval_judge';

/** The judge gives the LOW case `low` and every other case 5; its reasoning carries markup to escape. */
function scriptJudge(low = 2) {
  fake.script((req) => {
    if (!isJudge(req)) return undefined;
    const score = promptOf(req).includes('Resume LOW:') ? low : 5;
    return { content: { score, dimension_scores: { correctness: score, completeness: score, relevance: 5, safety: 5 }, reasoning: `scored ${score} <b>&amp</b>` } };
  });
}

function liya(args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_API_KEY: a.apiKey, LIYA_ADMIN_SECRET: undefined, LIYA_TIMEOUT: undefined, LIYA_EVAL_POLL_MS: '100', ...options.env };
  return runLiya(args, { ...options, env });
}

async function createSuite(owner: SignedUpTenant, name: string, cases: unknown[]): Promise<string> {
  const ds = await t.api.post('/v1/evals/datasets', { name: `${name} cases`, cases }, { headers: bearer(owner.apiKey) });
  expect(ds.status, ds.text).toBe(201);
  const res = await t.api.post('/v1/evals/suites', { name, domain_key: 'hiring', intent_key: INTENT, dataset_id: ds.body.data.dataset.id }, { headers: bearer(owner.apiKey) });
  expect(res.status, res.text).toBe(201);
  return res.body.data.suite.id as string;
}

const readRun = async (id: string): Promise<EvalRun> => (await t.api.get(`/v1/evals/runs/${id}`, key())).body.data.run;

/** A run started through the API (not the CLI under test), once it has ended. */
async function apiRun(): Promise<EvalRun> {
  const res = await t.api.post(`/v1/evals/suites/${suiteId}/run`, {}, key());
  expect(res.status, res.text).toBe(202);
  const id = res.body.data.run.id as string;
  return waitFor(async () => {
    const run = await readRun(id);
    return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : null;
  }, `eval run ${id} to end`, 30_000);
}

/** The cells of the `label  value` line of a Details block or a table row. */
const lineOf = (out: string, label: string) => out.split('\n').find((l) => l.startsWith(`${label} `))?.split(/ {2,}/);

/** A small well-formedness check: every `<` opens a tag, tags nest, text holds only known entities. */
function expectWellFormedXml(xml: string) {
  expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n')).toBe(true);
  const body = xml.slice(xml.indexOf('?>') + 2);
  const tag = /<(\/?)([A-Za-z][\w.-]*)((?:\s+[\w.:-]+="[^"<]*")*)\s*(\/?)>/g;
  const stack: string[] = [];
  let last = 0;
  let roots = 0;
  for (let m = tag.exec(body); m; m = tag.exec(body)) {
    const text = body.slice(last, m.index);
    expect(text, `text before ${m[0]}`).not.toMatch(/<|&(?!(?:amp|lt|gt|quot|apos|#\d+);)/);
    if (stack.length === 0) expect(text.trim(), 'text outside the root').toBe('');
    for (const [, value] of m[3].matchAll(/="([^"]*)"/g)) expect(value).not.toMatch(/&(?!(?:amp|lt|gt|quot|apos|#\d+);)/);
    const [, closing, name, , selfClosing] = m;
    if (closing) expect(stack.pop(), `closing </${name}>`).toBe(name);
    else if (!selfClosing) {
      if (stack.length === 0) roots++;
      stack.push(name);
    }
    last = m.index + m[0].length;
  }
  expect(body.slice(last).trim()).toBe('');
  expect(stack).toEqual([]);
  expect(roots).toBe(1);
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', EVAL_CONCURRENCY: '2' });
  a = await signupTenant(t.api, { companyName: 'CLI Evals Co' });
  tmp = await mkdtemp(path.join(os.tmpdir(), 'liya-cli-evals-'));
  suiteId = await createSuite(a, SUITE_NAME, [{ input: caseInput('A') }, { input: caseInput('B') }, { input: caseInput('LOW') }, { input: caseInput('X', ` ${INJECTED}`) }]);
  const suite = (await t.api.get(`/v1/evals/suites/${suiteId}`, key())).body.data.suite;
  const dataset = (await t.api.get(`/v1/evals/datasets/${suite.dataset_id}`, key())).body.data.dataset;
  caseIds = dataset.cases.map((c: { id: string }) => c.id);
  expect(caseIds).toHaveLength(4);
}, 120_000);

beforeEach(() => {
  fake.reset();
  scriptJudge();
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('pure parts', () => {
  const run: EvalRun = {
    id: 'run-1', suite_id: 's-1', name: 'Suite <i>"q"</i>', domain_key: 'hiring', intent_key: INTENT, status: 'completed', stage: null, progress: 100,
    mean_score: 3.5, dimension_scores: { correctness: 3.5, completeness: 4, relevance: 5, safety: 5 }, cases_total: 3, cases_done: 3, cases_passed: 1, cases_errored: 1,
    pass_threshold: 4, started_at: '2026-01-01T10:00:00.000Z', completed_at: '2026-01-01T10:00:04.500Z', error: null, judge_total_cost_usd: 0.00012, judge_model: 'gpt-4o-mini',
    judge_fallback_models: null, judge_calls: 3, judge_failures: 1, judge_cap_reached: false, model_override: null, online_rule_id: null, window_day: null, samples_capped: 0,
  };
  const result = (over: Partial<EvalResult>): EvalResult => ({
    id: 'r', case_id: 'c', position: 0, status: 'scored', input: {}, message: null, output: null, expected_output: null, passed: true, score: 5, dimension_scores: null,
    check: { kind: 'none', passed: null }, judge_reasoning: null, custom_score: null, latency_ms: 120, cost_usd: 0.0001, error: null, source: null, reviews: [], ...over,
  });
  const results: EvalResult[] = [
    result({ id: 'r0', case_id: 'case-"0"', position: 0, input: { text: `${INJECTED} & more` }, output: { answer: '</pre><img src=x onerror=alert(1)>' }, judge_reasoning: 'fine <b>' }),
    result({ id: 'r1', case_id: 'case-1', position: 1, passed: false, score: 2, check: { kind: 'substring', passed: false, detail: 'missing "x" & <y>' }, judge_reasoning: 'bad\u0001 ]]> "quoted"' }),
    result({
      id: 'r2', case_id: 'case-2', position: 2, status: 'errored', passed: false, score: null, error: 'JUDGE_FAILED: OUTPUT_INVALID <twice>',
      reviews: [{ id: 'v', verdict: 'flag', corrected_score: 1, note: '<u>look</u>', reviewer_id: 'u', created_at: '2026-01-02T00:00:00.000Z' }],
    }),
  ];

  it('buildEvalReport escapes every value from the data and draws its charts inline', () => {
    const html = buildEvalReport({ run, results, generatedAt: new Date('2026-01-03T00:00:00.000Z') });
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>');
    expect(html).not.toContain('<u>');
    expect(html).not.toContain('<i>');
    // Inside the JSON of the input: the quotes carry JSON's backslashes.
    expect(html).toContain('&lt;script&gt;alert(\\&quot;pwned\\&quot;)&lt;/script&gt; &amp; more');
    expect(html).toContain('&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('<title>Eval run Suite &lt;i&gt;&quot;q&quot;&lt;/i&gt;</title>');
    expect(html).toContain('data-case-id="case-&quot;0&quot;"');
    expect(html).toContain('missing &quot;x&quot; &amp; &lt;y&gt;');
    expect(html).toContain('&lt;u&gt;look&lt;/u&gt;');
    expect(html).toMatch(/<svg class="chart" id="score-histogram"/);
    expect(html).toMatch(/<svg class="chart" id="dimension-means"/);
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/\bsrc=["']|<link\b|url\(/);
    expect(count(html, '<tr class="case ')).toBe(3);
    expect(html).not.toContain('class="error-bar"');
    expect(scoreHistogram(results)).toEqual([0, 1, 0, 0, 1]);
    // 4.5 s between start and end.
    expect(html).toContain('4.5 s');

    const comparison: EvalComparison = {
      run_id: 'run-1', against: 'run-0', pairing: 'paired', n_a: 3, n_b: 2, n_shared: 2, mean_diff: 0.5, ci95: [0, 1], p_value: 0.5, test: 'wilcoxon_signed_rank_pratt', p_value_method: 'normal_approx',
      wins: 1, losses: 0, ties: 1, pass_rate_diff: 0.5,
      per_dimension: { correctness: { n_shared: 2, mean_diff: 0.5, ci95: [0, 1], p_value: 0.5, wins: 1, losses: 0, ties: 1 } },
      cases: [{ case_id: 'case-1', position: 1, score_a: 2, score_b: 1 }],
    };
    const compared = buildEvalReport({ run, results, comparison });
    expect(count(compared, 'class="error-bar"')).toBe(2); // overall and correctness
    expect(compared).toContain('id="comparison"');
    expect(compared).toContain('+50.0 pp');
  });

  it('an unpaired comparison (runs without a shared case) reads as two samples, in the verdict and the report', () => {
    const unpaired: EvalComparison = {
      run_id: 'window-1', against: 'suite-run', pairing: 'unpaired', n_a: 40, n_b: 25, n_shared: 0, mean_diff: -0.6, ci95: [-1, -0.2], p_value: 0.01, test: 'mann_whitney_u', p_value_method: 'normal_approx',
      wins: 0, losses: 0, ties: 0, pass_rate_diff: -0.2, per_dimension: {}, cases: [],
    };
    expect(comparisonVerdict(unpaired)).toMatchObject({ kind: 'warning', message: expect.stringContaining('scores lower than run suite-run') });
    expect(comparisonVerdict({ ...unpaired, n_b: 1, p_value: null, ci95: null })).toMatchObject({ kind: 'info', message: expect.stringContaining('40 and 1') });
    const html = buildEvalReport({ run: { ...run, id: 'window-1' }, results, comparison: unpaired });
    expect(html).toContain('compared as two samples');
    expect(html).toContain('<code>mann_whitney_u</code>');
  });

  it('buildJUnitReport escapes text and attributes, drops characters XML cannot hold, and counts failures, errors and skips', () => {
    expect(escapeXmlText('a < b && c > d')).toBe('a &lt; b &amp;&amp; c &gt; d');
    expect(escapeXmlAttr('say "hi"\n\'x\'\t\u0000')).toBe('say &quot;hi&quot;&#10;&apos;x&apos;&#9;\uFFFD');
    expect(escapeXmlText('lone \uD800 surrogate \u{1F600}')).toBe('lone \uFFFD surrogate \u{1F600}');
    const xml = buildJUnitReport({ run, results: [...results, result({ id: 'r3', case_id: 'case-3', position: 3, status: 'skipped', passed: null, score: null, error: 'JUDGE_CAP_REACHED: out' })] });
    expectWellFormedXml(xml);
    expect(xml).not.toContain('\u0001');
    expect(count(xml, '<testcase ')).toBe(4);
    expect(count(xml, '<failure ')).toBe(1);
    expect(count(xml, '<error ')).toBe(1);
    expect(count(xml, '<skipped ')).toBe(1);
    expect(xml).toContain('<testsuite name="Suite &lt;i&gt;&quot;q&quot;&lt;/i&gt; (run run-1)" tests="4" failures="1" errors="1" skipped="1"');
    expect(xml).toContain('name="position 0 · case case-&quot;0&quot;" classname="liya.evals.hiring.resume-analysis"');
    expect(xml).toContain('message="check substring failed (missing &quot;x&quot; &amp; &lt;y&gt;); judge score 2 is below the pass threshold 4" type="not_passed"');
    expect(xml).toContain('<error message="JUDGE_FAILED: OUTPUT_INVALID &lt;twice&gt;" type="JUDGE_FAILED">');
    expect(xml).toContain('judge reasoning:\nbad\uFFFD ]]&gt; "quoted"');

    // A run that did not complete is an error of its own, so CI never shows it green.
    const failed = buildJUnitReport({ run: { ...run, status: 'failed', error: { code: 'LLM_PROVIDER_ERROR', message: 'down' } }, results: [] });
    expectWellFormedXml(failed);
    expect(failed).toContain('tests="1" failures="0" errors="1" skipped="0"');
    expect(failed).toContain('<error message="the run is failed: LLM_PROVIDER_ERROR: down" type="RUN_FAILED">');
  });

  it('parses thresholds and names the one a run misses', () => {
    expect(parsePassRate('0.9')).toBe(0.9);
    expect(parsePassRate(' 90% ')).toBeCloseTo(0.9, 12);
    expect(parsePassRate('1')).toBe(1);
    expect(() => parsePassRate('1.5')).toThrow('Must be between 0 and 1');
    expect(() => parsePassRate('%')).toThrow('Not a number');
    expect(() => parsePassRate('lots')).toThrow('Not a number');
    expect(parseMinScore('4')).toBe(4);
    expect(() => parseMinScore('6')).toThrow('Must be between 1 and 5');

    expect(thresholdFailures(run, {})).toEqual([]);
    expect(thresholdFailures(run, { minPassRate: 0.3, minScore: 3.5 })).toEqual([]);
    expect(thresholdFailures(run, { minPassRate: 0.5, minScore: 4 })).toEqual(['pass rate 33.3% (1/3) is below --min-pass-rate 50.0%', 'mean score 3.50 is below --min-score 4']);
    expect(thresholdFailures({ ...run, status: 'cancelled' }, {})).toEqual(['the run is cancelled']);
    expect(thresholdFailures({ ...run, cases_total: 0, cases_passed: 0, mean_score: null }, { minPassRate: 0, minScore: 1 })).toEqual([
      '--min-pass-rate 0.0%: the run has no cases',
      '--min-score 1: no case was scored',
    ]);
    expect(progressLine({ ...run, status: 'running', stage: 'case 2/3', progress: 66.6, cases_done: 2 })).toBe(
      'running · case 2/3 · 67% · 2/3 cases · 1 passed · 1 errored · mean 3.50 · judge $0.000120',
    );
  });
});

describe('liya evals run', () => {
  it('follows the run to a summary; exit 0 when the thresholds hold, 1 naming the threshold missed; --junit, --json', async () => {
    const junit = path.join(tmp, 'reports', 'junit.xml');
    const [lenient, strict, json] = await Promise.all([
      liya(['evals', 'run', SUITE_NAME, '--min-pass-rate', '0.5', '--min-score', '4', '--junit', junit]),
      liya(['evals', 'run', suiteId, '--min-pass-rate', '1', '--min-score', '4.5']),
      liya(['evals', 'run', suiteId, '--json', '--min-pass-rate', '70%']),
    ]);

    // Three of four cases pass (LOW scores 2 under the threshold 4); mean (5 + 5 + 2 + 5) / 4.
    expect(lenient.code, lenient.stderr).toBe(0);
    expect(lenient.stderr).toBe('');
    const runId = lineOf(lenient.stdout, 'Run')?.[1];
    expect(runId).toMatch(new RegExp(`^${UUID}$`));
    const run = await readRun(runId!);
    expect(run).toMatchObject({ status: 'completed', suite_id: suiteId, cases_total: 4, cases_passed: 3, cases_errored: 0 });
    expect(run.mean_score).toBeCloseTo(4.25, 10);
    // Non-interactive: a line per change, ending with the completed run.
    expect(lenient.stdout).toMatch(/^completed · 100% · 4\/4 cases · 3 passed · mean 4\.25 · judge \$[\d.]+$/m);
    expect(lineOf(lenient.stdout, 'Status')?.[1]).toBe('completed');
    expect(lineOf(lenient.stdout, 'Suite')?.[1]).toBe(`${SUITE_NAME} (${suiteId})`);
    expect(lineOf(lenient.stdout, 'Cases')?.[1]).toBe('3/4 passed · 0 errored');
    expect(lineOf(lenient.stdout, 'Pass rate')?.[1]).toBe('75.0% (a case passes when its check passes and its score is at least 4)');
    expect(lineOf(lenient.stdout, 'Mean score')?.[1]).toBe('4.25 / 5');
    expect(lineOf(lenient.stdout, 'Judge')?.[1]).toMatch(/^gpt-4o-mini · 4 calls · 0 failures · \$\d/);
    expect(lineOf(lenient.stdout, 'Judge cap reached')?.[1]).toBe('no');
    expect(lineOf(lenient.stdout, 'Duration')?.[1]).toMatch(/^\d+\.\d s$/);
    expect(lineOf(lenient.stdout, 'correctness')).toEqual(['correctness', '4.25']);
    expect(lineOf(lenient.stdout, 'relevance')).toEqual(['relevance', '5.00']);
    expect(lenient.stdout).toContain(`✔ Eval run ${runId} completed: 3/4 passed (75.0%), mean score 4.25`);

    const xml = await readFile(junit, 'utf8');
    expectWellFormedXml(xml);
    expect(count(xml, '<testcase ')).toBe(4);
    expect(count(xml, '<failure ')).toBe(1);
    expect(count(xml, '<error ')).toBe(0);
    expect(count(xml, '<skipped')).toBe(0);
    expect(xml).toContain(`<testsuite name="${SUITE_NAME} (run ${runId})" tests="4" failures="1" errors="0" skipped="0"`);
    caseIds.forEach((id, i) => expect(xml).toContain(`<testcase name="position ${i} · case ${id}" classname="liya.evals.hiring.${INTENT}"`));
    const lowCase = xml.slice(xml.indexOf(`case ${caseIds[2]}"`));
    expect(lowCase.slice(0, lowCase.indexOf('</testcase>'))).toContain('<failure message="judge score 2 is below the pass threshold 4" type="not_passed">');
    expect(xml).toContain('judge reasoning:\nscored 2 &lt;b&gt;&amp;amp&lt;/b&gt;');

    // The same run, with thresholds it misses: exit 1, each failed threshold named.
    expect(strict.code, strict.stderr).toBe(1);
    expect(lineOf(strict.stdout, 'Pass rate')?.[1]).toMatch(/^75\.0%/);
    expect(strict.stderr).toMatch(new RegExp(`✖ Eval run ${UUID} did not meet the thresholds`));
    expect(strict.stderr).toContain('• pass rate 75.0% (3/4) is below --min-pass-rate 100.0%');
    expect(strict.stderr).toContain('• mean score 4.25 is below --min-score 4.5');

    // --json: the final run only, as the API reads it now.
    expect(json.code, json.stderr).toBe(0);
    expect(json.stderr).toBe('');
    const printed = JSON.parse(json.stdout) as EvalRun;
    expect(printed).toMatchObject({ status: 'completed', suite_id: suiteId, cases_total: 4, cases_passed: 3 });
    expect(printed).toEqual(await readRun(printed.id));
  });

  it('--max-wait: exit 1 while the run goes on; --json still prints the run as last seen', async () => {
    fake.setLatency(1500);
    try {
      const res = await liya(['evals', 'run', suiteId, '--json', '--max-wait', '1']);
      expect(res.code, res.stderr).toBe(1);
      const printed = JSON.parse(res.stdout) as EvalRun;
      expect(printed).toMatchObject({ suite_id: suiteId, cases_total: 4 });
      expect(['pending', 'running']).toContain(printed.status);
      expect(res.stderr).toContain(`Eval run ${printed.id} is still ${printed.status} after --max-wait; it goes on on the server`);
      expect(res.stderr).toContain('Wait longer with --max-wait <seconds>.');
      fake.setLatency(0);
      const ended = await waitFor(async () => {
        const run = await readRun(printed.id);
        return run.status === 'completed' ? run : null;
      }, 'the run to complete on the server', 30_000);
      expect(ended.cases_done).toBe(4);
    } finally {
      fake.setLatency(0);
    }
  });

  // Suite names are unique in a tenant (the server refuses a second one), so a name is never ambiguous.
  it('usage errors (exit 2): a bad threshold, an unknown suite name, no key', async () => {
    const runCount = async () => (await t.api.get('/v1/evals/runs?pageSize=1', key())).body.data.pagination.total as number;
    const before = await runCount();
    const [badRate, badScore, unknown, noKey] = await Promise.all([
      liya(['evals', 'run', suiteId, '--min-pass-rate', '2']),
      liya(['evals', 'run', suiteId, '--min-score', 'high']),
      liya(['evals', 'run', 'No such suite']),
      liya(['evals', 'run', suiteId], { env: { LIYA_API_KEY: undefined } }),
    ]);
    expect(badRate.code).toBe(2);
    expect(badRate.stderr).toContain("option '--min-pass-rate <rate>' argument '2' is invalid. Must be between 0 and 1 (or 0% and 100%).");
    expect(badScore.code).toBe(2);
    expect(badScore.stderr).toContain('Not a number.');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('✖ The tenant has no suite "No such suite"');
    expect(unknown.stderr).toContain(SUITE_NAME);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('This command needs a tenant API key');
    // Nothing was started by any of them.
    expect(await runCount()).toBe(before);
  });

  it('a plan without evaluations: exit 1 with the code and what to do', async () => {
    const c = await signupTenant(t.api, { companyName: 'CLI Evals Free' });
    const freeSuite = await createSuite(c, 'Free suite', [{ input: caseInput('F') }]);
    await t.sql(`update tenants set plan = 'free' where id = $1`, [c.tenantId]);
    const res = await liya(['evals', 'run', freeSuite], { env: { LIYA_API_KEY: c.apiKey } });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('✖ EVALS_NOT_AVAILABLE (HTTP 429)');
    expect(res.stderr).toContain("Evaluations are not part of the tenant's free plan");
  });

  it('Ctrl-C stops following; the run goes on on the server', async () => {
    fake.setLatency(300);
    const cli = liya(['evals', 'run', suiteId]);
    let stderr = '';
    cli.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((resolve) => cli.child.on('close', resolve));
    await liyaOutputUntil(cli, ' cases · ');
    cli.child.kill('SIGINT');
    expect(await closed).toBe(1);
    const id = new RegExp(`Stopped watching: eval run (${UUID}) goes on on the server`).exec(stderr)?.[1];
    expect(id, stderr).toBeDefined();
    expect(stderr).toContain(`Stop it: POST /v1/evals/runs/${id}/cancel`);
    const ended = await waitFor(async () => {
      const run = await readRun(id!);
      return run.status === 'completed' ? run : null;
    }, 'the run to complete without the CLI', 30_000);
    expect(ended.cases_done).toBe(4);
  });
});

/** Resolves once the CLI has printed `text` (the CLI keeps running). */
async function liyaOutputUntil(cli: ReturnType<typeof liya>, text: string): Promise<void> {
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const check = (d: Buffer) => {
      out += d.toString();
      if (out.includes(text)) resolve();
    };
    cli.child.stdout!.on('data', check);
    cli.child.stderr!.on('data', check);
    cli.child.on('close', () => reject(new Error(`the CLI ended before printing "${text}": ${out}`)));
  });
}

describe('liya evals compare, report, runs, suites', () => {
  let before: EvalRun;
  let after: EvalRun;

  beforeAll(async () => {
    fake.reset();
    scriptJudge(2);
    before = await apiRun();
    scriptJudge(4);
    after = await apiRun();
    expect(before.status).toBe('completed');
    expect(after).toMatchObject({ status: 'completed', cases_passed: 4 });
  }, 120_000);

  it('compare prints the statistics from the API: overall, then one row per dimension', async () => {
    const api = (await t.api.get(`/v1/evals/runs/${after.id}/compare?against=${before.id}`, key())).body.data as EvalComparison;
    // LOW moved from 2 to 4; the three other cases tie.
    expect(api).toMatchObject({ n_shared: 4, mean_diff: 0.5, wins: 1, losses: 0, ties: 3, pass_rate_diff: 0.25 });
    const [text, json, unknown] = await Promise.all([
      liya(['evals', 'compare', after.id, '--against', before.id]),
      liya(['evals', 'compare', after.id, '--against', before.id, '--json']),
      liya(['evals', 'compare', after.id, '--against', '00000000-0000-4000-8000-000000000000']),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Run ${after.id} vs ${before.id} (this run minus the other)`);
    expect(lineOf(text.stdout, 'Shared cases')?.[1]).toBe('4 (scored in both runs)');
    expect(lineOf(text.stdout, 'Mean diff')?.slice(1)).toEqual([formatDiff(api.mean_diff), `95% CI ${formatCi(api.ci95)}`]);
    expect(formatDiff(api.mean_diff)).toBe('+0.50');
    expect(lineOf(text.stdout, 'p-value')?.slice(1)).toEqual([formatPValue(api.p_value), `(${api.test}${api.p_value_method ? `, ${api.p_value_method}` : ''})`]);
    expect(lineOf(text.stdout, 'Wins/losses/ties')?.[1]).toBe('1 / 0 / 3');
    expect(lineOf(text.stdout, 'Pass-rate diff')?.[1]).toBe(formatPoints(api.pass_rate_diff));
    expect(formatPoints(api.pass_rate_diff)).toBe('+25.0 pp');
    const rows = comparisonRows(api);
    expect(rows.map((r) => r[0])).toEqual(['correctness', 'completeness', 'relevance', 'safety']);
    for (const row of rows) expect(lineOf(text.stdout, row[0])).toEqual(row);
    expect(lineOf(text.stdout, 'correctness')?.slice(1, 3)).toEqual(['4', '+0.50']);
    expect(lineOf(text.stdout, 'relevance')?.slice(1, 3)).toEqual(['4', '0.00']);

    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(api);

    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/✖ INVALID_INPUT \(HTTP 400\)/);
    expect(unknown.stderr).toContain('--against: no run 00000000-0000-4000-8000-000000000000');
  });

  it('report --html writes one self-contained page with the charts, every case and escaped data', async () => {
    const file = path.join(tmp, 'report.html');
    const plainFile = path.join(tmp, 'plain.html');
    const [res, plain] = await Promise.all([
      liya(['evals', 'report', after.id, '--against', before.id, '--html', file]),
      liya(['evals', 'report', before.id, '--html', plainFile]),
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`✔ Wrote ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: eval run ${SUITE_NAME}, 4 cases, compared with ${before.id} \\(\\d+ KB\\)`));
    const html = await readFile(file, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toMatch(/<svg class="chart" id="score-histogram"[^>]*>/);
    expect(html).toMatch(/<svg class="chart" id="dimension-means"[^>]*>/);
    // after: 5, 5, 4, 5.
    expect([...html.matchAll(/data-score="(\d)" data-count="(\d+)"/g)].map((m) => Number(m[2]))).toEqual([0, 0, 0, 1, 3]);
    // Error bars for the overall score and the four dimensions, from the comparison.
    expect(count(html, 'class="error-bar"')).toBe(5);
    expect(count(html, '<tr class="case ')).toBe(4);
    caseIds.forEach((id, i) => expect(html).toContain(`id="case-${i}" data-case-id="${id}"`));
    expect(html).toContain('scored 4 &lt;b&gt;&amp;amp&lt;/b&gt;');
    // Self-contained: no external asset of any kind, no script at all.
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script|<link\b|\bsrc=|url\(/i);
    expect(html).toContain('&lt;script&gt;alert(\\&quot;pwned\\&quot;)&lt;/script&gt;');
    expect(html).toContain('<details><summary>input</summary>');

    expect(plain.code, plain.stderr).toBe(0);
    const plainHtml = await readFile(plainFile, 'utf8');
    expect(plainHtml).not.toContain('class="error-bar"');
    expect(plainHtml).not.toContain('id="comparison"');
    expect([...plainHtml.matchAll(/data-score="(\d)" data-count="(\d+)"/g)].map((m) => Number(m[2]))).toEqual([0, 1, 0, 0, 3]);
  });

  it('runs lists a suite\'s runs newest first; suites lists the suites', async () => {
    const [runs, suites] = await Promise.all([liya(['evals', 'runs', SUITE_NAME, '--limit', '2']), liya(['evals', 'suites'])]);
    expect(runs.code, runs.stderr).toBe(0);
    const rows = runs.stdout.split('\n').filter((l) => new RegExp(`^${UUID} `).test(l));
    expect(rows.map((l) => l.slice(0, 36))).toEqual([after.id, before.id]);
    expect(rows[0].split(/ {2,}/).slice(1, 5)).toEqual(['completed', '4/4', '100.0%', '4.75']);
    expect(runs.stdout).toContain(`Compare the newest two: liya evals compare ${after.id} --against ${before.id}`);
    expect(suites.code, suites.stderr).toBe(0);
    expect(suites.stdout.split('\n').find((l) => l.startsWith(suiteId))?.split(/ {2,}/)).toEqual([suiteId, SUITE_NAME, `hiring/${INTENT}`, '4', '—']);
  });
});
