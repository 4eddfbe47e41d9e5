// The fake model provider (test/support/fake-llm.ts) in a worker thread of its own, so benchmarks
// do not run the provider on the event loop of the server they measure (a real provider is remote;
// here it still shares the machine's cores).
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import type { FakeRequest } from '../support/fake-llm.js';

type Command = { id: number; cmd: 'stats' | 'reset' | 'close' };
type Reply = { id: number; chatRequests?: number; firstChat?: Pick<FakeRequest, 'path' | 'body'> | null; error?: string };

export interface FakeLlmThread {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  /** Chat requests received since the start or the last reset, and the first of them. */
  stats(): Promise<{ chatRequests: number; firstChat: Pick<FakeRequest, 'path' | 'body'> | null }>;
  /** Forgets the request log (it grows with every request). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeLlmThread(): Promise<FakeLlmThread> {
  const worker = new Worker(new URL('./ts-worker.mjs', import.meta.url), { workerData: { entry: import.meta.url } });
  const pending = new Map<number, (reply: Reply) => void>();
  let nextId = 0;
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (msg: { url: string }) => {
      worker.off('error', reject);
      resolve(msg.url);
    });
  });
  worker.on('message', (reply: Reply) => pending.get(reply.id)?.(reply));
  const call = (cmd: Command['cmd']) =>
    new Promise<Reply>((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, (reply) => {
        pending.delete(id);
        if (reply.error) reject(new Error(`fake provider thread: ${reply.error}`));
        else resolve(reply);
      });
      worker.postMessage({ id, cmd } satisfies Command);
    });
  return {
    url,
    async stats() {
      const reply = await call('stats');
      return { chatRequests: reply.chatRequests ?? 0, firstChat: reply.firstChat ?? null };
    },
    async reset() {
      await call('reset');
    },
    async close() {
      await call('close').catch(() => undefined);
      await worker.terminate();
    },
  };
}

// ---------------------------------------------------------------- inside the worker

if (!isMainThread && parentPort) {
  const port = parentPort;
  const { startFakeLlm } = await import('../support/fake-llm.js');
  const fake = await startFakeLlm();
  port.on('message', (msg: Command) => {
    void (async (): Promise<Reply> => {
      if (msg.cmd === 'stats') {
        const chats = fake.chatRequests();
        return { id: msg.id, chatRequests: chats.length, firstChat: chats[0] ? { path: chats[0].path, body: chats[0].body } : null };
      }
      if (msg.cmd === 'reset') fake.reset();
      if (msg.cmd === 'close') await fake.close();
      return { id: msg.id };
    })()
      .catch((err: unknown) => ({ id: msg.id, error: err instanceof Error ? err.message : String(err) }))
      .then((reply) => port.postMessage(reply));
  });
  port.postMessage({ url: fake.url });
}
