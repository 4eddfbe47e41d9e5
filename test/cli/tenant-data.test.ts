// `liya tenants export | delete | import`, as an operator runs them (a real subprocess against a real
// server): the archive saved to a file, the tenant deleted with its receipt, and loaded back.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiya } from '../support/cli.js';
import { bearer } from '../support/client.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { ADMIN_SECRET, startTestServer, type TestServer } from '../support/server.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let dir: string;
let tenant: SignedUpTenant;

const liya = (args: string[]) => runLiya(args, { env: { LIYA_URL: t.url, LIYA_ADMIN_SECRET: ADMIN_SECRET, LIYA_CONFIG_DIR: dir, LIYA_PASSWORD: undefined } });

/** The archive without its export time. */
const comparable = (archive: string) => {
  const [header, ...rest] = archive.trimEnd().split('\n');
  const { exported_at: _at, ...fields } = JSON.parse(header) as Record<string, unknown>;
  return [JSON.stringify(fields), ...rest];
};

beforeAll(async () => {
  t = await startTestServer();
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-tenant-data-'));
  tenant = await signupTenant(t.api, { companyName: 'CLI Move' });
  const flow = await createWorkflow(t.api, tenant.apiKey, 'Saver', [
    MANUAL_TRIGGER,
    { id: 'save', step_type: 'action', action_id: 'set_state', config: { key: 'last', value: '{{trigger.name}}' } },
    { id: 'done', step_type: 'end', config: { output: { saved: '{{trigger.name}}' } } },
  ]);
  const run = await t.api.post(`/v1/workflows/${flow.id}/run`, { input: { name: 'Ada' } }, { headers: bearer(tenant.apiKey) });
  expect(run.body.data.status, run.text).toBe('completed');
});

afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('liya tenants export, delete, import', () => {
  it('moves a tenant through a file: the same archive comes back, its key works', async () => {
    const file = path.join(dir, 'move.ndjson');
    const exported = await liya(['tenants', 'export', tenant.tenantId, '-o', file]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(new RegExp(`Exported tenant CLI Move \\(${tenant.tenantId}\\): \\d+ rows of \\d+ tables, .* to ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
    const archive = await readFile(file, 'utf8');
    expect(JSON.parse(archive.split('\n')[0])).toMatchObject({ format: 'liya-tenant-export', tenant_id: tenant.tenantId });

    // Compressed, as --gzip (or a .gz name) asks: the same archive inside.
    const zipped = path.join(dir, 'move.ndjson.gz');
    const gz = await liya(['tenants', 'export', tenant.tenantId, '-o', zipped, '--json']);
    expect(gz.code, gz.stderr).toBe(0);
    expect(JSON.parse(gz.stdout)).toMatchObject({ file: zipped, bytes: (await stat(zipped)).size, tenant_name: 'CLI Move', secrets_omitted: [] });
    expect(comparable(gunzipSync(await readFile(zipped)).toString('utf8'))).toEqual(comparable(archive));

    // Not a terminal to confirm on: nothing is deleted without --yes.
    const unconfirmed = await liya(['tenants', 'delete', tenant.tenantId]);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain('Pass --yes');
    expect((await t.api.get(`/admin/tenants/${tenant.tenantId}`, { headers: adminHeaders })).status).toBe(200);

    const deleted = await liya(['tenants', 'delete', tenant.tenantId, '--yes']);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain(`Deleted tenant CLI Move (${tenant.tenantId}) for good`);
    expect(deleted.stdout).toMatch(/Verified\s+yes/);
    expect(deleted.stdout).toMatch(/workflow_runs\s+1/);
    expect((await t.api.get(`/admin/tenants/${tenant.tenantId}`, { headers: adminHeaders })).status).toBe(404);

    const imported = await liya(['tenants', 'import', zipped]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(new RegExp(`Imported tenant CLI Move \\(${tenant.tenantId}\\): \\d+ rows`));
    const again = path.join(dir, 'again.ndjson');
    expect((await liya(['tenants', 'export', tenant.tenantId, '-o', again])).code).toBe(0);
    expect(comparable(await readFile(again, 'utf8'))).toEqual(comparable(archive));
    expect((await t.api.get('/v1/workflows', { headers: bearer(tenant.apiKey) })).status).toBe(200);

    // The same archive again: the tenant exists.
    const twice = await liya(['tenants', 'import', file]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('TENANT_EXISTS');
  });

  it('an unknown tenant, a missing file, no admin secret: clear errors', async () => {
    const unknown = await liya(['tenants', 'export', '00000000-0000-4000-8000-000000000000', '-o', path.join(dir, 'none.ndjson')]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('NOT_FOUND');
    await expect(stat(path.join(dir, 'none.ndjson'))).rejects.toThrow();
    const missing = await liya(['tenants', 'import', path.join(dir, 'nope.ndjson')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Cannot read');
    const noSecret = await runLiya(['tenants', 'delete', tenant.tenantId, '--yes'], { env: { LIYA_URL: t.url, LIYA_ADMIN_SECRET: undefined, LIYA_CONFIG_DIR: dir } });
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toContain('ADMIN_UNAUTHORIZED');
  });
});
