// The rules of ARCHITECTURE.md, run with every `npm test`: dependency-cruiser checks the import
// arrows (.dependency-cruiser.cjs), tsc checks types (unused locals and imports included), knip
// finds unused files, exports and dependencies (knip.json), and a scan of the sources finds
// database calls outside the store/ folders (an EntityManager passed on as a type import is
// invisible to an import rule).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function runTool(bin: string, args: string[]) {
  const result = spawnSync(process.execPath, [path.join(root, 'node_modules', bin), ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('architecture rules', () => {
  it('imports follow the allowed arrows (dependency-cruiser: no circles, stores own the database, no transport in features, routers stay in their feature, the CLI imports types only)', { timeout: 60_000 }, () => {
    const { status, output } = runTool('dependency-cruiser/bin/dependency-cruiser.mjs', ['--config', '.dependency-cruiser.cjs', '--output-type', 'err', 'server', 'worker', 'cli', 'db']);
    expect(output.split('\n').filter((line) => /^\s*(error|warn)\s/.test(line)), output).toEqual([]);
    expect(status, output).toBe(0);
  });

  it('the sources typecheck (strict, no unused locals or imports)', { timeout: 120_000 }, () => {
    const { status, output } = runTool('typescript/bin/tsc', ['--noEmit', '-p', 'tsconfig.json']);
    expect(output.trim(), output).toBe('');
    expect(status, output).toBe(0);
  });

  it('no unused files, exports or dependencies (knip)', { timeout: 60_000 }, () => {
    const { status, output } = runTool('knip/bin/knip.js', ['--no-progress', '--no-config-hints']);
    expect(output.trim(), output).toBe('');
    expect(status, output).toBe(0);
  });

  it('database calls only in store/ folders and db/', () => {
    // Calls that reach the database through an EntityManager, a transaction or the SqlPool.
    // `em.fork()` and `em.transactional()` define a unit of work and are allowed anywhere.
    const DATABASE_CALL =
      /\b(em|tx|trx|fork|deps\.sql|sql|query|pool|client)\.(execute|find\w*|count|create|persist\w*|flush|native\w+|upsert\w*|insert\w*|remove\w*|getReference|getKysely|getConnection|refresh|populate|query|lock|clear)\s*[<(]/;
    const allowed = (file: string) => /(^|\/)store\//.test(file) || /^server\/(boot|main)\.ts$/.test(file) || file === 'worker/runner.ts';
    const files = [...listSources('server'), ...listSources('worker')].filter((file) => !allowed(file));
    const found: string[] = [];
    for (const file of files) {
      readFileSync(path.join(root, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (!/^\s*(\/\/|\*)/.test(line) && DATABASE_CALL.test(line)) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    expect(found).toEqual([]);
  });
});

function listSources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|tsx|mts)$/.test(entry.name))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}
