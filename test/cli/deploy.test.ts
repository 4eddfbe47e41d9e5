// `liya export`, `liya plan` and `liya apply` as a user (or a CI job) runs them: a real subprocess
// (bin/liya.mjs) against a real server. A tenant exported to a folder and applied to an empty tenant
// exports back byte for byte; plans exit 0 / 2 / 1; a second apply changes nothing; secrets never
// reach the disk; bad files and the server's issues are reported at file:line; a failing gate keeps
// the live versions and a passing one deploys.
import { readdir, readFile, mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { buildDeploySource, GATE_SUITE as SUITE, MCP_SECRET as SECRET, MCP_SECRET_ENV as SECRET_ENV, must, scriptJudge } from '../support/deploy-source.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;
let b: SignedUpTenant;
let tmp: string;
let judgeScore = 5;


const key = (s: SignedUpTenant) => ({ headers: bearer(s.apiKey) });
const dash = (s: SignedUpTenant) => ({ headers: bearer(s.token) });

function liya(tenant: SignedUpTenant, args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_API_KEY: tenant.apiKey, LIYA_ADMIN_SECRET: undefined, LIYA_TIMEOUT: undefined, LIYA_EVAL_POLL_MS: '100', [SECRET_ENV]: undefined, ...options.env };
  return runLiya(args, { ...options, env });
}

const folder = async (name: string) => {
  const dir = path.join(tmp, name);
  await mkdir(dir, { recursive: true });
  return dir;
};

/** Every file under `dir`: relative path -> content. */
async function filesOf(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    out.set(path.relative(dir, full), await readFile(full, 'utf8'));
  }
  return out;
}

const intentVersions = async (s: SignedUpTenant, d: string, i: string) => (await must(t.api.get(`/dashboard/custom-domains/${d}/intents/${i}/versions`, dash(s)), 200)).versions.length;
const liveTemplate = async (s: SignedUpTenant) => (await must(t.api.get('/dashboard/custom-domains/support/intents/triage', dash(s)), 200)).intent.prompt_template as string;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'CLI deploy source' });
  b = await signupTenant(t.api, { companyName: 'CLI deploy target' });
  tmp = await mkdtemp(path.join(os.tmpdir(), 'liya-cli-deploy-'));

  await buildDeploySource(t, a);
}, 120_000);

beforeEach(() => {
  fake.reset();
  judgeScore = 5;
  scriptJudge(fake, () => judgeScore);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('export and apply', () => {
  it('round trip: A exported, applied to an empty B, B exported: the same files, byte for byte; no secret on disk', async () => {
    const dir1 = await folder('dir1');
    const exported = await liya(a, ['export', '--dir', dir1]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(/Exported \d+ resources to /);
    expect(exported.stdout).toContain(`set these variables when you run liya apply: ${SECRET_ENV}`);
    const files1 = await filesOf(dir1);
    expect([...files1.keys()].sort()).toEqual(
      [
        'agents/support-bot.yaml',
        'collections/handbook.yaml',
        'domains/support.yaml',
        'evals/datasets/triage-cases.jsonl',
        'evals/datasets/triage-cases.yaml',
        'evals/suites/triage-quality.yaml',
        'guardrails.yaml',
        'intents/support/triage.yaml',
        'liya-project.schema.json',
        'prompts/triage-prompt.yaml',
        'workflows/echo-flow.yaml',
      ].map((p) => p.split('/').join(path.sep)),
    );
    expect(files1.get(path.join('intents', 'support', 'triage.yaml'))).toMatch(/^# yaml-language-server: \$schema=\.\.\/\.\.\/liya-project\.schema\.json\nkind: intent\ndomain: support\nkey: triage\n/);
    expect(files1.get(path.join('agents', 'support-bot.yaml'))).toContain(`Authorization: \${${SECRET_ENV}}`);
    for (const [file, content] of files1) expect(content, file).not.toContain('mcp-secret-value');

    // Without the secret in the environment, B (which has none stored) refuses it, at the agent's file and line.
    const noSecret = await liya(b, ['apply', '--dir', dir1, '--yes']);
    expect(noSecret.code, noSecret.stderr).toBe(1);
    expect(noSecret.stderr).toMatch(/agents\/support-bot\.yaml:\d+:\d+: tools_config\.mcp_servers\[0\]\.headers\.Authorization: the secret/);
    expect((await must(t.api.get('/v1/project', key(b)), 200)).project.domains).toEqual([]);

    const applied = await liya(b, ['apply', '--dir', dir1, '--yes'], { env: { [SECRET_ENV]: SECRET } });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('+ create domain support');
    expect(applied.stdout).toContain('+ create intent support/triage');
    expect(applied.stdout).toMatch(/Deployed: \d+ created, 0 updated, 0 deleted/);
    expect(applied.stdout + applied.stderr).not.toContain('mcp-secret-value');

    const dir2 = await folder('dir2');
    const again = await liya(b, ['export', '--dir', dir2]);
    expect(again.code, again.stderr).toBe(0);
    const files2 = await filesOf(dir2);
    expect([...files2.keys()].sort()).toEqual([...files1.keys()].sort());
    for (const [file, content] of files1) expect(files2.get(file), file).toBe(content);

    // A second apply: nothing to do, no new intent version.
    expect(await intentVersions(b, 'support', 'triage')).toBe(1);
    const second = await liya(b, ['apply', '--dir', dir1, '--yes'], { env: { [SECRET_ENV]: SECRET } });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('No changes');
    expect(await intentVersions(b, 'support', 'triage')).toBe(1);
    // Without the variable, the reference keeps B's stored value: still no change.
    const kept = await liya(b, ['plan', '--dir', dir1]);
    expect(kept.code, kept.stdout + kept.stderr).toBe(0);
    expect(kept.stderr).toContain(`sent as a reference (the server keeps the value it has): ${SECRET_ENV}`);
  });

  it('refuses to export into a folder with project files unless --force, which replaces only what an export writes', async () => {
    const dir = await folder('forced');
    expect((await liya(a, ['export', '--dir', dir])).code).toBe(0);
    await writeFile(path.join(dir, 'notes.md'), 'keep me');
    await writeFile(path.join(dir, 'domains', 'stale.yaml'), 'kind: domain\nkey: stale\ndisplay_name: Stale\n');
    const refused = await liya(a, ['export', '--dir', dir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('already holds project files');
    expect(refused.stderr).toContain('--force');
    const forced = await liya(a, ['export', '--dir', dir, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const files = await filesOf(dir);
    expect(files.get('notes.md')).toBe('keep me');
    expect(files.has(path.join('domains', 'stale.yaml'))).toBe(false);
    expect(files.has(path.join('domains', 'support.yaml'))).toBe(true);
  });
});

describe('plan', () => {
  it('exits 0 without changes, 2 with changes (printed per field), 1 on any error', async () => {
    const dir = await folder('plan');
    expect((await liya(a, ['export', '--dir', dir])).code).toBe(0);
    const none = await liya(a, ['plan', '--dir', dir]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain('No changes: the server matches the project');

    const intentFile = path.join(dir, 'intents', 'support', 'triage.yaml');
    await writeFile(intentFile, (await readFile(intentFile, 'utf8')).replace('prompt_template: "Classify: {{message}}"', 'prompt_template: "Classify carefully: {{message}}"'));
    await writeFile(path.join(dir, 'domains', 'billing.yaml'), 'kind: domain\nkey: billing\ndisplay_name: Billing\n');
    const changes = await liya(a, ['plan', '--dir', dir]);
    expect(changes.code, changes.stderr).toBe(2);
    expect(changes.stdout).toContain('+ create domain billing');
    expect(changes.stdout).toContain('~ update intent support/triage');
    expect(changes.stdout).toContain('~ prompt_template: "Classify: {{message}}" -> "Classify carefully: {{message}}"');
    expect(changes.stdout).toContain('Plan: 1 to create, 1 to update, 0 to delete');
    const json = await liya(a, ['plan', '--dir', dir, '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout).summary).toMatchObject({ create: 1, update: 1, delete: 0 });

    // Errors are 1, never 2: bad flag, no key, bad files, the server's refusal.
    expect((await liya(a, ['plan', '--dir', dir, '--bogus'])).code).toBe(1);
    const noKey = await liya(a, ['plan', '--dir', dir], { env: { LIYA_API_KEY: undefined } });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain('--api-key');
    expect((await liya(a, ['plan', '--dir', path.join(dir, 'nowhere')])).code).toBe(1);
    // A rewritten prompt version (versions are immutable): the server's issue, at the file and line.
    const promptFile = path.join(dir, 'prompts', 'triage-prompt.yaml');
    const prompt = await readFile(promptFile, 'utf8');
    await writeFile(promptFile, prompt.replace('Triage this: {{message}}', 'History rewritten'));
    const refused = await liya(a, ['plan', '--dir', dir]);
    expect(refused.code).toBe(1);
    const line = prompt.split('\n').findIndex((l) => l.includes('Triage this')) + 1;
    expect(refused.stderr).toMatch(new RegExp(`prompts/triage-prompt\\.yaml:(${line}|${line - 1}):\\d+: versions\\[0\\]`));
  });

  it('reports bad files at file:line:column and sends nothing', async () => {
    const dir = await folder('bad');
    await writeFile(path.join(dir, 'syntax.yaml'), 'kind: domain\nkey: [oops\n');
    await writeFile(path.join(dir, 'misspelt.yaml'), 'kind: domain\nkey: misspelt\ndisplay_name: M\nsort_ordr: 1\n');
    await writeFile(path.join(dir, 'type.yaml'), 'kind: domain\nkey: typed\ndisplay_name: T\nis_active: "yes"\n');
    await writeFile(path.join(dir, 'one.yaml'), 'kind: domain\nkey: same\ndisplay_name: One\n');
    await writeFile(path.join(dir, 'two.yaml'), 'kind: domain\nkey: same\ndisplay_name: Two\n');
    await writeFile(path.join(dir, 'kind.yaml'), 'kind: domian\nkey: k\n');
    const run = await liya(a, ['plan', '--dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/\d+ problems in the project files/);
    expect(run.stderr).toMatch(/syntax\.yaml:\d+:\d+: /);
    expect(run.stderr).toMatch(/misspelt\.yaml:4:1: unknown field "sort_ordr"; did you mean "sort_order"\?/);
    expect(run.stderr).toMatch(/type\.yaml:4:12: is_active: must be a boolean, not a string/);
    expect(run.stderr).toMatch(/two\.yaml:2:6: duplicate domain "same": \S*one\.yaml:2:6 defines it too/);
    expect(run.stderr).toMatch(/kind\.yaml:1:7: unknown kind "domian"; did you mean "domain"\?/);
    expect((await liya(a, ['apply', '--dir', dir, '--yes'])).code).toBe(1);
  });
});

describe('apply', () => {
  it('asks for confirmation: without a terminal it needs --yes', async () => {
    const dir = await folder('confirm');
    expect((await liya(a, ['export', '--dir', dir])).code).toBe(0);
    await writeFile(path.join(dir, 'domains', 'extra.yaml'), 'kind: domain\nkey: extra\ndisplay_name: Extra\n');
    const run = await liya(a, ['apply', '--dir', dir], { stdin: 'yes\n' });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('+ create domain extra');
    expect(run.stderr).toContain('--yes');
    expect((await must(t.api.get('/v1/project', key(a)), 200)).project.domains.map((d: { key: string }) => d.key)).toEqual(['support']);
  });

  it('a change the server refuses is reported at its file, and nothing of the deployment is applied', async () => {
    const c = await signupTenant(t.api, { companyName: 'CLI deploy refused' });
    const dir = await folder('refused');
    expect((await liya(a, ['export', '--dir', dir])).code).toBe(0);
    const suiteFile = path.join(dir, 'evals', 'suites', 'triage-quality.yaml');
    // The suite evaluates an intent that exists nowhere.
    await writeFile(suiteFile, (await readFile(suiteFile, 'utf8')).replace('intent: triage', 'intent: missing'));
    const run = await liya(c, ['apply', '--dir', dir, '--yes'], { env: { [SECRET_ENV]: SECRET } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/create eval_suite Triage quality: /);
    expect(run.stderr).toMatch(/evals\/suites\/triage-quality\.yaml:2:1: intent_key: /);
    expect((await must(t.api.get('/v1/project', key(c)), 200)).project.domains).toEqual([]);
  });

  it('a failing gate publishes nothing (the live intent stays); a passing gate deploys', async () => {
    const c = await signupTenant(t.api, { companyName: 'CLI deploy gate' });
    const dir = await folder('gate');
    expect((await liya(a, ['export', '--dir', dir])).code).toBe(0);
    const setup = await liya(c, ['apply', '--dir', dir, '--yes'], { env: { [SECRET_ENV]: SECRET } });
    expect(setup.code, setup.stderr).toBe(0);
    expect(await liveTemplate(c)).toBe('Classify: {{message}}');

    const intentFile = path.join(dir, 'intents', 'support', 'triage.yaml');
    await writeFile(intentFile, (await readFile(intentFile, 'utf8')).replace('prompt_template: "Classify: {{message}}"', 'prompt_template: "Classify v2: {{message}}"'));
    const junit = path.join(tmp, 'reports', 'gate.xml');

    const unknownSuite = await liya(c, ['apply', '--dir', dir, '--yes', '--gate', 'No such suite']);
    expect(unknownSuite.code).toBe(1);
    expect(unknownSuite.stderr).toContain('--gate (0): no eval suite "No such suite"');

    judgeScore = 2;
    const failing = await liya(c, ['apply', '--dir', dir, '--yes', '--gate', SUITE, '--junit', junit]);
    expect(failing.code, failing.stdout + failing.stderr).toBe(1);
    expect(failing.stdout).toContain('~ update intent support/triage');
    expect(failing.stderr).toContain('The gate failed: nothing was published; the live versions are unchanged');
    expect(failing.stderr).toMatch(/Triage quality\s+\S+\s+completed\s+0\/2\s+0\s+0\.0%\s+2\.00\s+no/);
    expect(failing.stderr).toContain('Triage quality: pass rate 0.0% (0/2), below the minimum 100.0%');
    expect(await liveTemplate(c)).toBe('Classify: {{message}}');
    expect(await intentVersions(c, 'support', 'triage')).toBe(1);
    const xml = await readFile(junit, 'utf8');
    expect(xml).toMatch(/<testsuites name="liya apply gate" tests="2" failures="2" errors="0" skipped="0"/);
    expect(xml).toContain('<testsuite name="gate: Triage quality');

    judgeScore = 5;
    const passing = await liya(c, ['apply', '--dir', dir, '--yes', '--gate', SUITE, '--junit', junit]);
    expect(passing.code, passing.stdout + passing.stderr).toBe(0);
    expect(passing.stdout).toMatch(/Triage quality\s+\S+\s+completed\s+2\/2\s+0\s+100\.0%\s+5\.00\s+yes/);
    expect(passing.stdout).toContain('Deployed: 0 created, 1 updated, 0 deleted');
    expect(await liveTemplate(c)).toBe('Classify v2: {{message}}');
    expect(await intentVersions(c, 'support', 'triage')).toBe(2);
    expect(await readFile(junit, 'utf8')).toMatch(/tests="2" failures="0" errors="0"/);
  }, 90_000);
});

describe('secrets only where secrets go', () => {
  it('a reference outside a secret path is refused at file:line and never filled in; one at a secret path is, and the plan says where values are given', async () => {
    const dir = await folder('secret-paths');
    await writeFile(path.join(dir, 'domain.yaml'), 'kind: domain\nkey: ci\ndisplay_name: CI\ndescription: ${LIYA_API_KEY}\n');
    await writeFile(
      path.join(dir, 'workflow.yaml'),
      [
        'kind: workflow',
        'key: notify',
        'name: Notify',
        'steps:',
        '  - id: start',
        '    step_type: trigger',
        '  - id: call',
        '    step_type: action',
        '    action_id: http_request',
        '    config:',
        '      method: POST',
        '      url: https://hooks.example.com/x',
        '      headers:',
        '        Authorization: ${GITHUB_TOKEN}',
        '',
      ].join('\n'),
    );
    const env = { GITHUB_TOKEN: 'ghp_cli-secret-4711' };
    const refused = await liya(b, ['plan', '--dir', dir], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/domain\.yaml:4:\d+: description: \$\{LIYA_API_KEY\} is a secret reference/);
    expect(refused.stdout + refused.stderr).not.toContain(b.apiKey);

    await writeFile(path.join(dir, 'domain.yaml'), 'kind: domain\nkey: ci\ndisplay_name: CI\n');
    const planned = await liya(b, ['plan', '--dir', dir, '--json'], { env });
    expect(planned.code, planned.stderr).toBe(2);
    const plan = JSON.parse(planned.stdout);
    expect(plan.secrets).toEqual([{ kind: 'workflow', key: 'notify', path: 'steps.1.config.headers.Authorization' }]);
    expect(planned.stdout).not.toContain('ghp_cli-secret-4711');
    const text = await liya(b, ['plan', '--dir', dir], { env });
    expect(text.stdout).toContain('1 secret value given, written where it differs from the stored one (a plan never compares secrets): workflow notify steps.1.config.headers.Authorization');
  });
});

describe('export of values nested deeper than a project may be', () => {
  it('names the resource instead of crashing (a value stored before the server limited nesting)', async () => {
    const c = await signupTenant(t.api, { companyName: 'CLI deep export' });
    const created = await must(t.api.post('/v1/evals/datasets', { name: 'Old deep data', cases: [{ input: { text: 'placeholder' } }] }, key(c)), 201);
    const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    await t.sql('update eval_cases set input = $1::jsonb where dataset_id = $2', [`{"old":${nested(2000)}}`, created.dataset.id]);
    const dir = await folder('deep-export');
    const run = await liya(c, ['export', '--dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('eval_dataset Old deep data: cases.0.input.old.a.a… is nested deeper than 97 levels');
    expect(run.stderr).not.toMatch(/RangeError|stack/i);
    expect(await readdir(dir)).toEqual([]);
  });
});
