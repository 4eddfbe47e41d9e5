// Eval dataset and suite names are unique per tenant (case-sensitive, after trimming), as the
// project document keys them by name: creates and renames into a taken name are 409, concurrent
// creates cannot both win (a unique index decides), a template clone takes a free "(copy)" name, the
// tenant's export plans back as no change, and the migration renames duplicates stored before it.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { applyMigrations, ensureDatabase, openOrm } from '../../db/orm.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let a: SignedUpTenant;
let b: SignedUpTenant;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const cases = [{ input: { user_id: 'u1', resume_text: 'Resume: eight years of Go and PostgreSQL.' } }];

async function createDataset(owner: SignedUpTenant, name: string) {
  const res = await t.api.post('/v1/evals/datasets', { name, cases }, key(owner));
  expect(res.status, res.text).toBe(201);
  return res.body.data.dataset as { id: string; name: string };
}

async function createSuite(owner: SignedUpTenant, name: string, datasetId: string) {
  const res = await t.api.post('/v1/evals/suites', { name, domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: datasetId }, key(owner));
  expect(res.status, res.text).toBe(201);
  return res.body.data.suite as { id: string; name: string };
}

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Unique names A' });
  b = await signupTenant(t.api, { companyName: 'Unique names B' });
});
afterAll(() => t?.close());

describe('dataset names', () => {
  it('a second create with a taken name is 409 DATASET_NAME_TAKEN; case and other tenants make other names', async () => {
    await createDataset(a, 'Screening set');
    const again = await t.api.post('/v1/evals/datasets', { name: 'Screening set', cases }, key(a));
    const error = expectError(again, 409, 'DATASET_NAME_TAKEN');
    expect(error.details).toEqual({ name: 'Screening set' });
    // The schema trims names, so surrounding spaces name the same dataset.
    expectError(await t.api.post('/v1/evals/datasets', { name: '  Screening set ' }, key(a)), 409, 'DATASET_NAME_TAKEN');
    await createDataset(a, 'screening set');
    await createDataset(b, 'Screening set');
    const names = (await t.api.get('/v1/evals/datasets?pageSize=100', key(a))).body.data.datasets.map((d: { name: string }) => d.name);
    expect(names.filter((n: string) => n === 'Screening set')).toHaveLength(1);
  });

  it('renaming into a taken name is 409 and changes nothing; keeping its own name is fine', async () => {
    await createDataset(a, 'Taken name');
    const mine = await createDataset(a, 'Mine');
    const res = await t.api.patch(`/v1/evals/datasets/${mine.id}`, { name: 'Taken name', description: 'changed' }, key(a));
    expectError(res, 409, 'DATASET_NAME_TAKEN');
    expect((await t.api.get(`/v1/evals/datasets/${mine.id}`, key(a))).body.data.dataset).toMatchObject({ name: 'Mine', description: null });
    const same = await t.api.patch(`/v1/evals/datasets/${mine.id}`, { name: 'Mine', description: 'kept' }, key(a));
    expect(same.status, same.text).toBe(200);
    expect(same.body.data.dataset).toMatchObject({ name: 'Mine', description: 'kept' });
  });

  it('concurrent creates of one name: exactly one wins', async () => {
    const sent = await Promise.all(Array.from({ length: 6 }, () => t.api.post('/v1/evals/datasets', { name: 'Raced', cases }, key(a))));
    expect(sent.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    for (const r of sent.filter((x) => x.status === 409)) expectError(r, 409, 'DATASET_NAME_TAKEN');
    const rows = await t.sql<{ n: number }>('select count(*)::int as n from eval_datasets where tenant_id = $1 and name = $2', [a.tenantId, 'Raced']);
    expect(rows[0].n).toBe(1);
    // The losers left no cases behind.
    const orphans = await t.sql<{ n: number }>('select count(*)::int as n from eval_cases where tenant_id = $1 and dataset_id is null', [a.tenantId]);
    expect(orphans[0].n).toBe(0);
  });

  it('a template clone takes the template name, then "(copy)", "(copy 2)", ...', async () => {
    const c = await signupTenant(t.api, { companyName: 'Unique names clones' });
    const template = (await t.api.get('/v1/evals/datasets/templates', key(c))).body.data.templates[0] as { id: string; name: string; cases_count: number };
    const names: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await t.api.post(`/v1/evals/datasets/templates/${template.id}/clone`, undefined, key(c));
      expect(res.status, res.text).toBe(201);
      expect(res.body.data.dataset.cases_count).toBe(template.cases_count);
      names.push(res.body.data.dataset.name);
    }
    expect(names).toEqual([template.name, `${template.name} (copy)`, `${template.name} (copy 2)`, `${template.name} (copy 3)`]);
    // A freed name is taken again first.
    const listed = (await t.api.get('/v1/evals/datasets?pageSize=100', key(c))).body.data.datasets as { id: string; name: string }[];
    expect((await t.api.delete(`/v1/evals/datasets/${listed.find((d) => d.name === `${template.name} (copy)`)!.id}`, key(c))).status).toBe(200);
    const again = await t.api.post(`/v1/evals/datasets/templates/${template.id}/clone`, undefined, key(c));
    expect(again.body.data.dataset.name).toBe(`${template.name} (copy)`);
  });
});

describe('suite names', () => {
  it('a second create with a taken name is 409 SUITE_NAME_TAKEN; renaming into a taken name too', async () => {
    const ds = await createDataset(a, 'Suite data');
    await createSuite(a, 'Resume quality', ds.id);
    const again = await t.api.post('/v1/evals/suites', { name: 'Resume quality ', domain_key: 'hiring', intent_key: 'job-match', dataset_id: ds.id }, key(a));
    const error = expectError(again, 409, 'SUITE_NAME_TAKEN');
    expect(error.details).toEqual({ name: 'Resume quality' });

    const other = await createSuite(a, 'Other suite', ds.id);
    const renamed = await t.api.patch(`/v1/evals/suites/${other.id}`, { name: 'Resume quality', judge_rubric: 'changed' }, key(a));
    expectError(renamed, 409, 'SUITE_NAME_TAKEN');
    expect((await t.api.get(`/v1/evals/suites/${other.id}`, key(a))).body.data.suite).toMatchObject({ name: 'Other suite', judge_rubric: null });
    expect((await t.api.patch(`/v1/evals/suites/${other.id}`, { name: 'Other suite' }, key(a))).status).toBe(200);
    await createSuite(b, 'Resume quality', (await createDataset(b, 'Suite data')).id);
  });

  it('concurrent creates of one name: exactly one wins', async () => {
    const ds = await createDataset(a, 'Raced suite data');
    const body = { name: 'Raced suite', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: ds.id };
    const sent = await Promise.all(Array.from({ length: 6 }, () => t.api.post('/v1/evals/suites', body, key(a))));
    expect(sent.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });
});

describe('the export plans back', () => {
  it("the tenant's own export (datasets and suites keyed by name) plans as no change", async () => {
    const c = await signupTenant(t.api, { companyName: 'Unique names export' });
    const first = await createDataset(c, 'Cases');
    const second = await createDataset(c, 'More cases');
    await createSuite(c, 'Quality', first.id);
    await createSuite(c, 'Quality on more', second.id);
    // The names a rejected duplicate would have doubled.
    expect((await t.api.post('/v1/evals/datasets', { name: 'Cases' }, key(c))).status).toBe(409);
    expect((await t.api.post('/v1/evals/suites', { name: 'Quality', domain_key: 'hiring', intent_key: 'resume-analysis', dataset_id: second.id }, key(c))).status).toBe(409);

    const exported = await t.api.get('/v1/project', key(c));
    expect(exported.status, exported.text).toBe(200);
    const project = exported.body.data.project;
    expect(project.eval_datasets.map((d: { key: string }) => d.key)).toEqual(['Cases', 'More cases']);
    expect(project.eval_suites.map((s: { key: string }) => s.key)).toEqual(['Quality', 'Quality on more']);
    const plan = await t.api.post('/v1/project/plan', { project }, key(c));
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.data.plan.changes).toEqual([]);
  });
});

describe('the migration', () => {
  const adminUrl = inject('pgAdminUrl');
  const database = `liya_un_${randomBytes(6).toString('hex')}`;
  // The last migration before names became unique.
  const BEFORE = 'Migration20261126180000_session_messages_tenant';

  afterAll(async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`drop database if exists ${database} with (force)`);
    await client.end();
  });

  it('renames the duplicates stored before it by age (" (2)", " (3)", past names in use), then applies', async () => {
    await ensureDatabase(adminUrl, database);
    const u = new URL(adminUrl);
    u.pathname = `/${database}`;
    const orm = await openOrm({ url: u.toString(), poolMax: 2, quiet: true });
    const client = new pg.Client({ connectionString: u.toString() });
    try {
      await orm.migrator.up({ to: BEFORE });
      await client.connect();
      const tenant = async (name: string) => (await client.query<{ id: string }>(`insert into tenants (name, created_at, updated_at) values ($1, now(), now()) returning id`, [name])).rows[0].id;
      const [x, y] = [await tenant('X'), await tenant('Y')];
      const dataset = async (tenantId: string, name: string, minutesAgo: number) =>
        (
          await client.query<{ id: string }>(
            `insert into eval_datasets (tenant_id, name, created_at, updated_at) values ($1, $2, now() - make_interval(mins => $3), now()) returning id`,
            [tenantId, name, minutesAgo],
          )
        ).rows[0].id;
      const long = 'L'.repeat(200);
      const ids = {
        oldest: await dataset(x, 'Set', 30),
        middle: await dataset(x, 'Set', 20),
        newest: await dataset(x, 'Set', 10),
        inUse: await dataset(x, 'Set (2)', 40),
        otherTenant: await dataset(y, 'Set', 5),
        longFirst: await dataset(x, long, 9),
        longSecond: await dataset(x, long, 8),
      };
      const suite = async (name: string, minutesAgo: number) =>
        (
          await client.query<{ id: string }>(
            `insert into eval_suites (tenant_id, name, domain_key, intent_key, dataset_id, created_at, updated_at) values ($1, $2, 'hiring', 'resume-analysis', $3, now() - make_interval(mins => $4), now()) returning id`,
            [x, name, ids.oldest, minutesAgo],
          )
        ).rows[0].id;
      const suites = { first: await suite('Quality', 3), second: await suite('Quality', 2) };

      await applyMigrations(orm);

      const nameOf = async (table: string, id: string) => (await client.query<{ name: string }>(`select name from ${table} where id = $1`, [id])).rows[0].name;
      expect(await nameOf('eval_datasets', ids.oldest)).toBe('Set');
      expect(await nameOf('eval_datasets', ids.inUse)).toBe('Set (2)');
      expect(await nameOf('eval_datasets', ids.middle)).toBe('Set (3)');
      expect(await nameOf('eval_datasets', ids.newest)).toBe('Set (4)');
      expect(await nameOf('eval_datasets', ids.otherTenant)).toBe('Set');
      expect(await nameOf('eval_datasets', ids.longFirst)).toBe(long);
      expect(await nameOf('eval_datasets', ids.longSecond)).toBe(`${'L'.repeat(196)} (2)`);
      expect(await nameOf('eval_suites', suites.first)).toBe('Quality');
      expect(await nameOf('eval_suites', suites.second)).toBe('Quality (2)');
      // The unique index holds from now on.
      await expect(dataset(x, 'Set', 1)).rejects.toMatchObject({ code: '23505' });
    } finally {
      await client.end();
      await orm.close(true);
    }
  });
});
