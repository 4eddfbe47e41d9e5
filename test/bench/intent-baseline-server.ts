// The intent-run benchmark's yardstick: a node:http server whose handler makes the same model call
// Liya makes for POST /v1/run, directly with the openai SDK, and nothing else (no auth, no quota,
// no guardrails, no session, no metering, no database). It reads and parses the JSON body, puts
// the request's current_role into a replay of the chat request Liya sent (same system prompt, same
// user prompt, same response_format and model), parses the model's JSON answer and returns it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { sendJson as send, readJsonBody as readJson } from './lib.js';

export interface IntentBaselineOptions {
  /** The fake provider's base URL (ending in /v1). */
  baseURL: string;
  apiKey: string;
  /** A chat request body Liya sent to the provider, to replay. */
  captured: ChatCompletionCreateParamsNonStreaming;
  /** The current_role that request was made with: replaced by each request's own. */
  capturedRole: string;
  /** As Liya's client: LLM_MAX_RETRIES and LLM_TIMEOUT_MS defaults. */
  maxRetries: number;
  timeoutMs: number;
}

export interface IntentBaselineServer {
  url: string;
  close(): Promise<void>;
}

export async function startIntentBaselineServer(options: IntentBaselineOptions): Promise<IntentBaselineServer> {
  const client = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey, maxRetries: options.maxRetries, timeout: options.timeoutMs });
  const { captured, capturedRole } = options;
  const [system, user] = captured.messages;
  if (system?.role !== 'system' || user?.role !== 'user' || typeof user.content !== 'string' || !user.content.includes(capturedRole)) {
    throw new Error('baseline: the captured request is not [system, user] with the current_role in the user prompt');
  }
  const userTemplate = user.content;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'POST' || (req.url ?? '/').split('?')[0] !== '/v1/run') return send(res, 404, { success: false });
    const body = await readJson(req);
    const role = body?.input?.current_role;
    if (typeof role !== 'string') return send(res, 400, { success: false });
    const completion = await client.chat.completions.create(
      { ...captured, messages: [system, { role: 'user', content: userTemplate.replace(capturedRole, role) }] },
      { timeout: options.timeoutMs },
    );
    const output = JSON.parse(completion.choices[0]?.message?.content ?? 'null') as unknown;
    send(res, 200, { success: true, data: { output }, metadata: { model_used: completion.model }, usage: completion.usage ?? null });
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
