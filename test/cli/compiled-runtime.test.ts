// `liya` runs compiled JavaScript, and its server processes start lean: the launcher applies their
// memory settings, and the modules a start-up loads leave out the CLI's UI and the document parsers.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { projectRoot } from '../../scripts/build.mjs';
import { DOCX_MIME } from '../../server/documents/media-types.js';
import { makeDocx, makePdf } from '../fixtures/make-files.js';
import { runLiya } from '../support/cli.js';
import { signupTenant } from '../support/fixtures.js';
import { startServerProcess, stopServerProcess } from '../support/server-process.js';
import { bearer } from '../support/client.js';
import { waitFor } from '../support/wait-for.js';

/**
 * Packages a server start-up must not load: the CLI's UI, the parsers of uploaded files (they run
 * in the parser process) and the OpenAPI generator (the build writes the document).
 */
const LOADED_ON_DEMAND = ['ink', 'react', 'mammoth', 'unpdf', 'html-to-text', 'csv-parse', 'nodemailer', 'trpc-to-openapi'];
/** Bundled, but loaded only by the commands that print (never by `liya start`). */
const UI_PACKAGES = ['ink', 'react'];
const PARSERS = ['mammoth', 'unpdf', 'html-to-text', 'csv-parse'];

/** Single files of those packages a server does load: nodemailer's address parser (one file; mail recipients are checked when a workflow is saved and run). */
const ALLOWED_FILES = [/\/node_modules\/nodemailer\/dist\/(esm|cjs)\/addressparser\/[^/]+$/];

/** The packages among `urls` (module URLs Node loaded). */
function packagesOf(urls: string[]): Set<string> {
  return new Set(
    urls
      .filter((url) => !ALLOWED_FILES.some((allowed) => allowed.test(url)))
      .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
      .filter((name) => name !== undefined),
  );
}

/** Source text of a module that records every module Node loads from here on in `loaded`. */
const RECORD_LOADS = `
  import { registerHooks } from 'node:module';
  const loaded = new Set();
  registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context); } });`;

function runNode(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the compiled output', () => {
  it('is named by the digest of the sources it was built from, and holds every migration', () => {
    const dist = inject('liyaDist');
    // The sources may change while the tests run: the build records the digest it was made from.
    const digest = readFileSync(path.join(dist, '.build-hash'), 'utf8').trim();
    expect(path.basename(dist)).toBe(`dist-${digest.slice(0, 16)}`);
    expect(existsSync(path.join(dist, 'cli', 'main.js'))).toBe(true);
    // MikroORM finds the migrations next to db/orm.js: every one must be there as JavaScript.
    const sources = readdirSync(path.join(projectRoot, 'db', 'migrations')).filter((f) => f.endsWith('.ts'));
    const compiled = readdirSync(path.join(dist, 'db', 'migrations'));
    expect(sources.length).toBeGreaterThan(0);
    for (const file of sources) expect(compiled).toContain(file.replace(/\.ts$/, '.js'));
  });

  it('starts a server without the CLI UI or the document parsers', async () => {
    const dist = inject('liyaDist');
    // Records every module Node loads, then imports what `liya start` and the in-process worker
    // import before serving (the program with its start command, the boot sequence, the job tasks).
    const script = `${RECORD_LOADS}
      const dist = ${JSON.stringify(pathToFileURL(dist).href)};
      const { buildProgram } = await import(dist + '/cli/program.js');
      await buildProgram(['node', 'liya', 'start']);
      await import(dist + '/server/main.js');
      await import(dist + '/worker/runner.js');
      await import(dist + '/server/http/app.js'); // loaded by startServer once the runtime is open
      console.log(JSON.stringify([...loaded]));
    `;
    const run = await runNode(['--input-type=module', '-e', script]);
    expect(run.stderr).toBe('');
    const packages = packagesOf(JSON.parse(run.stdout) as string[]);
    expect(packages).toContain('fastify'); // the probe saw the server's own imports
    expect(LOADED_ON_DEMAND.filter((name) => packages.has(name))).toEqual([]);
  });

  it('carries the OpenAPI document its sources generate', async () => {
    const { getOpenApiDocument } = await import('../../server/http/openapi.js');
    const built: unknown = JSON.parse(readFileSync(path.join(inject('liyaDist'), 'openapi.json'), 'utf8'));
    expect(built).toEqual(JSON.parse(JSON.stringify(getOpenApiDocument())));
  });

  it('reads PDF, DOCX, HTML and CSV files in the parser process, never loading a parser itself', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-parse-'));
    try {
      const files = [
        { path: path.join(dir, 'a.pdf'), type: 'application/pdf', expected: 'Remote work is allowed' },
        { path: path.join(dir, 'b.docx'), type: DOCX_MIME, expected: '# Travel' },
        { path: path.join(dir, 'c.html'), type: 'text/html', expected: '## Leave' },
        { path: path.join(dir, 'd.csv'), type: 'text/csv', expected: 'city: Lyon' },
      ];
      await writeFile(files[0].path, makePdf(['Remote work is allowed three days a week.']));
      await writeFile(files[1].path, makeDocx('Travel', ['Book economy for flights under six hours.']));
      await writeFile(files[2].path, '<h2>Leave</h2><p>Sixteen weeks.</p>');
      await writeFile(files[3].path, 'city,office\nLyon,north\n');
      const script = `${RECORD_LOADS}
        import { readFileSync } from 'node:fs';
        const { extractText } = await import(${JSON.stringify(pathToFileURL(path.join(inject('liyaDist'), 'server', 'documents', 'extract-text.js')).href)});
        const files = ${JSON.stringify(files)};
        const texts = [];
        for (const file of files) texts.push((await extractText(new Uint8Array(readFileSync(file.path)), file.type)).text);
        console.log(JSON.stringify({ texts, loaded: [...loaded] }));`;
      const run = await runNode(['--input-type=module', '-e', script]);
      expect(run.stderr).toBe('');
      // The process ended by itself: the idle parser process holds no reference to its event loop.
      expect(run.code).toBe(0);
      const { texts, loaded } = JSON.parse(run.stdout) as { texts: string[]; loaded: string[] };
      files.forEach((file, i) => expect(texts[i]).toContain(file.expected));
      const packages = packagesOf(loaded);
      expect(PARSERS.filter((name) => packages.has(name))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** A new database with nothing in it, on the test server. */
async function createEmptyDatabase(): Promise<string> {
  const admin = new URL(inject('pgAdminUrl'));
  const name = `liya_empty_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  admin.pathname = `/${name}`;
  return admin.toString();
}

describe('the bundle', () => {
  it('holds the CLI and what it imports, but none of the packages loaded on demand', () => {
    const bundle = path.join(inject('liyaDist'), 'bundle');
    expect(existsSync(path.join(bundle, 'liya.js'))).toBe(true);
    // esbuild heads each module it takes in with a comment naming its file.
    const taken = new Set<string>();
    for (const file of readdirSync(bundle, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.js'))) {
      for (const match of readFileSync(path.join(bundle, file), 'utf8').matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) taken.add(match[1]);
    }
    expect(taken).toContain('fastify');
    expect(taken).toContain('@mikro-orm/core');
    // The CLI's UI is bundled (every command prints through it), in chunks a start never loads.
    expect(UI_PACKAGES.filter((name) => !taken.has(name))).toEqual([]);
    expect(LOADED_ON_DEMAND.filter((name) => !UI_PACKAGES.includes(name) && taken.has(name))).toEqual([]);
  });

  it('serves as `liya start`: the files beside its modules are found, nothing on demand is loaded', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'liya-bundle-'));
    // Every module the server's main thread loads, written when it exits (one file per process: the
    // parser process inherits NODE_OPTIONS too).
    const record = `${RECORD_LOADS}
      import { isMainThread } from 'node:worker_threads';
      import { writeFileSync } from 'node:fs';
      if (isMainThread) process.on('exit', () => writeFileSync(${JSON.stringify(dir)} + '/loaded-' + process.pid + '.json', JSON.stringify([...loaded])));`;
    let server: Awaited<ReturnType<typeof startServerProcess>> | undefined;
    try {
      // An empty database: the bundle applies every migration itself (its own bundled copies).
      server = await startServerProcess('bundled', { DATABASE_URL: await createEmptyDatabase(), NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(record)}` });
      const api = server.api;
      const tenant = await signupTenant(api);
      const key = { headers: bearer(tenant.apiKey) };
      // Over 64 K characters: scanned on the worker-thread pool, whose worker is a file beside the pool's module.
      const scan = await api.post('/v1/guardrails/check', { stage: 'pre_llm', content: 'Please review my application. '.repeat(2_500) }, key);
      expect(scan.status).toBe(200);
      // The document parser process, another file beside its client's module.
      const collection = await api.post('/v1/collections', { slug: 'handbook', label: 'Handbook', domain_keys: ['hiring'] }, key);
      expect(collection.status).toBe(201);
      const upload = await api.post(
        '/dashboard/documents',
        { name: 'remote.pdf', content_base64: makePdf(['Remote work is allowed three days a week.']).toString('base64'), collection_ids: [collection.body.data.collection.id] },
        { headers: bearer(tenant.token) },
      );
      expect(upload.status).toBe(202);
      const status = await waitFor(async () => {
        const job = (await api.get(`/dashboard/ingestion-jobs/${upload.body.data.jobId}`, { headers: bearer(tenant.token) })).body.data.job as { status: string };
        return job.status === 'pending' || job.status === 'running' ? null : job.status;
      }, 'the ingestion job to finish', 30_000);
      expect(status).toBe('completed');
      // openapi.json, written by the build beside the compiled modules.
      const openapi = await api.get('/openapi.json');
      expect(openapi.status).toBe(200);
      expect(Object.keys(openapi.body.paths as object).length).toBeGreaterThan(50);
      const pid = server.child.pid!;
      await stopServerProcess(server);
      const loaded = JSON.parse(readFileSync(path.join(dir, `loaded-${pid}.json`), 'utf8')) as string[];
      expect(loaded.some((url) => url.endsWith('/bundle/liya.js'))).toBe(true);
      expect(loaded.filter((url) => url.includes('/bundle/migrations/')).length).toBe(readdirSync(path.join(projectRoot, 'db', 'migrations')).length);
      const packages = packagesOf(loaded);
      expect(LOADED_ON_DEMAND.filter((name) => packages.has(name))).toEqual([]);
      // Nor the bundle's chunks that hold the CLI's UI.
      const bundle = path.join(inject('liyaDist'), 'bundle');
      const uiChunks = readdirSync(bundle).filter((file) => file.endsWith('.js') && /^\/\/ node_modules\/(ink|react)\//m.test(readFileSync(path.join(bundle, file), 'utf8')));
      expect(uiChunks.length).toBeGreaterThan(0);
      expect(loaded.filter((url) => uiChunks.some((chunk) => url.endsWith(`/bundle/${chunk}`)))).toEqual([]);
      // Bundled packages are not loaded a second time from node_modules, the migrations' included.
      expect(['fastify', 'zod', '@mikro-orm/core', '@mikro-orm/migrations', 'kysely'].filter((name) => packages.has(name))).toEqual([]);
    } finally {
      await stopServerProcess(server);
      // The parser process ends after the server (its channel closes) and writes its file then; rm
      // retries when a file lands in the folder while it is being emptied.
      await rm(dir, { recursive: true, force: true, maxRetries: 10 });
    }
  });
});

describe('bin/liya.mjs', () => {
  let fakeDist: string;

  // A stand-in build whose cli/main.js reports how the launcher ran it.
  beforeAll(async () => {
    fakeDist = await mkdtemp(path.join(os.tmpdir(), 'liya-dist-'));
    await mkdir(path.join(fakeDist, 'cli'));
    await writeFile(path.join(fakeDist, 'package.json'), '{ "type": "module" }\n');
    await writeFile(
      path.join(fakeDist, 'cli', 'main.js'),
      `console.log(JSON.stringify({ pid: process.pid, execArgv: process.execArgv, args: process.argv.slice(2),
        malloc: Object.keys(process.env).filter((name) => name.startsWith('MALLOC_') || name === 'LIYA_RUNTIME_TUNED') }));\n`,
    );
  });

  afterAll(async () => {
    if (fakeDist) await rm(fakeDist, { recursive: true, force: true });
  });

  async function launch(args: string[], env: Record<string, string | undefined> = {}) {
    const run = await runLiya(args, { env: { LIYA_DIST: fakeDist, NODE_OPTIONS: undefined, MALLOC_ARENA_MAX: undefined, MALLOC_MMAP_THRESHOLD_: undefined, GLIBC_TUNABLES: undefined, ...env } });
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as { execArgv: string[]; args: string[]; malloc: string[] };
  }

  it('runs the compiled entry point, with the server memory settings only for start and worker', async () => {
    for (const command of ['start', 'worker']) {
      const ran = await launch(['--url', 'http://127.0.0.1:1', command]);
      expect(ran.args).toEqual(['--url', 'http://127.0.0.1:1', command]);
      expect(ran.execArgv).toContain('--max-semi-space-size=4');
      // Applied when the process started, then removed, so PostgreSQL does not inherit them.
      expect(ran.malloc).toEqual([]);
    }
    const remote = await launch(['health']);
    expect(remote.execArgv).toEqual([]);
  });

  it('runs the bundle when the build has one, the modules with LIYA_BUNDLE=0', async () => {
    await mkdir(path.join(fakeDist, 'bundle'), { recursive: true });
    await writeFile(path.join(fakeDist, 'bundle', 'liya.js'), `console.log(JSON.stringify({ bundle: true, args: process.argv.slice(2) }));\n`);
    try {
      const bundled = (await launch(['health'])) as unknown as { bundle?: boolean; args: string[] };
      expect(bundled).toEqual({ bundle: true, args: ['health'] });
      const unbundled = (await launch(['health'], { LIYA_BUNDLE: '0' })) as unknown as { bundle?: boolean };
      expect(unbundled.bundle).toBeUndefined();
    } finally {
      await rm(path.join(fakeDist, 'bundle'), { recursive: true, force: true });
    }
  });

  it('leaves settings the user chose', async () => {
    const ran = await launch(['start'], { NODE_OPTIONS: '--max-semi-space-size=32', MALLOC_ARENA_MAX: '4' });
    expect(ran.execArgv).not.toContain('--max-semi-space-size=4');
    expect(ran.malloc).toEqual(['MALLOC_ARENA_MAX']);
  });
});
