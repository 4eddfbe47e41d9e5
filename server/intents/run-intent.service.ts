import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { SqlPool } from '../../db/sql-pool.js';
import { monthKey } from '../common/schemas.js';
import { validateWithSchema } from '../common/json-schema.js';
import type { AppDeps } from '../deps.js';
import { AppError, notFound } from '../errors.js';
import type { GuardrailIssue, GuardrailsConfig } from '../guardrails/guardrails.types.js';
import { runPostLlm } from '../guardrails/run-post-llm.js';
import { runPreLlmOnInput } from '../guardrails/run-pre-llm.js';
import { groundIntent, NO_GROUNDING } from '../knowledge/grounding.js';
import { openSession, renderHistory } from '../sessions/sessions.service.js';
import { assertQuotaLeft, remainingAfter } from '../usage/quota.js';
import { writeUsageEvents, type MonthlyUsage, type UsageEventInput } from '../usage/usage.service.js';
import { intentCacheKey, readIntentCache } from './intent-cache.js';
import { writeRunRecord } from './run-record.js';
import type { IntentDefinition } from './intent-definition.js';
import type { IntentRequest, IntentResponse } from './intents.schemas.js';
import { renderPrompt } from './render-prompt.js';
import { resolveIntent, type TenantRuntime } from './resolve-intent.js';

export interface RunScope {
  tenantId: string;
  environmentId: string | null;
}

interface TenantRow {
  id: string;
  enabled_domains: string[];
  disabled_intents: string[] | null;
  default_model: string | null;
  guardrails_config: GuardrailsConfig | null;
  monthly_request_quota: number | null;
  monthly_token_quota: string | null;
  requests: string | null;
  tokens: string | null;
  cost_usd: string | null;
}

/** The tenant's runtime settings and this month's usage, in one query. */
export async function loadTenantRuntime(sql: SqlPool, tenantId: string): Promise<TenantRuntime & { usedThisMonth: MonthlyUsage }> {
  const [row] = await sql.query<TenantRow>(
    `select t.id, t.enabled_domains, t.disabled_intents, t.default_model, t.guardrails_config, t.monthly_request_quota,
            t.monthly_token_quota::text, c.requests::text, c.tokens::text, c.cost_usd::text
       from tenants t left join usage_counters c on c.tenant_id = t.id and c.month = $2 where t.id = $1`,
    [tenantId, monthKey()],
  );
  if (!row) throw notFound('Tenant');
  return {
    id: row.id,
    enabledDomains: row.enabled_domains,
    disabledIntents: row.disabled_intents ?? [],
    defaultModel: row.default_model,
    guardrailsConfig: row.guardrails_config,
    monthlyRequestQuota: row.monthly_request_quota,
    monthlyTokenQuota: row.monthly_token_quota == null ? null : Number(row.monthly_token_quota),
    usedThisMonth: { requests: Number(row.requests ?? 0), tokens: Number(row.tokens ?? 0), costUsd: Number(row.cost_usd ?? 0) },
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
  const tenant = await loadTenantRuntime(deps.sql, scope.tenantId);
  const intent = await resolveIntent(em, tenant, domainKey, intentKey);
  const input = request.input as Record<string, unknown>;
  assertInputMatches(intent, input);
  const usedBefore = tenant.usedThisMonth;
  assertQuotaLeft(tenant, usedBefore);

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
  let grounding = NO_GROUNDING;
  const usageEvents: UsageEventInput[] = [];
  const hit = cacheKey ? await readIntentCache(deps.sql, tenant.id, cacheKey) : null;
  if (hit) {
    output = hit.output;
    model = hit.model;
    cached = true;
  } else {
    const history = intent.conversational || intent.promptTemplate.includes('{{history}}') ? await renderHistory(em, session) : '';
    // Retrieval uses the redacted input (user_id aside), so no removed PII reaches the search either.
    grounding = await groundIntent(em, deps, tenant.id, intent.domain, intent.retrievalConfig, pre.input);
    const prompt = renderPrompt(intent.promptTemplate, { input: safeInput, context: grounding.context, history });
    const exec = intent.executionConfig;
    const call = {
      usage: usageContext,
      usageSink: (event: UsageEventInput) => usageEvents.push(event),
      // Resolved here, so the gateway need not look the tenant up again.
      model: exec.model ?? tenant.defaultModel ?? deps.config.DEFAULT_MODEL,
      messages: [
        { role: 'system' as const, content: intent.systemPrompt },
        { role: 'user' as const, content: prompt },
      ],
      schema: intent.outputSchema,
      schemaName: `${intent.domain}_${intent.key}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64),
      temperature: exec.temperature ?? undefined,
      maxTokens: exec.max_tokens ?? undefined,
      timeoutMs: exec.timeout_ms ?? undefined,
    };
    const result = await deps.llm.completeStructured(em, call).catch(async (err: unknown) => {
      // Failed provider calls are metered even though the run fails.
      await em.transactional((tx) => writeUsageEvents(tx, usageEvents)).catch((e) => deps.log.error({ err: e }, 'recording failed model calls failed'));
      throw err;
    });
    output = result.output;
    model = result.model;
    tokens = result.promptTokens + result.completionTokens;
    cost = result.costUsd;
  }

  const post = runPostLlm(output as object, guardrails, guardrails?.output?.schema === false ? null : intent.outputSchema);
  if (!post.passed) throw blocked('post_llm', post.issues);
  output = post.response;
  // A cache hit calls no provider, so the gateway reported nothing: the request is metered here.
  if (cached) usageEvents.push({ ...usageContext, model, status: 'cached' });
  const latencyMs = Math.round(performance.now() - started);
  const messageId = randomUUID();
  await writeRunRecord(
    deps.sql,
    {
      tenantId: tenant.id,
      usage: usageEvents,
      session,
      turn: { intent: intent.key, userContent: safeInput, assistantContent: output, model, tokens, costUsd: cost, latencyMs, cached },
      cache: cacheKey && !cached ? { key: cacheKey, ttlSeconds: intent.cacheConfig?.ttl_seconds ?? 3600 } : null,
    },
    messageId,
  );
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
      context_chunk_ids: grounding.chunkIds,
    },
    usage: remainingAfter(tenant, usedBefore, tokens),
  };
}
