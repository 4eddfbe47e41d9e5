// One SDK client per (base URL, key): clients hold connection pools, so they are reused, not rebuilt per call.
import type OpenAI from 'openai';
import type { Logger } from 'pino';

type OpenAiSdk = typeof import('openai');
let sdk: OpenAiSdk | undefined;
let loading: Promise<OpenAiSdk> | undefined;

/**
 * The openai SDK, loaded on first use: its ~240 modules took 100-150 ms of every start, before
 * the server could answer. `preloadOpenAiSdk` loads it once the server is ready.
 */
export function loadOpenAiSdk(): Promise<OpenAiSdk> {
  loading ??= import('openai').then((loaded) => (sdk = loaded));
  return loading;
}

/** The SDK if it was loaded (an error can only be one of its errors once it is). */
export const loadedOpenAiSdk = (): OpenAiSdk | undefined => sdk;

/**
 * Loads the SDK in the background, half a second after the start, so the first model call does not
 * wait for it and the first readiness probes do not wait for the load (40-60 ms of one thread).
 */
export function preloadOpenAiSdk(): void {
  setTimeout(() => void loadOpenAiSdk().catch(() => undefined), 500).unref();
}

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

/** The openai SDK client, with everything it would otherwise read from the environment set explicitly (after `loadOpenAiSdk`). */
export const createOpenAiClient: CreateClient = (spec) => {
  if (!sdk) throw new Error('createOpenAiClient needs the openai SDK loaded first (await loadOpenAiSdk())');
  return new sdk.OpenAI({
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
};

export interface ClientCache {
  /** The client for this provider and key (loading the SDK first, the first time). */
  get(baseURL: string, apiKey: string): Promise<OpenAI>;
  /** The client last handed out when it is for this provider and key, without waiting (else null: call `get`). */
  lastFor(baseURL: string, apiKey: string): OpenAI | null;
  readonly size: number;
}

/** Options: `maxEntries` clients are kept (default 200; tenants' own keys each need one), least recently used go first. */
export function createClientCache(
  options: { createClient?: CreateClient; maxRetries: number; timeout: number; log?: Logger; maxEntries?: number },
): ClientCache {
  const create = options.createClient ?? createOpenAiClient;
  const maxEntries = options.maxEntries ?? 200;
  const clients = new Map<string, OpenAI>();
  // The last client handed out: most calls in a row go to the same provider and key.
  let last: { baseURL: string; apiKey: string; client: OpenAI } | null = null;
  return {
    lastFor: (baseURL, apiKey) => (last && last.baseURL === baseURL && last.apiKey === apiKey ? last.client : null),
    async get(baseURL, apiKey) {
      if (!sdk) await loadOpenAiSdk();
      if (last && last.baseURL === baseURL && last.apiKey === apiKey) return last.client;
      const id = `${baseURL}\n${apiKey}`;
      let client = clients.get(id);
      if (client) {
        clients.delete(id);
      } else {
        client = create({ baseURL, apiKey, maxRetries: options.maxRetries, timeout: options.timeout, log: options.log });
        if (clients.size >= maxEntries) clients.delete(clients.keys().next().value!);
      }
      clients.set(id, client);
      last = { baseURL, apiKey, client };
      return client;
    },
    get size() {
      return clients.size;
    },
  };
}
