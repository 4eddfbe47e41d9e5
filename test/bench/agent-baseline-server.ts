// The agents benchmark's yardstick and its scripted model provider.
//
// startAgentBaselineServer: a node:http server whose handler runs the same two-step tool loop Liya
// runs for POST /v1/agents/{key}/run, directly with the openai SDK, and nothing else (no auth, no
// quota, no guardrails, no session, no run or step rows, no metering, no database): model call 1
// with the tools param Liya sent, the current_time tool Liya offers (the platform's own function,
// run in-process), model call 2 with the tool result, the answer as JSON.
//
// startAgentFakeLlmThread: the fake provider (test/support/fake-llm.ts) in a worker thread of its
// own, like fake-llm-thread.ts, but scripted for a tool loop: a request whose last message is a
// tool result gets a text answer, any other request gets a current_time tool call. So every run
// is exactly two model calls, whoever makes it.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { AgentTool } from '../../server/agents/agent-tool.types.js';
import type { FakeAnswer, FakeRequest } from '../support/fake-llm.js';
import { startFakeProviderThread, serveFakeProviderThread } from './fake-llm-thread.js';
import { sendJson as send, readJsonBody as readJson } from './lib.js';

// ---------------------------------------------------------------- the scripted provider thread

const WORKER_ROLE = 'agent-fake-llm';

type Command = { cmd: 'stats' | 'reset' | 'close' };
type Reply = { chatRequests?: number; toolResultRequests?: number; firstChats?: unknown[] };

export interface AgentFakeStats {
  /** Chat requests since the start or the last reset. */
  chatRequests: number;
  /** Of those, requests whose last message was a tool result (answered with text). */
  toolResultRequests: number;
  /** The bodies of the first two chat requests (one run's two calls, when one run was made). */
  firstChats: unknown[];
}

export interface AgentFakeLlmThread {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  stats(): Promise<AgentFakeStats>;
  /** Forgets the request log (it grows with every request); the script stays. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** The answer the scripted provider gives to a request that ends with a tool result. */
export const FINAL_ANSWER_PREFIX = 'The current time is ';

function scriptedAnswer(request: FakeRequest): FakeAnswer {
  const messages = (request.body?.messages ?? []) as { role?: string; content?: unknown }[];
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') {
    let utc = 'unknown';
    try {
      utc = String((JSON.parse(String(last.content)) as { utc?: string }).utc ?? 'unknown');
    } catch {
      // not the current_time result: answer anyway
    }
    return { content: `${FINAL_ANSWER_PREFIX}${utc}.` };
  }
  return { tool_calls: [{ name: 'current_time', arguments: {} }] };
}

export async function startAgentFakeLlmThread(): Promise<AgentFakeLlmThread> {
  const thread = await startFakeProviderThread<Command, Reply>(import.meta.url, 'agent fake provider thread', { role: WORKER_ROLE });
  return {
    url: thread.url,
    async stats() {
      const reply = await thread.call({ cmd: 'stats' });
      return { chatRequests: reply.chatRequests ?? 0, toolResultRequests: reply.toolResultRequests ?? 0, firstChats: reply.firstChats ?? [] };
    },
    async reset() {
      await thread.call({ cmd: 'reset' });
    },
    close: () => thread.close(),
  };
}

if (!isMainThread && parentPort && (workerData as { role?: string } | null)?.role === WORKER_ROLE) {
  const { startFakeLlm } = await import('../support/fake-llm.js');
  const fake = await startFakeLlm();
  fake.script(scriptedAnswer);
  serveFakeProviderThread<Command, Reply>(parentPort, fake.url, async (msg) => {
    if (msg.cmd === 'stats') {
      const chats = fake.chatRequests();
      const toolResultRequests = chats.filter((c) => (c.body?.messages ?? []).at(-1)?.role === 'tool').length;
      return { chatRequests: chats.length, toolResultRequests, firstChats: chats.slice(0, 2).map((c) => c.body) };
    }
    if (msg.cmd === 'reset') {
      fake.reset(); // clears the script too
      fake.script(scriptedAnswer);
    }
    if (msg.cmd === 'close') await fake.close();
    return {};
  });
}

// ---------------------------------------------------------------- the baseline server

export interface AgentBaselineOptions {
  /** The fake provider's base URL (ending in /v1). */
  baseURL: string;
  apiKey: string;
  /**
   * The two chat requests Liya sent for one run: [system, user] with the tools, then
   * [system, user, assistant tool call, tool result]. Everything but the messages is replayed as is.
   */
  captured: [ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsNonStreaming];
  /** As Liya's client: LLM_MAX_RETRIES and LLM_TIMEOUT_MS. */
  maxRetries: number;
  timeoutMs: number;
}

export interface AgentBaselineServer {
  url: string;
  close(): Promise<void>;
}

const RUN_PATH = /^\/v1\/agents\/[^/]+\/run$/;
const MAX_STEPS = 10;

export async function startAgentBaselineServer(options: AgentBaselineOptions): Promise<AgentBaselineServer> {
  const client = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey, maxRetries: options.maxRetries, timeout: options.timeoutMs });
  const [first, second] = options.captured;
  const system = first.messages[0];
  if (system?.role !== 'system' || first.messages[1]?.role !== 'user' || !first.tools?.length) {
    throw new Error('agent baseline: the first captured request is not [system, user] with tools');
  }
  if (second.messages.at(-1)?.role !== 'tool') throw new Error('agent baseline: the second captured request does not end with a tool result');
  const { messages: _m1, ...firstParams } = first;
  const { messages: _m2, ...laterParams } = second;

  // The platform's own current_time tool, built as Liya builds it for an agent enabling only it.
  const { buildPlatformTools } = await import('../../server/agents/platform-tools.js');
  const tools = await buildPlatformTools({ config: { platformTools: ['current_time'] }, toolsConfig: {}, userId: null } as never);
  const byName = new Map<string, AgentTool>(tools.map((t) => [t.name, t]));
  const offered = (first.tools as ChatCompletionTool[]).map((t) => (t.type === 'function' ? t.function.name : t.type));
  if (offered.join() !== [...byName.keys()].join()) throw new Error(`agent baseline: Liya offered ${offered.join()}, the baseline has ${[...byName.keys()].join()}`);

  async function runTool(name: string, rawArguments: string): Promise<string> {
    const tool = byName.get(name);
    if (!tool) return `ERROR: there is no tool named "${name}"`;
    try {
      const args = rawArguments.trim() ? (JSON.parse(rawArguments) as Record<string, unknown>) : {};
      const outcome = await tool.run(args, { signal: AbortSignal.timeout(options.timeoutMs), timeoutMs: options.timeoutMs });
      return JSON.stringify(outcome.output ?? null);
    } catch (err) {
      return `ERROR: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'POST' || !RUN_PATH.test((req.url ?? '/').split('?')[0])) return send(res, 404, { success: false });
    const started = performance.now();
    const body = await readJson(req);
    const message = body?.input?.message;
    if (typeof message !== 'string') return send(res, 400, { success: false });
    const messages: ChatCompletionMessageParam[] = [system, { role: 'user', content: message }];
    let steps = 0;
    let tokens = 0;
    let output = '';
    let status = 'max_steps_reached';
    while (steps < MAX_STEPS) {
      const completion = await client.chat.completions.create({ ...(steps === 0 ? firstParams : laterParams), messages }, { timeout: options.timeoutMs });
      steps++;
      tokens += completion.usage?.total_tokens ?? 0;
      const answer = completion.choices[0]?.message;
      const calls = (answer?.tool_calls ?? []).filter((c) => c.type === 'function');
      if (answer?.content) output = answer.content;
      if (!calls.length) {
        status = 'completed';
        break;
      }
      messages.push({ role: 'assistant', content: answer?.content ?? null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: c.function })) });
      const results = await Promise.all(calls.map((c) => runTool(c.function.name, c.function.arguments)));
      calls.forEach((c, i) => messages.push({ role: 'tool', tool_call_id: c.id, content: results[i] }));
    }
    send(res, 200, {
      success: true,
      data: { run_id: randomUUID(), session_id: randomUUID(), status, output, steps, total_tokens: tokens, total_latency_ms: Math.round(performance.now() - started) },
    });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { success: false });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
