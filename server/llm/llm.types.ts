// The contract between the intent runtime (and later agents, evals, knowledge) and the model layer.
// Everything that talks to a model provider lives in server/llm and goes through the openai SDK.
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { EntityManager } from '../../db/orm.js';
import type { UsageEventInput } from '../usage/usage.service.js';
import type { RunBudget } from './run-budget.js';
import type { BreakerReading, TargetHealth } from './target-health.js';

export type JsonSchema = Record<string, unknown>;

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** What the call is for: written on the usage event the gateway records for every provider call. */
export interface UsageContext {
  tenantId: string;
  environmentId?: string | null;
  kind: string; // e.g. 'intent_run'
  domain?: string | null;
  intent?: string | null;
}

/**
 * Models that serve, in order, when the call's model fails in a way another model may cure (a
 * rate limit, an outage, a timeout) or is cooling down. undefined: the tenant's `model_fallbacks`,
 * else the platform's LLM_FALLBACK_MODELS; null: the platform's; an array (even empty): exactly it.
 */
export type FallbackModels = readonly string[] | null | undefined;

export interface StructuredCallRequest {
  usage: UsageContext;
  /** Explicit model (an intent's execution_config.model); `provider/model` picks a named provider. */
  model?: string | null;
  fallbackModels?: FallbackModels;
  /** Epoch ms: no attempt starts and no retry wait ends past it. */
  deadlineAt?: number;
  signal?: AbortSignal;
  messages: ChatMessage[];
  /** JSON Schema the answer must satisfy (sent as response_format json_schema, then validated). */
  schema: JsonSchema;
  schemaName: string;
  temperature?: number;
  maxTokens?: number;
  /** Per provider call (default LLM_TIMEOUT_MS). */
  timeoutMs?: number;
  /**
   * When set, the call's usage events are handed here instead of being written, so the caller can
   * write them in its own transaction with the rest of its bookkeeping (the caller must write them,
   * also when the call fails).
   */
  usageSink?: (event: UsageEventInput) => void;
  /**
   * The tenant's stored key for `provider`, when the caller already read it with its own data
   * (`encryptedKey` null: the tenant has none); the gateway then skips its own lookup. Ignored
   * when the call is routed to another provider.
   */
  storedKey?: StoredProviderKey;
  /**
   * A run's hard cost cap: each provider call first reserves its worst case (max_tokens lowered
   * to what is left); a call that cannot fit throws 402 BUDGET_EXHAUSTED instead of being made.
   */
  budget?: RunBudget;
}

/** Where one call goes: the provider, the model name it is sent, and the credentials used. */
export interface ModelTarget {
  provider: string;
  /** As requested, with its provider prefix if it had one (usage rows and prices use it). */
  modelRef: string;
  model: string;
  baseURL: string;
  apiKey: string;
  /** Whether the tenant's own key is used. */
  tenantKey: boolean;
}

/** Where a call may go: its primary target, then (read only when needed) its fallbacks in order. */
export interface ModelRoute {
  primary: ModelTarget;
  /** Resolved on first use and remembered; a fallback that cannot be served here is left out. */
  fallbacks(): Promise<ModelTarget[]>;
}

/** A chat call with tools (agents): the answer is text, tool calls, or both. */
export interface ChatCallRequest {
  usage: UsageContext;
  model?: string | null;
  fallbackModels?: FallbackModels;
  storedKey?: StoredProviderKey;
  /** The route already resolved for this run (then `model`, `fallbackModels` and `storedKey` are not looked at). */
  route?: ModelRoute;
  /** One target already resolved, with no fallbacks (then `model` and `storedKey` are not looked at). */
  target?: ModelTarget;
  /** Epoch ms: no attempt starts and no retry wait ends past it. */
  deadlineAt?: number;
  messages: ChatCompletionMessageParam[];
  tools?: ChatCompletionTool[];
  /** Whether the model may call several tools in one answer (default: the provider's). */
  parallelToolCalls?: boolean;
  temperature?: number;
  /** Answer tokens at most (lowered further by `budget`). */
  maxTokens?: number;
  timeoutMs?: number;
  budget?: RunBudget;
  /** Whether this call counts as a request against the monthly quota (default true). */
  countsAsRequest?: boolean;
  usageSink?: (event: UsageEventInput) => void;
  /** When set the answer is streamed and each piece of text is handed here as it arrives. */
  onDelta?: (text: string) => void;
  signal?: AbortSignal;
}

export interface ChatToolCall {
  id: string;
  name: string;
  /** JSON text, as the model wrote it (may be invalid). */
  arguments: string;
}

export interface ChatCallResult {
  content: string | null;
  toolCalls: ChatToolCall[];
  finishReason: string | null;
  model: string;
  provider: string;
  /** The serving target's model as configured (`provider/model` or a bare name): usage and price use it. */
  modelRef: string;
  /** Whether a fallback served (the primary failed or was cooling down). */
  fallback: boolean;
  /** Provider calls made, failed ones included. */
  attempts: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  latencyMs: number;
  /** max_tokens as sent (after the budget lowered it). */
  maxTokens: number | null;
}

export interface StoredProviderKey {
  provider: string;
  encryptedKey: string | null;
}

export interface LlmCallResult {
  output: unknown;
  /** The model that answered, as the provider reported it. */
  model: string;
  provider: string;
  /** The serving target's model as configured (`provider/model` or a bare name). */
  modelRef: string;
  /** Whether a fallback served (the primary failed or was cooling down). */
  fallback: boolean;
  /** Provider calls made, failed ones and re-asks included. */
  attempts: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  latencyMs: number;
  /** Provider calls made (2 when the first answer failed its schema and was re-asked). */
  calls: number;
}

/** Remembers embeddings by route and input, so a repeated input costs no provider call (the caller picks the policy). */
export interface EmbeddingCache {
  get(key: string): Float32Array[] | undefined;
  set(key: string, vectors: Float32Array[]): void;
}

/** One embeddings call: `input` is sent as given (one text, or a batch embedded in order). */
export interface EmbedRequest {
  /** The usage event's context (kind e.g. 'embedding'); embeddings never count as requests. */
  usage: UsageContext;
  /** `model` or `provider/model`, routed like chat models. */
  model: string;
  /** The target already resolved for `model` (resolveTarget), e.g. once for all batches of a document. */
  target?: ModelTarget;
  input: string | string[];
  /** Ask the provider for plain float arrays (default: the SDK's base64 transfer, decoded by the SDK). */
  encodingFormat?: 'float';
  /** Every vector must have this many values (the earlier batches of the same texts). */
  dimension?: number;
  /** Per provider call (default: the client's, LLM_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Retries of the provider call (default LLM_MAX_RETRIES). */
  maxRetries?: number;
  /** Epoch ms: no attempt starts and no retry wait ends past it. */
  deadlineAt?: number;
  cache?: EmbeddingCache;
  /** A failed usage write is logged instead of thrown (a search must not fail for its bookkeeping). */
  usageBestEffort?: boolean;
}

export interface EmbedResult {
  /** One vector per input, in input order. */
  vectors: Float32Array[];
  /** The model as routed, with its provider prefix if it had one (as on the usage event). */
  model: string;
}

export interface LlmGateway {
  /**
   * Calls the routed model for a JSON answer that satisfies `schema`: re-asks once with the
   * validation errors, then throws 502 OUTPUT_INVALID. Retries 429/5xx/timeouts/resets with backoff
   * (Retry-After honoured), then the route's fallbacks, then throws 502 LLM_PROVIDER_ERROR (503
   * LLM_UNAVAILABLE when every target is cooling down). Throws 503 LLM_NOT_CONFIGURED when no provider serves the model.
   * Records one usage event per provider call.
   */
  completeStructured(em: EntityManager, request: StructuredCallRequest): Promise<LlmCallResult>;
  /**
   * One chat call with tools, metered like every call. Throws 402 BUDGET_EXHAUSTED (no call made)
   * when `budget` cannot pay its worst case, and the errors of completeStructured otherwise.
   */
  completeChat(em: EntityManager, request: ChatCallRequest): Promise<ChatCallResult>;
  /**
   * Embeds `input` with the routed model and meters the call (kind from `usage`, never a request).
   * A failed call or a malformed answer throws 502 LLM_PROVIDER_ERROR (not metered); no provider
   * for the model throws 503 LLM_NOT_CONFIGURED. A `cache` hit makes no call and records nothing.
   */
  embed(em: EntityManager, request: EmbedRequest): Promise<EmbedResult>;
  /**
   * Where calls for `model` go (the tenant's default, then the platform's, when it is empty): throws
   * 503 LLM_NOT_CONFIGURED when no provider serves it. Pass the result as `target` to pin later
   * calls to it without resolving it again; callers never read its credentials.
   */
  resolveTarget(em: EntityManager, tenantId: string, model?: string | null, storedKey?: StoredProviderKey): Promise<ModelTarget>;
  /**
   * The route for `model` (empty: the tenant's default) with `fallbackModels` (see FallbackModels):
   * the primary is resolved now (503 LLM_NOT_CONFIGURED when no provider serves it), the fallbacks
   * when first needed. Pass it as `route` to pin a run's calls to it.
   */
  resolveRoute(em: EntityManager, tenantId: string, model?: string | null, fallbackModels?: FallbackModels, storedKey?: StoredProviderKey): Promise<ModelRoute>;
  /** Whether any provider could serve this tenant (without calling it). */
  isConfigured(em: EntityManager, tenantId: string): Promise<boolean>;
  /** The targets' health in this process (boot shares its breakers with the other processes). */
  readonly health: TargetHealth;
  /** Every target's breaker as it stands (for `liya doctor` and /metrics). */
  breakers(): BreakerReading[];
}
