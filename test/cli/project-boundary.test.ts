// The project folder is the boundary of `liya plan`, `apply` and `export`: they read, write and
// delete nothing outside it and follow no symbolic link inside it, refuse a file too large to parse
// before reading it whole, and print every name taken from a file or from the server escaped, so no
// name can forge a line of a plan. A real CLI process against a real server, as a user runs it;
// the writer and the text of plans, gates and problems also directly.
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeploymentDto, GateResult, Plan } from '../../server/deploys/deploys.schemas.js';
import { writeProjectFiles } from '../../cli/project/export-files.js';
import { deploymentLine } from '../../cli/project/follow-deployment.js';
import { gateFailureLine, gateRows } from '../../cli/project/gate-report.js';
import { formatIssue } from '../../cli/project/load-project.js';
import { planLines, untrackedNote } from '../../cli/project/plan-text.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

const MiB = 1024 * 1024;
const DOMAIN = 'kind: domain\nkey: support\ndisplay_name: Support\n';
/** What the files outside the project folder hold: it must never reach the output or the server. */
const PRIVATE = 'PRIVATE-CONTENT-7f3a';

let t: TestServer;
let a: SignedUpTenant;
let tmp: string;
let n = 0;

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'CLI project boundary' });
  tmp = await mkdtemp(path.join(os.tmpdir(), 'liya-project-boundary-'));
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

function liya(args: string[], options: CliRunOptions = {}) {
  return runLiya(args, { ...options, env: { LIYA_URL: t.url, LIYA_API_KEY: a.apiKey, LIYA_ADMIN_SECRET: undefined, LIYA_TIMEOUT: undefined, ...options.env } });
}

/** A fresh folder holding `files` (relative path -> text). */
async function place(files: Record<string, string> = {}): Promise<string> {
  const dir = path.join(tmp, `c${++n}`);
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  return dir;
}

const isLink = async (file: string) => (await lstat(file)).isSymbolicLink();
const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('reading a project folder', () => {
  it('reads no file outside it and follows no link inside it: each is a problem at its file and line, and nothing is sent', async () => {
    const base = await place({
      'outside/private.jsonl': `{"input": {"secret": "${PRIVATE}"}}\n`,
      'outside/domain.yaml': `kind: domain\nkey: linked\ndisplay_name: ${PRIVATE}\n`,
      'outside/more/domain.yaml': `kind: domain\nkey: linked-folder\ndisplay_name: ${PRIVATE}\n`,
      'proj/domain.yaml': DOMAIN,
      'proj/evals/escape.yaml': 'kind: eval_dataset\nkey: Escape\ncases_file: ../../outside/private.jsonl\n',
      'proj/evals/link.yaml': 'kind: eval_dataset\nkey: Link\ncases_file: env.jsonl\n',
      'proj/evals/through.yaml': 'kind: eval_dataset\nkey: Through\ncases_file: data/private.jsonl\n',
    });
    const outside = path.join(base, 'outside');
    const proj = path.join(base, 'proj');
    await writeFile(path.join(proj, 'evals', 'absolute.yaml'), `kind: eval_dataset\nkey: Absolute\ncases_file: ${JSON.stringify(path.join(outside, 'private.jsonl'))}\n`);
    // A link to the process's environment (where there is one), a link to a folder outside, a linked YAML file and folder.
    await symlink(existsSync('/proc/self/environ') ? '/proc/self/environ' : path.join(outside, 'private.jsonl'), path.join(proj, 'evals', 'env.jsonl'));
    await symlink(outside, path.join(proj, 'evals', 'data'));
    await symlink(path.join(outside, 'domain.yaml'), path.join(proj, 'linked.yaml'));
    await symlink(path.join(outside, 'more'), path.join(proj, 'more'));

    const run = await liya(['plan', '--dir', proj], { env: { [`LIYA_TEST_${PRIVATE.replace(/-/g, '_')}`]: PRIVATE } });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const out = run.stdout + run.stderr;
    expect(out).not.toContain(PRIVATE);
    expect(run.stderr).toMatch(/evals\/escape\.yaml:3:13: cases_file: \.\.\/\.\.\/outside\/private\.jsonl is outside the project folder$/m);
    expect(run.stderr).toMatch(new RegExp(`evals/absolute\\.yaml:3:13: cases_file: "?${escaped(path.join(outside, 'private.jsonl'))}"? is outside the project folder$`, 'm'));
    expect(run.stderr).toMatch(/evals\/link\.yaml:3:13: cases_file: env\.jsonl is a symbolic link/);
    expect(run.stderr).toMatch(/evals\/through\.yaml:3:13: cases_file: data\/private\.jsonl goes through a symbolic link \(\S*evals\/data\)/);
    expect(run.stderr).toMatch(/\/linked\.yaml:1:1: a symbolic link; /);
    expect(run.stderr).toMatch(/\/more:1:1: a symbolic link; /);
    expect(run.stderr).toMatch(/evals\/data:1:1: a symbolic link; /);
    // The links are left as they are.
    expect(await isLink(path.join(proj, 'linked.yaml'))).toBe(true);
  });

  it('refuses a YAML file over 4 MiB and a cases file over 25 MiB before parsing them, at file:1:1', async () => {
    const dir = await place({ 'domain.yaml': DOMAIN, 'big.yaml': '# padding\n', 'ds.yaml': 'kind: eval_dataset\nkey: Big\ncases_file: big.jsonl\n', 'big.jsonl': '' });
    // Sparse files: their size without the disk space.
    await truncate(path.join(dir, 'big.yaml'), 4 * MiB + 1);
    await truncate(path.join(dir, 'big.jsonl'), 25 * MiB + 1);
    const run = await liya(['plan', '--dir', dir]);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stderr).toMatch(/\/big\.yaml:1:1: the file is 4\.0 MiB, over the limit of 4 MiB for a project file/);
    expect(run.stderr).toMatch(/\/big\.jsonl:1:1: the file is 25\.0 MiB, over the limit of 25 MiB for a cases file/);
    // Nothing else is said about them: they were never parsed.
    expect(run.stderr.split('\n').filter((l) => /big\.(yaml|jsonl):/.test(l))).toHaveLength(2);
  });
});

describe('liya export', () => {
  it('refuses a managed folder, a folder on the way to one or a root file that is a symbolic link, before deleting or writing anything', async () => {
    const base = await place({
      'outside/datasets/keep.jsonl': 'keep\n',
      'outside/keep.yaml': DOMAIN,
      'outside/schema.json': 'mine\n',
      'proj/domains/old.yaml': DOMAIN,
      'proj/notes.md': 'keep',
    });
    const outside = path.join(base, 'outside');
    const proj = path.join(base, 'proj');

    // `evals` is a link: --force would empty evals/datasets there, and write into it.
    await symlink(outside, path.join(proj, 'evals'));
    const throughParent = await liya(['export', '--dir', proj, '--force']);
    expect(throughParent.code, throughParent.stdout + throughParent.stderr).toBe(1);
    expect(throughParent.stderr).toMatch(/evals is a symbolic link/);
    expect(await readFile(path.join(outside, 'datasets', 'keep.jsonl'), 'utf8')).toBe('keep\n');
    expect(await readdir(outside)).toEqual(['datasets', 'keep.yaml', 'schema.json']);
    expect(await readFile(path.join(proj, 'domains', 'old.yaml'), 'utf8')).toBe(DOMAIN);
    expect(await isLink(path.join(proj, 'evals'))).toBe(true);

    // A managed folder that is a link.
    await rm(path.join(proj, 'evals'));
    await symlink(outside, path.join(proj, 'workflows'));
    const managed = await liya(['export', '--dir', proj, '--force']);
    expect(managed.code, managed.stdout + managed.stderr).toBe(1);
    expect(managed.stderr).toMatch(/workflows is a symbolic link/);
    expect(await isLink(path.join(proj, 'workflows'))).toBe(true);
    expect(await readFile(path.join(proj, 'domains', 'old.yaml'), 'utf8')).toBe(DOMAIN);
    expect(await readdir(outside)).toEqual(['datasets', 'keep.yaml', 'schema.json']);

    // A root file an export writes, in a folder without project files (no --force needed to write there).
    const fresh = await place();
    await symlink(path.join(outside, 'schema.json'), path.join(fresh, 'liya-project.schema.json'));
    const rootFile = await liya(['export', '--dir', fresh]);
    expect(rootFile.code, rootFile.stdout + rootFile.stderr).toBe(1);
    expect(rootFile.stderr).toMatch(/liya-project\.schema\.json is a symbolic link/);
    expect(await readFile(path.join(outside, 'schema.json'), 'utf8')).toBe('mine\n');
    expect(await readdir(fresh)).toEqual(['liya-project.schema.json']);

    // Without links it goes through.
    await rm(path.join(proj, 'workflows'));
    const plain = await liya(['export', '--dir', proj, '--force']);
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    expect(await readFile(path.join(proj, 'notes.md'), 'utf8')).toBe('keep');
  });

  it('writes no file through a link, even one made after the check', async () => {
    const base = await place({ 'outside/.keep': '' });
    const outside = path.join(base, 'outside');
    const dir = path.join(base, 'proj');
    await mkdir(dir);
    await symlink(outside, path.join(dir, 'domains'));
    await expect(writeProjectFiles(dir, [{ path: 'domains/support.yaml', content: DOMAIN }])).rejects.toThrow(/symbolic link/);
    await rm(path.join(dir, 'domains'));
    // A dangling link where a file goes: following it would create the file outside.
    await symlink(path.join(outside, 'created.yaml'), path.join(dir, 'guardrails.yaml'));
    await expect(writeProjectFiles(dir, [{ path: 'guardrails.yaml', content: 'kind: guardrails\n' }])).rejects.toThrow(/symbolic link/);
    expect(await readdir(outside)).toEqual(['.keep']);
  });
});

describe('names in the output', () => {
  const forged = 'a\n+ create agent evil';
  const ansi = 'b\u001b[2J\u009b31m\n- delete domain support';

  it('plan lines, the untracked note and file problems show names escaped: no name forges a line', async () => {
    const dir = await place({
      'domain.yaml': DOMAIN,
      'forged.yaml': `kind: eval_dataset\nkey: ${JSON.stringify(forged)}\ncases: []\n`,
      'ansi.yaml': `kind: eval_dataset\nkey: ${JSON.stringify(ansi)}\ncases: []\n`,
    });
    const noForgedLine = (text: string) => {
      expect(text).not.toMatch(/^\s*\+ create agent evil/m);
      expect(text).not.toMatch(/^\s*- delete domain support/m);
    };
    const plan = await liya(['plan', '--dir', dir]);
    expect(plan.code, plan.stdout + plan.stderr).toBe(2);
    expect(plan.stdout).toContain('+ create eval_dataset "a\\n+ create agent evil"');
    expect(plan.stdout).toContain('+ create eval_dataset "b\\u001b[2J\\u009b31m\\n- delete domain support"');
    noForgedLine(plan.stdout);

    const applied = await liya(['apply', '--dir', dir, '--yes']);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    noForgedLine(applied.stdout);

    // The server's names, in a folder that leaves them out.
    const only = await place({ 'domain.yaml': DOMAIN });
    const untracked = await liya(['plan', '--dir', only]);
    expect(untracked.code, untracked.stdout + untracked.stderr).toBe(0);
    expect(untracked.stdout).toContain('eval_dataset "a\\n+ create agent evil"');
    expect(untracked.stdout).toContain('eval_dataset "b\\u001b[2J\\u009b31m\\n- delete domain support"');
    noForgedLine(untracked.stdout);

    // A file name with a line break, and a field name from the file, in the problems.
    const bad = await place({ 'x\n+ create agent evil.yaml': 'kind: domain\nkey: k\ndisplay_name: K\n"y\\n- delete domain support": 1\n' });
    const problems = await liya(['plan', '--dir', bad]);
    expect(problems.code).toBe(1);
    expect(problems.stderr).toMatch(/x\\n\+ create agent evil\.yaml:4:1: unknown field "y\\n- delete domain support"/);
    noForgedLine(problems.stderr);
  });

  it('field paths and values of an update, gate suites and file problems are escaped too, C1 controls and line separators included', () => {
    const plan = {
      changes: [
        {
          kind: 'intent',
          key: 'support/triage',
          action: 'update',
          fields: [
            { path: 'output_schema.properties.q\n+ create agent evil', change: 'added', after: { type: 'string' } },
            { path: 'description', change: 'changed', before: 'old', after: 'new\u009b2J\u2028- delete domain support' },
          ],
        },
      ],
      summary: { create: 0, update: 1, delete: 0, unchanged: 0 },
      untracked: [{ kind: 'workflow', key: 'w\r\n+ create agent evil' }],
      secrets: [],
      digest: 'f'.repeat(64),
    } as Plan;
    const lines = planLines(plan).map((l) => `${l.sign} ${l.text}`);
    expect(lines).toEqual([
      '~ update intent support/triage',
      '+ "output_schema.properties.q\\n+ create agent evil": {"type":"string"}',
      '~ description: "old" -> "new\\u009b2J\\u2028- delete domain support"',
    ]);
    expect(untrackedNote(plan, false)).toContain('workflow "w\\r\\n+ create agent evil"');
    expect(formatIssue({ file: 'a\u001b]0;title\u0007.yaml', line: 1, column: 1, message: 'unknown kind "x\u0085y"' })).toBe('a\\u001b]0;title\\u0007.yaml:1:1: unknown kind "x\\u0085y"');

    const suite: GateResult = { suite: 'S\n+ create agent evil', run_id: 'r1', model: null, status: 'completed', progress: 100, cases_total: 2, cases_passed: 1, cases_errored: 0, pass_rate: 0.5, mean_score: 3, passed: false };
    expect(gateRows([suite])[0][0]).toBe('"S\\n+ create agent evil"');
    expect(gateFailureLine(suite, 1)).toMatch(/^"S\\n\+ create agent evil": pass rate/);
    const deployment = { id: 'd1', status: 'gating', progress: 50, stage: 'running\u001b[2J', gate: [suite] } as unknown as DeploymentDto;
    expect(deploymentLine(deployment)).toBe('gating · running\\u001b[2J · 50% · "S\\n+ create agent evil": completed 100% · 1/2 passed · passed no');
  });
});
