// The fake model provider (test/support/fake-llm.ts) in a worker thread of its own, so benchmarks
// do not run the provider on the event loop of the server they measure (a real provider is remote;
// here it still shares the machine's cores).
import { isMainThread, type MessagePort, parentPort, Worker, workerData } from 'node:worker_threads';
import type { FakeRequest } from '../support/fake-llm.js';

type Command = { cmd: 'stats' | 'reset' | 'close' };
type Reply = { chatRequests?: number; firstChat?: Pick<FakeRequest, 'path' | 'body'> | null };

export interface FakeLlmThread {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  /** Chat requests received since the start or the last reset, and the first of them. */
  stats(): Promise<{ chatRequests: number; firstChat: Pick<FakeRequest, 'path' | 'body'> | null }>;
  /** Forgets the request log (it grows with every request). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** A fake provider running in a worker thread, and the way to send it numbered commands. */
export interface FakeProviderThread<C extends { cmd: string }, R> {
  url: string;
  /** Sends one command and resolves with the thread's reply (rejects with the thread's error). */
  call(command: C): Promise<R>;
  /** Sends `{cmd: 'close'}` (errors ignored) and ends the thread. */
  close(): Promise<void>;
}

/**
 * Starts the TypeScript module `entry` (a file URL) in a worker thread through ts-worker.mjs (workers
 * do not inherit the tsx loader), waits for its `{url}` and connects the command channel. The module
 * answers with {@link serveFakeProviderThread}; `workerData` reaches it beside `entry`.
 */
export async function startFakeProviderThread<C extends { cmd: string }, R>(entry: string, label: string, workerData: Record<string, unknown> = {}): Promise<FakeProviderThread<C, R>> {
  const worker = new Worker(new URL('./ts-worker.mjs', import.meta.url), { workerData: { ...workerData, entry } });
  const pending = new Map<number, (reply: R & { id: number; error?: string }) => void>();
  let nextId = 0;
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (msg: { url: string }) => {
      worker.off('error', reject);
      resolve(msg.url);
    });
  });
  worker.on('message', (reply: R & { id: number; error?: string }) => pending.get(reply.id)?.(reply));
  const call = (command: C) =>
    new Promise<R>((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, (reply) => {
        pending.delete(id);
        if (reply.error) reject(new Error(`${label}: ${reply.error}`));
        else resolve(reply);
      });
      worker.postMessage({ ...command, id });
    });
  return {
    url,
    call,
    async close() {
      await call({ cmd: 'close' } as C).catch(() => undefined);
      await worker.terminate();
    },
  };
}

/** Inside the thread: answers each command with `handle` (an error becomes the reply's `error`), then announces `url`. */
export function serveFakeProviderThread<C extends { cmd: string }, R extends object>(port: MessagePort, url: string, handle: (command: C) => Promise<R>): void {
  port.on('message', (msg: C & { id: number }) => {
    handle(msg)
      .then((reply) => ({ ...reply, id: msg.id }), (err: unknown) => ({ id: msg.id, error: err instanceof Error ? err.message : String(err) }))
      .then((reply) => port.postMessage(reply));
  });
  port.postMessage({ url });
}

export async function startFakeLlmThread(): Promise<FakeLlmThread> {
  const thread = await startFakeProviderThread<Command, Reply>(import.meta.url, 'fake provider thread');
  return {
    url: thread.url,
    async stats() {
      const reply = await thread.call({ cmd: 'stats' });
      return { chatRequests: reply.chatRequests ?? 0, firstChat: reply.firstChat ?? null };
    },
    async reset() {
      await thread.call({ cmd: 'reset' });
    },
    close: () => thread.close(),
  };
}

// ---------------------------------------------------------------- inside the worker

if (!isMainThread && parentPort && !(workerData as { role?: string } | null)?.role) {
  const { startFakeLlm } = await import('../support/fake-llm.js');
  const fake = await startFakeLlm();
  serveFakeProviderThread<Command, Reply>(parentPort, fake.url, async (msg) => {
    if (msg.cmd === 'stats') {
      const chats = fake.chatRequests();
      return { chatRequests: chats.length, firstChat: chats[0] ? { path: chats[0].path, body: chats[0].body } : null };
    }
    if (msg.cmd === 'reset') fake.reset();
    if (msg.cmd === 'close') await fake.close();
    return {};
  });
}
