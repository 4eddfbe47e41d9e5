// `liya intents ...` and `liya run` as a user runs them: a real subprocess (bin/liya.mjs) against a
// real server whose model provider is the fake one.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatValue, SHORT_VALUES } from '../../cli/commands/intents.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';

const BASE = '/dashboard/custom-domains';

let t: TestServer;
let fake: FakeLlm;
let tmp: string;
let configDir: string;
let apiKey: string;
let token: string;
let email: string;
const password = 'correct horse battery';



function liya(args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_API_KEY: apiKey, LIYA_CONFIG_DIR: configDir, LIYA_ADMIN_SECRET: undefined, LIYA_PASSWORD: undefined, LIYA_TIMEOUT: undefined, ...options.env };
  return runLiya(args, { ...options, env });
}

const asOwner = () => ({ headers: bearer(token) });

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test' });
  tmp = await mkdtemp(path.join(os.tmpdir(), 'liya-cli-intents-'));
  configDir = path.join(tmp, 'config');

  email = `cli-intents-${randomBytes(4).toString('hex')}@example.test`;
  const signup = await t.api.post('/auth/signup', { companyName: 'CLI Intents Co', email, password });
  expect(signup.status, signup.text).toBe(201);
  ({ apiKey, token } = signup.body.data as { apiKey: string; token: string });

  // A custom intent with three versions: created, then two saved changes.
  const domain = await t.api.post(BASE, { domain_key: 'support', display_name: 'Support' }, asOwner());
  expect(domain.status, domain.text).toBe(201);
  const intent = await t.api.post(
    `${BASE}/support/intents`,
    {
      intent_key: 'greet',
      display_name: 'Greet',
      prompt_template: 'Say {{input.text}}',
      output_schema: { type: 'object', required: ['answer'], properties: { answer: { type: 'string' } } },
    },
    asOwner(),
  );
  expect(intent.status, intent.text).toBe(201);
  const guarded = await t.api.post(
    `${BASE}/support/intents`,
    { intent_key: 'guarded', display_name: 'Guarded', prompt_template: 'Say {{input.text}}', guardrails_config: { blocked_terms: ['forbidden'] } },
    asOwner(),
  );
  expect(guarded.status, guarded.text).toBe(201);
  for (const change of [{ description: 'x' }, { prompt_template: 'Say more {{input.text}}' }]) {
    const res = await t.api.patch(`${BASE}/support/intents/greet`, change, asOwner());
    expect(res.status, res.text).toBe(200);
  }
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('diff values', () => {
  it('text keeps its lines, JSON is pretty-printed, long values are cut', () => {
    expect(formatValue(null)).toEqual(['(none)']);
    expect(formatValue('a\nb')).toEqual(['a', 'b']);
    expect(formatValue({ type: 'object' })).toEqual(['{', '  "type": "object"', '}']);
    const long = formatValue(Array.from({ length: 30 }, (_, i) => `line ${i} ${'x'.repeat(300)}`).join('\n'));
    expect(long).toHaveLength(SHORT_VALUES.maxLines + 1);
    expect(long[0]).toHaveLength(SHORT_VALUES.maxLineLength);
    expect(long[0].endsWith('…')).toBe(true);
    expect(long.at(-1)).toBe('… 18 more lines (--full shows everything)');
  });
});

describe('liya intents list and liya run (API key)', () => {
  it('lists intents, runs one from a file and from stdin, and reports bad input, a missing key and bad JSON', async () => {
    // career-path answers are cached: each successful run gets its own input so all reach the model.
    const inputFile = path.join(tmp, 'input.json');
    const inputFileJson = path.join(tmp, 'input-json.json');
    const badInputFile = path.join(tmp, 'bad-input.json');
    const brokenFile = path.join(tmp, 'broken.json');
    const arrayFile = path.join(tmp, 'array.json');
    await writeFile(inputFile, JSON.stringify({ user_id: 'u', current_role: 'Engineer' }));
    await writeFile(inputFileJson, JSON.stringify({ user_id: 'u', current_role: 'Data engineer' }));
    await writeFile(badInputFile, JSON.stringify({ current_role: 'Engineer' }));
    await writeFile(brokenFile, '{"user_id": "u",');
    await writeFile(arrayFile, '[{"user_id": "u"}]');
    const wrongKey = `svc_${'A'.repeat(43)}`;

    const [table, json, run, runJson, runStdin, invalid, noKey, broken, array, missingFile, unknownKey, blocked] = await Promise.all([
      liya(['intents', 'list', '--domain', 'hiring']),
      liya(['intents', 'list', '--domain', 'hiring', '--json']),
      liya(['run', 'hiring', 'career-path', '--input', inputFile]),
      liya(['run', 'hiring', 'career-path', '--input', inputFileJson, '--json']),
      liya(['run', 'hiring', 'career-path', '--input', '-'], { stdin: JSON.stringify({ user_id: 'u', current_role: 'Platform engineer' }) }),
      liya(['run', 'hiring', 'career-path', '--input', badInputFile]),
      liya(['run', 'hiring', 'career-path', '--input', inputFile], { env: { LIYA_API_KEY: undefined } }),
      liya(['run', 'hiring', 'career-path', '--input', brokenFile]),
      liya(['run', 'hiring', 'career-path', '--input', arrayFile]),
      liya(['run', 'hiring', 'career-path', '--input', path.join(tmp, 'missing.json')]),
      liya(['run', 'hiring', 'career-path', '--input', inputFile, '--api-key', wrongKey]),
      liya(['run', 'support', 'guarded', '--input', '-'], { stdin: JSON.stringify({ user_id: 'u', text: 'a forbidden word' }) }),
    ]);

    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/INTENT\s+NAME\s+ENDPOINT/);
    const rows = table.stdout.split('\n').filter((l) => l.includes('POST /v1/hiring/'));
    expect(rows).toHaveLength(12);
    expect(rows.find((l) => l.startsWith('career-path '))).toContain('POST /v1/hiring/career-path');
    expect(table.stdout).toContain('12 intents in hiring.');

    expect(json.code).toBe(0);
    const listed = JSON.parse(json.stdout) as { intents: { intent_key: string; input_schema: unknown }[] };
    expect(listed.intents).toHaveLength(12);
    expect(listed.intents.map((i) => i.intent_key)).toContain('career-path');

    expect(run.code, run.stderr).toBe(0);
    const output = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(output).toHaveProperty('paths');
    expect(run.stderr).toMatch(/hiring\/career-path v\d+ · model \S+ · \d+ tokens · \$[\d.e-]+ · \d+ ms · (not )?cached · session \S+/);

    expect(runJson.code, runJson.stderr).toBe(0);
    const body = JSON.parse(runJson.stdout);
    expect(body).toMatchObject({ success: true, data: { output: expect.any(Object), session_id: expect.any(String) } });
    expect(body.metadata.model_used).toEqual(expect.any(String));
    expect(body.metadata).toMatchObject({ domain: 'hiring', intent: 'career-path' });
    expect(body.usage).toBeDefined();

    expect(runStdin.code, runStdin.stderr).toBe(0);
    expect(JSON.parse(runStdin.stdout)).toHaveProperty('paths');

    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toContain('INVALID_INPUT (HTTP 400)');
    expect(invalid.stderr).toContain('--input (user_id):');

    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');
    expect(noKey.stderr).toContain('LIYA_API_KEY');

    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(`The --input from ${brokenFile} is not valid JSON`);
    expect(array.code).toBe(2);
    expect(array.stderr).toContain('must be a JSON object, not an array');
    expect(missingFile.code).toBe(2);
    expect(missingFile.stderr).toContain('no such file');

    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).toMatch(/INVALID_API_KEY|API_KEY/);
    expect(unknownKey.stdout + unknownKey.stderr).not.toContain(wrongKey);

    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toContain('GUARDRAIL_BLOCKED (HTTP 422)');
    expect(blocked.stderr).toMatch(/• fallback: \S+/);

    // Every successful run reached the model; the failed ones did not.
    expect(fake.chatRequests().length).toBeGreaterThanOrEqual(3);

    // --session continues the conversation of the first run.
    const again = await liya(['run', 'hiring', 'career-path', '--input', inputFile, '--session', body.data.session_id, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).data.session_id).toBe(body.data.session_id);
  }, 90_000);
});

describe('liya intents versions, diff and restore (dashboard login)', () => {
  it('needs a login; then lists, compares and restores versions', async () => {
    const [notLoggedIn, login] = await Promise.all([
      liya(['intents', 'versions', 'support', 'greet'], { env: { LIYA_CONFIG_DIR: path.join(tmp, 'nobody') } }),
      liya(['login', '--email', email, '--password', password]),
    ]);
    expect(notLoggedIn.code).toBe(2);
    expect(notLoggedIn.stderr).toContain('needs a dashboard login');
    expect(notLoggedIn.stderr).toContain(`liya login --url ${t.url}`);
    expect(login.code, login.stderr).toBe(0);

    const [versions, versionsJson, diff, diffJson, otherServer, badVersion] = await Promise.all([
      liya(['intents', 'versions', 'support', 'greet']),
      liya(['intents', 'versions', 'support', 'greet', '--json']),
      liya(['intents', 'diff', 'support', 'greet', '1', '3']),
      liya(['intents', 'diff', 'support', 'greet', '1', '3', '--json']),
      liya(['intents', 'versions', 'support', 'greet', '--url', 'http://127.0.0.1:1']),
      liya(['intents', 'restore', 'support', 'greet', 'latest']),
    ]);

    expect(versions.stderr).toBe('');
    expect(versions.code).toBe(0);
    expect(versions.stdout).toMatch(/VERSION\s+CHANGE\s+CHANGED FIELDS\s+BY\s+CREATED/);
    const rows = versions.stdout.split('\n').filter((l) => /^\d+ /.test(l));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/^3 \(current\)\s+update\s+prompt_template/);
    expect(rows[2]).toMatch(/^1\s+create/);
    expect(JSON.parse(versionsJson.stdout).versions.map((v: { version_number: number }) => v.version_number)).toEqual([3, 2, 1]);

    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toContain('support/greet: version 1 → 3');
    expect(diff.stdout).toMatch(/description\n\s+before\s+\(none\)\n\s+after\s+x\n/);
    expect(diff.stdout).toMatch(/prompt_template\n\s+before\s+Say \{\{input\.text\}\}\n\s+after\s+Say more \{\{input\.text\}\}/);
    const changes = JSON.parse(diffJson.stdout).changes as { field: string }[];
    expect(changes.map((c) => c.field).sort()).toEqual(['description', 'prompt_template']);

    expect(otherServer.code).toBe(2);
    expect(otherServer.stderr).toContain(`You are logged in to ${t.url}, not http://127.0.0.1:1`);
    expect(badVersion.code).toBe(2);
    expect(badVersion.stderr).toContain('Not an integer');

    const restore = await liya(['intents', 'restore', 'support', 'greet', '1']);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain('Restored version 1 of support/greet as version 4; current_version is now 4');
    const live = await t.api.get(`${BASE}/support/intents/greet`, asOwner());
    expect(live.body.data.intent).toMatchObject({ current_version: 4, prompt_template: 'Say {{input.text}}', description: null });
    const history = await t.api.get(`${BASE}/support/intents/greet/versions`, asOwner());
    expect(history.body.data.versions[0]).toMatchObject({ version_number: 4, change_type: 'restore', restored_from_version: 1 });
  }, 120_000);
});
