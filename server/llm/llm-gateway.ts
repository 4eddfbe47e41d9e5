// The model layer: routes a call to a provider, asks for schema-valid JSON, embeds texts, meters every provider call.
import { observeModelCall } from '../observability/telemetry.js';
import type {
  ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { CreateEmbeddingResponse } from 'openai/resources/embeddings';
import type { Logger } from 'pino';
import type { EntityManager } from '../../db/orm.js';
import type { AppConfig } from '../config.js';
import { AppError } from '../errors.js';
import { recordUsage as recordUsageDefault, type UsageEventInput } from '../usage/usage.service.js';
import { createClientCache, loadedOpenAiSdk, NO_KEY, type CreateClient } from './client-cache.js';
import { createSchemaValidatorCache, type SchemaValidatorCache } from '../common/json-schema.js';
import { buildRepairMessage, checkJsonAnswer, type OutputIssue } from './json-output.js';
import type {
  ChatCallRequest, ChatCallResult, ChatToolCall, EmbedRequest, EmbedResult, LlmCallResult, LlmGateway, ModelTarget, StoredProviderKey, StructuredCallRequest, UsageContext,
} from './llm.types.js';
import { buildPriceTable, computeCostUsd, findModelPrice, type PriceTable } from './prices.js';
import { createPromptCounter, estimateTokens, loadTokenCounter } from './count-tokens.js';
import type { BudgetReservation, RunBudget } from './run-budget.js';
import { listTenantKeyProviders, openTenantProviderKey, readTenantProviderKey } from './provider-keys.service.js';
import { chooseModel, listProviders, parseModelRef, type LlmProvider } from './providers.js';
import { selectTenantDefaultModel } from './store/tenant-models.js';

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
}

const notConfigured = (message: string, details?: Record<string, unknown>) => new AppError('LLM_NOT_CONFIGURED', message, details);

/** No secret reaches the message: providers' error texts can echo part of the key, so only the status is kept. */
function toProviderError(err: unknown, provider: string): AppError | null {
  const sdk = loadedOpenAiSdk();
  if (!sdk || !(err instanceof sdk.APIError)) return null;
  const status = typeof err.status === 'number' ? err.status : undefined;
  const what = err instanceof sdk.APIConnectionTimeoutError ? 'timed out' : status ? `answered HTTP ${status}` : 'could not be reached';
  return new AppError('LLM_PROVIDER_ERROR', `The model provider "${provider}" ${what}`, status ? { provider, status } : { provider });
}

/** A failed embeddings call, any error, as 502 LLM_PROVIDER_ERROR: again only the status is kept. */
function toEmbeddingError(err: unknown, provider: string): AppError {
  const status = (err as { status?: unknown }).status;
  return new AppError('LLM_PROVIDER_ERROR', `The model provider "${provider}" ${typeof status === 'number' ? `answered HTTP ${status}` : 'could not be reached'} while embedding`, {
    provider,
    ...(typeof status === 'number' ? { status } : {}),
  });
}

/** One vector per input, in input order; throws when the answer does not fit the inputs. */
function readEmbeddings(response: CreateEmbeddingResponse, inputs: number, provider: string, dimension?: number): Float32Array[] {
  const ordered = [...response.data].sort((x, y) => x.index - y.index);
  if (ordered.length !== inputs) {
    throw new AppError('LLM_PROVIDER_ERROR', `The model provider "${provider}" returned ${ordered.length} embeddings for ${inputs} inputs`, { provider });
  }
  let size = dimension ?? null;
  return ordered.map((item) => {
    const vector = Float32Array.from(item.embedding);
    size ??= vector.length;
    if (vector.length !== size || vector.length === 0) {
      throw new AppError('LLM_PROVIDER_ERROR', `The model provider "${provider}" returned embeddings of different sizes`, { provider });
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
  const clients = createClientCache({ createClient: options.createClient, maxRetries: config.LLM_MAX_RETRIES, timeout: config.LLM_TIMEOUT_MS, log });
  const schemas: SchemaValidatorCache = createSchemaValidatorCache();

  async function resolveTarget(em: EntityManager, tenantId: string, requested?: string | null, storedKey?: StoredProviderKey): Promise<ModelTarget> {
    const modelRef = chooseModel(requested, requested?.trim() ? null : await selectTenantDefaultModel(em, tenantId), config.DEFAULT_MODEL);
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
   * What a failed provider call throws: the provider's error as 502 LLM_PROVIDER_ERROR (logged, and
   * metered with its latency but no tokens; it never counts as a request); anything else unchanged.
   */
  async function failedCall(em: EntityManager, err: unknown, target: ModelTarget, started: number, request: Pick<ChatCallRequest, 'usage' | 'usageSink'>): Promise<unknown> {
    const latencyMs = Math.round(now() - started);
    const failure = toProviderError(err, target.provider);
    if (!failure) return err;
    log?.warn({ provider: target.provider, model: target.modelRef, status: failure.details?.status, latencyMs, tenantKey: target.tenantKey }, failure.message);
    await meter(em, request.usage, { model: target.modelRef, latencyMs, status: 'error', countsAsRequest: false }, request.usageSink).catch((e) =>
      log?.error({ err: e }, 'recording a failed model call failed'),
    );
    return failure;
  }

  async function completeStructured(em: EntityManager, request: StructuredCallRequest): Promise<LlmCallResult> {
    // A broken schema is the caller's fault: refuse it before spending a provider call.
    const issues = schemas.checkSchema(request.schema);
    if (issues.length) throw new AppError('INVALID_INPUT', 'The output schema is not a valid JSON Schema', { issues });
    const validate = schemas.validatorFor(request.schema);
    const target = await resolveTarget(em, request.usage.tenantId, request.model, request.storedKey);
    const client = await clients.get(target.baseURL, target.apiKey);
    const timeout = request.timeoutMs ?? config.LLM_TIMEOUT_MS;

    const messages: ChatCompletionMessageParam[] = request.messages.map((m) => ({ role: m.role, content: m.content }));
    const totals = { promptTokens: 0, completionTokens: 0, costUsd: 0, latencyMs: 0, calls: 0 };
    let answeredModel = target.model;
    let errors: OutputIssue[] = [];

    for (let attempt = 0; attempt < 2; attempt++) {
      const reservation = await reserveCall(request.budget, target, messages, undefined, request.maxTokens ?? Number.MAX_SAFE_INTEGER);
      const maxTokens = reservation && reservation.maxTokens !== Number.MAX_SAFE_INTEGER ? reservation.maxTokens : request.maxTokens;
      const body: ChatCompletionCreateParamsNonStreaming = {
        model: target.model,
        messages,
        response_format: { type: 'json_schema', json_schema: { name: request.schemaName, schema: request.schema, strict: false } },
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
      };
      const started = now();
      let completion: ChatCompletion;
      let costUsd = 0;
      try {
        completion = await observeModelCall(modelCallOf(target, 'chat', request.usage.tenantId), async (report) => {
          const answer = await client.chat.completions.create(body, { timeout });
          costUsd = computeCostUsd(findModelPrice(prices, target.modelRef, target.model, answer.model || target.model), answer.usage?.prompt_tokens ?? 0, answer.usage?.completion_tokens ?? 0);
          report({ responseModel: answer.model, inputTokens: answer.usage?.prompt_tokens ?? 0, outputTokens: answer.usage?.completion_tokens ?? 0, costUsd, finishReason: answer.choices[0]?.finish_reason });
          return answer;
        });
      } catch (err) {
        reservation?.settle(0);
        throw await failedCall(em, err, target, started, request);
      }
      const latencyMs = Math.round(now() - started);
      const promptTokens = completion.usage?.prompt_tokens ?? 0;
      const completionTokens = completion.usage?.completion_tokens ?? 0;
      answeredModel = completion.model || target.model;
      reservation?.settle(costUsd);
      totals.promptTokens += promptTokens;
      totals.completionTokens += completionTokens;
      totals.costUsd += costUsd;
      totals.latencyMs += latencyMs;
      totals.calls += 1;
      // Only the first call is the request; the re-ask is part of serving it.
      await meter(em, request.usage, { model: answeredModel, promptTokens, completionTokens, costUsd, latencyMs, status: 'ok', countsAsRequest: attempt === 0 }, request.usageSink);

      const content = completion.choices[0]?.message?.content;
      const check = checkJsonAnswer(content, validate);
      if (check.ok) {
        return { output: check.value, model: answeredModel, provider: target.provider, ...totals, costUsd: Math.round(totals.costUsd * 1e9) / 1e9 };
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

  async function completeChat(em: EntityManager, request: ChatCallRequest): Promise<ChatCallResult> {
    const target = request.target ?? (await resolveTarget(em, request.usage.tenantId, request.model, request.storedKey));
    const client = await clients.get(target.baseURL, target.apiKey);
    const timeout = request.timeoutMs ?? config.LLM_TIMEOUT_MS;
    const wanted = request.maxTokens ?? null;
    const reservation = await reserveCall(request.budget, target, request.messages, request.tools, wanted ?? Number.MAX_SAFE_INTEGER);
    const maxTokens = reservation && reservation.maxTokens !== Number.MAX_SAFE_INTEGER ? reservation.maxTokens : wanted;
    const body = {
      model: target.model,
      messages: request.messages,
      ...(request.tools?.length ? { tools: request.tools } : {}),
      ...(request.tools?.length && request.parallelToolCalls !== undefined ? { parallel_tool_calls: request.parallelToolCalls } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(maxTokens !== null ? { max_tokens: maxTokens } : {}),
    };
    const started = now();
    let content = '';
    let sawContent = false;
    const calls: ChatToolCall[] = [];
    let finishReason: string | null = null;
    let answeredModel = target.model;
    let usage: { prompt_tokens: number; completion_tokens: number } | null | undefined;
    let promptTokens = 0;
    let completionTokens = 0;
    let costUsd = 0;
    try {
      await observeModelCall(modelCallOf(target, 'chat', request.usage.tenantId), async (report) => {
        if (request.onDelta) {
          const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, { timeout, signal: request.signal });
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
              request.onDelta(delta.content);
            }
            for (const part of delta?.tool_calls ?? []) {
              const slot = (calls[part.index] ??= { id: '', name: '', arguments: '' });
              if (part.id) slot.id = part.id;
              if (part.function?.name) slot.name += part.function.name;
              if (part.function?.arguments) slot.arguments += part.function.arguments;
            }
          }
        } else {
          const completion = await client.chat.completions.create(body as ChatCompletionCreateParamsNonStreaming, { timeout, signal: request.signal });
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
        promptTokens = usage?.prompt_tokens ?? estimateTokens(JSON.stringify(request.messages));
        completionTokens = usage?.completion_tokens ?? estimateTokens(content + calls.map((c) => c.name + c.arguments).join(''));
        costUsd = computeCostUsd(findModelPrice(prices, target.modelRef, target.model, answeredModel), promptTokens, completionTokens);
        report({ responseModel: answeredModel, inputTokens: promptTokens, outputTokens: completionTokens, costUsd, finishReason });
      });
    } catch (err) {
      reservation?.settle(0);
      throw await failedCall(em, err, target, started, request);
    }
    const latencyMs = Math.round(now() - started);
    reservation?.settle(costUsd);
    await meter(em, request.usage, { model: answeredModel, promptTokens, completionTokens, costUsd, latencyMs, status: 'ok', countsAsRequest: request.countsAsRequest !== false }, request.usageSink);
    return {
      content: sawContent ? content : null,
      toolCalls: calls.filter(Boolean).map((c, i) => ({ id: c.id || `call_${i + 1}`, name: c.name, arguments: c.arguments })),
      finishReason,
      model: answeredModel,
      provider: target.provider,
      promptTokens,
      completionTokens,
      costUsd,
      latencyMs,
      maxTokens,
    };
  }

  async function embed(em: EntityManager, request: EmbedRequest): Promise<EmbedResult> {
    const target = request.target ?? (await resolveTarget(em, request.usage.tenantId, request.model));
    const cacheKey = request.cache ? embeddingCacheKey(request.usage.tenantId, target, request.input) : null;
    const hit = cacheKey ? request.cache?.get(cacheKey) : undefined;
    if (hit) return { vectors: hit, model: target.modelRef };
    const client = await clients.get(target.baseURL, target.apiKey);
    const started = now();
    let response: CreateEmbeddingResponse;
    try {
      response = await observeModelCall(modelCallOf(target, 'embeddings', request.usage.tenantId), async (report) => {
        const answer = await client.embeddings.create(
          { model: target.model, input: request.input, ...(request.encodingFormat ? { encoding_format: request.encodingFormat } : {}) },
          {
            ...(request.timeoutMs !== undefined ? { timeout: request.timeoutMs } : {}),
            ...(request.maxRetries !== undefined ? { maxRetries: request.maxRetries } : {}),
          },
        );
        const inputTokens = answer.usage?.prompt_tokens ?? 0;
        report({ responseModel: answer.model, inputTokens, outputTokens: 0, costUsd: computeCostUsd(findModelPrice(prices, target.modelRef, target.model, answer.model), inputTokens, 0) });
        return answer;
      });
    } catch (err) {
      throw toEmbeddingError(err, target.provider);
    }
    const latencyMs = Math.round(now() - started);
    const vectors = readEmbeddings(response, Array.isArray(request.input) ? request.input.length : 1, target.provider, request.dimension);
    if (cacheKey) request.cache?.set(cacheKey, vectors);
    const promptTokens = response.usage?.prompt_tokens ?? 0;
    const costUsd = computeCostUsd(findModelPrice(prices, target.modelRef, target.model, response.model), promptTokens, 0);
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

  return { completeStructured, completeChat, embed, resolveTarget, isConfigured };
}
