// The scorer webhook secret has no format in the specification: any secret of 8 to 500 characters
// without control characters is taken. A `whsec_` secret (Standard Webhooks) signs with its
// base64-decoded bytes; any other secret signs with its UTF-8 bytes. A receiver verifies each.
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { schemaNameOf, startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

const PLAIN_SECRET = 'top-secret-value-123';
const WHSEC_SECRET = `whsec_${Buffer.from('scorer-secret-0123456789abcdef').toString('base64')}`;

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let scorer: http.Server;
let scorerUrl: string;
let datasetId: string;
let named = 0;
/** What the receiver got: the headers, the raw body and which secrets its signature verifies with. */
const received: { plain: boolean; whsec: boolean; body: { run_id: string } }[] = [];

const key = () => ({ headers: bearer(a.apiKey) });

/** Standard Webhooks v1 verification with a plain secret: HMAC-SHA256 keyed with its UTF-8 bytes over `id.timestamp.body`. */
function verifiesWithPlainSecret(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const id = String(headers['webhook-id'] ?? '');
  const timestamp = String(headers['webhook-timestamp'] ?? '');
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${id}.${timestamp}.${body}`).digest('base64');
  return String(headers['webhook-signature'] ?? '')
    .split(' ')
    .some((entry) => {
      const [version, signature] = entry.split(',');
      return version === 'v1' && signature !== undefined && signature.length === expected.length && timingSafeEqual(Buffer.from(signature), Buffer.from(expected));
    });
}

function verifiesWithWhsec(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

const suiteBody = (extra: Record<string, unknown>) => ({ name: `Scored ${++named}`, domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: datasetId, ...extra });

async function runToEnd(suiteId: string) {
  const started = await t.api.post(`/v1/evals/suites/${suiteId}/run`, {}, key());
  expect(started.status, started.text).toBe(202);
  const runId = started.body.data.run.id as string;
  await waitFor(async () => {
    const run = (await t.api.get(`/v1/evals/runs/${runId}`, key())).body.data.run;
    return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : null;
  }, `eval run ${runId} to end`, 30_000);
  return { runId, results: (await t.api.get(`/v1/evals/runs/${runId}/results`, key())).body.data.results };
}

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'Scorer secrets' });
  scorer = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      received.push({ plain: verifiesWithPlainSecret(PLAIN_SECRET, req.headers, text), whsec: verifiesWithWhsec(WHSEC_SECRET, req.headers, text), body: JSON.parse(text) });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ score: 0.5 }));
    });
  });
  await new Promise<void>((resolve) => scorer.listen(0, '127.0.0.1', resolve));
  scorerUrl = `http://127.0.0.1:${(scorer.address() as AddressInfo).port}/score`;
  const ds = await t.api.post('/v1/evals/datasets', { name: 'Scored cases', cases: [{ input: { user_id: 'u1', resume_text: 'Resume: ten years of Go and PostgreSQL.' } }] }, key());
  expect(ds.status, ds.text).toBe(201);
  datasetId = ds.body.data.dataset.id;
});
beforeEach(() => {
  fake.reset();
  fake.script((req) =>
    schemaNameOf(req) === 'eval_judge' ? { content: { score: 5, dimension_scores: { correctness: 5, completeness: 5, relevance: 5, safety: 5 }, reasoning: 'fine' } } : undefined,
  );
});
afterAll(async () => {
  await new Promise((resolve) => scorer?.close(resolve));
  await t?.close();
  await fake?.close();
});

describe('signing', () => {
  it('a plain secret is accepted and signs with its UTF-8 bytes', async () => {
    const created = await t.api.post('/v1/evals/suites', suiteBody({ custom_scorer_webhook_url: scorerUrl, custom_scorer_webhook_secret: PLAIN_SECRET }), key());
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.suite.custom_scorer_webhook_secret_set).toBe(true);
    expect(created.text).not.toContain(PLAIN_SECRET);

    const { runId, results } = await runToEnd(created.body.data.suite.id);
    expect(results[0]).toMatchObject({ status: 'scored', custom_score: 0.5, error: null });
    const delivery = received.find((r) => r.body.run_id === runId)!;
    expect(delivery).toMatchObject({ plain: true, whsec: false });
  });

  it('a whsec_ secret still signs with its base64-decoded bytes', async () => {
    const created = await t.api.post('/v1/evals/suites', suiteBody({ custom_scorer_webhook_url: scorerUrl, custom_scorer_webhook_secret: WHSEC_SECRET }), key());
    expect(created.status, created.text).toBe(201);
    const { runId, results } = await runToEnd(created.body.data.suite.id);
    expect(results[0]).toMatchObject({ status: 'scored', custom_score: 0.5, error: null });
    expect(received.find((r) => r.body.run_id === runId)).toMatchObject({ plain: false, whsec: true });
  });

  it('a secret changed by PATCH signs the next run', async () => {
    const created = await t.api.post('/v1/evals/suites', suiteBody({ custom_scorer_webhook_url: scorerUrl, custom_scorer_webhook_secret: WHSEC_SECRET }), key());
    expect(created.status, created.text).toBe(201);
    const patched = await t.api.patch(`/v1/evals/suites/${created.body.data.suite.id}`, { custom_scorer_webhook_secret: PLAIN_SECRET }, key());
    expect(patched.status, patched.text).toBe(200);
    const { runId } = await runToEnd(created.body.data.suite.id);
    expect(received.find((r) => r.body.run_id === runId)).toMatchObject({ plain: true, whsec: false });
  });
});

describe('what is accepted', () => {
  it('8 to 500 characters without control characters; a whsec_ secret must be base64 of at least 8 bytes', async () => {
    const accepted = ['8 chars!', PLAIN_SECRET, 'pässwörd-ünïcode', 'x'.repeat(500), 'WHSEC_not-base64-is-plain', `whsec_${Buffer.alloc(8, 1).toString('base64')}`, Buffer.alloc(32, 7).toString('base64')];
    for (const secret of accepted) {
      const res = await t.api.post('/v1/evals/suites', suiteBody({ custom_scorer_webhook_url: scorerUrl, custom_scorer_webhook_secret: secret }), key());
      expect(res.status, `${secret}: ${res.text}`).toBe(201);
    }
    const refused = ['7 chars', 'x'.repeat(501), 'line\nbreak-secret', 'tab\tseparated-secret', 'bell\u0007-secret', `whsec_${Buffer.alloc(32, 7).toString('base64')}!`, 'whsec_not base64', `whsec_${Buffer.alloc(7, 1).toString('base64')}`];
    for (const secret of refused) {
      const res = await t.api.post('/v1/evals/suites', suiteBody({ custom_scorer_webhook_url: scorerUrl, custom_scorer_webhook_secret: secret }), key());
      const error = expectError(res, 400, 'INVALID_INPUT');
      expect(error.details.issues.map((i: { path: string }) => i.path), secret).toEqual(['custom_scorer_webhook_secret']);
      expect(res.text).not.toContain(secret);
    }
  });
});
