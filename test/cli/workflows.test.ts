// `liya workflows ...` as a user runs it: a real subprocess (bin/liya.mjs) against a real server;
// `workflows run --stream` reads the streaming endpoint (Server-Sent Events).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { successorsText } from '../../cli/commands/workflows.js';
import { traceLine, workflowRunSummary } from '../../cli/workflow-trace.js';
import { bearer } from '../support/client.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

let t: TestServer;
let a: SignedUpTenant;
let dir: string;
/** A web service whose /slow answers only when released: a step that takes as long as the test wants. */
let web: http.Server;
let webUrl: string;
let held: http.ServerResponse[] = [];
function releaseSlow() {
  for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":"done"}');
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const SUMMARY = new RegExp(`(\\S+) · (\\d+) steps? · run (${UUID}) · conversation (${UUID})`);

function liya(args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_API_KEY: a.apiKey, LIYA_ADMIN_SECRET: undefined, LIYA_TIMEOUT: undefined, ...options.env };
  return runLiya(args, { ...options, env });
}

const key = () => ({ headers: bearer(a.apiKey) });

const trigger = MANUAL_TRIGGER;
const BRANCHING = [
  trigger,
  { id: 'check', step_type: 'condition', name: 'Is it big?', config: { expression: 'trigger.amount > 100' }, on_success_ref: 'big', on_failure_ref: 'small' },
  { id: 'big', step_type: 'end', config: { output: { size: 'big', amount: '{{trigger.amount}}' } } },
  { id: 'small', step_type: 'end', config: { output: { size: 'small' } } },
];

/** Creates a workflow (a draft) and, unless told otherwise, deploys it; returns its workflow_key. */
const deployedKey = async (name: string, steps: unknown[], deploy = true) => (await createWorkflow(t.api, a.apiKey, name, steps, { deploy })).workflow_key;

async function inputFile(name: string, content: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, content);
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-cli-workflows-'));
  web = http.createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  a = await signupTenant(t.api, { companyName: 'CLI Workflows Co' });
  await deployedKey('Branching', BRANCHING);
  await deployedKey('Failing hard', [trigger, { id: 'boom', step_type: 'condition', config: { expression: 'trigger.missing.x > 1' } }, { id: 'done', step_type: 'end', config: { output: 1 } }]);
  await deployedKey('Later', [trigger, { id: 'done', step_type: 'end', config: { output: { deployed: 'by the CLI' } } }], false);
  await deployedKey('Broken', [{ id: 'done', step_type: 'end', config: { output: 1 } }], false);
  await deployedKey('Switch me', [trigger, { id: 'done', step_type: 'end', config: { output: 'on' } }]);
  await deployedKey('Slow', [
    trigger,
    { id: 'call', step_type: 'action', action_id: 'http_request', config: { method: 'GET', url: `${webUrl}/slow`, timeout_ms: 60_000 } },
    { id: 'done', step_type: 'end', config: { output: '{{steps.call.output.body}}' } },
  ]);
}, 120_000);

afterAll(async () => {
  releaseSlow();
  await t?.close();
  await new Promise((resolve) => web?.close(resolve));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('formatting', () => {
  it('describes successors, trace lines and the run summary', () => {
    const step = { id: 'x', step_type: 'action', name: null, action_id: 'log', action_name: 'Log', config: {}, step_order: 0, on_success_step_id: null, on_failure_step_id: null };
    expect(successorsText(step, 'y')).toBe('→ y');
    expect(successorsText({ ...step, on_failure_step_id: 'z' }, null)).toBe('→ (end) · on failure → z');
    expect(successorsText({ ...step, step_type: 'condition', on_success_step_id: 'a' }, 'y')).toBe('true → a · false → (end)');
    expect(successorsText({ ...step, step_type: 'switch', config: { cases: [{ value: 'list', next_ref: 'each' }], default_ref: 'other' } }, 'y')).toBe('"list" → each · default → other');
    expect(successorsText({ ...step, step_type: 'loop', config: { step_ref: 'body' }, on_success_step_id: 'done' }, 'y')).toBe('each item → body · then → done');
    expect(successorsText({ ...step, step_type: 'end' }, 'y')).toBe('(end)');

    const entry = { step_id: 'check', step_type: 'condition', name: 'check', status: 'completed', input: null, output: null, error: null, started_at: '2025-01-01T00:00:00.000Z', completed_at: '2025-01-01T00:00:00.012Z' };
    expect(traceLine(entry)).toBe('✓ check condition 12 ms');
    expect(traceLine({ ...entry, name: 'Is it big?', status: 'failed', error: 'no such key: missing' })).toBe('✗ check (Is it big?) condition 12 ms: no such key: missing');
    expect(traceLine({ ...entry, step_type: 'ai_agent', status: 'needs_input', output: { question: 'Which city?' } })).toBe('⏸ check ai_agent 12 ms: asks "Which city?"');
    expect(workflowRunSummary({ status: 'completed', run_id: 'r', conversation_id: 'c', trace: [entry] })).toBe('completed · 1 step · run r · conversation c');
  });
});

describe('liya workflows list, show, deploy and toggle', () => {
  it('lists the deployed, active workflows and shows one with its steps in order and its versions', async () => {
    const [table, json, details, detailsJson, noKey, unknownShow, draftShow] = await Promise.all([
      liya(['workflows', 'list']),
      liya(['workflows', 'list', '--json']),
      liya(['workflows', 'show', 'branching']),
      liya(['workflows', 'show', 'branching', '--json']),
      liya(['workflows', 'list'], { env: { LIYA_API_KEY: undefined } }),
      liya(['workflows', 'show', 'nope']),
      liya(['workflows', 'show', 'broken']),
    ]);

    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/KEY\s+NAME\s+VERSION\s+TRIGGER\s+STEPS/);
    expect(table.stdout.split('\n').find((l) => l.startsWith('branching '))).toMatch(/^branching\s+Branching\s+1\s+manual\s+4$/);
    expect(table.stdout).toMatch(/\nfailing-hard\s+Failing hard\s+1\s+manual\s+3\n/);
    expect(table.stdout).not.toContain('later');
    expect(table.stdout).not.toContain('broken');
    expect(table.stdout).toContain('4 active workflows.');
    expect(table.stdout).toContain('liya workflows run branching --input input.json');

    expect(json.code).toBe(0);
    const listed = JSON.parse(json.stdout) as { workflow_key: string; endpoint: string; version: number; steps: unknown[] }[];
    expect(listed.map((w) => w.workflow_key)).toEqual(['branching', 'failing-hard', 'slow', 'switch-me']);
    expect(listed[0]).toMatchObject({ endpoint: '/v1/workflows/branching/run', version: 1, status: 'active', is_active: true });
    expect(listed[0].steps).toHaveLength(4);

    expect(details.code, details.stderr).toBe(0);
    expect(details.stdout).toContain('Workflow Branching');
    expect(details.stdout).toMatch(/Key\s+branching\n/);
    expect(details.stdout).toMatch(/Status\s+active \(on\)\n/);
    expect(details.stdout).toMatch(/Version\s+1\n/);
    expect(details.stdout).toMatch(/Trigger\s+manual\n/);
    expect(details.stdout).toMatch(/#\s+STEP\s+TYPE\s+NAME\s+NEXT/);
    // In order, with the successors.
    const steps = details.stdout.split('\n').filter((l) => /^\s*\d+\s+(start|check|big|small)\s/.test(l));
    expect(steps).toHaveLength(4);
    expect(steps[0]).toMatch(/^\s*1\s+start\s+trigger\s+—\s+→ check$/);
    expect(steps[1]).toMatch(/^\s*2\s+check\s+condition\s+Is it big\?\s+true → big · false → small$/);
    expect(steps[2]).toMatch(/^\s*3\s+big\s+end\s+—\s+\(end\)$/);
    expect(steps[3]).toMatch(/^\s*4\s+small\s+end\s+—\s+\(end\)$/);
    expect(details.stdout).toMatch(/VERSION\s+NAME\s+STEPS\s+CREATED BY\s+CREATED/);
    expect(details.stdout).toMatch(/\n\s*1 \(live\)\s+Branching\s+4\s+\S.*\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\n/);

    expect(detailsJson.code).toBe(0);
    const shown = JSON.parse(detailsJson.stdout);
    expect(shown.workflow).toMatchObject({ workflow_key: 'branching', version: 1, status: 'active' });
    expect(shown.workflow.steps.map((s: { id: string }) => s.id)).toEqual(['start', 'check', 'big', 'small']);
    expect(shown.versions).toEqual([expect.objectContaining({ version: 1, steps_count: 4 })]);

    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');

    expect(unknownShow.code).toBe(1);
    expect(unknownShow.stdout).toBe('');
    expect(unknownShow.stderr).toContain('✖ NOT_FOUND (HTTP 404): Workflow "nope" not found');
    expect(unknownShow.stderr).toContain('liya workflows list');
    // Never deployed: not found, and the hint says why.
    expect(draftShow.code).toBe(1);
    expect(draftShow.stderr).toContain('NOT_FOUND (HTTP 404)');
    expect(draftShow.stderr).toContain('liya workflows deploy broken');
  }, 120_000);

  it('deploys a draft (version and status), renders the issues of an invalid definition, and reports unknown workflows', async () => {
    const [deploy, broken, unknown] = await Promise.all([
      liya(['workflows', 'deploy', 'later']),
      liya(['workflows', 'deploy', 'broken']),
      liya(['workflows', 'deploy', 'nope']),
    ]);
    expect(deploy.code, deploy.stderr).toBe(0);
    expect(deploy.stdout).toContain('✔ Deployed workflow later (Later): version 1, status active');
    expect(deploy.stdout).toContain('liya workflows run later');
    const stored = await t.api.get('/v1/workflows/later', key());
    expect(stored.body.data.workflow).toMatchObject({ version: 1, status: 'active', is_active: true });

    // Deploying again publishes a new version; --json prints the workflow.
    const again = await liya(['workflows', 'deploy', 'later', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ workflow_key: 'later', version: 2, status: 'active' });
    const shown = await liya(['workflows', 'show', 'later']);
    expect(shown.stdout).toMatch(/\n\s*2 \(live\)\s+Later\s+2\s/);
    expect(shown.stdout).toMatch(/\n\s*1\s+Later\s+2\s/);

    expect(broken.code).toBe(1);
    expect(broken.stdout).toBe('');
    expect(broken.stderr).toContain('✖ INVALID_INPUT (HTTP 400): The workflow cannot be deployed');
    const issues = broken.stderr.split('\n').filter((l) => l.startsWith('  • '));
    expect(issues.length, broken.stderr).toBeGreaterThan(0);
    for (const issue of issues) expect(issue).toMatch(/^ {2}• \S+: \S/);
    expect(broken.stderr).toMatch(/trigger/i);
    expect(broken.stderr).toContain('then deploy again');
    const still = await t.api.get('/v1/workflows/broken', key());
    expect(still.status).toBe(404);

    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('NOT_FOUND (HTTP 404): Workflow "nope" not found');
  }, 120_000);

  it('shows a webhook workflow\'s URL and secrets, which its first deploy answers only once', async () => {
    const hook = await deployedKey('Hooked', [{ id: 'start', step_type: 'trigger', config: { trigger_subtype: 'webhook' } }, { id: 'done', step_type: 'end', config: { output: 1 } }], false);
    const deployed = await liya(['workflows', 'deploy', hook]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stdout).toMatch(/Webhook URL: http\S+\/webhooks\/workflows\/\S+/);
    expect(deployed.stdout).toMatch(/Webhook secret \(shown once\): whsec_\S+/);
    expect(deployed.stdout).toMatch(/Callback secret \(verifies run callbacks\): whsec_\S+/);
    // Deploying again mints nothing, so nothing is shown.
    const again = await liya(['workflows', 'deploy', hook, '--json']);
    expect(JSON.parse(again.stdout)).not.toHaveProperty('webhook_secret');
  }, 120_000);

  it('toggles a workflow off and on; a never-deployed one is DEPLOY_REQUIRED', async () => {
    const off = await liya(['workflows', 'toggle', 'switch-me']);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain('Workflow switch-me is now off (status inactive)');
    expect(off.stdout).toContain('liya workflows toggle switch-me');
    const list = await liya(['workflows', 'list', '--json']);
    expect(JSON.parse(list.stdout).map((w: { workflow_key: string }) => w.workflow_key)).not.toContain('switch-me');
    // Switched off: the run is refused, show still works.
    const [refused, shown] = await Promise.all([liya(['workflows', 'run', 'switch-me']), liya(['workflows', 'show', 'switch-me'])]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('NOT_FOUND (HTTP 404)');
    expect(refused.stderr).toContain('switched on');
    expect(shown.stdout).toMatch(/Status\s+inactive \(off\)\n/);

    const on = await liya(['workflows', 'toggle', 'switch-me', '--json']);
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ workflow_key: 'switch-me', is_active: true, status: 'active' });

    const never = await liya(['workflows', 'toggle', 'broken']);
    expect(never.code).toBe(1);
    expect(never.stdout).toBe('');
    expect(never.stderr).toContain('✖ DEPLOY_REQUIRED (HTTP 409): Deploy the workflow before switching it on or off');
    expect(never.stderr).toContain('Deploy it first: liya workflows deploy broken');
  }, 120_000);
});

describe('liya workflows run', () => {
  it('runs with an --input file: the trace, the branch taken, the output and a summary line; exit 0', async () => {
    const big = await inputFile('big.json', '{"amount": 150}');
    const r = await liya(['workflows', 'run', 'branching', '--input', big]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^✓ start trigger \d+ ms$/);
    expect(lines[1]).toMatch(/^✓ check \(Is it big\?\) condition \d+ ms$/);
    expect(lines[2]).toMatch(/^✓ big end \d+ ms$/);
    expect(JSON.parse(lines.slice(3).join('\n'))).toEqual({ size: 'big', amount: 150 });
    const summary = r.stderr.match(SUMMARY);
    expect(summary, r.stderr).not.toBeNull();
    const [, status, steps, runId, conversationId] = summary!;
    expect([status, steps]).toEqual(['completed', '3']);
    expect(r.stderr).toContain(`GET /v1/workflows/branching/runs/${runId}`);
    const stored = await t.api.get(`/v1/workflows/branching/runs/${runId}`, key());
    expect(stored.body.data.run).toMatchObject({ status: 'completed', conversation_id: conversationId, input: { amount: 150 }, output: { size: 'big', amount: 150 } });

    // The other branch, with the input on stdin; and without --input the input is {}.
    const small = await liya(['workflows', 'run', 'branching', '--input', '-'], { stdin: '{"amount": 5}' });
    expect(small.code, small.stderr).toBe(0);
    expect(small.stdout).toMatch(/^✓ start trigger \d+ ms\n✓ check \(Is it big\?\) condition \d+ ms\n✓ small end \d+ ms\n\{\n {2}"size": "small"\n\}\n$/);
    const none = await liya(['workflows', 'run', 'later']);
    expect(none.code, none.stderr).toBe(0);
    expect(JSON.parse(none.stdout.split('\n').slice(2).join('\n'))).toEqual({ deployed: 'by the CLI' });
  }, 120_000);

  it('--stream prints each step as it completes, then the output and the same summary', async () => {
    const big = await inputFile('stream.json', '{"amount": 1000}');
    const r = await liya(['workflows', 'run', 'branching', '--input', big, '--stream']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^✓ start trigger \d+ ms\n✓ check \(Is it big\?\) condition \d+ ms\n✓ big end \d+ ms\n/);
    expect(JSON.parse(r.stdout.split('\n').slice(3).join('\n'))).toEqual({ size: 'big', amount: 1000 });
    const summary = r.stderr.match(SUMMARY);
    expect(summary, r.stderr).not.toBeNull();
    expect([summary![1], summary![2]]).toEqual(['completed', '3']);
    const stored = await t.api.get(`/v1/workflows/branching/runs/${summary![3]}`, key());
    expect(stored.body.data.run).toMatchObject({ status: 'completed', triggered_by: 'stream' });

    // Live: the trigger's line is on screen while the next step still waits for its web service.
    const run = liya(['workflows', 'run', 'slow', '--stream']);
    let live = '';
    run.child.stdout!.on('data', (d: Buffer) => (live += d.toString()));
    await waitFor(() => live.includes('✓ start trigger') && held.length === 1, 'the trigger line while the call waits');
    expect(live).not.toContain('call');
    releaseSlow();
    const slow = await run;
    expect(slow.code, slow.stderr).toBe(0);
    expect(slow.stdout).toMatch(/^✓ start trigger \d+ ms\n✓ call action \d+ ms\n✓ done end \d+ ms\n\{\n {2}"slow": "done"\n\}\n$/);
  }, 120_000);

  it('Ctrl-C stops watching a streamed run; the run goes on on the server', async () => {
    const run = liya(['workflows', 'run', 'slow', '--stream']);
    let live = '';
    run.child.stdout!.on('data', (d: Buffer) => (live += d.toString()));
    await waitFor(() => live.includes('✓ start trigger') && held.length === 1, 'the call to wait');
    run.child.kill('SIGINT');
    const r = await run;
    expect(r.code).toBe(1);
    const stopped = r.stderr.match(new RegExp(`Stopped watching: run (${UUID}) goes on on the server`));
    expect(stopped, r.stderr).not.toBeNull();
    expect(r.stderr).toContain(`GET /v1/workflows/slow/runs/${stopped![1]}`);
    releaseSlow();
    const finished = await waitFor(async () => {
      const res = await t.api.get(`/v1/workflows/slow/runs/${stopped![1]}`, key());
      return res.body.data?.run?.status === 'completed' ? res.body.data.run : null;
    }, 'the run to end on the server');
    expect(finished.output).toEqual({ slow: 'done' });
  }, 120_000);

  it('--json prints only the result object, with or without --stream', async () => {
    const small = await inputFile('small.json', '{"amount": 1}');
    const [plain, streamed] = await Promise.all([
      liya(['workflows', 'run', 'branching', '--input', small, '--json']),
      liya(['workflows', 'run', 'branching', '--input', small, '--json', '--stream']),
    ]);
    for (const r of [plain, streamed]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      const result = JSON.parse(r.stdout);
      expect(result).toEqual({
        run_id: expect.stringMatching(new RegExp(`^${UUID}$`)), conversation_id: expect.stringMatching(new RegExp(`^${UUID}$`)),
        status: 'completed', output: { size: 'small' }, trace: expect.any(Array),
      });
      expect(result.trace.map((s: { step_id: string; status: string }) => [s.step_id, s.status])).toEqual([['start', 'completed'], ['check', 'completed'], ['small', 'completed']]);
    }
  }, 120_000);

  it('a failing run shows the failed step and its error; exit 1', async () => {
    const [plain, streamed, json] = await Promise.all([
      liya(['workflows', 'run', 'failing-hard']),
      liya(['workflows', 'run', 'failing-hard', '--stream']),
      liya(['workflows', 'run', 'failing-hard', '--json']),
    ]);
    for (const r of [plain, streamed]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^✓ start trigger \d+ ms\n✗ boom condition \d+ ms: \S.*\n$/);
      expect(r.stderr).toMatch(/✖ failed · 2 steps · run /);
      expect(r.stderr).toMatch(/step boom failed: \S/);
    }
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', output: null, trace: [{ step_id: 'start' }, { step_id: 'boom', status: 'failed', error: expect.any(String) }] });
  }, 120_000);

  it('refusals: unknown workflow (exit 1, NOT_FOUND), bad --input (exit 2), bad --conversation, no key', async () => {
    const notJson = await inputFile('bad.json', '{"amount": ');
    const array = await inputFile('array.json', '[1, 2]');
    const [unknown, unknownStream, missing, invalid, notObject, empty, badConversation, noKey] = await Promise.all([
      liya(['workflows', 'run', 'nope']),
      liya(['workflows', 'run', 'nope', '--stream']),
      liya(['workflows', 'run', 'branching', '--input', path.join(dir, 'missing.json')]),
      liya(['workflows', 'run', 'branching', '--input', notJson]),
      liya(['workflows', 'run', 'branching', '--input', array]),
      liya(['workflows', 'run', 'branching', '--input', '-'], { stdin: '' }),
      liya(['workflows', 'run', 'branching', '--conversation', 'not-a-uuid']),
      liya(['workflows', 'run', 'branching'], { env: { LIYA_API_KEY: undefined } }),
    ]);
    for (const r of [unknown, unknownStream]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('✖ NOT_FOUND (HTTP 404): Workflow "nope" not found');
      expect(r.stderr).toContain('liya workflows list');
    }
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`Cannot read the --input file ${path.join(dir, 'missing.json')}: no such file`);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(`The --input from ${notJson} is not valid JSON`);
    expect(notObject.code).toBe(2);
    expect(notObject.stderr).toContain(`The --input from ${array} must be a JSON object, not an array`);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('The --input from stdin is empty');
    for (const r of [missing, invalid, notObject, empty]) expect(r.stdout).toBe('');

    expect(badConversation.code).toBe(1);
    expect(badConversation.stderr).toContain('INVALID_INPUT (HTTP 400)');
    expect(badConversation.stderr).toContain('--conversation: not a conversation id');
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');
  }, 120_000);

  it('an unreachable server is exit 1 with the usual message, with or without --stream', async () => {
    const results = await Promise.all([liya(['workflows', 'run', 'branching', '--url', 'http://127.0.0.1:9']), liya(['workflows', 'run', 'branching', '--stream', '--url', 'http://127.0.0.1:9'])]);
    for (const r of results) {
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('Cannot reach the Liya server at http://127.0.0.1:9');
    }
  });
});
