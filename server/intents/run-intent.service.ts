import { Tenant } from '../../db/entities/tenant.js';
import type { EntityManager } from '../../db/orm.js';
import { validateWithSchema } from '../common/json-schema.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import type { GuardrailIssue, GuardrailsConfig } from '../guardrails/guardrails.types.js';
import { runPostLlm } from '../guardrails/run-post-llm.js';
import { runPreLlmOnInput } from '../guardrails/run-pre-llm.js';
import { appendTurn, openSession, renderHistory } from '../sessions/sessions.service.js';
import { assertWithinQuota, remainingAfter } from '../usage/quota.js';
import { recordUsage } from '../usage/usage.service.js';
import { intentCacheKey, readIntentCache, writeIntentCache } from './intent-cache.js';
import type { IntentDefinition } from './intent-definition.js';
import type { IntentRequest, IntentResponse } from './intents.schemas.js';
import { renderPrompt } from './render-prompt.js';
import { resolveIntent, type TenantRuntime } from './resolve-intent.js';

export interface RunScope {
  tenantId: string;
  environmentId: string | null;
}

export async function loadTenantRuntime(em: EntityManager, tenantId: string): Promise<TenantRuntime> {
  const tenant = await em.findOneOrFail(Tenant, { id: tenantId });
  return {
    id: tenant.id,
    enabledDomains: tenant.enabledDomains,
    disabledIntents: tenant.disabledIntents ?? [],
    defaultModel: tenant.defaultModel ?? null,
    guardrailsConfig: (tenant.guardrailsConfig as GuardrailsConfig | null) ?? null,
    monthlyRequestQuota: tenant.monthlyRequestQuota ?? null,
    monthlyTokenQuota: tenant.monthlyTokenQuota == null ? null : Number(tenant.monthlyTokenQuota),
  };
}

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
export async function runIntent(em: EntityManager, deps: AppDeps, scope: RunScope, domainKey: string, intentKey: string, request: IntentRequest): Promise<IntentResponse> {
  const started = performance.now();
  const tenant = await loadTenantRuntime(em, scope.tenantId);
  const intent = await resolveIntent(em, tenant, domainKey, intentKey);
  const input = request.input as Record<string, unknown>;
  assertInputMatches(intent, input);
  const usedBefore = await assertWithinQuota(em, tenant.id, tenant);

  // user_id identifies the end user (often an e-mail): it is kept, never sent through redaction.
  const { user_id: userId, ...content } = input;
  const guardrails = intent.guardrailsConfig ?? tenant.guardrailsConfig;
  const pre = runPreLlmOnInput(content, guardrails);
  if (!pre.passed) throw blocked('pre_llm', pre.issues, pre.fallback);
  const safeInput = { user_id: userId, ...pre.input };

  const session = await openSession(em, tenant.id, { sessionId: request.session_id, userId: String(userId), domain: intent.domain, intent: intent.key }, deps.config.SESSION_TTL_SECONDS);
  const cacheable = Boolean(intent.cacheConfig?.enabled) && !intent.conversational;
  const cacheKey = cacheable ? intentCacheKey(tenant.id, intent.id, intent.version, safeInput) : null;
  const usageContext = { tenantId: tenant.id, environmentId: scope.environmentId, kind: 'intent_run', domain: intent.domain, intent: intent.key };

  let output: unknown;
  let model: string;
  let tokens = 0;
  let cost = 0;
  let cached = false;
  const hit = cacheKey ? await readIntentCache(em, tenant.id, cacheKey) : null;
  if (hit) {
    output = hit.output;
    model = hit.model;
    cached = true;
  } else {
    const history = intent.conversational || intent.promptTemplate.includes('{{history}}') ? await renderHistory(em, session) : '';
    const prompt = renderPrompt(intent.promptTemplate, { input: safeInput, context: '', history });
    const exec = intent.executionConfig;
    const result = await deps.llm.completeStructured(em, {
      usage: usageContext,
      model: exec.model ?? tenant.defaultModel ?? null,
      messages: [
        { role: 'system', content: intent.systemPrompt },
        { role: 'user', content: prompt },
      ],
      schema: intent.outputSchema,
      schemaName: `${intent.domain}_${intent.key}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64),
      temperature: exec.temperature ?? undefined,
      maxTokens: exec.max_tokens ?? undefined,
      timeoutMs: exec.timeout_ms ?? undefined,
    });
    output = result.output;
    model = result.model;
    tokens = result.promptTokens + result.completionTokens;
    cost = result.costUsd;
  }

  const post = runPostLlm(output as object, guardrails, guardrails?.output?.schema === false ? null : intent.outputSchema);
  if (!post.passed) throw blocked('post_llm', post.issues);
  output = post.response;
  if (cacheKey && !cached) await writeIntentCache(em, tenant.id, cacheKey, output, model, intent.cacheConfig?.ttl_seconds ?? 3600);
  // A cache hit calls no provider, so the gateway recorded nothing: record the request here.
  if (cached) await recordUsage(em, { ...usageContext, model, status: 'cached' });

  const latencyMs = Math.round(performance.now() - started);
  const messageId = await appendTurn(em, session, {
    intent: intent.key,
    userContent: safeInput,
    assistantContent: output,
    model,
    tokens,
    costUsd: cost,
    latencyMs,
    cached,
  });
  return {
    success: true,
    data: { output: output as Record<string, unknown>, session_id: session.id, message_id: messageId },
    metadata: {
      intent: intent.key,
      domain: intent.domain,
      model_used: model,
      tokens_used: tokens,
      cost_usd: Number(cost.toFixed(6)),
      latency_ms: latencyMs,
      cached,
      version: intent.version,
      guardrail_issues: [...pre.issues, ...post.issues] as unknown as Record<string, unknown>[],
    },
    usage: remainingAfter(tenant, usedBefore, tokens),
  };
}
