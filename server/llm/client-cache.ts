// One SDK client per (base URL, key): clients hold connection pools, so they are reused, not rebuilt per call.
import OpenAI from 'openai';
import type { Logger } from 'pino';

export interface ClientSpec {
  baseURL: string;
  apiKey: string;
  maxRetries: number;
  /** Default per-request timeout (a call may pass its own). */
  timeout: number;
  log?: Logger;
}

export type CreateClient = (spec: ClientSpec) => OpenAI;

// The SDK insists on a key; keyless servers (a local model server) ignore this one.
export const NO_KEY = 'no-key';

/** The openai SDK client, with everything it would otherwise read from the environment set explicitly. */
export const createOpenAiClient: CreateClient = (spec) =>
  new OpenAI({
    baseURL: spec.baseURL,
    apiKey: spec.apiKey,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: spec.maxRetries,
    timeout: spec.timeout,
    // The SDK's own messages go to our logger at warn and above; its info/debug lines carry request details.
    logLevel: 'warn',
    logger: {
      error: (message: string) => spec.log?.error({ provider: spec.baseURL }, message),
      warn: (message: string) => spec.log?.warn({ provider: spec.baseURL }, message),
      info: () => undefined,
      debug: () => undefined,
    },
  });

export interface ClientCache {
  get(baseURL: string, apiKey: string): OpenAI;
  readonly size: number;
}

/** Options: `maxEntries` clients are kept (default 200; tenants' own keys each need one), least recently used go first. */
export function createClientCache(
  options: { createClient?: CreateClient; maxRetries: number; timeout: number; log?: Logger; maxEntries?: number },
): ClientCache {
  const create = options.createClient ?? createOpenAiClient;
  const maxEntries = options.maxEntries ?? 200;
  const clients = new Map<string, OpenAI>();
  return {
    get(baseURL, apiKey) {
      const id = `${baseURL}\n${apiKey}`;
      let client = clients.get(id);
      if (client) {
        clients.delete(id);
      } else {
        client = create({ baseURL, apiKey, maxRetries: options.maxRetries, timeout: options.timeout, log: options.log });
        if (clients.size >= maxEntries) clients.delete(clients.keys().next().value!);
      }
      clients.set(id, client);
      return client;
    },
    get size() {
      return clients.size;
    },
  };
}
