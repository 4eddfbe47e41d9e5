// `liya agents ...`: the tenant's agents through the API key routes: list, show (with the effective
// runtime configuration), deploy, and run one turn of a conversation over the streaming endpoint
// (Server-Sent Events), printing the answer and the tool calls as they happen.
import { styleText } from 'node:util';
import { Command } from 'commander';
import { createElement as h } from 'react';
import type { AgentDto, AgentListItem, AgentRunResult, McpServerInput, RunAgentInput } from '../../server/agents/agents.schemas.js';
import { action } from '../action.js';
import { ApiError } from '../api-client.js';
import { commandContext, type GlobalOptions } from '../context.js';
import { CliError, describeError, EXIT_FAILURE } from '../errors.js';
import { isInteractive, printJson, show, withApiErrors, withSpinner } from '../output.js';
import { postEventStream, StreamCancelled, StreamIdle, unfinishedStreamReport, type StreamTarget } from '../sse.js';
import { Details } from '../ui/details.js';
import { Stack } from '../ui/stack.js';
import { StatusLine, type StatusKind } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { dateTime, oneLine, plural, segment } from '../format.js';

// The SSE parser lives in cli/sse.ts (shared with `liya workflows run --stream`); re-exported for existing importers.
export { readSse, SseParser, type SseEvent } from '../sse.js';

// ---------------------------------------------------------------- API types

type Agent = AgentDto;
type AgentRunStatus = AgentRunResult['status'];

/** The body of POST /v1/agents/{key}/run/stream (the key is in the path). */
type RunAgentBody = Omit<RunAgentInput, 'agentKey'>;

/** Statuses a run may end with and still count as done (exit code 0). */
export const SUCCESSFUL_RUN_STATUSES: ReadonlySet<string> = new Set<AgentRunStatus>(['completed', 'needs_input']);

/**
 * How long the run stream may stay silent (no event, no heartbeat) unless --timeout / LIYA_TIMEOUT
 * says otherwise. The server sends a heartbeat every 15 s, so only a stuck connection hits it.
 */
export const RUN_IDLE_TIMEOUT_MS = 120_000;

const agentPath = (key: string) => `/v1/agents/${segment(key)}`;


/** A setting's value as short text: strings as they are, lists comma-separated, the rest as JSON. */
export function formatSetting(value: unknown, max = 80): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value === '' ? '""' : oneLine(value, max);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.length ? oneLine(value.join(', '), max) : '(none)';
  return oneLine(JSON.stringify(value), max);
}

const SOURCE_LABELS: Record<string, string> = { agent: 'agent', platform_default: 'platform default', provider_default: 'provider default' };

// ---------------------------------------------------------------- errors

/** What to do next, by error code (on top of the general hints). */
const AGENT_HINTS: Record<string, string> = {
  FEATURE_NOT_ENABLED: 'The tenant\'s plan has no agents; an administrator changes the plan (liya tenants update <id> --plan ...).',
  SESSION_EXPIRED: 'Start a new conversation: run again without --session.',
  LLM_NOT_CONFIGURED: 'The server has no model provider configured (e.g. OPENAI_API_KEY in its environment).',
};

/** Validation issues name what the user typed. */
const RUN_ISSUE_LABELS: Record<string, string> = {
  'input.message': '<message>',
  'input.user_id': '--user',
  session_id: '--session',
  agentKey: '<key>',
};

function hintFor(err: ApiError, key: string): string | undefined {
  if (err.code === 'AGENT_NOT_ACTIVE') return `Deploy it first: liya agents deploy ${key}`;
  if (err.code === 'NOT_FOUND') {
    return /^session/i.test(err.message)
      ? 'Check --session (a session id printed by an earlier run of this agent), or start a new conversation without it.'
      : 'List the active agents: liya agents list';
  }
  return AGENT_HINTS[err.code];
}

/** The error as for every command (title, issues, exit code), with hints for agents. */
async function reportAgentError(err: unknown, key: string): Promise<number> {
  const report = describeError(err);
  const hints = [...report.hints];
  let lines = report.issues;
  if (err instanceof ApiError) {
    lines = err.issues.length ? err.issues.map((i) => `${RUN_ISSUE_LABELS[i.path] ?? (i.path || '(body)')}: ${i.message}`) : lines;
    const hint = hintFor(err, key);
    if (hint && !hints.includes(hint)) hints.push(hint);
  }
  await show(h(StatusLine, { kind: 'error', message: report.title, lines, hints }), process.stderr);
  return report.exitCode;
}

/** Runs `task`; an API error is reported with the agent hints (others go to the usual reporting). */
const withAgentErrors = (key: string, task: () => Promise<number | void>) => withApiErrors(task, (err) => reportAgentError(err, key));

// ---------------------------------------------------------------- the run stream

export type AgentRunEvent =
  | { event: 'run.started'; data: { run_id: string; session_id: string; agent_key: string } }
  | { event: 'llm.delta'; data: { text: string } }
  | { event: 'tool.started'; data: { name: string; input: unknown } }
  | { event: 'tool.completed'; data: { name: string; output: unknown; error: string | null } }
  | { event: 'run.completed' | 'run.failed'; data: AgentRunResult };

interface StreamOutcome {
  /** From run.started (undefined when the stream broke before it). */
  started?: { run_id: string; session_id: string };
  result?: AgentRunResult;
  /** Why the stream ended without a result (StreamCancelled: Ctrl-C, and the server records the run cancelled). */
  interruption?: StreamCancelled | StreamIdle | Error;
}

/**
 * POST /v1/agents/{key}/run/stream, calling `onEvent` for each event as it arrives. A refusal
 * before the stream throws ApiError, no answer at all UnreachableError; once the stream is open,
 * its end is described by the outcome.
 */
async function streamRun(target: StreamTarget, key: string, body: RunAgentBody, onEvent: (event: AgentRunEvent) => void): Promise<StreamOutcome> {
  let started: StreamOutcome['started'];
  const stream = await postEventStream(
    target,
    `${agentPath(key)}/run/stream`,
    body,
    (e) => {
      const event = e as AgentRunEvent;
      if (event.event === 'run.started') started = { run_id: event.data.run_id, session_id: event.data.session_id };
      onEvent(event);
    },
    (e) => e.event === 'run.completed' || e.event === 'run.failed',
  );
  return { started, result: stream.final?.data as AgentRunResult | undefined, interruption: stream.interruption };
}

// ---------------------------------------------------------------- live rendering

type Style = Parameters<typeof styleText>[0];

/**
 * The run as it happens, as plain lines on `out` (no re-rendering, so pipes and CI read it as a
 * terminal does): the answer's text as it arrives, and a line for each tool call and its result.
 */
export class LiveTranscript {
  private atLineStart = true;
  /** The text streamed since the last tool line: the final answer once the run ends. */
  lastText = '';
  private readonly colors: boolean;

  constructor(private readonly out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout) {
    this.colors = isInteractive(out as NodeJS.WriteStream);
  }

  private paint(style: Style, text: string): string {
    return this.colors ? styleText(style, text) : text;
  }

  text(piece: string): void {
    if (!piece) return;
    this.out.write(piece);
    this.atLineStart = piece.endsWith('\n');
    this.lastText += piece;
  }

  line(text: string): void {
    this.endLine();
    this.out.write(`${text}\n`);
    this.lastText = '';
  }

  /** Ends a line of answer text left open. */
  endLine(): void {
    if (!this.atLineStart) this.out.write('\n');
    this.atLineStart = true;
  }

  toolStarted(name: string, input: unknown): void {
    const args = typeof input === 'string' ? input : JSON.stringify(input ?? {});
    this.line(`${this.paint('cyan', '→')} ${this.paint('bold', name)} ${this.paint('dim', oneLine(args, 200))}`);
  }

  toolCompleted(name: string, error: string | null): void {
    if (error) this.line(`${this.paint('red', '✗')} ${name}: ${oneLine(error, 300)}`);
    else this.line(`${this.paint('green', '✓')} ${name}`);
  }

  handle(event: AgentRunEvent): void {
    if (event.event === 'llm.delta') this.text(event.data.text);
    else if (event.event === 'tool.started') this.toolStarted(event.data.name, event.data.input);
    else if (event.event === 'tool.completed') this.toolCompleted(event.data.name, event.data.error);
  }
}

const RUN_STATUS_KIND: Partial<Record<AgentRunStatus, StatusKind>> = { completed: 'success', needs_input: 'info', cancelled: 'warning' };

/** One line about the run: status, steps, cost, latency, run and session. */
export function agentRunSummary(r: AgentRunResult): string {
  return [
    r.status,
    plural(r.steps, 'step'),
    `$${Number(r.total_cost.toFixed(6))}`,
    `${r.total_latency_ms} ms`,
    `run ${r.run_id}`,
    `session ${r.session_id}`,
  ].join(' · ');
}

const shellQuote = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

// ---------------------------------------------------------------- commands

interface RunFlags {
  session?: string;
  user?: string;
  json?: boolean;
}

async function runAgent(key: string, message: string, flags: RunFlags, command: Command): Promise<number> {
  if (!/\S/.test(message)) throw new CliError('The message is empty', ['Give the user\'s turn as the second argument, e.g. liya agents run helper "What time is it?"']);
  const ctx = commandContext(command);
  ctx.withApiKey(); // a usage error (exit 2) when there is no key
  const options = command.optsWithGlobals<GlobalOptions>();
  const userSetTimeout = ['cli', 'env'].includes(command.getOptionValueSourceWithGlobals('timeout') ?? '');
  const target: StreamTarget = { baseUrl: ctx.url, apiKey: options.apiKey!.trim(), idleMs: userSetTimeout ? options.timeout : RUN_IDLE_TIMEOUT_MS };
  const body: RunAgentBody = {
    input: { message, ...(flags.user !== undefined ? { user_id: flags.user } : {}) },
    ...(flags.session !== undefined ? { session_id: flags.session } : {}),
  };

  const transcript = flags.json ? null : new LiveTranscript(process.stdout);
  let outcome: StreamOutcome;
  try {
    outcome = flags.json
      ? await withSpinner(`Running agent ${key}`, () => streamRun(target, key, body, () => undefined))
      : await streamRun(target, key, body, (event) => transcript!.handle(event));
  } catch (err) {
    transcript?.endLine();
    if (err instanceof ApiError) return reportAgentError(err, key);
    throw err;
  }

  const { result, started, interruption } = outcome;
  if (!result) {
    transcript?.endLine();
    const runHints = started ? [`run ${started.run_id} · session ${started.session_id}`, `See how far it got: GET /v1/agents/${key}/runs/${started.run_id}`] : [];
    if (interruption instanceof StreamCancelled) {
      await show(
        h(StatusLine, {
          kind: 'warning',
          message: started ? `Cancelled: the server records run ${started.run_id} as cancelled` : 'Cancelled before the run started',
          hints: started ? [`Continue this conversation: --session ${started.session_id}`] : [],
        }),
        process.stderr,
      );
      return EXIT_FAILURE;
    }
    await show(h(StatusLine, { kind: 'error', ...unfinishedStreamReport(key, interruption, runHints) }), process.stderr);
    return EXIT_FAILURE;
  }

  const ok = SUCCESSFUL_RUN_STATUSES.has(result.status);
  if (flags.json) {
    printJson(result);
    return ok ? 0 : EXIT_FAILURE;
  }

  // The final output is the streamed text, unless the run ended otherwise: a question (needs_input),
  // a fallback (failed, guardrail_blocked), or an answer the output guardrails changed.
  const t = transcript!;
  const streamed = t.lastText.trim();
  const output = result.output.trim();
  const notes: string[] = [];
  if (output && !streamed) t.text(`${result.output}\n`);
  else if (output && output !== streamed) notes.push(`final output (differs from the streamed text): ${oneLine(result.output, 500)}`);
  t.endLine();

  const hints =
    result.status === 'needs_input'
      ? [`The agent asks a question; answer it: liya agents run ${key} ${shellQuote('<answer>')} --session ${result.session_id}`]
      : [`Continue this conversation: liya agents run ${key} ${shellQuote('<message>')} --session ${result.session_id}`];
  await show(
    h(StatusLine, { kind: RUN_STATUS_KIND[result.status] ?? 'error', message: agentRunSummary(result), lines: notes, hints }),
    process.stderr,
  );
  return ok ? 0 : EXIT_FAILURE;
}

function agentFields(a: Agent): [string, string][] {
  const tools = (a.tools_config ?? {}) as { mcp_servers?: Pick<McpServerInput, 'name' | 'url'>[] };
  const list = (values: string[]) => (values.length ? values.join(', ') : '—');
  return [
    ['Key', a.agent_key],
    ['Name', a.name],
    ['Status', a.status === 'active' ? 'active' : `${a.status} (liya agents deploy ${a.agent_key} makes it runnable)`],
    ['ID', a.id],
    ['Description', a.description ? oneLine(a.description, 160) : '—'],
    ['Goal', oneLine(a.goal, 160)],
    ['Instructions', a.system_instructions ? oneLine(a.system_instructions, 160) : '—'],
    ['Intents', list(a.intent_ids)],
    ['Workflows', list(a.workflow_ids)],
    ['Actions', list(a.action_ids)],
    ['Knowledge', list(a.knowledge_domain_keys)],
    ['MCP servers', tools.mcp_servers?.length ? tools.mcp_servers.map((s) => `${s.name} (${s.url})`).join(', ') : '—'],
    ['Endpoint', `POST /v1/agents/${a.agent_key}/run (and /run/stream)`],
    ['Created', dateTime(a.created_at)],
    ['Updated', dateTime(a.updated_at)],
  ];
}

export function agentsCommand(): Command {
  const agents = new Command('agents').description('List, inspect, deploy and run the tenant\'s agents; needs --api-key');

  agents
    .command('list')
    .description('List the tenant\'s active agents')
    .option('--json', 'print {agents, total} as JSON')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withAgentErrors('', async () => {
          const result = await withSpinner('Loading agents', () => client.get<{ agents: AgentListItem[]; total: number }>('/v1/agents', { auth: 'bearer' }));
          if (flags.json) return printJson(result);
          const count = result.agents.length;
          await show(
            h(
              Stack,
              null,
              h(Table, {
                headers: ['AGENT', 'NAME', 'STATUS', 'GOAL'],
                rows: result.agents.map((a) => [a.agent, a.displayName, a.status, oneLine(a.goal, 60)]),
                empty: 'No active agents.',
              }),
              h(StatusLine, {
                kind: 'info',
                message: `${plural(count, 'active agent')}.`,
                hints: count
                  ? [`Run one: liya agents run ${result.agents[0].agent} "Hello"`, `Details: liya agents show ${result.agents[0].agent}`]
                  : ['Create one with POST /v1/agents, then: liya agents deploy <key>'],
              }),
            ),
          );
        });
      }),
    );

  agents
    .command('show')
    .description('Show one agent (any status) with its effective runtime configuration and where each value comes from')
    .argument('<key>', 'agent key')
    .option('--json', 'print the agent as JSON')
    .action(
      action(async (key: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withAgentErrors(key, async () => {
          const { agent } = await withSpinner(`Loading agent ${key}`, () => client.get<{ agent: Agent }>(agentPath(key), { auth: 'bearer' }));
          if (flags.json) return printJson(agent);
          const config = Object.entries(agent.effective_runtime_config ?? {});
          await show(
            h(
              Stack,
              null,
              h(Details, { title: `Agent ${agent.name}`, fields: agentFields(agent) }),
              h(
                Stack,
                { gap: 0 },
                h(StatusLine, { kind: 'info', message: 'Effective runtime configuration' }),
                h(Table, {
                  headers: ['SETTING', 'VALUE', 'SOURCE'],
                  rows: config.map(([field, { value, source }]) => [field, formatSetting(value), SOURCE_LABELS[source] ?? source]),
                  empty: 'The server sent no runtime configuration.',
                }),
              ),
            ),
          );
        });
      }),
    );

  agents
    .command('deploy')
    .description('Activate an agent so it can run (an active agent stays as it is)')
    .argument('<key>', 'agent key')
    .option('--json', 'print the deployed agent as JSON')
    .action(
      action(async (key: string, flags: { json?: boolean }, command: Command) => {
        const client = commandContext(command).withApiKey();
        return withAgentErrors(key, async () => {
          const { agent } = await withSpinner(`Deploying agent ${key}`, () => client.post<{ agent: Agent }>(`${agentPath(key)}/deploy`, { auth: 'bearer' }));
          if (flags.json) return printJson(agent);
          await show(
            h(StatusLine, {
              kind: 'success',
              message: `Deployed agent ${agent.agent_key} (${agent.name}); status is now ${agent.status}`,
              hints: [`Run it: liya agents run ${agent.agent_key} "Hello"`],
            }),
          );
        });
      }),
    );

  agents
    .command('run')
    .description(
      'Run one turn of a conversation with an active agent (POST /v1/agents/{key}/run/stream): prints the answer as it is written ' +
        'and each tool call as it happens on stdout, then a line about the run (status, steps, cost, latency, run, session) on stderr',
    )
    .argument('<key>', 'agent key')
    .argument('<message>', 'the user\'s message')
    .option('--session <id>', 'continue this conversation (the session id printed by an earlier run)')
    .option('--user <user_id>', 'the end user (keys their preferences and memory)')
    .option('--json', 'print only the final result {run_id, session_id, status, output, steps, total_cost, total_latency_ms} as JSON')
    .addHelpText(
      'after',
      `
Exit codes: 0 the run completed or asks for input (needs_input); 1 it ended otherwise (failed, max_steps_reached,
budget_exhausted, guardrail_blocked, cancelled), was refused or the server was unreachable; 2 usage error or missing key.
Ctrl-C stops the run (the server records it as cancelled). --timeout (default ${RUN_IDLE_TIMEOUT_MS / 1000} s here) limits how long the stream may stay silent.`,
    )
    .action(action((key: string, message: string, flags: RunFlags, command: Command) => runAgent(key, message, flags, command)));

  return agents;
}
