// `liya agents ...` as a user runs it: a real subprocess (bin/liya.mjs) against a real server whose
// model provider is the fake one; `agents run` reads the streaming endpoint (Server-Sent Events).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { agentRunSummary, readSse, SseParser, type SseEvent } from '../../cli/commands/agents.js';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { waitFor } from '../support/wait-for.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const SUMMARY = new RegExp(`(\\S+) · (\\d+) steps? · \\$[\\d.e-]+ · \\d+ ms · run (${UUID}) · session (${UUID})`);

function liya(args: string[], options: CliRunOptions = {}) {
  const env = { LIYA_URL: t.url, LIYA_API_KEY: a.apiKey, LIYA_ADMIN_SECRET: undefined, LIYA_TIMEOUT: undefined, ...options.env };
  return runLiya(args, { ...options, env });
}

const key = () => ({ headers: bearer(a.apiKey) });

async function createAgent(body: Record<string, unknown>, deploy = true) {
  const res = await t.api.post('/v1/agents', { name: 'Helper', goal: 'Help candidates find a job', ...body }, key());
  expect(res.status, res.text).toBe(201);
  if (deploy) {
    const dep = await t.api.post(`/v1/agents/${body.agent_key}/deploy`, undefined, key());
    expect(dep.status, dep.text).toBe(200);
  }
}

/** A promise and the function that resolves it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'CLI Agents Co' });
  await createAgent({ agent_key: 'timer', name: 'Time teller', tools_config: { enabled_platform_tools: ['current_time'] }, behavior_config: { max_steps: 4 } });
  await createAgent({ agent_key: 'chat', name: 'Chatter' });
  await createAgent({ agent_key: 'asker', tools_config: { enabled_platform_tools: ['ask_user'] } });
  await createAgent({ agent_key: 'hasty', tools_config: { enabled_platform_tools: ['current_time'] }, behavior_config: { max_steps: 1 } });
  await createAgent({ agent_key: 'sketch', name: 'Sketch', goal: 'Not ready yet' }, false);
  await createAgent({ agent_key: 'later', name: 'Later', goal: 'Deployed by the CLI' }, false);
}, 120_000);

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

afterEach(() => fake.reset());

describe('the SSE parser', () => {
  const all = (pieces: string[]) => {
    const parser = new SseParser();
    return [...pieces.flatMap((p) => parser.push(p)), ...parser.end()];
  };

  it('joins events split anywhere, skips comments, keeps multi-line data and the last id', () => {
    const stream = ': ping\n\nid: 1\nevent: run.started\ndata: {"a":1}\n\n: ping\n\nid: 2\nevent: llm.delta\ndata: line one\ndata: line two\n\ndata: no event name\n\nevent: empty\n\n';
    const expected: SseEvent[] = [
      { event: 'run.started', data: '{"a":1}', id: '1' },
      { event: 'llm.delta', data: 'line one\nline two', id: '2' },
      { event: 'message', data: 'no event name', id: '2' },
    ];
    expect(all([stream])).toEqual(expected);
    // One character at a time, and split at every position in two.
    expect(all([...stream])).toEqual(expected);
    for (let i = 0; i <= stream.length; i++) expect(all([stream.slice(0, i), stream.slice(i)])).toEqual(expected);
  });

  it('accepts CRLF and CR line ends, even a CRLF split across chunks, and "field:value" without a space', () => {
    expect(all(['event:x\r', '\ndata:1\r\n\r', '\n'])).toEqual([{ event: 'x', data: '1' }]);
    expect(all(['event: y\rdata: 2\r\r'])).toEqual([{ event: 'y', data: '2' }]);
    expect(all(['data:  two spaces\n\n'])).toEqual([{ event: 'message', data: ' two spaces' }]);
  });

  it('drops an unfinished event at the end of the stream', () => {
    expect(all(['event: a\ndata: 1\n\nevent: b\ndata: 2\n'])).toEqual([{ event: 'a', data: '1' }]);
  });

  it('decodes characters split across byte chunks', async () => {
    const bytes = new TextEncoder().encode('event: llm.delta\ndata: {"text":"Grüße → ✓"}\n\n');
    const chunks = Array.from(bytes, (b) => new Uint8Array([b]));
    const reader = new ReadableStream<Uint8Array>({
      start(controller) {
        chunks.forEach((c) => controller.enqueue(c));
        controller.close();
      },
    }).getReader();
    const events: SseEvent[] = [];
    let reads = 0;
    for await (const e of readSse(reader, () => reads++)) events.push(e);
    expect(events).toEqual([{ event: 'llm.delta', data: '{"text":"Grüße → ✓"}' }]);
    expect(reads).toBe(bytes.length);
  });

  it('summarises a run in one line', () => {
    expect(agentRunSummary({ run_id: 'r', session_id: 's', status: 'completed', output: '', steps: 1, total_cost: 0.0000123456789, total_latency_ms: 42 })).toBe(
      'completed · 1 step · $0.000012 · 42 ms · run r · session s',
    );
  });
});

describe('liya agents list, show and deploy', () => {
  it('lists the active agents, shows one with its effective runtime config, deploys a draft, and reports unknown agents', async () => {
    const [table, json, details, detailsJson, noKey, unknownShow, unknownDeploy] = await Promise.all([
      liya(['agents', 'list']),
      liya(['agents', 'list', '--json']),
      liya(['agents', 'show', 'timer']),
      liya(['agents', 'show', 'sketch', '--json']),
      liya(['agents', 'list'], { env: { LIYA_API_KEY: undefined } }),
      liya(['agents', 'show', 'nope']),
      liya(['agents', 'deploy', 'nope']),
    ]);

    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/AGENT\s+NAME\s+STATUS\s+GOAL/);
    expect(table.stdout.split('\n').find((l) => l.startsWith('timer '))).toMatch(/^timer\s+Time teller\s+active\s+Help candidates find a job$/);
    expect(table.stdout).not.toContain('sketch');
    expect(table.stdout).toContain('4 active agents.');

    expect(json.code).toBe(0);
    const listed = JSON.parse(json.stdout) as { agents: { agent: string; status: string; endpoint: string }[]; total: number };
    expect(listed.total).toBe(4);
    expect(listed.agents.map((x) => x.agent).sort()).toEqual(['asker', 'chat', 'hasty', 'timer']);
    expect(listed.agents.find((x) => x.agent === 'timer')).toMatchObject({ status: 'active', endpoint: '/v1/agents/timer/run' });

    expect(details.code, details.stderr).toBe(0);
    expect(details.stdout).toContain('Agent Time teller');
    expect(details.stdout).toMatch(/Key\s+timer\n/);
    expect(details.stdout).toMatch(/Status\s+active\n/);
    expect(details.stdout).toMatch(/Goal\s+Help candidates find a job\n/);
    expect(details.stdout).toMatch(/SETTING\s+VALUE\s+SOURCE/);
    expect(details.stdout).toMatch(/\nmodel\s+gpt-4o-mini\s+platform default\n/);
    expect(details.stdout).toMatch(/\nmax_steps\s+4\s+agent\n/);
    expect(details.stdout).toMatch(/\nmax_output_tokens\s+2048\s+platform default\n/);
    expect(details.stdout).toMatch(/\ntemperature\s+—\s+provider default\n/);
    expect(details.stdout).toMatch(/\nenabled_platform_tools\s+current_time\s+agent\n/);

    expect(detailsJson.code).toBe(0);
    const sketch = JSON.parse(detailsJson.stdout);
    expect(sketch).toMatchObject({ agent_key: 'sketch', status: 'draft', goal: 'Not ready yet' });
    expect(sketch.effective_runtime_config.max_steps).toEqual({ value: 10, source: 'platform_default' });

    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');

    for (const r of [unknownShow, unknownDeploy]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('NOT_FOUND (HTTP 404)');
      expect(r.stderr).toContain('liya agents list');
    }

    const deploy = await liya(['agents', 'deploy', 'later']);
    expect(deploy.code, deploy.stderr).toBe(0);
    expect(deploy.stdout).toContain('Deployed agent later (Later); status is now active');
    expect(deploy.stdout).toContain('liya agents run later');
    const stored = await t.api.get('/v1/agents/later', key());
    expect(stored.body.data.agent.status).toBe('active');
    const again = await liya(['agents', 'deploy', 'later', '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ agent_key: 'later', status: 'active' });
  }, 120_000);
});

describe('liya agents run', () => {
  it('streams the answer and the tool calls live, then a summary line; exit 0', async () => {
    const toolsDone = gate();
    let calls = 0;
    fake.script(async () => {
      calls++;
      if (calls === 1) return { content: 'Let me check the clock.', tool_calls: [{ name: 'current_time', arguments: { timezone: 'UTC' } }] };
      await toolsDone.opened;
      return 'It is noon in UTC. The answer text';
    });
    const run = liya(['agents', 'run', 'timer', 'What time is it?']);
    let live = '';
    run.child.stdout!.on('data', (d: Buffer) => (live += d.toString()));
    // Before the second model call answers, the first one's text and the tool lines are on screen already.
    await waitFor(() => live.includes('✓ current_time'), 'the tool lines');
    expect(live).toContain('Let me check the clock.');
    expect(live).not.toContain('The answer text');
    toolsDone.open();
    const r = await run;

    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Let me check the clock.\n→ current_time {"timezone":"UTC"}\n✓ current_time\nIt is noon in UTC. The answer text\n');
    const summary = r.stderr.match(SUMMARY);
    expect(summary, r.stderr).not.toBeNull();
    const [, status, steps, runId, sessionId] = summary!;
    expect([status, steps]).toEqual(['completed', '2']);
    expect(r.stderr).toContain(`--session ${sessionId}`);
    // The model was asked to stream, and the run is stored as the CLI reported it.
    expect(fake.chatRequests().every((req) => req.body.stream === true)).toBe(true);
    const stored = await t.api.get(`/v1/agents/timer/runs/${runId}`, key());
    expect(stored.body.data.run).toMatchObject({ status: 'completed', session_id: sessionId, output: 'It is noon in UTC. The answer text', steps: 2 });
  }, 120_000);

  it('shows a failing tool call with its error', async () => {
    fake.script([{ tool_calls: [{ name: 'current_time', arguments: { timezone: 'Not/AZone' } }] }, 'Sorry, that zone does not exist.']);
    const r = await liya(['agents', 'run', 'timer', 'Time on Mars?']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^→ current_time \{"timezone":"Not\/AZone"\}\n✗ current_time: unknown time zone.*\nSorry, that zone does not exist\.\n$/);
  });

  it('--session continues the conversation: the transcript holds both turns', async () => {
    fake.script(['First answer.', 'Second answer.']);
    const one = await liya(['agents', 'run', 'chat', 'First question', '--user', 'cand-1']);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toBe('First answer.\n');
    const sessionId = one.stderr.match(SUMMARY)![4];
    const two = await liya(['agents', 'run', 'chat', 'Second question', '--session', sessionId]);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout).toBe('Second answer.\n');
    expect(two.stderr.match(SUMMARY)![4]).toBe(sessionId);
    const sent = fake.chatRequests()[1].body.messages.map((m: { role: string; content: string }) => [m.role, m.content]);
    expect(sent.slice(1)).toEqual([['user', 'First question'], ['assistant', 'First answer.'], ['user', 'Second question']]);
    const transcript = await t.api.get(`/v1/agents/chat/sessions/${sessionId}/transcript`, key());
    expect(transcript.status, transcript.text).toBe(200);
    expect(transcript.body.data.turns.map((x: { role: string; content: string }) => [x.role, x.content])).toEqual([
      ['user', 'First question'], ['assistant', 'First answer.'], ['user', 'Second question'], ['assistant', 'Second answer.'],
    ]);
    const runs = await t.api.get(`/v1/agents/chat/runs?session_id=${sessionId}`, key());
    expect(runs.body.data.runs.map((x: { user_id: string }) => x.user_id)).toEqual(['cand-1', 'cand-1']);
  });

  it('--json prints only the final result', async () => {
    fake.script([{ tool_calls: [{ name: 'current_time', arguments: {} }] }, 'The answer text']);
    const r = await liya(['agents', 'run', 'timer', 'What time is it?', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      run_id: expect.any(String), session_id: expect.any(String), status: 'completed', output: 'The answer text',
      steps: 2, total_cost: expect.any(Number), total_latency_ms: expect.any(Number),
    });
  });

  it('needs_input prints the question and exits 0; other end states exit 1', async () => {
    fake.script([{ tool_calls: [{ name: 'ask_user', arguments: { question: 'Which city?' } }] }]);
    const ask = await liya(['agents', 'run', 'asker', 'Find me a job']);
    expect(ask.code, ask.stderr).toBe(0);
    expect(ask.stdout).toBe('→ ask_user {"question":"Which city?"}\n✓ ask_user\nWhich city?\n');
    expect(ask.stderr).toMatch(/needs_input · 1 step · /);
    expect(ask.stderr).toContain('The agent asks a question');

    fake.script(() => ({ content: 'thinking', tool_calls: [{ name: 'current_time', arguments: {} }] }));
    const [stopped, stoppedJson] = await Promise.all([liya(['agents', 'run', 'hasty', 'loop']), liya(['agents', 'run', 'hasty', 'loop', '--json'])]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toBe('thinking\n→ current_time {}\n✓ current_time\nthinking\n');
    expect(stopped.stderr).toMatch(/max_steps_reached · 1 step · /);
    expect(stoppedJson.code).toBe(1);
    expect(JSON.parse(stoppedJson.stdout)).toMatchObject({ status: 'max_steps_reached', steps: 1, output: 'thinking' });
  });

  it('reports refusals before the stream like other API errors: unknown agent, draft agent, unknown session, blank message', async () => {
    const [unknown, draft, badSession, blank, noKey] = await Promise.all([
      liya(['agents', 'run', 'nope', 'hi']),
      liya(['agents', 'run', 'sketch', 'hi']),
      liya(['agents', 'run', 'chat', 'hi', '--session', '00000000-0000-4000-8000-000000000000']),
      liya(['agents', 'run', 'chat', '   ']),
      liya(['agents', 'run', 'chat', 'hi'], { env: { LIYA_API_KEY: undefined } }),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('✖ NOT_FOUND (HTTP 404): Agent "nope" not found');
    expect(unknown.stderr).toContain('List the active agents: liya agents list');

    expect(draft.code).toBe(1);
    expect(draft.stdout).toBe('');
    expect(draft.stderr).toContain('✖ AGENT_NOT_ACTIVE (HTTP 409): Agent "sketch" is draft; deploy it to run it');
    expect(draft.stderr).toContain('Deploy it first: liya agents deploy sketch');

    expect(badSession.code).toBe(1);
    expect(badSession.stderr).toContain('NOT_FOUND (HTTP 404): Session not found');
    expect(badSession.stderr).toContain('Check --session');

    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('The message is empty');
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('needs a tenant API key');
    expect(fake.chatRequests()).toHaveLength(0);
  });

  it('an unreachable server is exit 1 with the usual message', async () => {
    const r = await liya(['agents', 'run', 'chat', 'hi', '--url', 'http://127.0.0.1:9']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Cannot reach the Liya server at http://127.0.0.1:9');
  });

  it('Ctrl-C aborts the request and the server records the run cancelled', async () => {
    // The first turn calls a tool at once, so the CLI prints a line (it has read run.started, sent
    // before it); the second turn waits until after the cancel.
    const release = gate();
    let turns = 0;
    fake.script(async () => {
      if (++turns > 1) await release.opened;
      return { tool_calls: [{ name: 'current_time', arguments: {} }] };
    });
    const run = liya(['agents', 'run', 'timer', 'Take your time']);
    let printed = '';
    run.child.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
    await waitFor(() => fake.chatRequests().length === 2 && /✓ current_time/.test(printed), 'the tool line and the second model call');
    run.child.kill('SIGINT');
    const r = await run;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`Cancelled: the server records run (${UUID}) as cancelled`));
    const runId = r.stderr.match(new RegExp(`run (${UUID}) as cancelled`))![1];
    release.open();
    const stored = await waitFor(async () => {
      const res = await t.api.get(`/v1/agents/timer/runs/${runId}`, key());
      return res.body.data?.run?.status === 'cancelled' ? res.body.data.run : null;
    }, 'the cancelled run');
    // The tool call answered after the cancel was not run, and no third model call was made.
    expect(stored).toMatchObject({ status: 'cancelled', steps: 2 });
    expect(fake.chatRequests()).toHaveLength(2);
  }, 120_000);
});
