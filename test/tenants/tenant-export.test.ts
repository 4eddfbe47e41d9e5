// A tenant's whole data: exported as one archive, deleted for good, imported again. A tenant with
// rows in every kind of table (intent sessions and usage, workflows with runs, steps, state, a
// waiting run and a schedule, an agent and its run, a collection with an ingested document and its
// chunks, evaluations, prompts, custom intents, named keys, users, the audit log) goes out and comes
// back byte for byte; after the deletion no table of the database holds its id; another tenant is
// untouched throughout. Damaged archives are refused and leave nothing; credentials never leave.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as contracts from '../../server/jobs/contracts.js';
import { readTenantCatalog } from '../../server/tenants/store/tenant-catalog.js';
import { JOBS_TABLE, LEFT_OUT_TABLES, PLATFORM_TABLES, PLATFORM_TASKS, TENANT_JOB_LINKS, TENANT_TASKS } from '../../server/tenants/tenant-archive.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { sampleFromSchema, schemaNameOf, startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let pool: pg.Pool;

const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const dash = (s: SignedUpTenant) => ({ headers: bearer(s.token) });
const ENCRYPTED = /v1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:/;

/** The archive's text (fetch asks for gzip in transit and undoes it). */
async function exportText(tenantId: string, query = ''): Promise<string> {
  const res = await fetch(`${t.url}/admin/tenants/${tenantId}/export${query}`, { headers: adminHeaders });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.text();
}

const linesOf = (archive: string) => archive.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

/** The archive without its export time: what must come back the same. */
function comparable(archive: string): string[] {
  const [header, ...rest] = archive.trimEnd().split('\n');
  const { exported_at: _at, ...fields } = JSON.parse(header) as Record<string, unknown>;
  return [JSON.stringify(fields), ...rest];
}

const importArchive = (body: string | Buffer, headers: Record<string, string> = adminHeaders) =>
  t.api.request('POST', '/admin/tenants/import', undefined, { raw: body, contentType: 'application/x-ndjson', headers });

/** `table: rows` of every table of the database (the job queue's too) holding `needle` in some row. */
async function rowsHolding(needle: string): Promise<Record<string, number>> {
  const tables = await t.sql<{ schema: string; name: string }>(
    `select table_schema as schema, table_name as name from information_schema.tables
      where table_schema in ('public', 'graphile_worker') and table_type = 'BASE TABLE' and table_name <> 'platform_audit_log' order by 1, 2`,
  );
  const found: Record<string, number> = {};
  for (const table of tables) {
    const [{ n }] = await t.sql<{ n: number }>(`select count(*)::int as n from "${table.schema}"."${table.name}" x where strpos(x::text, $1) > 0`, [needle]);
    if (n > 0) found[`${table.schema}.${table.name}`] = n;
  }
  return found;
}

function scriptModel() {
  fake.script((req) => {
    const name = schemaNameOf(req);
    if (name === 'eval_judge') return { content: { score: 4, dimension_scores: { correctness: 4, completeness: 4, relevance: 4, safety: 5 }, reasoning: 'Fine.' } };
    if (name) return { content: sampleFromSchema(req.body.response_format.json_schema.schema) };
    return 'A plain answer.';
  });
}

/** Tenant A's rows in every kind of table. */
async function fillTenant(s: SignedUpTenant) {
  const owner = dash(s);
  // Intent runs: a session, its messages, usage events, the daily and monthly totals, a cached answer.
  for (const user of ['cand-1', 'cand-2']) {
    const run = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: user, resume_text: `Resume of ${user}: Go and PostgreSQL.` } }, key(s));
    expect(run.status, run.text).toBe(200);
  }
  // Custom domain, intent (and its version), prompt (and its version), a named key, an invited user.
  expect((await t.api.post('/dashboard/custom-domains', { domain_key: 'export-domain', display_name: 'Export' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/custom-domains/export-domain/intents', { intent_key: 'summary', display_name: 'Summary', prompt_template: 'Summarise {{input.text}}' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/prompts', { prompt_key: 'greeting', name: 'Greeting', template: 'Hello {{name}}' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/api-keys', { name: 'reader', preset: 'read-only' }, owner)).status).toBe(201);
  expect((await t.api.post('/dashboard/users', { email: uniqueEmail('dev'), role: 'developer', password: 'developer password 1' }, owner)).status).toBe(201);

  // Workflows: one run with steps and saved state; one waiting an hour (in flight); a schedule (a queued job).
  const saver = await createWorkflow(t.api, s.apiKey, 'Saver', [
    MANUAL_TRIGGER,
    { id: 'save', step_type: 'action', action_id: 'set_state', config: { key: 'last', value: '{{trigger.name}}' } },
    { id: 'done', step_type: 'end', config: { output: { saved: '{{trigger.name}}' } } },
  ]);
  const saved = await t.api.post(`/v1/workflows/${saver.id}/run`, { input: { name: 'Ada' } }, key(s));
  expect(saved.body.data.status, saved.text).toBe('completed');
  const sleeper = await createWorkflow(t.api, s.apiKey, 'Sleeper', [MANUAL_TRIGGER, { id: 'nap', step_type: 'delay', config: { seconds: 3600 } }, { id: 'done', step_type: 'end', config: { output: { woke: true } } }]);
  const waiting = await t.api.post(`/v1/workflows/${sleeper.id}/run`, { input: {} }, key(s));
  expect(waiting.body.data.status, waiting.text).toBe('waiting');
  await createWorkflow(t.api, s.apiKey, 'Yearly', [{ id: 'start', step_type: 'trigger', config: { trigger_subtype: 'schedule', cron: '0 0 1 1 *', timezone: 'UTC' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);

  // An agent and its run.
  expect((await t.api.post('/v1/agents', { agent_key: 'greeter', name: 'Greeter', goal: 'Help' }, key(s))).status).toBe(201);
  expect((await t.api.post('/v1/agents/greeter/deploy', undefined, key(s))).status).toBe(200);
  const agentRun = await t.api.post('/v1/agents/greeter/run', { input: { message: 'Hello', user_id: 'cand-1' } }, key(s));
  expect(agentRun.body.data.status, agentRun.text).toBe('completed');

  // A collection with a document, ingested (its chunks, their embeddings, the job that made them).
  const collection = await t.api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, key(s));
  expect(collection.status, collection.text).toBe(201);
  const text = 'Our hiring handbook. Interviews are structured. Every candidate gets the same questions.\n\n'.repeat(20);
  const upload = await t.api.post('/dashboard/documents', { name: 'handbook.txt', content_base64: Buffer.from(text).toString('base64'), collection_ids: [collection.body.data.collection.id] }, owner);
  expect(upload.status, upload.text).toBe(202);
  await waitFor(async () => {
    const job = (await t.api.get(`/dashboard/ingestion-jobs/${upload.body.data.jobId}`, owner)).body.data.job;
    if (job.status === 'failed') throw new Error(`ingestion failed: ${JSON.stringify(job)}`);
    return job.status === 'completed';
  }, 'the document to be ingested', 30_000);

  // Evaluations: a dataset with cases, and an external run scored by the judge.
  const dataset = await t.api.post('/v1/evals/datasets', { name: 'Production', cases: [{ input: { resume_text: 'A resume' } }] }, key(s));
  expect(dataset.status, dataset.text).toBe(201);
  const evalRun = await t.api.post('/v1/evals/runs', { cases: [{ input: { resume_text: 'A resume' }, response: 'A fine profile' }] }, key(s));
  expect(evalRun.status, evalRun.text).toBe(202);
  await waitFor(async () => (await t.api.get(`/v1/evals/runs/${evalRun.body.data.run.id}`, key(s))).body.data.run.status === 'completed', 'the eval run to complete', 30_000);

  // A table a later migration might add: exported, deleted and imported like the others, by no new code.
  await t.sql(`create table if not exists test_extra_notes (id uuid primary key, tenant_id uuid not null references tenants (id) on delete cascade, note text not null, at timestamptz not null default now())`);
  await t.sql(`insert into test_extra_notes (id, tenant_id, note) values ($1, $2, 'kept by a new feature')`, [randomUUID(), s.tenantId]);
}

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', EMBEDDING_MODEL: 'text-embedding-3-small', LLM_MAX_RETRIES: '0' });
  pool = new pg.Pool({ connectionString: t.databaseUrl, max: 1 });
  scriptModel();
  a = await signupTenant(t.api, { companyName: 'Export A' });
  b = await signupTenant(t.api, { companyName: 'Export B' });
  expect((await t.api.patch(`/admin/tenants/${a.tenantId}`, { billingPlan: 'pro' }, { headers: adminHeaders })).status).toBe(200);
  await fillTenant(a);
  // Tenant B has a little of everything too: it must come through untouched.
  const run = await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: 'b-user', resume_text: 'Resume of B.' } }, key(b));
  expect(run.status, run.text).toBe(200);
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await t?.close();
  await fake?.close();
});

describe('what a tenant owns', () => {
  it('every table of the schema is the tenants\', reached through a parent, or declared the platform\'s', async () => {
    const catalog = await readTenantCatalog(async (text, params) => (await pool.query(text, params)).rows);
    expect(catalog.unclassified).toEqual([]);
    const withTenantId = await t.sql<{ table_name: string }>(
      `select c.relname as table_name from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id'
        where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition`,
    );
    const names = catalog.tables.map((x) => x.name);
    for (const { table_name } of withTenantId) expect(names, table_name).toContain(table_name);
    expect(names[0]).toBe('tenants');
    // Reached only through their parent: e-mail tokens (users), schedule ticks (workflows).
    expect(catalog.tables.find((x) => x.name === 'workflow_schedule_ticks')?.scope).toMatchObject({ kind: 'parent', parent: 'workflows' });
    for (const table of [...Object.keys(LEFT_OUT_TABLES)]) expect(names).toContain(table);
    for (const table of Object.keys(PLATFORM_TABLES)) expect(names).not.toContain(table);
  });

  it('a new table without a tenant link is flagged until it is declared', async () => {
    await t.sql('create table test_unlinked (id int primary key)');
    try {
      const catalog = await readTenantCatalog(async (text, params) => (await pool.query(text, params)).rows);
      expect(catalog.unclassified).toEqual(['test_unlinked']);
    } finally {
      await t.sql('drop table test_unlinked');
    }
  });

  it('every job the server queues is a tenant\'s (by tenant_id, or by the row it names) or the platform\'s', () => {
    const jobs = (Object.values(contracts) as unknown[]).filter((c) => typeof c === 'object' && c !== null && 'task' in c) as { task: string; payload: { shape?: Record<string, unknown> } }[];
    expect(jobs.length).toBeGreaterThan(5);
    for (const job of jobs) {
      const tenants = TENANT_TASKS.includes(job.task);
      expect(tenants !== PLATFORM_TASKS.includes(job.task), `${job.task} is declared exactly once`).toBe(true);
      if (tenants && !('tenant_id' in (job.payload.shape ?? {}))) expect(TENANT_JOB_LINKS, job.task).toHaveProperty(job.task);
    }
  });
});

describe('export, delete, import', () => {
  let archive = '';
  let otherBefore = '';
  let receipt: any;

  beforeAll(async () => {
    archive = await exportText(a.tenantId);
    otherBefore = await exportText(b.tenantId);
  });

  it('the archive: a header, every table in load order, the rows, a trailer that counts them', () => {
    const lines = linesOf(archive);
    const header = lines[0];
    expect(header).toMatchObject({
      format: 'liya-tenant-export', version: 1, tenant_id: a.tenantId, tenant_name: 'Export A',
      exported_at: expect.any(String), schema_version: expect.stringMatching(/^Migration\d+_/),
    });
    expect(header.tables[0]).toBe('tenants');
    expect(header.tables.at(-1)).toBe(JOBS_TABLE);
    expect(header.tables.indexOf('usage_daily')).toBeGreaterThan(header.tables.indexOf('usage_events'));
    expect(header.tables).not.toContain('outbox_messages');
    expect(header.left_out.map((l: { table: string }) => l.table).sort()).toEqual(Object.keys(LEFT_OUT_TABLES).sort());
    const trailer = lines.at(-1)!;
    expect(trailer.end).toBe(true);
    const counted: Record<string, number> = {};
    for (const line of lines.slice(1, -1)) counted[line.table] = (counted[line.table] ?? 0) + 1;
    expect(Object.fromEntries(Object.entries(trailer.rows).filter(([, n]) => (n as number) > 0))).toEqual(counted);
    for (const table of [
      'tenants', 'environments', 'api_keys', 'users', 'sessions', 'session_messages', 'usage_events', 'usage_daily', 'usage_counters', 'intent_cache',
      'custom_domains', 'custom_intents', 'intent_versions', 'prompts', 'prompt_versions', 'audit_log', 'workflows', 'workflow_versions', 'workflow_runs',
      'run_steps', 'workflow_state', 'agents', 'agent_sessions', 'agent_messages', 'agent_runs', 'collections', 'collection_domains', 'documents',
      'document_collections', 'document_chunks', 'ingestion_jobs', 'eval_datasets', 'eval_cases', 'eval_runs', 'eval_results', 'test_extra_notes', JOBS_TABLE,
    ]) {
      expect(trailer.rows[table], table).toBeGreaterThan(0);
    }
    // The rows are the tenant's only; chunks keep their embeddings as stored.
    for (const line of lines.slice(1, -1)) if (line.table !== JOBS_TABLE && 'tenant_id' in line.row) expect(line.row.tenant_id).toBe(a.tenantId);
    const chunk = lines.find((l) => l.table === 'document_chunks')!.row;
    expect(chunk.embedding).toMatch(/^\\x[0-9a-f]+$/);
    expect(chunk.text).toContain('hiring handbook');
    // The schedule's next tick and the waiting run's wake-up are queued work of the tenant.
    expect(lines.filter((l) => l.table === JOBS_TABLE).map((l) => l.row.task).sort()).toEqual(['workflow_continue', 'workflow_schedule']);
    expect(archive).not.toMatch(ENCRYPTED);
  });

  it('?gzip=true answers the same archive as a gzip file', async () => {
    const res = await fetch(`${t.url}/admin/tenants/${b.tenantId}/export?gzip=true`, { headers: { ...adminHeaders, 'accept-encoding': 'identity' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    expect(res.headers.get('content-disposition')).toContain(`liya-tenant-${b.tenantId}.ndjson.gz`);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    const { gunzipSync } = await import('node:zlib');
    expect(comparable(gunzipSync(bytes).toString('utf8'))).toEqual(comparable(otherBefore));
  });

  it('export needs the admin secret; an unknown tenant is 404', async () => {
    expectError(await t.api.get(`/admin/tenants/${a.tenantId}/export`), 401, 'ADMIN_UNAUTHORIZED');
    expectError(await t.api.get(`/admin/tenants/${a.tenantId}/export`, { headers: { 'x-admin-secret': 'wrong-secret-0123456789' } }), 401, 'ADMIN_UNAUTHORIZED');
    expectError(await t.api.get(`/admin/tenants/${randomUUID()}/export`, { headers: adminHeaders }), 404, 'NOT_FOUND');
    expectError(await t.api.get('/admin/tenants/not-a-tenant/export', { headers: adminHeaders }), 404, 'NOT_FOUND');
    expectError(await t.api.get(`/admin/tenants/${a.tenantId}/export?gzip=maybe`, { headers: adminHeaders }), 400, 'INVALID_INPUT');
  });

  it('deletion is refused while a run is in flight, and forced cancels it', async () => {
    const refused = expectError(await t.api.delete(`/admin/tenants/${a.tenantId}`, { headers: adminHeaders }), 409, 'RUNS_IN_FLIGHT');
    expect(refused.details).toEqual({ in_flight: { workflow_runs: 1 } });
    // Nothing was touched.
    expect((await t.api.get(`/admin/tenants/${a.tenantId}`, { headers: adminHeaders })).body.data.isActive).toBe(true);
    expectError(await t.api.delete(`/admin/tenants/${a.tenantId}?force=maybe`, { headers: adminHeaders }), 400, 'INVALID_INPUT');

    const res = await t.api.delete(`/admin/tenants/${a.tenantId}?force=true`, { headers: adminHeaders });
    expect(res.status, res.text).toBe(200);
    receipt = res.body.data;
    expect(receipt).toMatchObject({
      tenant_id: a.tenantId, tenant_name: 'Export A', forced: true, cancelled: { workflow_runs: 1 }, verified: true, remaining: {},
      deleted: expect.objectContaining({ tenants: 1, users: 2, documents: 1, test_extra_notes: 1 }),
    });
    // Every row the archive holds was counted out, steps that went with their runs too.
    const { rows } = linesOf(archive).at(-1)!;
    for (const [table, n] of Object.entries(rows)) if (table !== JOBS_TABLE) expect(receipt.deleted[table], table).toBe(n);
    expect(receipt.deleted.run_steps).toBeGreaterThan(0);
    expect(receipt.deleted.document_chunks).toBeGreaterThan(0);
    expect(receipt.jobs_removed).toBeGreaterThanOrEqual(2);
  });

  it('after the deletion no row of any table, nor any queued job, holds the tenant\'s id', async () => {
    expect(await rowsHolding(a.tenantId)).toEqual({});
    expectError(await t.api.get(`/admin/tenants/${a.tenantId}`, { headers: adminHeaders }), 404, 'NOT_FOUND');
    expectError(await t.api.get('/v1/agents', key(a)), 401, 'INVALID_API_KEY');
    // A second deletion finds nothing.
    expectError(await t.api.delete(`/admin/tenants/${a.tenantId}`, { headers: adminHeaders }), 404, 'NOT_FOUND');
  });

  it('the operator\'s audit log keeps the receipt, outside the tenant', async () => {
    const res = await t.api.get(`/admin/audit-log?target_id=${a.tenantId}`, { headers: adminHeaders });
    expect(res.status, res.text).toBe(200);
    const actions = res.body.data.entries.map((e: { action: string }) => e.action);
    expect(actions.slice(0, 3)).toEqual(['tenant.deleted', 'tenant.delete_started', 'tenant.exported']);
    expect(res.body.data.entries[0]).toMatchObject({ actor: 'admin', actor_type: 'admin', target_type: 'tenant', target_id: a.tenantId, details: receipt });
    expect(res.body.data.pagination).toMatchObject({ next_cursor: null, total_is_exact: true });
    expectError(await t.api.get('/admin/audit-log'), 401, 'ADMIN_UNAUTHORIZED');
  });

  it('the import recreates the tenant: the same archive comes out again, its keys and logins work', async () => {
    const res = await importArchive(archive);
    expect(res.status, res.text).toBe(201);
    const trailer = linesOf(archive).at(-1)!;
    expect(res.body.data).toMatchObject({ tenant_id: a.tenantId, tenant_name: 'Export A', rows: trailer.rows, ignored_columns: [], secrets_omitted: [] });
    expect(comparable(await exportText(a.tenantId))).toEqual(comparable(archive));
    // Key hashes and password hashes came along.
    expect((await t.api.get('/v1/agents', key(a))).status).toBe(200);
    expect((await t.api.post('/auth/login', { email: a.email, password: a.password })).status).toBe(200);
    // The queued work is queued again.
    const [{ n }] = await t.sql<{ n: number }>(`select count(*)::int as n from graphile_worker._private_jobs where payload->>'tenant_id' = $1`, [a.tenantId]);
    expect(n).toBe(2);
  });

  it('the tenant id taken is 409 TENANT_EXISTS; a unique value taken is 409 IMPORT_CONFLICT; both leave nothing', async () => {
    const before = await rowsHolding(a.tenantId);
    expectError(await importArchive(archive), 409, 'TENANT_EXISTS');
    const other = randomUUID();
    const conflict = expectError(await importArchive(archive.replaceAll(a.tenantId, other)), 409, 'IMPORT_CONFLICT');
    expect(conflict.details).toMatchObject({ table: expect.any(String), constraint: expect.any(String) });
    expect(await rowsHolding(other)).toEqual({});
    expect(await rowsHolding(a.tenantId)).toEqual(before);
  });

  it('the other tenant was untouched throughout', async () => {
    expect(comparable(await exportText(b.tenantId))).toEqual(comparable(otherBefore));
    expect((await t.api.get('/v1/agents', key(b))).status).toBe(200);
  });
});

describe('archives that are not whole', () => {
  let archive = '';
  let tenantId = '';

  beforeAll(async () => {
    const c = await signupTenant(t.api, { companyName: 'Export C' });
    tenantId = c.tenantId;
    expect((await t.api.post('/v1/hiring/resume-analysis', { input: { user_id: 'c-user', resume_text: 'Resume of C.' } }, key(c))).status).toBe(200);
    archive = await exportText(tenantId);
    const deleted = await t.api.delete(`/admin/tenants/${tenantId}`, { headers: adminHeaders });
    expect(deleted.body.data?.verified, deleted.text).toBe(true);
  });

  const lines = () => archive.trimEnd().split('\n');
  const refuse = async (body: string | Buffer, status = 400, code = 'INVALID_ARCHIVE') => {
    const error = expectError(await importArchive(body), status, code);
    expect(await rowsHolding(tenantId)).toEqual({});
    return error;
  };

  it('no trailer (cut off), a damaged line, wrong counts, lines after the trailer: 400, nothing left', async () => {
    const all = lines();
    expect((await refuse(all.slice(0, -1).join('\n'))).message).toMatch(/trailer/);
    expect((await refuse(all.slice(0, -3).join('\n'))).message).toMatch(/trailer/);
    const damaged = [...all];
    damaged[3] = damaged[3].slice(0, 20);
    expect((await refuse(damaged.join('\n'))).message).toMatch(/not JSON/);
    const trailer = JSON.parse(all.at(-1)!);
    trailer.rows.sessions += 1;
    expect((await refuse([...all.slice(0, -1), JSON.stringify(trailer)].join('\n'))).message).toMatch(/counts/);
    const dropped = all.filter((_, i) => i !== 2);
    await refuse(dropped.join('\n'));
    await refuse([...all, all[1]].join('\n'));
  });

  it('another version, an unknown table, a row of another tenant, a newer schema, no header: 400', async () => {
    const [header, ...rest] = lines();
    const withHeader = (change: (h: Record<string, any>) => void) => {
      const h = JSON.parse(header);
      change(h);
      return [JSON.stringify(h), ...rest].join('\n');
    };
    expect((await refuse(withHeader((h) => (h.version = 2)))).message).toMatch(/version 2/);
    expect((await refuse(withHeader((h) => h.tables.splice(1, 0, 'secret_table')))).details).toEqual({ tables: ['secret_table'] });
    expect((await refuse(withHeader((h) => (h.schema_version = 'Migration29991231000000_future')))).message).toMatch(/newer schema/);
    await refuse(rest.join('\n'));
    await refuse('');
    await refuse('not an archive at all\n');
    // A row claiming another tenant's id is not loaded into the archive's tenant, nor into the other.
    const foreign = rest.map((line) => (line.includes('"table":"sessions"') ? line.replaceAll(tenantId, b.tenantId) : line));
    expect((await refuse([header, ...foreign].join('\n'))).message).toMatch(/do not belong/);
    const [{ n }] = await t.sql<{ n: number }>('select count(*)::int as n from sessions where tenant_id = $1', [b.tenantId]);
    expect(n).toBe(1);
  });

  it('a damaged gzip is 400; a whole gzip archive loads', async () => {
    const zipped = gzipSync(archive);
    await refuse(zipped.subarray(0, Math.floor(zipped.length / 2)));
    const res = await importArchive(zipped);
    expect(res.status, res.text).toBe(201);
    expect(comparable(await exportText(tenantId))).toEqual(comparable(archive));
  });

  it('import needs the admin secret', async () => {
    expectError(await importArchive(archive, {}), 401, 'ADMIN_UNAUTHORIZED');
  });
});

describe('credentials never leave the server', () => {
  it('encrypted secrets are masked or null, counted in secrets_omitted, and the import keeps the rest', async () => {
    const s = await signupTenant(t.api, { companyName: 'Export Secrets' });
    expect((await t.api.patch(`/admin/tenants/${s.tenantId}`, { billingPlan: 'pro' }, { headers: adminHeaders })).status).toBe(200);
    const agent = await t.api.post('/v1/agents', {
      agent_key: 'mcp-user', name: 'MCP', goal: 'Use tools',
      tools_config: { mcp_servers: [{ name: 'calc', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer mcp-plain-secret' } }] },
    }, key(s));
    expect(agent.status, agent.text).toBe(201);
    await createWorkflow(t.api, s.apiKey, 'Caller', [
      MANUAL_TRIGGER,
      { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: 'https://api.example.com/items', headers: { authorization: 'Bearer step-plain-secret' } } },
      { id: 'done', step_type: 'end', config: { output: 1 } },
    ]);
    const hook = await createWorkflow(t.api, s.apiKey, 'Hook', [{ id: 'start', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);
    expect(hook.webhook_secret).toMatch(/^whsec_/);
    expect((await t.api.request('PUT', '/dashboard/provider-keys/openai', { apiKey: 'sk-provider-plain-secret-123456' }, dash(s))).status).toBe(200);
    const dataset = await t.api.post('/v1/evals/datasets', { name: 'Scored', cases: [{ input: { resume_text: 'x' } }] }, key(s));
    const suite = await t.api.post('/v1/evals/suites', {
      name: 'Scored suite', domain_key: 'hiring', intent_key: 'candidate-screening', dataset_id: dataset.body.data.dataset.id,
      custom_scorer_webhook_url: 'https://scorer.example.com/score', custom_scorer_webhook_secret: 'scorer-plain-secret-16',
    }, key(s));
    expect(suite.status, suite.text).toBe(201);

    const archive = await exportText(s.tenantId);
    expect(archive).not.toMatch(ENCRYPTED);
    for (const plain of ['mcp-plain-secret', 'step-plain-secret', 'sk-provider-plain-secret', 'scorer-plain-secret', hook.webhook_secret!]) expect(archive).not.toContain(plain);
    const lines = linesOf(archive);
    const omitted = lines[0].secrets_omitted.map((x: { table: string; column: string }) => `${x.table}.${x.column}`).sort();
    expect(omitted).toEqual([
      'agents.tools_config', 'eval_suites.custom_scorer_webhook_secret', 'tenant_provider_keys.encrypted_key', 'workflow_versions.steps', 'workflows.live_steps', 'workflows.webhook_secret',
    ]);
    expect(lines.at(-1)!.secrets_omitted.map((x: { table: string; column: string }) => `${x.table}.${x.column}`).sort()).toEqual(omitted);
    expect(lines.some((l) => l.table === 'tenant_provider_keys')).toBe(false);
    const agentRow = lines.find((l) => l.table === 'agents')!.row;
    expect(agentRow.tools_config.mcp_servers[0].headers).toEqual({ authorization: '***' });
    expect(lines.find((l) => l.table === 'workflows' && l.row.name === 'Hook')!.row.webhook_secret).toBeNull();

    const deleted = await t.api.delete(`/admin/tenants/${s.tenantId}`, { headers: adminHeaders });
    expect(deleted.body.data?.verified, deleted.text).toBe(true);
    const imported = await importArchive(archive);
    expect(imported.status, imported.text).toBe(201);
    expect(imported.body.data.secrets_omitted).toEqual(lines[0].secrets_omitted);
    const shown = await t.api.get('/v1/agents/mcp-user', key(s));
    expect(shown.body.data.agent.tools_config.mcp_servers[0].headers).toEqual({ authorization: '***' });
  });
});
