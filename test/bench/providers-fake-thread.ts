// The providers benchmark's fake model provider, in a worker thread of its own (it loads the fake and
// nothing of the server): an outage switched on and off from the benchmark (every chat call answers
// 503 without Retry-After while it lasts, as a provider in trouble does), and a log of every chat
// call: when it came, what it was answered and the request it belongs to (the marker each benchmark
// request carries in its input), so the benchmark can count attempts per request around the moment
// the breaker opened.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { FakeRequest } from '../support/fake-llm.js';
import { serveFakeProviderThread, startFakeProviderThread } from './fake-llm-thread.js';

const WORKER_ROLE = 'providers-fake-llm';
/** The marker each benchmark request carries (`bench-req-<id>`, the id from autocannon or a counter). */
const MARKER = /bench-req-([A-Za-z0-9_-]+)/;

/** One chat call the provider received. */
export interface ProviderCall {
  /** Epoch ms (sub-millisecond) when it arrived. */
  at: number;
  status: number;
  /** The request's marker, null when the prompt carried none. */
  marker: string | null;
}

type Command = { cmd: 'outage'; on: boolean } | { cmd: 'calls'; clear?: boolean } | { cmd: 'close' };
type Reply = { at?: number; calls?: ProviderCall[] };

export interface ProvidersFakeThread {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  /** Switches the outage on or off; resolves with the epoch ms the switch took effect. */
  outage(on: boolean): Promise<number>;
  /** Every chat call since the start or the last clear (and forgets them when `clear`). */
  calls(clear?: boolean): Promise<ProviderCall[]>;
  close(): Promise<void>;
}

export async function startProvidersFakeThread(label: string): Promise<ProvidersFakeThread> {
  const thread = await startFakeProviderThread<Command, Reply>(import.meta.url, `${label} fake provider thread`, { role: WORKER_ROLE });
  return {
    url: thread.url,
    async outage(on) {
      return (await thread.call({ cmd: 'outage', on })).at!;
    },
    async calls(clear = false) {
      return (await thread.call({ cmd: 'calls', clear })).calls!;
    },
    close: () => thread.close(),
  };
}

// ---------------------------------------------------------------- inside the worker

/** Epoch milliseconds with sub-millisecond precision. */
const now = () => performance.timeOrigin + performance.now();

if (!isMainThread && parentPort && (workerData as { role?: string } | null)?.role === WORKER_ROLE) {
  const { startFakeLlm } = await import('../support/fake-llm.js');
  const fake = await startFakeLlm();
  let outage = false;
  let calls: ProviderCall[] = [];
  const textOf = (body: FakeRequest['body']) => ((body?.messages ?? []) as { content?: unknown }[]).map((m) => (typeof m?.content === 'string' ? m.content : '')).join('\n');
  // Called for every chat request; undefined: the fake's default answer (the schema sampled).
  fake.script((request) => {
    calls.push({ at: now(), status: outage ? 503 : 200, marker: MARKER.exec(textOf(request.body))?.[1] ?? null });
    return outage ? { status: 503, retry_after: null, error: { message: 'The server is temporarily unavailable (benchmark outage)', type: 'server_error' } } : undefined;
  });
  serveFakeProviderThread<Command, Reply>(parentPort, fake.url, async (msg) => {
    if (msg.cmd === 'outage') {
      outage = msg.on;
      return { at: now() };
    }
    if (msg.cmd === 'calls') {
      const all = calls;
      if (msg.clear) calls = [];
      // The fake's own request log holds every body: forgotten too, it only grows.
      fake.requests.length = 0;
      return { calls: all };
    }
    if (msg.cmd === 'close') await fake.close();
    return {};
  });
}
