// The model layer: routes a call to a provider, asks for schema-valid JSON, embeds texts, meters every provider call.
import { observeModelCall } from '../observability/telemetry.js';
import type {
  ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { CreateEmbeddingResponse } from 'openai/resources/embeddings';
import type { Logger } from 'pino';
import type { EntityManager } from '../../db/orm.js';
import type { AppConfig } from '../config.js';
import { AppError } from '../errors.js';
import { emitTelemetry } from '../observability/telemetry.js';
import { recordUsage as recordUsageDefault, type UsageEventInput } from '../usage/usage.service.js';
import { createClientCache, NO_KEY, type CreateClient } from './client-cache.js';
import { createSchemaValidatorCache, type SchemaValidatorCache } from '../common/json-schema.js';
import { buildRepairMessage, checkJsonAnswer, type OutputIssue } from './json-output.js';
import type {
  ChatCallRequest, ChatCallResult, ChatToolCall, EmbedRequest, EmbedResult, LlmCallResult, LlmGateway, ModelRoute, ModelTarget, StoredProviderKey, StructuredCallRequest, UsageContext,
} from './llm.types.js';
import { callRoute, type RoutePolicy } from './call-route.js';
import { classifyCallError, invalidResponse, streamCut } from './provider-errors.js';
import { CallFailure, createTargetHealth, type BreakerChange } from './target-health.js';
import { buildPriceTable, computeCostUsd, findModelPrice, type PriceTable } from './prices.js';
import { createPromptCounter, estimateTokens, loadTokenCounter } from './count-tokens.js';
import type { BudgetReservation, RunBudget } from './run-budget.js';
import { listTenantKeyProviders, openTenantProviderKey, readTenantProviderKey } from './provider-keys.service.js';
import { chooseModel, listProviders, parseModelRef, type LlmProvider } from './providers.js';
import { readTenantModelSettings } from '../tenants/tenant-records.js';

export interface LlmGatewayOptions {
  config: AppConfig;
  /** Provider failures are logged here, without secrets (default: not logged). */
  log?: Logger;
  /** Builds the SDK client for one (base URL, key) (default: the openai SDK's `OpenAI`). */
  createClient?: CreateClient;
  /** Writes one usage event (default: recordUsage). */
  recordUsage?: (em: EntityManager, input: UsageEventInput) => Promise<void>;
  /** Prices in USD per million tokens (default: the built-in table overridden by LLM_PRICES). */
  prices?: PriceTable;
  /** Monotonic milliseconds, for latency (default: performance.now). */
  now?: () => number;
  /** Told when this process's breaker for a target opens or closes (boot shares it with other processes). */
  onBreakerChange?: (change: BreakerChange) => void;
}

const notConfigured = (message: string, details?: Record<string, unknown>) => new AppError('LLM_NOT_CONFIGURED', message, details);

/** A failure inside one attempt, as the route sees it: provider failures wrapped, anything else unchanged. */
function asCallFailure(err: unknown): unknown {
  if (err instanceof CallFailure) return err;
  const failure = classifyCallError(err);
  return failure ? new CallFailure(failure) : err;
}

/** One vector per input, in input order; an answer that does not fit the inputs is the provider's failure. */
function readEmbeddings(response: CreateEmbeddingResponse, inputs: number, dimension?: number): Float32Array[] {
  const ordered = [...response.data].sort((x, y) => x.index - y.index);
  if (ordered.length !== inputs) {
    throw new CallFailure(invalidResponse());
  }
  let size = dimension ?? null;
  return ordered.map((item) => {
    const vector = Float32Array.from(item.embedding);
    size ??= vector.length;
    if (vector.length !== size || vector.length === 0) {
      throw new CallFailure(invalidResponse());
    }
    return vector;
  });
}

/** Vectors differ by endpoint, credentials' account and model, so all of them key a cached embedding. */
const embeddingCacheKey = (tenantId: string, target: ModelTarget, input: string | string[]) =>
  `${tenantId}\n${target.baseURL}\n${target.tenantKey ? 'tenant' : 'platform'}\n${target.model}\n${JSON.stringify(input)}`;

/** A provider call as telemetry names it (the model asked for, never the tenant's key). */
const modelCallOf = (target: ModelTarget, operation: 'chat' | 'embeddings', tenantId: string) => ({ provider: target.provider, model: target.model, operation, tenantId });

export function createLlmGateway(options: LlmGatewayOptions): LlmGateway {
  const { config, log } = options;
  const record = options.recordUsage ?? recordUsageDefault;
  const now = options.now ?? (() => performance.now());
  const prices = options.prices ?? buildPriceTable(config.LLM_PRICES);
  const providers = new Map(listProviders(config).map((p) => [p.name, p] as const));
  // The SDK never retries on its own: the route does (Retry-After, budget, deadline, fallbacks).
  const clients = createClientCache({ createClient: options.createClient, maxRetries: 0, timeout: config.LLM_TIMEOUT_MS, log });
  const schemas: SchemaValidatorCache = createSchemaValidatorCache();
  const health = createTargetHealth({
    minCalls: config.LLM_BREAKER_MIN_CALLS,
    cooldownMs: config.LLM_BREAKER_COOLDOWN_MS,
    retryBudget: config.LLM_RETRY_BUDGET,
    onChange: (change) => {
      log?.warn({ provider: change.provider, credential: change.credential, state: change.state }, change.state === 'open' ? 'a model provider breaker opened' : 'a model provider breaker closed');
      emitTelemetry('breakerChanged', { provider: change.provider, credential: change.credential, state: change.state });
      options.onBreakerChange?.(change);
    },
  });
  const routePolicy: RoutePolicy = {
    health,
    retries: config.LLM_MAX_RETRIES,
    maxWaitMs: config.LLM_MAX_RETRY_WAIT_MS,
    onFailure: (target, failure, attempt) =>
      log?.warn({ provider: target.provider, model: target.modelRef, reason: failure.reason, status: failure.status, attempt, tenantKey: target.tenantKey }, 'a model provider call failed'),
    onFallback: (from, to, reason) => emitTelemetry('modelFallback', { fromProvider: from.provider, fromModel: from.modelRef, toProvider: to.provider, toModel: to.modelRef, reason }),
  };

  async function resolveTarget(em: EntityManager, tenantId: string, requested?: string | null, storedKey?: StoredProviderKey, tenantDefault?: string | null): Promise<ModelTarget> {
    const modelRef = chooseModel(requested, requested?.trim() ? null : tenantDefault !== undefined ? tenantDefault : (await readTenantModelSettings(em, tenantId)).defaultModel, config.DEFAULT_MODEL);
    const { provider: name, model } = parseModelRef(modelRef);
    const provider: LlmProvider | undefined = providers.get(name);
    if (!provider) throw notConfigured(`No model provider named "${name}" is configured`, { provider: name, model: modelRef });
    if (!model) throw notConfigured(`"${modelRef}" names no model`, { provider: name, model: modelRef });
    // A tenant's own key for this provider wins over the platform's.
    const own =
      storedKey?.provider === name
        ? await openTenantProviderKey(em, { config }, tenantId, name, storedKey.encryptedKey)
        : await readTenantProviderKey(em, { config }, tenantId, name);
    if (own.found && own.apiKey === null) {
      throw notConfigured(`The tenant's key for provider "${name}" can no longer be decrypted; set it again`, { provider: name });
    }
    const tenantKey = own.found ? own.apiKey : null;
    if (!tenantKey && !provider.configured) {
      throw notConfigured('No model provider is configured: set OPENAI_BASE_URL / OPENAI_API_KEY or LLM_PROVIDERS', { provider: name, model: modelRef });
    }
    return { provider: name, modelRef, model, baseURL: provider.baseUrl, apiKey: tenantKey ?? provider.apiKey ?? NO_KEY, tenantKey: !!tenantKey };
  }

  /**
   * The route for a call: its primary target now; its fallbacks only when first needed (the primary
   * failed or is cooling down), so a healthy call reads nothing more than it did without them.
   */
  async function resolveRoute(em: EntityManager, tenantId: string, requested?: string | null, fallbackModels?: readonly string[] | null, storedKey?: StoredProviderKey): Promise<ModelRoute> {
    // One read of the tenant's settings serves both the default model and its fallbacks.
    const settings = !requested?.trim() ? await readTenantModelSettings(em, tenantId) : null;
    const primary = await resolveTarget(em, tenantId, requested, storedKey, settings ? settings.defaultModel : undefined);
    let fallbacks: Promise<ModelTarget[]> | null = null;
    return {
      primary,
      fallbacks: () =>
        (fallbacks ??= (async () => {
          let refs = fallbackModels;
          if (refs === undefined) refs = (settings ?? (await readTenantModelSettings(em, tenantId))).modelFallbacks;
          refs ??= config.LLM_FALLBACK_MODELS ?? [];
          const seen = new Set([primary.modelRef]);
          const targets: ModelTarget[] = [];
          for (const ref of refs) {
            if (seen.has(ref)) continue;
            seen.add(ref);
            // A fallback that cannot be served here is skipped: it must never fail a call the primary could have served.
            const target = await resolveTarget(em, tenantId, ref).catch((err: unknown) => {
              log?.warn({ model: ref, err: err instanceof AppError ? err.message : err }, 'a fallback model cannot be served and is skipped');
              return null;
            });
            if (target) targets.push(target);
          }
          return targets;
        })()),
    };
  }

  /**
   * Serves `attempt` from the route: the primary first and, when it fails in a way another target may
   * cure (or is cooling down), the fallbacks in order (read only then).
   */
  function serve<T>(route: ModelRoute, call: { deadlineAt?: number; signal?: AbortSignal; retries?: number; primaryOnly?: boolean }, attempt: (target: ModelTarget, timeoutMs: number | null) => Promise<T>) {
    return callRoute(routePolicy, [route.primary], call, attempt, call.primaryOnly ? undefined : route.fallbacks);
  }

  async function meter(
    em: EntityManager,
    usage: UsageContext,
    event: Omit<UsageEventInput, 'tenantId' | 'environmentId' | 'kind' | 'domain' | 'intent'>,
    sink?: (event: UsageEventInput) => void,
  ) {
    const full = { tenantId: usage.tenantId, environmentId: usage.environmentId ?? null, kind: usage.kind, domain: usage.domain ?? null, intent: usage.intent ?? null, ...event };
    if (sink) sink(full);
    else await record(em, full);
  }

  /**
   * A route that failed: logged, and metered with its latency but no tokens (it never counts as a
   * request); the error is thrown unchanged.
   */
  async function failedCall(em: EntityManager, err: unknown, route: ModelRoute, started: number, request: Pick<ChatCallRequest, 'usage' | 'usageSink'>): Promise<unknown> {
    if (!(err instanceof AppError) || (err.code !== 'LLM_PROVIDER_ERROR' && err.code !== 'LLM_UNAVAILABLE')) return err;
    const latencyMs = Math.round(now() - started);
    const model = typeof err.details?.model === 'string' ? err.details.model : route.primary.modelRef;
    await meter(em, request.usage, { model, latencyMs, status: 'error', countsAsRequest: false }, request.usageSink).catch((e) =>
      log?.error({ err: e }, 'recording a failed model call failed'),
    );
    return err;
  }

  async function completeStructured(em: EntityManager, request: StructuredCallRequest): Promise<LlmCallResult> {
    // A broken schema is the caller's fault: refuse it before spending a provider call.
    const issues = schemas.checkSchema(request.schema);
    if (issues.length) throw new AppError('INVALID_INPUT', 'The output schema is not a valid JSON Schema', { issues });
    const validate = schemas.validatorFor(request.schema);
    const route = await resolveRoute(em, request.usage.tenantId, request.model, request.fallbackModels, request.storedKey);
    const timeout = request.timeoutMs ?? config.LLM_TIMEOUT_MS;

    const messages: ChatCompletionMessageParam[] = request.messages.map((m) => ({ role: m.role, content: m.content }));
    const totals = { promptTokens: 0, completionTokens: 0, costUsd: 0, latencyMs: 0, calls: 0 };
    let errors: OutputIssue[] = [];
    let fallback = false;
    let attempts = 0;

    for (let round = 0; round < 2; round++) {
      const started = now();
      let served;
      try {
        served = await serve(route, { deadlineAt: request.deadlineAt, signal: request.signal }, async (target, left) => {
          const client = clients.lastFor(target.baseURL, target.apiKey) ?? (await clients.get(target.baseURL, target.apiKey));
          const reservation = request.budget ? await reserveCall(request.budget, target, messages, undefined, request.maxTokens ?? Number.MAX_SAFE_INTEGER) : null;
          const maxTokens = reservation && reservation.maxTokens !== Number.MAX_SAFE_INTEGER ? reservation.maxTokens : request.maxTokens;
          const body: ChatCompletionCreateParamsNonStreaming = {
            model: target.model,
            messages,
            response_format: { type: 'json_schema', json_schema: { name: request.schemaName, schema: request.schema, strict: false } },
            ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
            ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
          };
          const callStarted = now();
          try {
            return await observeModelCall(modelCallOf(target, 'chat', request.usage.tenantId), async (report) => {
              const answer = await client.chat.completions.create(body, { timeout: left === null ? timeout : Math.max(1, Math.min(timeout, left)), signal: request.signal });
              if (!Array.isArray(answer?.choices)) throw new CallFailure(invalidResponse());
              const costUsd = computeCostUsd(findModelPrice(prices, target.modelRef, target.model, answer.model || target.model), answer.usage?.prompt_tokens ?? 0, answer.usage?.completion_tokens ?? 0);
              report({ responseModel: answer.model, inputTokens: answer.usage?.prompt_tokens ?? 0, outputTokens: answer.usage?.completion_tokens ?? 0, costUsd, finishReason: answer.choices[0]?.finish_reason });
              reservation?.settle(costUsd);
              return { completion: answer, costUsd, latencyMs: Math.round(now() - callStarted) };
            });
          } catch (err) {
            reservation?.settle(0);
            throw asCallFailure(err);
          }
        });
      } catch (err) {
        throw await failedCall(em, err, route, started, request);
      }
      const { completion, costUsd, latencyMs } = served.value;
      const target = served.target;
      fallback ||= served.fallback;
      attempts += served.attempts;
      const promptTokens = completion.usage?.prompt_tokens ?? 0;
      const completionTokens = completion.usage?.completion_tokens ?? 0;
      const answeredModel = completion.model || target.model;
      totals.promptTokens += promptTokens;
      totals.completionTokens += completionTokens;
      totals.costUsd += costUsd;
      totals.latencyMs += latencyMs;
      totals.calls += 1;
      // Only the first call is the request; the re-ask is part of serving it.
      await meter(em, request.usage, { model: answeredModel, promptTokens, completionTokens, costUsd, latencyMs, status: 'ok', countsAsRequest: round === 0 }, request.usageSink);

      const content = completion.choices[0]?.message?.content;
      const check = checkJsonAnswer(content, validate);
      if (check.ok) {
        return {
          output: check.value, model: answeredModel, provider: target.provider, modelRef: target.modelRef, fallback, attempts,
          ...totals, costUsd: Math.round(totals.costUsd * 1e9) / 1e9,
        };
      }
      errors = check.errors;
      messages.push({ role: 'assistant', content: content ?? '' }, { role: 'user', content: buildRepairMessage(request.schemaName, errors) });
    }
    throw new AppError('OUTPUT_INVALID', `The model's answer does not satisfy the schema "${request.schemaName}"`, { errors });
  }

  const priceOf = (target: ModelTarget) => findModelPrice(prices, target.modelRef, target.model);
  let countPrompt: ReturnType<typeof createPromptCounter> | null = null;

  /**
   * Reserves a call's worst case from `budget` (only capped budgets count tokens: the tokenizer is
   * loaded on the first capped call). Throws 402 BUDGET_EXHAUSTED when the call must not be made.
   */
  async function reserveCall(budget: RunBudget | undefined, target: ModelTarget, messages: ChatCompletionMessageParam[], tools: ChatCallRequest['tools'], wanted: number): Promise<BudgetReservation | null> {
    if (!budget) return null;
    const price = priceOf(target);
    let promptTokens = 0;
    if (budget.capped && price) {
      countPrompt ??= createPromptCounter(await loadTokenCounter());
      promptTokens = countPrompt(messages, tools);
    }
    const reservation = budget.reserve(price, promptTokens, wanted);
    if (!reservation) {
      throw new AppError('BUDGET_EXHAUSTED', 'The run\'s cost cap cannot pay for another model call', {
        max_cost_usd: budget.capUsd,
        spent_usd: Math.round(budget.spent * 1e6) / 1e6,
        remaining_usd: Math.max(0, Math.round(budget.remaining() * 1e6) / 1e6),
      });
    }
    return reservation;
  }

  const pinned = (target: ModelTarget): ModelRoute => ({ primary: target, fallbacks: async () => [] });

  async function completeChat(em: EntityManager, request: ChatCallRequest): Promise<ChatCallResult> {
    const route = request.route ?? (request.target ? pinned(request.target) : await resolveRoute(em, request.usage.tenantId, request.model, request.fallbackModels, request.storedKey));
    const timeout = request.timeoutMs ?? config.LLM_TIMEOUT_MS;
    const wanted = request.maxTokens ?? null;
    const started = now();
    // Once a piece of the answer reached the caller, the call is theirs: no retry, no other target.
    let delivered = false;
    let served;
    try {
      served = await serve(route, { deadlineAt: request.deadlineAt, signal: request.signal }, async (target, left) => {
        const client = clients.lastFor(target.baseURL, target.apiKey) ?? (await clients.get(target.baseURL, target.apiKey));
        const reservation = request.budget ? await reserveCall(request.budget, target, request.messages, request.tools, wanted ?? Number.MAX_SAFE_INTEGER) : null;
        const maxTokens = reservation && reservation.maxTokens !== Number.MAX_SAFE_INTEGER ? reservation.maxTokens : wanted;
        const body = {
          model: target.model,
          messages: request.messages,
          ...(request.tools?.length ? { tools: request.tools } : {}),
          ...(request.tools?.length && request.parallelToolCalls !== undefined ? { parallel_tool_calls: request.parallelToolCalls } : {}),
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          ...(maxTokens !== null ? { max_tokens: maxTokens } : {}),
        };
        const callTimeout = left === null ? timeout : Math.max(1, Math.min(timeout, left));
        const callStarted = now();
        let content = '';
        let sawContent = false;
        const calls: ChatToolCall[] = [];
        let finishReason: string | null = null;
        let answeredModel = target.model;
        let usage: { prompt_tokens: number; completion_tokens: number } | null | undefined;
        try {
          return await observeModelCall(modelCallOf(target, 'chat', request.usage.tenantId), async (report) => {
            if (request.onDelta) {
              const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, { timeout: callTimeout, signal: request.signal });
              for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) {
                if (chunk.model) answeredModel = chunk.model;
                if (chunk.usage) usage = chunk.usage;
                const choice = chunk.choices?.[0];
                if (!choice) continue;
                if (choice.finish_reason) finishReason = choice.finish_reason;
                const delta = choice.delta;
                if (typeof delta?.content === 'string' && delta.content) {
                  sawContent = true;
                  content += delta.content;
                  delivered = true;
                  request.onDelta(delta.content);
                }
                for (const part of delta?.tool_calls ?? []) {
                  const slot = (calls[part.index] ??= { id: '', name: '', arguments: '' });
                  if (part.id) slot.id = part.id;
                  if (part.function?.name) slot.name += part.function.name;
                  if (part.function?.arguments) slot.arguments += part.function.arguments;
                }
              }
              // A stream that ends without saying how it ended was cut (a provider always sends a finish reason).
              if (finishReason === null) throw new CallFailure(delivered ? streamCut(null) : invalidResponse());
            } else {
              const completion = await client.chat.completions.create(body as ChatCompletionCreateParamsNonStreaming, { timeout: callTimeout, signal: request.signal });
              if (!Array.isArray(completion?.choices)) throw new CallFailure(invalidResponse());
              answeredModel = completion.model || target.model;
              usage = completion.usage;
              const choice = completion.choices[0];
              finishReason = choice?.finish_reason ?? null;
              if (typeof choice?.message?.content === 'string') {
                sawContent = true;
                content = choice.message.content;
              }
              for (const call of choice?.message?.tool_calls ?? []) {
                if (call.type === 'function') calls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
              }
            }
            // Servers that send no usage are billed on an estimate, so spend is never under-counted to 0.
            const promptTokens = usage?.prompt_tokens ?? estimateTokens(JSON.stringify(request.messages));
            const completionTokens = usage?.completion_tokens ?? estimateTokens(content + calls.map((c) => c.name + c.arguments).join(''));
            const costUsd = computeCostUsd(findModelPrice(prices, target.modelRef, target.model, answeredModel), promptTokens, completionTokens);
            report({ responseModel: answeredModel, inputTokens: promptTokens, outputTokens: completionTokens, costUsd, finishReason });
            reservation?.settle(costUsd);
            return { content: sawContent ? content : null, calls, finishReason, answeredModel, promptTokens, completionTokens, costUsd, maxTokens, latencyMs: Math.round(now() - callStarted) };
          });
        } catch (err) {
          reservation?.settle(0);
          const failure = asCallFailure(err);
          // Part of the answer already reached the caller: whatever broke it, it is a cut stream.
          if (delivered && failure instanceof CallFailure && failure.failure.reason !== 'stream_cut') throw new CallFailure(streamCut(failure.failure));
          throw failure;
        }
      });
    } catch (err) {
      throw await failedCall(em, err, route, started, request);
    }
    const answer = served.value;
    await meter(em, request.usage, { model: answer.answeredModel, promptTokens: answer.promptTokens, completionTokens: answer.completionTokens, costUsd: answer.costUsd, latencyMs: answer.latencyMs, status: 'ok', countsAsRequest: request.countsAsRequest !== false }, request.usageSink);
    return {
      content: answer.content,
      toolCalls: answer.calls.filter(Boolean).map((c, i) => ({ id: c.id || `call_${i + 1}`, name: c.name, arguments: c.arguments })),
      finishReason: answer.finishReason,
      model: answer.answeredModel,
      provider: served.target.provider,
      modelRef: served.target.modelRef,
      fallback: served.fallback,
      attempts: served.attempts,
      promptTokens: answer.promptTokens,
      completionTokens: answer.completionTokens,
      costUsd: answer.costUsd,
      latencyMs: answer.latencyMs,
      maxTokens: answer.maxTokens,
    };
  }

  async function embed(em: EntityManager, request: EmbedRequest): Promise<EmbedResult> {
    const target = request.target ?? (await resolveTarget(em, request.usage.tenantId, request.model));
    const cacheKey = request.cache ? embeddingCacheKey(request.usage.tenantId, target, request.input) : null;
    const hit = cacheKey ? request.cache?.get(cacheKey) : undefined;
    if (hit) return { vectors: hit, model: target.modelRef };
    // Embeddings never fall back: another model's vectors would not compare with the stored ones.
    const served = await serve(pinned(target), { retries: request.maxRetries, deadlineAt: request.deadlineAt, primaryOnly: true }, async (routed, left) => {
      const client = clients.lastFor(routed.baseURL, routed.apiKey) ?? (await clients.get(routed.baseURL, routed.apiKey));
      const callStarted = now();
      const timeout = request.timeoutMs ?? config.LLM_TIMEOUT_MS;
      try {
        return await observeModelCall(modelCallOf(routed, 'embeddings', request.usage.tenantId), async (report) => {
          const answer = await client.embeddings.create(
            { model: routed.model, input: request.input, ...(request.encodingFormat ? { encoding_format: request.encodingFormat } : {}) },
            { timeout: left === null ? timeout : Math.max(1, Math.min(timeout, left)) },
          );
          if (!Array.isArray(answer?.data)) throw new CallFailure(invalidResponse());
          const vectors = readEmbeddings(answer, Array.isArray(request.input) ? request.input.length : 1, request.dimension);
          const inputTokens = answer.usage?.prompt_tokens ?? 0;
          report({ responseModel: answer.model, inputTokens, outputTokens: 0, costUsd: computeCostUsd(findModelPrice(prices, routed.modelRef, routed.model, answer.model), inputTokens, 0) });
          return { answer, vectors, latencyMs: Math.round(now() - callStarted) };
        });
      } catch (err) {
        throw asCallFailure(err);
      }
    });
    const { answer, vectors, latencyMs } = served.value;
    if (cacheKey) request.cache?.set(cacheKey, vectors);
    const promptTokens = answer.usage?.prompt_tokens ?? 0;
    const costUsd = computeCostUsd(findModelPrice(prices, target.modelRef, target.model, answer.model), promptTokens, 0);
    const metered = meter(em, request.usage, { model: target.modelRef, promptTokens, costUsd, latencyMs, countsAsRequest: false });
    if (request.usageBestEffort) await metered.catch((err: unknown) => log?.warn({ err }, 'could not record the embedding usage'));
    else await metered;
    return { vectors, model: target.modelRef };
  }

  async function isConfigured(em: EntityManager, tenantId: string): Promise<boolean> {
    for (const provider of providers.values()) if (provider.configured) return true;
    const keyed = await listTenantKeyProviders(em, tenantId);
    return keyed.some((name) => providers.has(name));
  }

  return {
    completeStructured,
    completeChat,
    embed,
    resolveTarget: (em, tenantId, model, storedKey) => resolveTarget(em, tenantId, model, storedKey),
    resolveRoute,
    isConfigured,
    health,
    breakers: () => health.read(),
  };
}
