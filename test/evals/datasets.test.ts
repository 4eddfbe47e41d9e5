// Evaluation datasets, cases, starter templates and suites over HTTP: shapes, all-or-nothing
// import naming the failing cases, route order (templates is not a dataset id), the suite's checks
// (intent and dataset exist, at most one custom scorer, a write-only webhook secret) and tenancy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const input = (n: number) => ({ user_id: `u${n}`, resume_text: `Resume number ${n}: eight years of Go and PostgreSQL.` });

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Evals A' });
  b = await signupTenant(t.api, { companyName: 'Evals B' });
});
afterAll(async () => {
  await t?.close();
});

// Dataset and suite names are unique in a tenant.
let named = 0;

async function dataset(owner = a, cases: unknown[] = [{ input: input(1) }]) {
  const res = await t.api.post('/v1/evals/datasets', { name: `Resumes ${++named}`, description: 'three resumes', cases }, key(owner));
  expect(res.status, res.text).toBe(201);
  return res.body.data.dataset as { id: string; cases_count: number };
}

describe('datasets and cases', () => {
  it('create answers the light shape with cases_count; the single read has every case in order; list is light too', async () => {
    const res = await t.api.post(
      '/v1/evals/datasets',
      {
        name: 'Screening set',
        cases: [
          { input: input(1), expected_output: 'Go' },
          { input: input(2), expected_output: { recommendation: 'advance' }, notes: 'strong' },
          { input: input(3), message: 'Hello', expected_output: null },
        ],
      },
      key(a),
    );
    expect(res.status, res.text).toBe(201);
    const created = res.body.data.dataset;
    expect(created).toMatchObject({ name: 'Screening set', description: null, cases_count: 3, tenant_id: a.tenantId });
    expect(created.cases).toBeUndefined();

    const read = await t.api.get(`/v1/evals/datasets/${created.id}`, key(a));
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.dataset.cases.map((c: { input: { user_id: string }; expected_output: unknown; message: string | null; notes: string | null; dataset_id: string }) => [c.input.user_id, c.expected_output, c.message, c.notes, c.dataset_id])).toEqual([
      ['u1', 'Go', null, null, created.id],
      ['u2', { recommendation: 'advance' }, null, 'strong', created.id],
      ['u3', null, 'Hello', null, created.id],
    ]);

    const list = await t.api.get('/v1/evals/datasets', key(a));
    expect(list.status).toBe(200);
    const item = list.body.data.datasets.find((d: { id: string }) => d.id === created.id);
    expect(item).toMatchObject({ cases_count: 3 });
    expect(item.cases).toBeUndefined();
  });

  it('refuses bad datasets and cases with 400 naming the field', async () => {
    for (const body of [{}, { name: '' }, { name: 'x', cases: [{}] }, { name: 'x', cases: [{ input: 'text' }] }, { name: 'x', cases: [{ input: {}, expected_output: 5 }] }]) {
      const res = await t.api.post('/v1/evals/datasets', body, key(a));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
      expect(res.body.error.details.issues.length).toBeGreaterThan(0);
    }
    // Unknown fields are ignored, not stored.
    const extra = await t.api.post('/v1/evals/datasets', { name: 'x', unknown: 1, cases: [{ input: { q: 1 }, extra: 1 }] }, key(a));
    expect(extra.status, extra.text).toBe(201);
    const read = (await t.api.get(`/v1/evals/datasets/${extra.body.data.dataset.id}`, key(a))).body.data.dataset;
    expect(read.cases).toHaveLength(1);
    expect(read.cases[0].extra).toBeUndefined();
    expect(read.unknown).toBeUndefined();
  });

  it('import is all or nothing: one bad case imports none and the 400 names every failing index', async () => {
    const ds = await dataset();
    const bad = await t.api.post(`/v1/evals/datasets/${ds.id}/import`, { cases: [{ input: input(2) }, { input: 'no' }, { input: input(4) }, { nope: true }] }, key(a));
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.error.details.failed_cases).toEqual([1, 3]);
    expect(bad.body.error.details.issues.map((i: { path: string }) => i.path.split('.').slice(0, 2).join('.'))).toEqual(expect.arrayContaining(['cases.1', 'cases.3']));
    expect((await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).body.data.dataset.cases_count).toBe(1);

    const good = await t.api.post(`/v1/evals/datasets/${ds.id}/import`, { cases: [{ input: input(2) }, { input: input(3), expected_output: 'PostgreSQL' }] }, key(a));
    expect(good.status, good.text).toBe(200);
    expect(good.body.data).toEqual({ imported: 2 });
    const read = (await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).body.data.dataset;
    expect(read.cases.map((c: { input: { user_id: string } }) => c.input.user_id)).toEqual(['u1', 'u2', 'u3']);

    for (const body of [{}, { cases: [] }, { cases: 'x' }]) {
      const res = await t.api.post(`/v1/evals/datasets/${ds.id}/import`, body, key(a));
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('one case: add at the end, edit, delete; unknown ids are 404', async () => {
    const ds = await dataset();
    const added = await t.api.post(`/v1/evals/datasets/${ds.id}/cases`, { input: input(9), notes: 'added' }, key(a));
    expect(added.status, added.text).toBe(201);
    const c = added.body.data.case;
    expect(c).toMatchObject({ dataset_id: ds.id, notes: 'added', expected_output: null });

    const edited = await t.api.patch(`/v1/evals/cases/${c.id}`, { expected_output: { score: 3 }, notes: null }, key(a));
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.data.case).toMatchObject({ id: c.id, expected_output: { score: 3 }, notes: null, input: input(9) });
    expect((await t.api.patch(`/v1/evals/cases/${c.id}`, { input: [] }, key(a))).status).toBe(400);

    const read = (await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).body.data.dataset;
    expect(read.cases.map((x: { id: string }) => x.id).at(-1)).toBe(c.id);

    expect((await t.api.delete(`/v1/evals/cases/${c.id}`, key(a))).status).toBe(200);
    expect((await t.api.delete(`/v1/evals/cases/${c.id}`, key(a))).status).toBe(404);
    expect((await t.api.patch('/v1/evals/cases/not-a-uuid', { notes: 'x' }, key(a))).status).toBe(404);
    expect((await t.api.post('/v1/evals/datasets/00000000-0000-4000-8000-000000000000/cases', { input: input(1) }, key(a))).status).toBe(404);
  });

  it('parallel additions and imports to one dataset number their cases one after another', async () => {
    const ds = await dataset();
    const sent = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => t.api.post(`/v1/evals/datasets/${ds.id}/cases`, { input: input(10 + i) }, key(a))),
      ...Array.from({ length: 3 }, (_, i) => t.api.post(`/v1/evals/datasets/${ds.id}/import`, { cases: [{ input: input(20 + i) }, { input: input(30 + i) }] }, key(a))),
    ]);
    expect(sent.map((r) => r.status).sort()).toEqual([200, 200, 200, 201, 201, 201, 201, 201, 201]);
    const rows = await t.sql<{ position: number }>('select position from eval_cases where dataset_id = $1 order by position', [ds.id]);
    expect(rows.map((r) => r.position)).toEqual(Array.from({ length: 13 }, (_, i) => i));
  });

  it('rename and delete a dataset; its cases go with it', async () => {
    const ds = await dataset();
    const renamed = await t.api.patch(`/v1/evals/datasets/${ds.id}`, { name: 'Renamed', description: 'd' }, key(a));
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data.dataset).toMatchObject({ name: 'Renamed', description: 'd', cases_count: 1 });
    const caseIdOf = (await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).body.data.dataset.cases[0].id;
    expect((await t.api.delete(`/v1/evals/datasets/${ds.id}`, key(a))).status).toBe(200);
    expect((await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).status).toBe(404);
    expect((await t.api.patch(`/v1/evals/cases/${caseIdOf}`, { notes: 'x' }, key(a))).status).toBe(404);
  });

  it("another tenant's datasets and cases are 404 and never listed", async () => {
    const ds = await dataset(a);
    const caseIdOf = (await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).body.data.dataset.cases[0].id;
    expect((await t.api.get(`/v1/evals/datasets/${ds.id}`, key(b))).status).toBe(404);
    expect((await t.api.patch(`/v1/evals/datasets/${ds.id}`, { name: 'mine' }, key(b))).status).toBe(404);
    expect((await t.api.post(`/v1/evals/datasets/${ds.id}/import`, { cases: [{ input: input(1) }] }, key(b))).status).toBe(404);
    expect((await t.api.post(`/v1/evals/datasets/${ds.id}/cases`, { input: input(1) }, key(b))).status).toBe(404);
    expect((await t.api.patch(`/v1/evals/cases/${caseIdOf}`, { notes: 'x' }, key(b))).status).toBe(404);
    expect((await t.api.delete(`/v1/evals/cases/${caseIdOf}`, key(b))).status).toBe(404);
    expect((await t.api.delete(`/v1/evals/datasets/${ds.id}`, key(b))).status).toBe(404);
    const listed = (await t.api.get('/v1/evals/datasets', key(b))).body.data.datasets.map((d: { id: string }) => d.id);
    expect(listed).not.toContain(ds.id);
    expect((await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).body.data.dataset.cases_count).toBe(1);
  });

  it('needs an API key', async () => {
    expect((await t.api.get('/v1/evals/datasets')).status).toBe(401);
    expect((await t.api.post('/v1/evals/datasets', { name: 'x' })).status).toBe(401);
  });
});

describe('starter templates', () => {
  it('GET /v1/evals/datasets/templates lists them (not taken for a dataset id); clone copies one into the tenant', async () => {
    const res = await t.api.get('/v1/evals/datasets/templates', key(a));
    expect(res.status, res.text).toBe(200);
    const templates = res.body.data.templates as { id: string; domain_key: string; intent_key: string; cases_count: number; name: string }[];
    expect(templates.length).toBeGreaterThanOrEqual(4);
    expect(new Set(templates.map((x) => x.intent_key)).size).toBeGreaterThanOrEqual(4);
    for (const x of templates) {
      expect(x.domain_key).toBe('hiring');
      expect(x.cases_count).toBeGreaterThanOrEqual(10);
    }
    const first = templates[0];
    const cloned = await t.api.post(`/v1/evals/datasets/templates/${first.id}/clone`, undefined, key(a));
    expect(cloned.status, cloned.text).toBe(201);
    expect(cloned.body.data.dataset).toMatchObject({ name: first.name, cases_count: first.cases_count, tenant_id: a.tenantId });
    const read = (await t.api.get(`/v1/evals/datasets/${cloned.body.data.dataset.id}`, key(a))).body.data.dataset;
    expect(read.cases).toHaveLength(first.cases_count);
    expect(read.cases.some((c: { expected_output: unknown }) => c.expected_output !== null)).toBe(true);
    // The copy is the tenant's: editing it changes nothing shared.
    expect((await t.api.patch(`/v1/evals/cases/${read.cases[0].id}`, { notes: 'mine now' }, key(a))).status).toBe(200);
    expect((await t.api.get('/v1/evals/datasets/templates', key(b))).body.data.templates.find((x: { id: string }) => x.id === first.id).cases_count).toBe(first.cases_count);
    expect((await t.api.post('/v1/evals/datasets/templates/no-such-template/clone', undefined, key(a))).status).toBe(404);
  });
});

describe('suites', () => {
  const suiteBody = (datasetId: string, extra: Record<string, unknown> = {}) => ({ name: `Screening quality ${++named}`, domain_key: 'hiring', intent_key: 'candidate-screening', dataset_id: datasetId, ...extra });

  it('create, read, list (filtered), edit and delete; domain and intent are fixed', async () => {
    const ds = await dataset();
    const res = await t.api.post('/v1/evals/suites', suiteBody(ds.id, { judge_rubric: 'Cite evidence', pass_threshold: 3.5 }), key(a));
    expect(res.status, res.text).toBe(201);
    const suite = res.body.data.suite;
    expect(suite).toMatchObject({
      domain_key: 'hiring', intent_key: 'candidate-screening', dataset_id: ds.id, judge_rubric: 'Cite evidence', pass_threshold: 3.5,
      custom_scorer_expression: null, custom_scorer_webhook_url: null, custom_scorer_webhook_secret_set: false, baseline_run_id: null,
    });
    expect((await t.api.get(`/v1/evals/suites/${suite.id}`, key(a))).body.data.suite.id).toBe(suite.id);
    const filtered = (await t.api.get('/v1/evals/suites?domain_key=hiring&intent_key=candidate-screening', key(a))).body.data.suites.map((s: { id: string }) => s.id);
    expect(filtered).toContain(suite.id);
    expect((await t.api.get('/v1/evals/suites?intent_key=job-match', key(a))).body.data.suites.map((s: { id: string }) => s.id)).not.toContain(suite.id);

    const edited = await t.api.patch(`/v1/evals/suites/${suite.id}`, { name: 'Renamed', custom_scorer_expression: 'judge.score >= 4 && size(output) > 0', custom_scorer_label: 'strict' }, key(a));
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.data.suite).toMatchObject({ name: 'Renamed', custom_scorer_expression: 'judge.score >= 4 && size(output) > 0', custom_scorer_label: 'strict' });
    // Fields fixed at creation (and unknown ones) are not taken from a body: ignored, like everywhere.
    const fixed = await t.api.patch(`/v1/evals/suites/${suite.id}`, { intent_key: 'job-match', domain_key: 'other', id: 'x', tenant_id: 'y', unknown: 1 }, key(a));
    expect(fixed.status, fixed.text).toBe(200);
    expect(fixed.body.data.suite).toMatchObject({ id: suite.id, intent_key: suite.intent_key, domain_key: 'hiring', name: 'Renamed' });

    // A dataset a suite uses is kept.
    const inUse = await t.api.delete(`/v1/evals/datasets/${ds.id}`, key(a));
    expect(inUse.status).toBe(409);
    expect(inUse.body.error).toMatchObject({ code: 'DATASET_IN_USE', details: { suites: [{ id: suite.id, name: 'Renamed' }] } });

    expect((await t.api.delete(`/v1/evals/suites/${suite.id}`, key(a))).status).toBe(200);
    expect((await t.api.get(`/v1/evals/suites/${suite.id}`, key(a))).status).toBe(404);
    expect((await t.api.delete(`/v1/evals/datasets/${ds.id}`, key(a))).status).toBe(200);
  });

  it('a suite created while its dataset is being deleted: the delete answers 409 CONFLICT, not 500, and nothing is lost', async () => {
    const ds = await dataset();
    // The other request's suite, inserted between the delete's check and its write (a real foreign key race).
    await t.sql(`
      create or replace function test_race_suite() returns trigger language plpgsql as $$
      begin
        insert into eval_suites (id, tenant_id, name, domain_key, intent_key, dataset_id, pass_threshold, created_at, updated_at)
        values (gen_random_uuid(), old.tenant_id, 'Raced in', 'hiring', 'candidate-screening', old.id, 4, now(), now());
        return old;
      end $$;
      create trigger test_race_suite before delete on eval_datasets for each row when (old.id = '${ds.id}') execute function test_race_suite();
    `);
    try {
      const res = await t.api.delete(`/v1/evals/datasets/${ds.id}`, key(a));
      expect(res.status, res.text).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'CONFLICT', details: { retryable: true } });
      expect((await t.api.get(`/v1/evals/datasets/${ds.id}`, key(a))).status).toBe(200);
    } finally {
      await t.sql('drop trigger if exists test_race_suite on eval_datasets');
    }
  });

  it('checks the intent, the dataset and the custom scorer', async () => {
    const ds = await dataset();
    const cases: [Record<string, unknown>, string][] = [
      [suiteBody(ds.id, { intent_key: 'no-such-intent' }), 'intent_key'],
      [suiteBody(ds.id, { domain_key: 'nowhere' }), 'intent_key'],
      [suiteBody('00000000-0000-4000-8000-000000000000'), 'dataset_id'],
      [suiteBody(ds.id, { custom_scorer_expression: 'output +' }), 'custom_scorer_expression'],
      [suiteBody(ds.id, { custom_scorer_expression: 'trigger.x == 1' }), 'custom_scorer_expression'],
      [suiteBody(ds.id, { custom_scorer_expression: 'true', custom_scorer_webhook_url: 'https://scorer.example.com/score', custom_scorer_webhook_secret: 'a-secret-of-16-chars' }), 'custom_scorer_expression'],
      [suiteBody(ds.id, { custom_scorer_webhook_url: 'https://scorer.example.com/score' }), 'custom_scorer_webhook_secret'],
      [suiteBody(ds.id, { custom_scorer_webhook_url: 'ftp://scorer.example.com', custom_scorer_webhook_secret: 'a-secret-of-16-chars' }), 'custom_scorer_webhook_url'],
      [suiteBody(ds.id, { pass_threshold: 6 }), 'pass_threshold'],
      [suiteBody(ds.id, { pass_threshold: '4' }), 'pass_threshold'],
    ];
    for (const [body, field] of cases) {
      const res = await t.api.post('/v1/evals/suites', body, key(a));
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toContain(field);
    }
    // Another tenant's dataset is not one of yours.
    const foreign = await t.api.post('/v1/evals/suites', suiteBody(ds.id), key(b));
    expect(foreign.status).toBe(400);
  });

  it('the webhook scorer secret is write-only: stored, never shown, replaced or removed with the URL', async () => {
    const ds = await dataset();
    const firstSecret = `whsec_${Buffer.from('first-secret-0123456789abcdef').toString('base64')}`;
    const res = await t.api.post(
      '/v1/evals/suites',
      suiteBody(ds.id, { custom_scorer_webhook_url: 'https://scorer.example.com/score', custom_scorer_webhook_secret: firstSecret }),
      key(a),
    );
    expect(res.status, res.text).toBe(201);
    expect(res.text).not.toContain(firstSecret.slice(6));
    const id = res.body.data.suite.id;
    expect(res.body.data.suite).toMatchObject({ custom_scorer_webhook_url: 'https://scorer.example.com/score', custom_scorer_webhook_secret_set: true });
    // Moving the URL keeps the secret.
    const moved = await t.api.patch(`/v1/evals/suites/${id}`, { custom_scorer_webhook_url: 'https://scorer.example.com/v2' }, key(a));
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.suite.custom_scorer_webhook_secret_set).toBe(true);
    // Switching to an expression needs the URL removed in the same request.
    expect((await t.api.patch(`/v1/evals/suites/${id}`, { custom_scorer_expression: 'true' }, key(a))).status).toBe(400);
    const switched = await t.api.patch(`/v1/evals/suites/${id}`, { custom_scorer_expression: 'true', custom_scorer_webhook_url: null }, key(a));
    expect(switched.status, switched.text).toBe(200);
    expect(switched.body.data.suite).toMatchObject({ custom_scorer_expression: 'true', custom_scorer_webhook_url: null, custom_scorer_webhook_secret_set: false });
    for (const r of [await t.api.get(`/v1/evals/suites/${id}`, key(a)), await t.api.get('/v1/evals/suites', key(a))]) expect(r.text).not.toContain(firstSecret.slice(6));
  });

  it('the webhook scorer secret is checked on create and on update: 8-500 characters, no control characters, whsec_ + base64', async () => {
    const ds = await dataset();
    const url = 'https://scorer.example.com/score';
    const base64Of = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64');
    const refused = [
      'short',
      'two\nlines-secret',
      `whsec_${base64Of(32)}!`,
      `whsec_ ${base64Of(32)}`,
      `whsec_${base64Of(4)}`,
      `whsec_${Buffer.alloc(33, 0xfb).toString('base64url')}`,
    ];
    for (const secret of refused) {
      const res = await t.api.post('/v1/evals/suites', suiteBody(ds.id, { custom_scorer_webhook_url: url, custom_scorer_webhook_secret: secret }), key(a));
      expect(res.status, `${secret}: ${res.text}`).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['custom_scorer_webhook_secret']);
      expect(res.text).not.toContain(secret);
    }
    // No format is required: a plain secret signs with its UTF-8 bytes, a whsec_ one with its decoded bytes.
    const accepted = ['a-secret-of-16-chars', 'first-secret-0123456789', `whsec_${base64Of(24)}`, `whsec_${base64Of(64)}`, base64Of(32), `WHSEC_${base64Of(32)}`];
    let created = { id: '', name: '' };
    for (const secret of accepted) {
      const res = await t.api.post('/v1/evals/suites', suiteBody(ds.id, { custom_scorer_webhook_url: url, custom_scorer_webhook_secret: secret }), key(a));
      expect(res.status, `${secret}: ${res.text}`).toBe(201);
      created = res.body.data.suite;
    }
    // An update is checked the same way, and a refused one changes nothing.
    const bad = await t.api.patch(`/v1/evals/suites/${created.id}`, { name: 'renamed', custom_scorer_webhook_secret: 'tab\tin-the-secret' }, key(a));
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['custom_scorer_webhook_secret']);
    expect((await t.api.get(`/v1/evals/suites/${created.id}`, key(a))).body.data.suite).toMatchObject({ name: created.name, custom_scorer_webhook_secret_set: true });
    const good = await t.api.patch(`/v1/evals/suites/${created.id}`, { custom_scorer_webhook_secret: `whsec_${base64Of(48)}` }, key(a));
    expect(good.status, good.text).toBe(200);
  });

  it("another tenant's suites are 404 and never listed", async () => {
    const ds = await dataset();
    const suite = (await t.api.post('/v1/evals/suites', suiteBody(ds.id), key(a))).body.data.suite;
    expect((await t.api.get(`/v1/evals/suites/${suite.id}`, key(b))).status).toBe(404);
    expect((await t.api.patch(`/v1/evals/suites/${suite.id}`, { name: 'x' }, key(b))).status).toBe(404);
    expect((await t.api.delete(`/v1/evals/suites/${suite.id}`, key(b))).status).toBe(404);
    expect((await t.api.get('/v1/evals/suites', key(b))).body.data.suites.map((s: { id: string }) => s.id)).not.toContain(suite.id);
  });
});

describe('list paging', () => {
  type Page = { items: string[]; pagination: { total: number; limit: number; offset: number } };
  const listPage = async (path: string, field: 'datasets' | 'suites', owner: SignedUpTenant): Promise<Page> => {
    const res = await t.api.get(path, key(owner));
    expect(res.status, res.text).toBe(200);
    return { items: res.body.data[field].map((x: { id: string }) => x.id), pagination: res.body.data.pagination };
  };

  it('GET /v1/evals/datasets takes page and pageSize (default 20, at most 100) and answers pagination', async () => {
    const c = await signupTenant(t.api, { companyName: 'Evals paging datasets' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await dataset(c)).id);

    const all = await listPage('/v1/evals/datasets', 'datasets', c);
    expect(all.pagination).toEqual({ total: 3, limit: 20, offset: 0 });
    expect([...all.items].sort()).toEqual([...ids].sort());
    const first = await listPage('/v1/evals/datasets?page=1&pageSize=2', 'datasets', c);
    expect(first).toEqual({ items: all.items.slice(0, 2), pagination: { total: 3, limit: 2, offset: 0 } });
    const second = await listPage('/v1/evals/datasets?page=2&pageSize=2', 'datasets', c);
    expect(second).toEqual({ items: all.items.slice(2), pagination: { total: 3, limit: 2, offset: 2 } });
    // Past the end: no items, the total still told.
    expect(await listPage('/v1/evals/datasets?page=5&pageSize=2', 'datasets', c)).toEqual({ items: [], pagination: { total: 3, limit: 2, offset: 8 } });
    expect((await listPage('/v1/evals/datasets?pageSize=500', 'datasets', c)).pagination).toEqual({ total: 3, limit: 100, offset: 0 });
    // Newest first: the dataset created last leads.
    expect(all.items[0]).toBe(ids[2]);
    for (const query of ['page=0', 'pageSize=0', 'page=abc', 'pageSize=-1']) {
      const res = await t.api.get(`/v1/evals/datasets?${query}`, key(c));
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('INVALID_INPUT');
    }
    // Another tenant's count is its own.
    expect((await listPage('/v1/evals/datasets', 'datasets', b)).items).not.toContain(ids[0]);
  });

  it('GET /v1/evals/suites pages the same way; the total counts what the filter matches', async () => {
    const c = await signupTenant(t.api, { companyName: 'Evals paging suites' });
    const ds = await dataset(c);
    const make = async (intent_key: string) => {
      const res = await t.api.post('/v1/evals/suites', { name: `Suite ${intent_key} ${++named}`, domain_key: 'hiring', intent_key, dataset_id: ds.id }, key(c));
      expect(res.status, res.text).toBe(201);
      return res.body.data.suite.id as string;
    };
    const screening = [await make('candidate-screening'), await make('candidate-screening'), await make('candidate-screening')];
    const match = await make('job-match');

    const all = await listPage('/v1/evals/suites', 'suites', c);
    expect(all.pagination).toEqual({ total: 4, limit: 20, offset: 0 });
    expect(all.items[0]).toBe(match);
    const filtered = await listPage('/v1/evals/suites?intent_key=candidate-screening&page=1&pageSize=2', 'suites', c);
    expect(filtered.pagination).toEqual({ total: 3, limit: 2, offset: 0 });
    const rest = await listPage('/v1/evals/suites?intent_key=candidate-screening&page=2&pageSize=2', 'suites', c);
    expect(rest.pagination).toEqual({ total: 3, limit: 2, offset: 2 });
    expect([...filtered.items, ...rest.items].sort()).toEqual([...screening].sort());
    expect(filtered.items).not.toContain(match);
    expect((await listPage('/v1/evals/suites?pageSize=101', 'suites', c)).pagination.limit).toBe(100);
    expect((await t.api.get('/v1/evals/suites?page=0', key(c))).status).toBe(400);
  });
});
