// The intent-run benchmark's yardstick: a node:http server whose handler makes the same model call
// Liya makes for POST /v1/run, directly with the openai SDK, and nothing else (no auth, no quota,
// no guardrails, no session, no metering, no database). It reads and parses the JSON body, puts
// the request's current_role into a replay of the chat request Liya sent (same system prompt, same
// user prompt, same response_format and model), parses the model's JSON answer and returns it.
//
// With `store`, it is the fastest honest way to give a run Liya's guarantees, over the simplest
// table shape: before the model call, ONE named prepared statement checks the API key (revoked,
// tenant active: a revocation takes effect at once), reads this month's usage for the quota and
// looks the answer up in the tenant's cache; after it, ONE statement (asynchronous commit, as
// Liya's) adds to the monthly counter, stores the turn (both messages in one row) and the cache
// entry, before the answer goes out. What it leaves out is what a platform has and a single-purpose
// handler does not: routing, input and output schemas, guardrails, per-call usage events, sessions
// as their own rows, logs, metrics, traces.
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import pg from 'pg';
import { sendJson as send, readJsonBody as readJson } from './lib.js';

/** The stored baseline's tables, with the one API key (and its tenant) copied from Liya's tables. */
export async function createFlatRunTables(databaseUrl: string, keyHash: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`
      drop table if exists flat_run_keys, flat_run_usage, flat_run_cache, flat_run_turns;
      create table flat_run_keys (key_hash text primary key, tenant_id uuid not null, revoked boolean not null, tenant_active boolean not null,
        monthly_request_quota bigint, monthly_token_quota bigint);
      create table flat_run_usage (tenant_id uuid not null, month text not null, requests bigint not null, tokens bigint not null, primary key (tenant_id, month));
      create table flat_run_cache (tenant_id uuid not null, cache_key text not null, output jsonb not null, model text not null, expires_at timestamptz not null,
        primary key (tenant_id, cache_key));
      create table flat_run_turns (id uuid primary key, tenant_id uuid not null, user_content jsonb not null, assistant_content jsonb not null,
        model text not null, tokens int not null, latency_ms int not null, created_at timestamptz not null default now());
      insert into flat_run_keys select k.key_hash, k.tenant_id, k.revoked_at is not null, t.is_active, t.monthly_request_quota, t.monthly_token_quota
        from api_keys k join tenants t on t.id = k.tenant_id where k.key_hash = $$${keyHash}$$;`);
    await client.query('vacuum analyze flat_run_keys');
  } finally {
    await client.end();
  }
}

const READ_RUN = {
  name: 'flat_run_read',
  text: `select k.tenant_id, k.revoked, k.tenant_active, k.monthly_request_quota, k.monthly_token_quota, u.requests, u.tokens, c.output as cached
    from flat_run_keys k
    left join flat_run_usage u on u.tenant_id = k.tenant_id and u.month = $2
    left join flat_run_cache c on c.tenant_id = k.tenant_id and c.cache_key = $3 and c.expires_at > now()
    where k.key_hash = $1`,
};
const WRITE_RUN = {
  name: 'flat_run_write',
  text: `with async_commit as (select set_config('synchronous_commit', 'off', true)),
    usage as (insert into flat_run_usage values ($1, $2, 1, $3) on conflict (tenant_id, month)
      do update set requests = flat_run_usage.requests + 1, tokens = flat_run_usage.tokens + excluded.tokens returning 1),
    turn as (insert into flat_run_turns (id, tenant_id, user_content, assistant_content, model, tokens, latency_ms) values ($4, $1, $5, $6, $7, $3, $8) returning 1),
    cache as (insert into flat_run_cache values ($1, $9, $6, $7, now() + interval '1 hour') on conflict (tenant_id, cache_key)
      do update set output = excluded.output, model = excluded.model, expires_at = excluded.expires_at returning 1)
    select (select count(*) from async_commit) + (select count(*) from usage) + (select count(*) from turn) + (select count(*) from cache) as n`,
};

interface ReadRow {
  tenant_id: string;
  revoked: boolean;
  tenant_active: boolean;
  monthly_request_quota: string | null;
  monthly_token_quota: string | null;
  requests: string | null;
  tokens: string | null;
  cached: unknown;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const fail = (res: http.ServerResponse, status: number, code: string) => send(res, status, { success: false, error: { code, message: code } });

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
  /** Checks the key and quota and stores the run (tables made by createFlatRunTables). */
  store?: { databaseUrl: string; poolMax: number };
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

  const pool = options.store ? new pg.Pool({ connectionString: options.store.databaseUrl, max: options.store.poolMax }) : null;
  pool?.on('error', () => undefined);

  const callModel = async (role: string) => {
    const completion = await client.chat.completions.create(
      { ...captured, messages: [system, { role: 'user', content: userTemplate.replace(capturedRole, role) }] },
      { timeout: options.timeoutMs },
    );
    return { output: JSON.parse(completion.choices[0]?.message?.content ?? 'null') as unknown, model: completion.model, usage: completion.usage ?? null };
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'POST' || (req.url ?? '/').split('?')[0] !== '/v1/run') return send(res, 404, { success: false });
    if (!pool) {
      const body = await readJson(req);
      const role = body?.input?.current_role;
      if (typeof role !== 'string') return send(res, 400, { success: false });
      const { output, model, usage } = await callModel(role);
      return send(res, 200, { success: true, data: { output }, metadata: { model_used: model }, usage });
    }
    const started = performance.now();
    const auth = req.headers.authorization;
    const key = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    if (!key) return fail(res, 401, 'UNAUTHORIZED');
    const body = await readJson(req);
    const input = body?.input;
    if (typeof input?.current_role !== 'string') return fail(res, 400, 'INVALID_INPUT');
    const month = new Date().toISOString().slice(0, 7);
    const userContent = JSON.stringify(input);
    const cacheKey = sha256(userContent);
    const row = (await pool.query<ReadRow>({ ...READ_RUN, values: [sha256(key), month, cacheKey] })).rows[0];
    if (!row || row.revoked || !row.tenant_active) return fail(res, 401, 'UNAUTHORIZED');
    const over = (quota: string | null, used: string | null) => quota !== null && Number(used ?? 0) >= Number(quota);
    if (over(row.monthly_request_quota, row.requests) || over(row.monthly_token_quota, row.tokens)) return fail(res, 429, 'QUOTA_EXCEEDED');
    if (row.cached !== null) return send(res, 200, { success: true, data: { output: row.cached }, metadata: { cached: true } });
    const { output, model, usage } = await callModel(input.current_role);
    const tokens = usage?.total_tokens ?? 0;
    const id = randomUUID();
    const latencyMs = Math.round(performance.now() - started);
    await pool.query({ ...WRITE_RUN, values: [row.tenant_id, month, tokens, id, userContent, JSON.stringify(output), model, latencyMs, cacheKey] });
    send(res, 200, { success: true, data: { output, message_id: id }, metadata: { model_used: model, tokens_used: tokens, latency_ms: latencyMs, cached: false } });
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
      await pool?.end();
    },
  };
}
