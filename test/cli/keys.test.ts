// `liya keys create | list | revoke`: named keys with permissions, as a user runs the CLI (a real
// subprocess against a real server), logged in as the tenant's owner.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';

const KEY = /svc_[A-Za-z0-9_-]{43}/;

let t: TestServer;
let configDir: string;
let tenant: SignedUpTenant;

function liya(args: string[], options: CliRunOptions = {}) {
  return runLiya(args, { ...options, env: { LIYA_URL: t.url, LIYA_CONFIG_DIR: configDir, LIYA_PASSWORD: undefined, ...options.env } });
}

beforeAll(async () => {
  t = await startTestServer();
  configDir = await mkdtemp(path.join(os.tmpdir(), 'liya-keys-'));
  tenant = await signupTenant(t.api);
  const login = await liya(['login', '--email', tenant.email, '--password', tenant.password]);
  expect(login.code, login.stderr).toBe(0);
});

afterAll(async () => {
  await t?.close();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

describe('liya keys', () => {
  it('create prints the key once with its permissions; the key can do exactly that', async () => {
    const run = await liya(['keys', 'create', '--name', 'ci-deploy', '--preset', 'deploy', '--expires', '30d']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Created key ci-deploy (production)');
    expect(run.stdout).toContain('Permissions: evals:read, project:read, project:deploy (preset deploy)');
    expect(run.stdout).toMatch(/Expires \d{4}-\d\d-\d\d/);
    const key = run.stdout.match(KEY)![0];
    expect((await t.api.get('/v1/project', { headers: bearer(key) })).status).toBe(200);
    expect((await t.api.get('/v1/collections', { headers: bearer(key) })).body.error.code).toBe('PERMISSION_DENIED');
  });

  it('create with a list, as JSON; a bad choice is a usage error', async () => {
    const run = await liya(['keys', 'create', '--name', 'runner', '--permissions', 'intents:run,runs:read', '--environment', 'development', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const created = JSON.parse(run.stdout);
    expect(created.key).toMatchObject({ name: 'runner', environment: 'development', permissions: ['intents:run', 'runs:read'] });
    expect(created.apiKey).toMatch(KEY);

    const neither = await liya(['keys', 'create', '--name', 'nothing']);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain('--preset or --permissions');
    const taken = await liya(['keys', 'create', '--name', 'runner', '--preset', 'full']);
    expect(taken.code).not.toBe(0);
    expect(taken.stderr).toContain('KEY_NAME_TAKEN');
  });

  it('list shows every key without its secret; revoke ends a key at once', async () => {
    const [table, json] = await Promise.all([liya(['keys', 'list']), liya(['keys', 'list', '--json'])]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/NAME\s+ENVIRONMENT\s+PERMISSIONS/);
    expect(table.stdout).toContain('ci-deploy');
    expect(table.stdout).toContain('(production key)');
    expect(table.stdout).not.toMatch(KEY);
    const keys = JSON.parse(json.stdout) as { name: string | null; id: string }[];
    expect(keys.map((k) => k.name).filter(Boolean).sort()).toEqual(['ci-deploy', 'runner']);

    const created = await liya(['keys', 'create', '--name', 'doomed', '--preset', 'read-only']);
    const doomed = created.stdout.match(KEY)![0];
    expect((await t.api.get('/v1/collections', { headers: bearer(doomed) })).status).toBe(200);
    const revoked = await liya(['keys', 'revoke', 'doomed']);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain('Revoked key doomed');
    expect((await t.api.get('/v1/collections', { headers: bearer(doomed) })).body.error.code).toBe('API_KEY_REVOKED');
    const again = await liya(['keys', 'revoke', 'doomed']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('NOT_FOUND');
  });
});
