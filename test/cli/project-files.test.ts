// The project folder format of `liya export` / `plan` / `apply`, without a server: the committed JSON
// Schema matches the project schemas, a folder reads into the project document, every problem is
// reported at file:line:column, an export is stable and reads back as what was exported, and the
// plan, gate and secret helpers.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DeploymentDto, GateResult, Plan } from '../../server/deploys/deploys.schemas.js';
import { projectFileSchemaText, PROJECT_FILE_SCHEMA_PATH } from '../../server/deploys/project-file-schema.js';
import { KIND_LIST as SERVER_KIND_LIST, projectSchema, SECRET_REFERENCE } from '../../server/deploys/project.schemas.js';
import { projectRoot } from '../../scripts/build.mjs';
import { clearManagedFiles, existingProjectFiles, renderProjectFiles, slugOf, writeProjectFiles } from '../../cli/project/export-files.js';
import { fileSchema } from '../../cli/project/file-schema.js';
import { deploymentLine, gateEnded } from '../../cli/project/follow-deployment.js';
import { buildGateJUnit, gateFailureLine, gateRows } from '../../cli/project/gate-report.js';
import { formatIssue, loadProject, locateServerIssue, ProjectFilesError, type FileIssue } from '../../cli/project/load-project.js';
import { planHasChanges, planLines, planSummary, untrackedNote } from '../../cli/project/plan-text.js';
import { KIND_LIST, type ProjectDocument } from '../../cli/project/project-kinds.js';
import { newResolvedSecrets, redactSecrets, resolveSecrets, secretReferenceName } from '../../cli/project/secrets.js';

let tmp: string;
let n = 0;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'liya-project-files-'));
});

afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** A fresh folder holding `files` (relative path -> text). */
async function folder(files: Record<string, string>): Promise<string> {
  const dir = path.join(tmp, `p${++n}`);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The problems loading `dir` reports, as `file:line:column: message` with the file relative to `dir`. */
async function problems(dir: string): Promise<string[]> {
  try {
    await loadProject(dir);
  } catch (err) {
    expect(err).toBeInstanceOf(ProjectFilesError);
    return (err as ProjectFilesError).issues.map((i: FileIssue) => formatIssue({ ...i, file: path.relative(dir, path.resolve(i.file)) }));
  }
  throw new Error('the folder loaded without problems');
}

const DOMAIN = 'kind: domain\nkey: support\ndisplay_name: Support\n';
const INTENT = [
  'kind: intent',
  'domain: support',
  'key: triage',
  'display_name: Triage',
  'prompt_template: |',
  '  Sort this ticket: {{message}}',
  'output_schema:',
  '  type: object',
  '  properties:',
  '    queue: { type: string }',
  '',
].join('\n');

/** A project with every kind and every field, as GET /v1/project answers (canonical). */
function canonicalProject(): ProjectDocument {
  const project = projectSchema.parse({
    domains: [{ key: 'support', display_name: 'Support', description: 'Tickets: "quoted", #hash and: colons' }],
    prompts: [{ key: 'tone', name: 'Tone', versions: [{ template: 'Be kind.' }, { template: 'Be kind\nand brief.\n', note: 'v2' }] }],
    collections: [{ key: 'faq', label: 'FAQ', domain_keys: ['support'], tags: ['a'] }],
    intents: [
      {
        domain: 'support',
        key: 'triage',
        display_name: 'Triage',
        prompt_template: 'Sort this ticket:\n{{message}}\n',
        prompt_binding: null,
        output_schema: { type: 'object', properties: { queue: { type: 'string' } } },
        retrieval_config: { enabled: true, collections: ['faq'], top_k: 3 },
        sort_order: 2,
      },
      { domain: 'support', key: 'a-first', display_name: 'First', prompt_template: 'x' },
    ],
    guardrails: [{ key: 'tenant', config: null }],
    workflows: [
      {
        key: 'route',
        name: 'Route',
        steps: [
          { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' }, on_success: 'done' },
          { id: 'done', step_type: 'end', config: { output: '{{input}}' } },
        ],
      },
    ],
    agents: [
      {
        key: 'helper',
        name: 'Helper',
        goal: 'Help',
        intents: ['support/triage'],
        tools_config: { mcp_servers: [{ name: 'crm', url: 'https://mcp.example.com/mcp', headers: { Authorization: '${CRM_TOKEN}' } }] },
      },
    ],
    eval_datasets: [
      { key: 'Triage cases', cases: [{ input: { message: 'refund' }, expected_output: { queue: 'billing' } }, { input: {}, message: 'hi', expected_output: 'hello', notes: 'n' }] },
      { key: 'triage cases!', cases: [] },
    ],
    eval_suites: [{ key: 'Triage gate', domain: 'support', intent: 'triage', dataset: 'Triage cases', judge_rubric: 'Right queue?' }],
  });
  return JSON.parse(JSON.stringify(project)) as ProjectDocument;
}

describe('the project file schema', () => {
  it('is committed as generated from the project schemas (regenerate: node bin/run-ts.mjs server/deploys/project-file-schema.ts)', async () => {
    const committed = await readFile(path.join(projectRoot, PROJECT_FILE_SCHEMA_PATH), 'utf8');
    expect(committed).toBe(projectFileSchemaText());
    expect(fileSchema().text).toBe(committed);
    // The build copies it beside the compiled CLI, which reads it from there.
    expect(await readFile(path.join(inject('liyaDist'), PROJECT_FILE_SCHEMA_PATH), 'utf8')).toBe(committed);
  });

  it('has one definition per kind, each with its kind constant and no other fields allowed', () => {
    const root = fileSchema().root as { oneOf: { $ref: string }[]; definitions: Record<string, { properties: Record<string, { const?: string }>; additionalProperties?: boolean }> };
    expect(root.oneOf).toHaveLength(Object.keys(KIND_LIST).length);
    for (const { $ref } of root.oneOf) {
      const definition = root.definitions[$ref.replace('#/definitions/', '')];
      expect(definition.additionalProperties).toBe(false);
      expect(Object.keys(definition.properties)[0]).toBe('kind');
    }
  });

  it('the CLI\'s copies of the kinds and of the secret reference pattern are the server\'s', () => {
    expect(KIND_LIST).toEqual(SERVER_KIND_LIST);
    for (const value of ['${A}', '${API_KEY_2}', '${_X}', '${a}', '$API', '${A B}', ' ${A}', '${A}x', `\${${'A'.repeat(129)}}`]) {
      expect(secretReferenceName(value) !== undefined, value).toBe(SECRET_REFERENCE.test(value));
    }
  });
});

describe('loading a folder', () => {
  it('reads every YAML file wherever it is, skips dot-folders and node_modules, and reads cases files', async () => {
    const dir = await folder({
      'a/b/domain.yml': DOMAIN,
      'intent.yaml': INTENT,
      '.hidden/x.yaml': 'not: [valid',
      'node_modules/x.yaml': 'kind: nope',
      'README.md': '# not read',
      'evals/ds.yaml': 'kind: eval_dataset\nkey: Cases\ncases_file: cases.jsonl\n',
      'evals/cases.jsonl': '{"input": {"message": "a"}, "expected_output": "x"}\n\n{"input": {}, "message": "b"}\n',
      'evals/csv.yaml': 'kind: eval_dataset\nkey: From CSV\ncases_file: data/cases.csv\n',
      'evals/data/cases.csv': 'input,message,expected_output,notes\n"{""message"": ""hi""}",,"{""queue"": ""billing""}",\n{},"two\nlines",plain text,note\n',
      'guard.yaml': 'kind: guardrails\nconfig: null\n',
    });
    const loaded = await loadProject(dir);
    expect(loaded.files).toBe(5);
    expect(loaded.project.domains).toEqual([{ key: 'support', display_name: 'Support' }]);
    expect(loaded.project.intents[0]).toMatchObject({ domain: 'support', key: 'triage', prompt_template: 'Sort this ticket: {{message}}\n', output_schema: { type: 'object' } });
    expect(loaded.project.intents[0]).not.toHaveProperty('kind');
    expect(loaded.project.guardrails).toEqual([{ config: null }]);
    const byKey = Object.fromEntries(loaded.project.eval_datasets.map((d) => [d.key, d]));
    expect(byKey.Cases).toEqual({ key: 'Cases', cases: [{ input: { message: 'a' }, expected_output: 'x' }, { input: {}, message: 'b' }] });
    expect(byKey['From CSV'].cases).toEqual([
      { input: { message: 'hi' }, message: null, expected_output: { queue: 'billing' }, notes: null },
      { input: {}, message: 'two\nlines', expected_output: 'plain text', notes: 'note' },
    ]);
    expect(byKey['From CSV']).not.toHaveProperty('cases_file');
  });

  it('reports YAML syntax errors, misspelt fields, wrong types, unknown kinds and duplicate keys at file:line:column', async () => {
    const dir = await folder({
      'syntax.yaml': 'kind: domain\nkey: [unclosed\n',
      'twice.yaml': 'kind: domain\nkey: a\nkey: b\ndisplay_name: A\n',
      'misspelt.yaml': 'kind: intent\ndomain: support\nkey: triage2\ndisplay_name: T\npromt_template: hi\n',
      'type.yaml': 'kind: domain\nkey: typed\ndisplay_name: Typed\nsort_order: "3"\ndescription: 7\n',
      'unknown.yaml': '# a comment\nkind: intnet\nkey: x\n',
      'nokind.yaml': 'key: x\n',
      'empty.yaml': '',
      'domains/one.yaml': DOMAIN,
      'domains/again.yaml': `# the same domain\n${DOMAIN}`,
      'nested.yaml': 'kind: workflow\nkey: wf\nname: WF\nsteps:\n  - id: start\n    step_type: trigger\n    on_sucess: end\n  - id: 9bad\n    step_type: nope\n',
    });
    const found = await problems(dir);
    const expectOne = (prefix: string, pattern: RegExp) => expect(found.filter((p) => p.startsWith(prefix) && pattern.test(p)), `${prefix} ${pattern} in\n${found.join('\n')}`).toHaveLength(1);
    expectOne('syntax.yaml:', /^syntax\.yaml:\d+:\d+: /);
    expectOne('twice.yaml:3:1:', /unique/i);
    expectOne('misspelt.yaml:5:1:', /: unknown field "promt_template"; did you mean "prompt_template"\?$/);
    expectOne('misspelt.yaml:1:1:', /: missing field "prompt_template"$/);
    expectOne('type.yaml:4:13:', /sort_order: must be an integer, not a string/);
    expectOne('type.yaml:5:14:', /description: must be a string or null, not an integer/);
    expectOne('unknown.yaml:2:7:', /unknown kind "intnet"; did you mean "intent"\?/);
    expectOne('nokind.yaml:1:1:', /missing field "kind"/);
    expectOne('empty.yaml:1:1:', /the file is empty/);
    expectOne('domains/one.yaml:2:6:', /duplicate domain "support": \S*domains\/again\.yaml:3:6 defines it too/);
    expectOne('nested.yaml:7:5:', /steps\[0\]: unknown field "on_sucess"; did you mean "on_success"\?/);
    expectOne('nested.yaml:8:9:', /steps\[1\]\.id: must match the pattern/);
    expectOne('nested.yaml:9:16:', /steps\[1\]\.step_type: must be one of: "trigger"/);
  });

  it('reports a missing cases file, bad JSON Lines and bad CSV rows at their file and line', async () => {
    const dir = await folder({
      'missing.yaml': 'kind: eval_dataset\nkey: Missing\ncases_file: nowhere.jsonl\n',
      'both.yaml': 'kind: eval_dataset\nkey: Both\ncases: []\ncases_file: x.jsonl\n',
      'bad.yaml': 'kind: eval_dataset\nkey: Bad\ncases_file: bad.jsonl\n',
      'bad.jsonl': '{"input": {}}\n{"input": \n[1]\n{"input": "text", "extra": 1}\n',
      'badcsv.yaml': 'kind: eval_dataset\nkey: Bad CSV\ncases_file: bad.csv\n',
      'bad.csv': 'input,message\n{},fine\n{oops},broken\n',
      'cols.yaml': 'kind: eval_dataset\nkey: Columns\ncases_file: cols.csv\n',
      'cols.csv': 'input,expected,notes\n{},x,y\n',
    });
    const found = await problems(dir);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^missing\.yaml:3:13: cases_file: .*nowhere\.jsonl does not exist$/),
        'both.yaml:1:1: needs exactly one of the fields "cases", "cases_file"',
        expect.stringMatching(/^bad\.jsonl:2:1: not JSON: /),
        expect.stringMatching(/^bad\.jsonl:3:1: each line must be one case/),
        'bad.jsonl:4:1: input: must be a mapping, not a string',
        expect.stringMatching(/^bad\.jsonl:4:1: unknown field "extra"/),
        expect.stringMatching(/^bad\.csv:3:1: input: not JSON: /),
        expect.stringMatching(/^cols\.csv:1:1: unknown column "expected"/),
      ]),
    );
  });

  it('fills in `${NAME}` secrets from the environment when set, and leaves the reference otherwise', async () => {
    const dir = await folder({
      'agent.yaml': [
        'kind: agent',
        'key: helper',
        'name: Helper',
        'goal: Help with ${NOT_A_REFERENCE} text',
        'tools_config:',
        '  mcp_servers:',
        '    - name: crm',
        '      url: https://mcp.example.com/mcp',
        '      headers:',
        '        Authorization: ${CRM_TOKEN}',
        '        X-Other: ${UNSET_TOKEN}',
        '        X-Empty: ${EMPTY_TOKEN}',
        '',
      ].join('\n'),
    });
    const loaded = await loadProject(dir, { CRM_TOKEN: 'Bearer s3cret-value', EMPTY_TOKEN: '' });
    const headers = (loaded.project.agents[0].tools_config as { mcp_servers: { headers: Record<string, string> }[] }).mcp_servers[0].headers;
    expect(headers).toEqual({ Authorization: 'Bearer s3cret-value', 'X-Other': '${UNSET_TOKEN}', 'X-Empty': '${EMPTY_TOKEN}' });
    expect(loaded.project.agents[0].goal).toBe('Help with ${NOT_A_REFERENCE} text');
    expect([...loaded.secrets.values]).toEqual(['Bearer s3cret-value']);
    expect([...loaded.secrets.unset].sort()).toEqual(['EMPTY_TOKEN', 'UNSET_TOKEN']);
    expect(redactSecrets('header "Bearer s3cret-value" and "Bearer s3cret-value"', loaded.secrets.values)).toBe('header "(secret)" and "(secret)"');

    // Filled in only at a declared secret path; anywhere else left as it is, and reported.
    const found = newResolvedSecrets();
    const misplaced: { path: (string | number)[]; value: string }[] = [];
    const where = { kind: 'agent', patterns: [{ kind: 'agent', path: 'a.*' }], misplaced };
    expect(resolveSecrets({ a: ['${X}', { b: '${Y}' }], c: '${X}' }, { X: 'x-value' }, found, where)).toEqual({ a: ['x-value', { b: '${Y}' }], c: '${X}' });
    expect(misplaced).toEqual([{ path: ['a', 1, 'b'], value: '${Y}' }, { path: ['c'], value: '${X}' }]);
  });

  it('maps the server\'s issue paths back to the file and the line of the field, or the line of a case', async () => {
    const dir = await folder({
      'domain.yaml': DOMAIN,
      'intent.yaml': INTENT,
      'ds.yaml': 'kind: eval_dataset\nkey: Cases\ncases_file: cases.jsonl\n',
      'cases.jsonl': '{"input": {}}\n\n{"input": {"x": 1}}\n',
    });
    const loaded = await loadProject(dir);
    const rel = (at: { file: string } | null) => at && { ...at, file: path.relative(dir, path.resolve(at.file)) };
    expect(rel(locateServerIssue(loaded, 'project.intents.0.prompt_template'))).toEqual({ file: 'intent.yaml', line: 5, column: 18, field: 'prompt_template' });
    expect(rel(locateServerIssue(loaded, 'project.intents.0.output_schema.properties.queue'))).toEqual({ file: 'intent.yaml', line: 10, column: 12, field: 'output_schema.properties.queue' });
    // A field the file leaves out: the resource's first line.
    expect(rel(locateServerIssue(loaded, 'project.intents.0.retrieval_config'))).toMatchObject({ file: 'intent.yaml', line: 1 });
    expect(rel(locateServerIssue(loaded, 'project.eval_datasets.0.cases.1.input'))).toEqual({ file: 'cases.jsonl', line: 3, column: 1, field: 'input' });
    expect(locateServerIssue(loaded, 'project.agents.0.name')).toBeNull();
    expect(locateServerIssue(loaded, 'gate.0')).toBeNull();
  });

  it('refuses a folder without project files', async () => {
    const dir = await folder({ 'README.md': 'nothing' });
    await expect(loadProject(dir)).rejects.toThrow(/holds no project files/);
  });
});

describe('an export', () => {
  it('is deterministic, names files by key (datasets and suites by a slug of the name), and reads back as the project', async () => {
    const project = canonicalProject();
    const files = renderProjectFiles(project);
    // Reversed lists and reordered keys give the same files.
    const shuffled = Object.fromEntries(Object.entries(project).reverse().map(([k, list]) => [k, [...list].reverse().map((r) => Object.fromEntries(Object.entries(r).reverse()))]));
    expect(renderProjectFiles(shuffled as ProjectDocument)).toEqual(files);
    expect(files.map((f) => f.path)).toEqual([
      'agents/helper.yaml',
      'collections/faq.yaml',
      'domains/support.yaml',
      'evals/datasets/triage-cases-2.jsonl',
      'evals/datasets/triage-cases-2.yaml',
      'evals/datasets/triage-cases.jsonl',
      'evals/datasets/triage-cases.yaml',
      'evals/suites/triage-gate.yaml',
      'guardrails.yaml',
      'intents/support/a-first.yaml',
      'intents/support/triage.yaml',
      'liya-project.schema.json',
      'prompts/tone.yaml',
      'workflows/route.yaml',
    ]);
    const text = (p: string) => files.find((f) => f.path === p)!.content;
    expect(text('intents/support/triage.yaml')).toMatch(/^# yaml-language-server: \$schema=\.\.\/\.\.\/liya-project\.schema\.json\nkind: intent\ndomain: support\nkey: triage\ndisplay_name: Triage\n/);
    expect(text('guardrails.yaml')).toMatch(/^# yaml-language-server: \$schema=\.\/liya-project\.schema\.json\nkind: guardrails\nkey: tenant\nconfig: null\n$/);
    expect(text('intents/support/triage.yaml')).toContain('prompt_template: |\n  Sort this ticket:\n  {{message}}\n');
    expect(text('evals/datasets/triage-cases.yaml')).toMatch(/\ncases_file: triage-cases\.jsonl\n$/);
    expect(text('evals/datasets/triage-cases.jsonl')).toBe(
      '{"input":{"message":"refund"},"message":null,"expected_output":{"queue":"billing"},"notes":null}\n{"input":{},"message":"hi","expected_output":"hello","notes":"n"}\n',
    );
    expect(text('evals/datasets/triage-cases-2.jsonl')).toBe('');
    expect(text('agents/helper.yaml')).toContain('Authorization: ${CRM_TOKEN}');

    const dir = path.join(tmp, `export${++n}`);
    await writeProjectFiles(dir, files);
    const loaded = await loadProject(dir, {});
    // The folder is read in file order; the lists' order means nothing.
    const sorted = (p: unknown) => Object.fromEntries(Object.entries(projectSchema.parse(p)).map(([k, list]) => [k, [...(list as { key: string; domain?: string }[])].sort((a, b) => `${a.domain}/${a.key}`.localeCompare(`${b.domain}/${b.key}`))]));
    expect(sorted(loaded.project)).toEqual(sorted(project));
    expect(renderProjectFiles(JSON.parse(JSON.stringify(projectSchema.parse(loaded.project))))).toEqual(files);
  });

  it('slugs and --force touch only what an export writes', async () => {
    expect(slugOf('Triage: Cases (v2) – Ünïcode!', 'x')).toBe('triage-cases-v2-unicode');
    expect(slugOf('!!!', 'dataset')).toBe('dataset');
    const dir = await folder({ 'intents/old/x.yaml': INTENT, 'guardrails.yaml': 'kind: guardrails\n', 'notes.md': 'keep', 'other/keep.yaml': DOMAIN, 'evals/README.md': 'keep' });
    expect(await existingProjectFiles(dir)).toEqual(['guardrails.yaml', path.join('intents', 'old', 'x.yaml'), path.join('other', 'keep.yaml')]);
    await clearManagedFiles(dir);
    expect(await existingProjectFiles(dir)).toEqual([path.join('other', 'keep.yaml')]);
    expect(await readFile(path.join(dir, 'notes.md'), 'utf8')).toBe('keep');
    expect(await readFile(path.join(dir, 'evals', 'README.md'), 'utf8')).toBe('keep');
  });
});

describe('plan and gate output', () => {
  const plan: Plan = {
    changes: [
      { kind: 'domain', key: 'support', action: 'create', fields: [{ path: 'key', change: 'added', after: 'support' }] },
      {
        kind: 'intent',
        key: 'support/triage',
        action: 'update',
        fields: [
          { path: 'prompt_template', change: 'changed', before: 'old', after: 'x'.repeat(200) },
          { path: 'output_schema.properties.queue', change: 'added', after: { type: 'string' } },
          { path: 'description', change: 'removed', before: 'gone' },
          { path: 'tools_config.mcp_servers.0.headers.Authorization', change: 'changed', before: '(secret)', after: 'Bearer s3cret-value' },
        ],
      },
      { kind: 'agent', key: 'old', action: 'delete', fields: [] },
    ],
    summary: { create: 1, update: 1, delete: 1, unchanged: 4 },
    untracked: [{ kind: 'workflow', key: 'legacy' }],
    secrets: [],
    digest: 'f'.repeat(64),
  };

  it('prints a line per resource, the changed fields of an update, and a summary; secrets never show', () => {
    const lines = planLines(plan, new Set(['Bearer s3cret-value'])).map((l) => `${l.kind === 'field' ? '    ' : ''}${l.sign} ${l.text}`);
    expect(lines).toEqual([
      '+ create domain support',
      '~ update intent support/triage',
      `    ~ prompt_template: "old" -> "${'x'.repeat(78)}…`,
      '    + output_schema.properties.queue: {"type":"string"}',
      '    - description: "gone"',
      '    ~ tools_config.mcp_servers.0.headers.Authorization: (secret) -> "(secret)"',
      '- delete agent old',
    ]);
    expect(planSummary(plan)).toBe('Plan: 1 to create, 1 to update, 1 to delete, 4 unchanged.');
    expect(planHasChanges(plan)).toBe(true);
    expect(untrackedNote(plan, false)).toBe('1 resource on the server is not in the project and stays (--prune deletes them): workflow legacy');
    expect(untrackedNote(plan, true)).toBeNull();
    const none: Plan = { changes: [], summary: { create: 0, update: 0, delete: 0, unchanged: 3 }, untracked: [], secrets: [], digest: '0'.repeat(64) };
    expect(planSummary(none)).toBe('No changes: the server matches the project (3 resources).');
    expect(planHasChanges(none)).toBe(false);
  });

  it('shows the gate per suite and writes it as JUnit', () => {
    const gate: GateResult[] = [
      { suite: 'Good <suite>', run_id: 'r1', model: null, status: 'completed', progress: 100, cases_total: 2, cases_passed: 2, cases_errored: 0, pass_rate: 1, mean_score: 5, passed: true },
      { suite: 'Bad', run_id: 'r2', model: null, status: 'completed', progress: 100, cases_total: 2, cases_passed: 1, cases_errored: 0, pass_rate: 0.5, mean_score: 3, passed: false },
      { suite: 'Broken', run_id: 'r3', model: null, status: 'failed', progress: 40, cases_total: 2, cases_passed: 0, cases_errored: 0, pass_rate: null, mean_score: null, passed: false },
    ];
    expect(gateRows(gate)).toEqual([
      ['Good <suite>', 'r1', 'completed', '2/2', '0', '100.0%', '5.00', 'yes'],
      ['Bad', 'r2', 'completed', '1/2', '0', '50.0%', '3.00', 'no'],
      ['Broken', 'r3', 'failed', '0/2', '0', '—', '—', 'no'],
    ]);
    const xml = buildGateJUnit(gate.map((g) => ({ gate: g })));
    expect(xml).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="liya apply gate" tests="3" failures="1" errors="1" skipped="0" time="0\.000">\n/);
    expect(xml).toContain('<testsuite name="Good &lt;suite&gt; (run r1)"');
    expect(xml.match(/<testsuite /g)).toHaveLength(3);

    const deployment = { id: 'd1', status: 'gating', progress: 50, stage: 'running the gate', gate } as unknown as DeploymentDto;
    expect(gateEnded(deployment)).toBe(true);
    expect(gateEnded({ ...deployment, gate: [{ ...gate[0], status: 'running', passed: null }] })).toBe(false);
    expect(deploymentLine({ ...deployment, gate: [gate[1]] })).toBe('gating · running the gate · 50% · Bad: completed 100% · 1/2 passed · passed no');
  });

  it('names the model of each run when the gate runs every model of a chain', () => {
    const run = (model: string, passed: boolean): GateResult => ({
      suite: 'Tags', run_id: `r-${model}`, model, status: 'completed', progress: 100, cases_total: 2, cases_passed: passed ? 2 : 0, cases_errored: 0, pass_rate: passed ? 1 : 0, mean_score: passed ? 5 : 1, passed,
    });
    const gate = [run('gpt-4o-mini', true), run('backup/fake-model', false)];
    expect(gateRows(gate).map((row) => [row[0], row[7]])).toEqual([['Tags (gpt-4o-mini)', 'yes'], ['Tags (backup/fake-model)', 'no']]);
    expect(gateFailureLine(gate[1], 1)).toBe('Tags (backup/fake-model): pass rate 0.0% (0/2), below the minimum 100.0%');
    expect(buildGateJUnit(gate.map((g) => ({ gate: g })))).toContain('<testsuite name="Tags (backup/fake-model) (run r-backup/fake-model)"');
    const deployment = { id: 'd1', status: 'gate_failed', progress: 100, stage: null, gate } as unknown as DeploymentDto;
    expect(deploymentLine(deployment)).toContain('Tags (backup/fake-model): completed 100% · 0/2 passed · passed no');
  });
});
