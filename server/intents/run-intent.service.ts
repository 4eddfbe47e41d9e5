import { randomUUID } from 'node:crypto';
import { observeGuardrail, observeRun } from '../observability/telemetry.js';
import type { EntityManager } from '../../db/orm.js';
import { validateWithSchema } from '../common/json-schema.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import type { GuardrailIssue } from '../guardrails/guardrails.types.js';
import { runPostLlm } from '../guardrails/run-post-llm.js';
import { guardrailOutcome, scanInput } from '../guardrails/scan-pool.js';
import type { PreLlmInputResult } from '../guardrails/run-pre-llm.js';
import type { GuardrailsConfig } from '../guardrails/guardrails.types.js';
import { confirmKeyRow, confirmKeyedRequest, sameScope, type ApiKeyScope, type KeyedRequest } from '../keys/authenticate-api-key.js';
import type { TenantRuntime } from '../tenants/tenant-runtime.js';
import { groundIntent, NO_GROUNDING, type Grounding } from '../knowledge/grounding.js';
import { openSession, renderHistory } from '../sessions/sessions.service.js';
import { assertQuotaLeft, remainingAfter } from '../usage/quota.js';
import { writeUsageEvents, type MonthlyUsage, type UsageEventInput } from '../usage/usage.service.js';
import { intentCacheKey } from './intent-cache.js';
import { readKeyAndRunContext, readRunContext, type RunContext } from './run-context.js';
import { writeRunRecord } from './store/run-record.js';
import type { IntentDefinition } from './intent-definition.js';
import type { IntentRequest, IntentResponse } from './intents.schemas.js';
import { renderPrompt } from './render-prompt.js';
import { resolveIntent } from './resolve-intent.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import type { StoredProviderKey } from '../llm/llm.types.js';
import { chooseModel, parseModelRef } from '../llm/providers.js';
import type { RunBudget } from '../llm/run-budget.js';
import { pickOnlineRules, type SamplingTarget } from '../runs/online-sampling.js';

function assertInputMatches(intent: IntentDefinition, input: Record<string, unknown>) {
  if (!intent.inputSchema) return;
  const issues = validateWithSchema(intent.inputSchema, input);
  if (issues.length > 0) {
    throw new AppError('INVALID_INPUT', `The input does not fit ${intent.domain}/${intent.key}`, {
      issues: issues.map((i) => ({ path: i.path === '(root)' ? 'input' : `input.${i.path}`, message: i.message })),
    });
  }
}

function blocked(stage: 'pre_llm' | 'post_llm', issues: GuardrailIssue[], fallback?: string): AppError {
  return new AppError('GUARDRAIL_BLOCKED', stage === 'pre_llm' ? 'The input was blocked by a guardrail' : 'The answer was blocked by a guardrail', {
    stage,
    issues,
    fallback: fallback ?? 'Sorry, this request cannot be processed. Please rephrase it and try again.',
  });
}

/**
 * Runs an intent end to end: permission and input checks, quota, pre_llm guardrails (the provider
 * only sees redacted input), session, cache, the model call, post_llm guardrails, then the turn is
 * stored and metered. Blocked input costs no provider call.
 */
export interface RunIntentOptions {
  /** The cost cap of the run this intent call is part of (an agent's tool call); default none. */
  budget?: RunBudget;
  /** Runs the intent on this model instead of its own (an evaluation's model_override); default none. */
  model?: string | null;
  /** The intent already resolved for this tenant (an evaluation resolves it once per time slice). */
  intent?: IntentDefinition;
  /**
   * Online evaluation: null, never sampled (an evaluation's own runs); else the rules of `target`
   * may pick the run (a workflow's ai_intent step), the run's id being `sourceId`. Default: the
   * intent's rules, over the request's metadata, the run being its message id.
   */
  online?: { target: SamplingTarget; sourceKind: string; sourceId: string; metadata?: Record<string, unknown> } | null;
}

export function runIntent(em: EntityManager, deps: AppDeps, scope: TenantScope, domainKey: string, intentKey: string, request: IntentRequest, options: RunIntentOptions = {}): Promise<IntentResponse> {
  // The message id is the run's id: known from the start, so the run's log lines and span carry it.
  const messageId = randomUUID();
  return observed(scope, domainKey, intentKey, messageId, async () => {
    const prepared = await prepareRun(em, deps, scope.tenant, domainKey, intentKey, request, options);
    // One round trip for this month's usage, the tenant's provider key and the cache entry.
    const context = await readRunContext(deps.sql, scope.tenantId, prepared.provider, prepared.cacheKey);
    return completeRun(em, deps, scope, request, options, prepared, context, messageId);
  });
}

/**
 * Runs an intent for a request authenticated by API key (the run routes). When this process has
 * seen the key before, the run is prepared with the key's remembered scope (intent, input checks,
 * pre_llm scan, cache key, model), then ONE statement reads the key and the run's context together;
 * the run goes on only when the key is still valid and its scope unchanged, else it starts again
 * with the fresh scope. Nothing is answered, written or sent to a provider on the guess alone: an
 * error found while preparing is answered only once the key is confirmed to have that scope.
 */
export async function runKeyedIntent(em: EntityManager, deps: AppDeps, key: KeyedRequest, domainKey: string, intentKey: string, request: IntentRequest): Promise<IntentResponse> {
  if (key.scope || !key.guess) return runIntent(em, deps, tenantScopeOf(await confirmKeyedRequest(deps, key)), domainKey, intentKey, request);
  const guess = key.guess;
  let prepared: PreparedRun;
  try {
    prepared = await prepareRun(em, deps, guess.tenant, domainKey, intentKey, request, {});
  } catch (err) {
    const scope = await confirmKeyedRequest(deps, key);
    if (!sameScope(scope, guess)) return runIntent(em, deps, tenantScopeOf(scope), domainKey, intentKey, request);
    return observed(tenantScopeOf(scope), domainKey, intentKey, randomUUID(), () => Promise.reject(err));
  }
  const read = await readKeyAndRunContext(deps.sql, key.keyHash, prepared.provider, prepared.cacheKey);
  const scope = confirmKeyRow(deps, key, read.key);
  if (!sameScope(scope, guess)) return runIntent(em, deps, tenantScopeOf(scope), domainKey, intentKey, request);
  const tenantScope = tenantScopeOf(scope);
  const messageId = randomUUID();
  return observed(tenantScope, domainKey, intentKey, messageId, () => completeRun(em, deps, tenantScope, request, {}, prepared, read.context!, messageId));
}

const tenantScopeOf = (scope: ApiKeyScope): TenantScope => ({ tenantId: scope.tenantId, environmentId: scope.environmentId, plan: scope.plan, tenant: scope.tenant });

const observed = (scope: TenantScope, domainKey: string, intentKey: string, messageId: string, fn: () => Promise<IntentResponse>) =>
  observeRun({ kind: 'intent', tenantId: scope.tenantId, runId: messageId, name: `${domainKey}/${intentKey}` }, fn, (response) => (response.metadata.cached ? 'cached' : 'completed'));

const usageContextOf = (scope: TenantScope, intent: IntentDefinition) =>
  ({ tenantId: scope.tenantId, environmentId: scope.environmentId, kind: 'intent_run', domain: intent.domain, intent: intent.key });

/**
 * The run's model call: retrieval, the prompt, the structured call (its usage events go to
 * `usageEvents`). A failed call's usage is written at once: the run fails, and no record follows.
 */
async function callIntentModel(
  em: EntityManager, deps: AppDeps, scope: TenantScope, prepared: PreparedRun, options: RunIntentOptions, history: string, storedKey: StoredProviderKey, usageEvents: UsageEventInput[],
): Promise<{ output: unknown; model: string; tokens: number; costUsd: number; grounding: Grounding }> {
  const { tenant } = scope;
  const { intent, pre, safeInput, model } = prepared;
  const exec = intent.executionConfig;
  // Retrieval uses the redacted input (user_id aside), so no removed PII reaches the search either.
  const grounding = await groundIntent(em, deps, tenant.id, intent.domain, intent.retrievalConfig, pre.input);
  const prompt = renderPrompt(intent.promptTemplate, { input: safeInput, context: grounding.context, history });
  const call = {
    usage: usageContextOf(scope, intent),
    usageSink: (event: UsageEventInput) => usageEvents.push(event),
    // Resolved here, and the key read above, so the gateway need not look the tenant up again.
    model,
    // A model asked for explicitly (an evaluation comparing models) is measured alone.
    fallbackModels: options.model ? [] : (exec.fallback_models ?? tenant.modelFallbacks),
    storedKey,
    messages: [
      { role: 'system' as const, content: intent.systemPrompt },
      { role: 'user' as const, content: prompt },
    ],
    schema: intent.outputSchema,
    schemaName: `${intent.domain}_${intent.key}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64),
    temperature: exec.temperature ?? undefined,
    maxTokens: exec.max_tokens ?? undefined,
    timeoutMs: exec.timeout_ms ?? undefined,
    // The intent's timeout bounds the whole model step: retries, waits and fallbacks included.
    deadlineAt: exec.timeout_ms ? Date.now() + exec.timeout_ms : undefined,
    budget: options.budget,
  };
  const result = await deps.llm.completeStructured(em, call).catch(async (err: unknown) => {
    // Failed provider calls are metered even though the run fails.
    await em.transactional((tx) => writeUsageEvents(tx, usageEvents)).catch((e) => deps.log.error({ err: e }, 'recording failed model calls failed'));
    throw err;
  });
  return { output: result.output, model: result.model, tokens: result.promptTokens + result.completionTokens, costUsd: result.costUsd, grounding };
}

/**
 * The post_llm stage over an answer (GUARDRAIL_BLOCKED when it blocks). The gateway answers only
 * output that fits intent.outputSchema (the schema itself checked before the call), so the schema
 * is checked again only for a cached answer; terms and PII are scanned either way.
 */
function checkAnswer(prepared: PreparedRun, output: unknown, cached: boolean) {
  const { guardrails, intent } = prepared;
  const checkSchema = cached && guardrails?.output?.schema !== false;
  const post = runPostLlm(output as object, guardrails, checkSchema ? intent.outputSchema : null);
  observeGuardrail('post_llm', guardrailOutcome(post));
  if (!post.passed) throw blocked('post_llm', post.issues);
  return post;
}

/** An evaluation case's intent run: its answer and cost, and the usage events its case's statement writes. */
export interface CaseIntentRun {
  output: unknown;
  tokens: number;
  costUsd: number;
  usage: UsageEventInput[];
}

export interface CaseIntentOptions {
  /** The intent, resolved once per time slice. */
  intent: IntentDefinition;
  /** The case's input, scanned ahead (scanCaseInput); used when its guardrails are still the intent's and tenant's. */
  scanned?: Promise<CaseInputScan | null>;
  /** The evaluation's model_override (null: the intent's model). */
  model: string | null;
  /** This month's usage as the slice last saw it (its last case write answered it): the quota check. */
  usedThisMonth: MonthlyUsage;
  /** The tenant's stored provider keys by provider (read with the run's claim). */
  providerKeys: Record<string, string> | null;
}

/**
 * Runs an intent for an evaluation case: the same input check, quota, pre_llm guardrails, prompt,
 * model call, output validation and post_llm guardrails as runIntent, with nothing written here —
 * the case's own statement meters `usage` with its result, one round trip a case. So no session
 * or transcript (the case's result and trace are the record), no intent cache (an evaluation
 * measures the model now: a cached answer would score an old one), no intent.run.completed event
 * and no online sampling (an evaluation is not production traffic). A failed model call's usage is
 * written at once, as for any run.
 */
export function runIntentForCase(em: EntityManager, deps: AppDeps, scope: TenantScope, input: Record<string, unknown>, options: CaseIntentOptions): Promise<CaseIntentRun> {
  const { intent } = options;
  return observeRun({ kind: 'intent', tenantId: scope.tenantId, runId: randomUUID(), name: `${intent.domain}/${intent.key}` }, async () => {
    const prepared = await prepareRun(em, deps, scope.tenant, intent.domain, intent.key, { input } as IntentRequest, { intent, model: options.model }, false, options.scanned);
    assertQuotaLeft(scope.tenant, options.usedThisMonth);
    if (!prepared.pre.passed) throw blocked('pre_llm', prepared.pre.issues, prepared.pre.fallback);
    const usage: UsageEventInput[] = [];
    // A new session has no history: the prompt's {{history}} is empty, as on a first turn.
    const storedKey = { provider: prepared.provider, encryptedKey: options.providerKeys?.[prepared.provider] ?? null };
    const result = await callIntentModel(em, deps, scope, prepared, { model: options.model }, '', storedKey, usage);
    const post = checkAnswer(prepared, result.output, false);
    return { output: post.response, tokens: result.tokens, costUsd: result.costUsd, usage };
  }, () => 'completed');
}

/** A case input's pre_llm scan, made ahead of its run, with the intent (its input schema checked) and guardrails it was made with. */
export interface CaseInputScan {
  intent: IntentDefinition;
  guardrails: GuardrailsConfig | null;
  pre: PreLlmInputResult<Record<string, unknown>>;
}

/**
 * The pre_llm scan runIntentForCase would make of `input` (null when the input does not fit the
 * intent: the run then fails on that, unscanned, as it would have). An evaluation scans its next
 * cases' inputs one after another, ahead of their runs: a scan's code and tables, and the
 * provider SDK's, then stay in the CPU's caches, where a scan between two model calls evicted the
 * SDK's: the next call cost 107-137 us more CPU (measured with the eval bench's resumes, see
 * docs/benchmarks.md).
 */
export async function scanCaseInput(tenant: TenantRuntime, intent: IntentDefinition, input: Record<string, unknown>): Promise<CaseInputScan | null> {
  if (intent.inputSchema && validateWithSchema(intent.inputSchema, input).length > 0) return null;
  const { user_id: _userId, ...content } = input;
  const guardrails = intent.guardrailsConfig ?? tenant.guardrailsConfig;
  return { intent, guardrails, pre: await scanInput(content, guardrails) };
}

/** What a run settles before its first read: everything that depends only on the tenant's settings and the request. */
interface PreparedRun {
  started: number;
  intent: IntentDefinition;
  userId: unknown;
  guardrails: GuardrailsConfig | null;
  pre: PreLlmInputResult<Record<string, unknown>>;
  safeInput: Record<string, unknown>;
  cacheKey: string | null;
  model: string;
  provider: string;
}

async function prepareRun(
  em: EntityManager, deps: AppDeps, tenant: TenantRuntime, domainKey: string, intentKey: string, request: IntentRequest, options: RunIntentOptions, useCache = true,
  scanned?: Promise<CaseInputScan | null>,
): Promise<PreparedRun> {
  const started = performance.now();
  const intent = options.intent ?? (await resolveIntent(em, tenant, domainKey, intentKey));
  const input = request.input as Record<string, unknown>;
  // A scan made ahead checked the input against this very intent already (none is made for an input that does not fit).
  const ahead = scanned ? await scanned : null;
  if (ahead?.intent !== intent) assertInputMatches(intent, input);

  // user_id identifies the end user (often an e-mail): it is kept, never sent through redaction.
  const { user_id: userId, ...content } = input;
  const guardrails = intent.guardrailsConfig ?? tenant.guardrailsConfig;
  // Scanned ahead with the same guardrails (the slice may have re-read the intent or tenant since).
  const pre = ahead && ahead.guardrails === guardrails ? ahead.pre : await scanInput(content, guardrails);
  const safeInput = { user_id: userId, ...pre.input };
  // A model override (an evaluation comparing models) must not be answered from another model's cache.
  const cacheable = useCache && Boolean(intent.cacheConfig?.enabled) && !intent.conversational && !options.model;
  const cacheKey = cacheable && pre.passed ? intentCacheKey(tenant.id, intent.id, intent.version, safeInput) : null;
  const model = options.model || chooseModel(intent.executionConfig.model, tenant.defaultModel, deps.config.DEFAULT_MODEL);
  return { started, intent, userId, guardrails, pre, safeInput, cacheKey, model, provider: parseModelRef(model).provider };
}

async function completeRun(
  em: EntityManager, deps: AppDeps, scope: TenantScope, request: IntentRequest, options: RunIntentOptions, prepared: PreparedRun, context: RunContext, messageId: string,
): Promise<IntentResponse> {
  const { tenant } = scope;
  const { intent, pre, safeInput, cacheKey, userId } = prepared;
  // A tenant over quota gets 429 whatever its input, so the quota is checked before a block is reported.
  const usedBefore = context.usedThisMonth;
  assertQuotaLeft(tenant, usedBefore);
  if (!pre.passed) throw blocked('pre_llm', pre.issues, pre.fallback);

  const session = await openSession(em, tenant.id, { sessionId: request.session_id, userId: String(userId), domain: intent.domain, intent: intent.key }, deps.config.SESSION_TTL_SECONDS);
  const usageContext = usageContextOf(scope, intent);

  let output: unknown;
  let modelUsed: string;
  let tokens = 0;
  let cost = 0;
  let cached = false;
  let grounding = NO_GROUNDING;
  const usageEvents: UsageEventInput[] = [];
  const hit = context.cacheHit;
  if (hit) {
    output = hit.output;
    modelUsed = hit.model;
    cached = true;
  } else {
    const history = intent.conversational || intent.promptTemplate.includes('{{history}}') ? await renderHistory(em, session) : '';
    const result = await callIntentModel(em, deps, scope, prepared, options, history, context.storedKey, usageEvents);
    grounding = result.grounding;
    output = result.output;
    modelUsed = result.model;
    tokens = result.tokens;
    cost = result.costUsd;
  }

  const post = checkAnswer(prepared, output, cached);
  output = post.response;
  // A cache hit calls no provider, so the gateway reported nothing: the request is metered here.
  if (cached) usageEvents.push({ ...usageContext, model: modelUsed, status: 'cached' });
  const latencyMs = Math.round(performance.now() - prepared.started);
  const sampling = options.online === null ? null : (options.online ?? { target: { kind: 'intent', domain: intent.domain, intent: intent.key } as const, sourceKind: 'intent', sourceId: messageId, metadata: request.metadata });
  const sampledBy = sampling ? await pickOnlineRules(deps.sql, tenant.id, sampling.target, sampling.metadata) : [];
  await writeRunRecord(
    deps.sql,
    {
      tenantId: tenant.id,
      usage: usageEvents,
      session,
      turn: { intent: intent.key, userContent: safeInput, assistantContent: output, model: modelUsed, tokens, costUsd: cost, latencyMs, cached },
      cache: cacheKey && !cached ? { key: cacheKey, ttlSeconds: intent.cacheConfig?.ttl_seconds ?? 3600 } : null,
      intentEvent: context.intentEvents,
      online: sampledBy.length ? { ruleIds: sampledBy, sourceKind: sampling!.sourceKind, sourceId: sampling!.sourceId } : null,
    },
    messageId,
  );
  // Scoring is the job runner's: the run only queued its samples, above, in its own statement.
  return {
    success: true,
    data: { output: output as Record<string, unknown>, session_id: session.id, message_id: messageId },
    metadata: {
      intent: intent.key,
      domain: intent.domain,
      model_used: modelUsed,
      tokens_used: tokens,
      cost_usd: Number(cost.toFixed(6)),
      latency_ms: latencyMs,
      cached,
      version: intent.version,
      guardrail_issues: [...pre.issues, ...post.issues] as unknown as Record<string, unknown>[],
      context_chunk_ids: grounding.chunkIds,
    },
    usage: remainingAfter(tenant, usedBefore, tokens),
  };
}
