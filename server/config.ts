import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PLAN_NAMES, type PlanLimitOverrides } from './tenants/plan-limits.js';
import { HISTORY_KINDS, HISTORY_POLICY, type RetentionOverrides } from './retention/retention-policy.js';

// The only reader of process.env. Every variable is documented in .env.example.
const boolFlag = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', 'on', 'off'])
  .transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

/** A JSON-encoded variable, parsed and then checked against `schema`. */
const jsonVariable = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);

const llmProviderSchema = z.object({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'lower-case letters, digits, - and _')
    // `openai` names the default provider (OPENAI_BASE_URL / OPENAI_API_KEY).
    .refine((name) => name !== 'openai', 'the name openai is reserved for the default provider'),
  baseUrl: z.string().url(),
  apiKey: z.string().min(1).optional(),
  /** Names the variable holding the key, so the key itself stays out of LLM_PROVIDERS. */
  apiKeyEnv: z.string().min(1).optional(),
});
export type LlmProviderConfig = z.infer<typeof llmProviderSchema>;

/** PLAN_LIMITS: per plan, any limit's new value (numbers are positive integers, mail_per_day may be 0). */
function planLimitsSchema(): z.ZodType<PlanLimitOverrides> {
  const count = z.number().int().min(1);
  const limits = z
    .object({
      run_steps: count, step_output_bytes: count, run_state_bytes: count, run_input_bytes: count, run_wall_seconds: count,
      nesting_depth: count, nested_runs: z.number().int().min(0), expression_ms: count, expression_result_size: count,
      mail_per_day: z.number().int().min(0), mail_recipients: count, mail_any_recipient: z.boolean(),
    })
    .partial()
    .strict();
  return z.partialRecord(z.enum(PLAN_NAMES), limits) as z.ZodType<PlanLimitOverrides>;
}

/** RETENTION_DAYS: per plan, days kept of any history kind (at least the kind's minimum). */
function retentionDaysSchema(): z.ZodType<RetentionOverrides> {
  const kinds = Object.fromEntries(HISTORY_KINDS.map((kind) => [kind, z.number().int().min(HISTORY_POLICY[kind].minDays).max(36_500)]));
  return z.partialRecord(z.enum(PLAN_NAMES), z.object(kinds).partial().strict()) as z.ZodType<RetentionOverrides>;
}

const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `json` lines, readable `pretty` lines, or `auto` (default): pretty when stdout is a terminal, else JSON. */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  DATABASE_URL: z.string().url().optional(),
  PG_DATA_DIR: z.string().default('./.liya/pg'),
  PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  WORKER: boolFlag.default(true),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  /**
   * Plans, deployments and publishes this process works on at once (each holds one database
   * connection while it runs); more wait in a queue of 16. Never more than DB_POOL_MAX - 2, so the
   * pool always has connections for everything else.
   */
  DEPLOY_CONCURRENCY: z.coerce.number().int().min(1).max(50).default(2),
  /** How often each process says it is alive; a process silent for 4 beats is dead (its runs and job locks are recovered). */
  HEARTBEAT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  /** The address clients reach this server at (webhook and callback URLs); default http://localhost:PORT. */
  PUBLIC_URL: z.string().url().optional(),
  JWT_SECRET: z.string().min(32, 'JWT_SECRET must be at least 32 characters').optional(),
  JWT_TTL_SECONDS: z.coerce.number().int().min(60).default(7 * 24 * 3600),
  ADMIN_SECRET: z.string().min(16, 'ADMIN_SECRET must be at least 16 characters').optional(),
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().default('Liya <no-reply@localhost>'),
  APP_URL: z.string().url().default('http://localhost:3000'),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  /**
   * Largest tenant archive POST /admin/tenants/import reads, counted as uncompressed NDJSON (default
   * 4 GiB); the only route above BODY_LIMIT_BYTES. It must also arrive within REQUEST_TIMEOUT_MS.
   */
  TENANT_IMPORT_MAX_BYTES: z.coerce.number().int().min(1024).default(4 * 1024 ** 3),
  /** Time for a client to send a whole request, headers and body (default 120 s): 408 REQUEST_TIMEOUT after it. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),
  LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).default(10),
  LOGIN_WINDOW_SECONDS: z.coerce.number().int().min(1).default(15 * 60),
  TRUST_PROXY: boolFlag.default(false),
  // Model providers: the default one is any OpenAI-compatible server.
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  /** JSON array of named providers: [{"name","baseUrl","apiKey"?,"apiKeyEnv"?}]. */
  LLM_PROVIDERS: jsonVariable(
    z.array(llmProviderSchema).refine((list) => new Set(list.map((p) => p.name)).size === list.length, 'provider names must be unique'),
  ).optional(),
  DEFAULT_MODEL: z.string().default('gpt-4o-mini'),
  /** The evaluation judge's model (default: DEFAULT_MODEL). */
  EVAL_JUDGE_MODEL: z.string().trim().min(1).max(200).optional(),
  /** Cases one evaluation run scores at once (default 10); one tenant's runs share as many per process. */
  EVAL_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(10),
  /** Embeds ingested documents when neither the upload nor its collection names a model (unset: no embeddings). */
  EMBEDDING_MODEL: z.string().trim().min(1).max(200).optional(),
  /** A model that reads images (e.g. gpt-4o-mini): transcribes image attachments and scanned pages on plans that allow it (unset: local OCR). */
  VISION_MODEL: z.string().trim().min(1).max(200).optional(),
  LLM_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
  LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /**
   * JSON array of model refs that serve, in order, when a call's own model fails or cools down and
   * neither the intent, agent or suite nor the tenant names fallbacks (default: none).
   */
  LLM_FALLBACK_MODELS: jsonVariable(z.array(z.string().trim().min(1).max(200)).max(3)).optional(),
  /** Calls a target's breaker must have seen before it opens: it opens when more than half of its last 20 calls failed (default 5). */
  LLM_BREAKER_MIN_CALLS: z.coerce.number().int().min(1).max(20).default(5),
  /** How long an open breaker sends no call to its target before one probe may close it (default 10 s). */
  LLM_BREAKER_COOLDOWN_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  /** Retries a target may add, as a share of its first attempts in the last 10 s, beyond 10 (default 0.1). */
  LLM_RETRY_BUDGET: z.coerce.number().min(0).max(10).default(0.1),
  /** The longest a call waits for a provider's Retry-After before it falls back or fails instead (default 20 s). */
  LLM_MAX_RETRY_WAIT_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
  /**
   * How long batch work (an evaluation case, an ingestion's embeddings batch) keeps waiting and
   * trying again while the provider fails in a way time may cure (default 2 min; 0: no waiting).
   */
  PROVIDER_PATIENCE_MS: z.coerce.number().int().min(0).max(3_600_000).default(120_000),
  /** JSON object overriding prices: {"model": {"input": usdPerMillion, "output": usdPerMillion}}. */
  LLM_PRICES: jsonVariable(z.record(z.string(), z.object({ input: z.number().min(0), output: z.number().min(0) }))).optional(),
  /** 32+ characters; encrypts tenants' provider keys. Unset: generated once and kept in the database. */
  ENCRYPTION_KEY: z.string().min(32).optional(),
  /** A session with no activity for this long is expired (default 24 h). */
  SESSION_TTL_SECONDS: z.coerce.number().int().min(60).default(24 * 3600),
  /**
   * Outbound calls (agent http_get, MCP servers, later webhooks) never reach private, loopback,
   * link-local or metadata addresses, except the hosts listed here: comma-separated host names,
   * IP addresses or CIDR ranges (e.g. `mcp.internal,10.0.0.0/8`). Default: none.
   */
  OUTBOUND_ALLOWED_HOSTS: z
    .string()
    .optional()
    .transform((v) => (v ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean)),
  /**
   * Events out: seconds to wait after each failed delivery attempt, comma-separated; one attempt
   * more than the list is long. Default: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (8 attempts over
   * about 27.6 hours, as Standard Webhooks senders such as Svix do).
   */
  EVENT_RETRY_SCHEDULE: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const list = (v ?? '5,300,1800,7200,18000,36000,36000').split(',').map((x) => Number(x.trim()));
      if (list.length === 0 || list.length > 20 || list.some((x) => !Number.isFinite(x) || x < 0 || x > 7 * 24 * 3600)) {
        ctx.addIssue({ code: 'custom', message: 'EVENT_RETRY_SCHEDULE: 1 to 20 comma-separated seconds, each 0 to 604800' });
        return z.NEVER;
      }
      return list;
    }),
  /** Time limit of one event delivery attempt, in ms (default 15 s); a slower receiver's attempt fails and is retried. */
  EVENT_DELIVERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** A subscription is paused after this many deliveries in a row used every attempt without success (default 3). */
  EVENT_PAUSE_AFTER_FAILED_DELIVERIES: z.coerce.number().int().min(1).max(1000).default(3),
  /** Time limit of one outbound HTTP call (default 10 s). */
  OUTBOUND_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  /** Largest outbound response body read, in bytes (default 1 MiB); the rest is cut off. */
  OUTBOUND_MAX_BYTES: z.coerce.number().int().min(1024).max(100 * 1024 * 1024).default(1024 * 1024),
  /**
   * JSON object changing plan limits (server/tenants/plan-limits.ts), e.g. {"trial": {"run_steps": 10000}}.
   * Unset: the documented defaults.
   */
  PLAN_LIMITS: jsonVariable(planLimitsSchema()).optional(),
  /**
   * JSON object changing how many days each plan keeps a kind of history (server/retention/
   * retention-policy.ts), e.g. {"pro": {"workflow_runs": 365}}. A plan's days are the longest its
   * tenants may set. Unset: the documented defaults.
   */
  RETENTION_DAYS: jsonVariable(retentionDaysSchema()).optional(),
  /**
   * Days the hiring domain's history (its sessions and messages, usage events and evaluation runs)
   * is kept at least, whatever the plan or the tenant sets (default 183: the EU AI Act asks
   * deployers of high-risk systems to keep their logs six months at least). 0: no floor.
   */
  HIRING_RETENTION_FLOOR_DAYS: z.coerce.number().int().min(0).max(36_500).default(183),
  // Prometheus metrics: off unless METRICS_PORT or METRICS_TOKEN is set.
  /** Serves GET /metrics on its own listener at METRICS_HOST:METRICS_PORT (API and `liya worker` processes), never on PORT. */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** The metrics listener's address (default 127.0.0.1: only this machine; 0.0.0.0 for a scraper elsewhere, then set METRICS_TOKEN). */
  METRICS_HOST: z.string().default('127.0.0.1'),
  /**
   * A scraper sends it as `Authorization: Bearer <token>` (401 UNAUTHORIZED without it). Alone (no
   * METRICS_PORT) it serves GET /metrics on the API port; with METRICS_PORT it guards that listener.
   */
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  /** Adds per-tenant counters labelled tenant_id (runs, model tokens and cost): one series per tenant (default off). */
  METRICS_TENANT_LABELS: boolFlag.default(false),
  // OpenTelemetry traces, under the standard OTEL_* names: off (and the SDK never loaded) unless an
  // OTLP endpoint is set. The exporter reads its other standard variables itself:
  // OTEL_EXPORTER_OTLP_HEADERS (`key=value,...`, e.g. a collector's API key), _TIMEOUT, _COMPRESSION,
  // _CERTIFICATE and their OTEL_EXPORTER_OTLP_TRACES_* forms.
  /** An OTLP/HTTP collector (e.g. http://otel-collector:4318): spans go to <endpoint>/v1/traces, as JSON. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** The full traces URL, used as given (wins over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  /** `none` turns traces off although an endpoint is set. */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).default('otlp'),
  /** `true` turns traces off although an endpoint is set. */
  OTEL_SDK_DISABLED: boolFlag.default(false),
  /** The service.name of every span (default: service.name in OTEL_RESOURCE_ATTRIBUTES, else `liya`). */
  OTEL_SERVICE_NAME: z.string().trim().min(1).max(200).optional(),
  /** More resource attributes, `key=value,key2=value2` (e.g. deployment.environment.name=prod). */
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
  /** Which traces are kept (default parentbased_always_on: all, unless a trusted caller's traceparent says not sampled). */
  OTEL_TRACES_SAMPLER: z
    .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
    .default('parentbased_always_on'),
  /** The ratio of the *traceidratio samplers, 0 to 1 (default 1). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  /** How long finished spans wait to be sent in one batch, in ms (default 5000). */
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(1).max(600_000).default(5000),
  /**
   * Callers whose W3C trace context is trusted, by the connection's peer address: comma-separated IP
   * addresses or CIDR ranges (e.g. a gateway's, `10.0.0.0/8`). Their `tracestate` is passed on and
   * their sampled flag obeyed; anyone else's trace id is continued without either. Default: none.
   */
  TRACE_TRUSTED_NETWORKS: z
    .string()
    .optional()
    .transform((v) => (v ?? '').split(',').map((h) => h.trim()).filter(Boolean)),
});

export type AppConfig = z.infer<typeof configSchema>;

export class ConfigError extends Error {}

/**
 * Reads the configuration from `env` (default: process.env, after loading `./.env` when present;
 * variables already set win over the file).
 */
export function loadConfig(env: NodeJS.ProcessEnv = readProcessEnv()): AppConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return { ...parsed.data, LLM_PROVIDERS: resolveProviderKeys(parsed.data.LLM_PROVIDERS, cleaned) };
}

/** Reads the keys named by LLM_PROVIDERS' `apiKeyEnv` here, so no other module reads the environment. */
function resolveProviderKeys(providers: LlmProviderConfig[] | undefined, env: Record<string, string | undefined>) {
  if (!providers) return undefined;
  return providers.map((provider) => {
    if (provider.apiKey || !provider.apiKeyEnv) return provider;
    const apiKey = env[provider.apiKeyEnv];
    if (!apiKey) throw new ConfigError(`Invalid configuration:\n  LLM_PROVIDERS: ${provider.name}: ${provider.apiKeyEnv} is not set`);
    return { ...provider, apiKey };
  });
}

function readProcessEnv(): NodeJS.ProcessEnv {
  const file = path.resolve('.env');
  if (existsSync(file)) process.loadEnvFile(file);
  return process.env;
}
