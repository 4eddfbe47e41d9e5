// Which errors mean "the database is out of reach" (503 DATABASE_UNAVAILABLE with Retry-After),
// checked on errors the real pg client raises against a port nobody listens on and on the shapes
// PostgreSQL reports while it shuts down or starts; and the process-level guard for the job
// outcomes graphile-worker cannot write (worker/lost-job-writes.ts), run in a child process: it
// takes exactly those rejections and leaves every other unhandled rejection fatal, as Node's default is.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { AppError, databaseUnavailableError, expectedFailure, isDatabaseUnavailable } from '../../server/errors.js';
import { isLostJobWrite } from '../../worker/lost-job-writes.js';
import { freePort } from '../support/free-port.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
const jobWriteFrame = '\n    at async batchFailJobs (file:///srv/app/node_modules/graphile-worker/dist/sql/failJobs.js:44:9)';

async function refusedByPg(): Promise<unknown> {
  const port = await freePort();
  const pool = new pg.Pool({ connectionString: `postgres://u:p@127.0.0.1:${port}/db` });
  pool.on('error', () => undefined);
  try {
    return await pool.query('select 1').then(() => null, (err: unknown) => err);
  } finally {
    await pool.end();
  }
}

async function refusedByNet(): Promise<unknown> {
  const port = await freePort();
  return new Promise((resolve) => net.connect(port, '127.0.0.1').once('error', resolve));
}

describe('database connection failures answer 503 DATABASE_UNAVAILABLE', () => {
  it('a refused connection through pg, a shutdown, a start-up, a connection exception, a dropped connection', async () => {
    const shapes: unknown[] = [
      await refusedByPg(),
      withCode('terminating connection due to administrator command', '57P01'),
      withCode('terminating connection due to crash of another server process', '57P02'),
      withCode('the database system is starting up', '57P03'),
      withCode('connection failure', '08006'),
      // MikroORM wraps driver errors and keeps the original as `cause` in some paths.
      Object.assign(new Error('driver failed'), { cause: withCode('the database system is shutting down', '57P03') }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Client has encountered a connection error and is not queryable'),
    ];
    for (const err of shapes) {
      expect(isDatabaseUnavailable(err), String(err)).toBe(true);
      const mapped = expectedFailure(err);
      expect(mapped).toBeInstanceOf(AppError);
      expect({ code: mapped!.code, status: mapped!.status, headers: mapped!.headers, details: mapped!.details }).toEqual({
        code: 'DATABASE_UNAVAILABLE',
        status: 503,
        headers: { 'Retry-After': '5' },
        details: { retryable: true, retry_after_seconds: 5 },
      });
    }
  });

  it('other failures are not the database being away: an outbound connection refused, constraint errors, bugs', async () => {
    const fetched = await fetch(`http://127.0.0.1:${await freePort()}/`).then(() => null, (err: unknown) => err);
    const others: unknown[] = [await refusedByNet(), fetched, withCode('duplicate key value', '23505'), new TypeError('x is undefined'), null, 'text'];
    for (const err of others) {
      expect(isDatabaseUnavailable(err), String(err)).toBe(false);
      expect(databaseUnavailableError(err)).toBeNull();
    }
    // A lost race keeps its own answer.
    expect(expectedFailure(withCode('could not serialize access', '40001'))?.code).toBe('CONFLICT');
  });
});

describe("graphile-worker's unwritten job outcomes", () => {
  it('are recognised by the database error and graphile-worker\'s own write in the stack', () => {
    const lost = withCode('terminating connection due to administrator command', '57P01');
    lost.stack += jobWriteFrame;
    expect(isLostJobWrite(lost)).toBe(true);
    expect(isLostJobWrite(withCode('terminating connection due to administrator command', '57P01'))).toBe(false);
    const bug = new TypeError('x is undefined');
    bug.stack += jobWriteFrame;
    expect(isLostJobWrite(bug)).toBe(false);
  });

  // A child process with the guard installed: one lost write, then (per case) another unhandled rejection.
  const script = `
    const { onLostJobWrite } = await import(process.env.GUARD_MODULE);
    let lost = 0;
    onLostJobWrite(() => lost++);
    const err = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    err.stack += ${JSON.stringify(jobWriteFrame)};
    Promise.reject(err);
    setTimeout(() => {
      console.log('lost ' + lost);
      if (process.env.THEN === 'bug') Promise.reject(new Error('a bug of ours'));
      if (process.env.THEN === 'value') Promise.reject(42);
    }, 50);
    setTimeout(() => console.log('still running'), 300);
  `;

  async function runGuarded(then: string) {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, GUARD_MODULE: path.join(inject('liyaDist'), 'worker', 'lost-job-writes.js'), THEN: then },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, out };
  }

  it('are taken and reported; the process goes on', async () => {
    const { code, out } = await runGuarded('nothing');
    expect({ code, lines: out.trim().split('\n') }).toEqual({ code: 0, lines: ['lost 1', 'still running'] });
  });

  it('any other unhandled rejection still ends the process, as without the guard', async () => {
    const bug = await runGuarded('bug');
    expect(bug.code).toBe(1);
    expect(bug.out).toContain('a bug of ours');
    expect(bug.out).not.toContain('still running');
    const value = await runGuarded('value');
    expect(value.code).toBe(1);
    expect(value.out).toContain('ERR_UNHANDLED_REJECTION');
    expect(value.out).not.toContain('still running');
  });
});
