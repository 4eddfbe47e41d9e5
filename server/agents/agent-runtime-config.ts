// The settings a run uses: the agent's own values laid over the platform's defaults. The same
// resolution feeds the runner and the `effective_runtime_config` of the single-agent read.
import type { AgentSettings } from './load-agent-run.js';
import type { AppConfig } from '../config.js';
import { chooseModel } from '../llm/providers.js';
import type { BehaviorConfig, MemoryConfig, PlatformTool, ToolsConfig } from './agents.schemas.js';

export const AGENT_DEFAULTS = {
  maxSteps: 10,
  maxOutputTokens: 2048,
  toolTimeoutMs: 30_000,
  conversationMemoryTokens: 4000,
  retentionDays: 30,
  fallback: 'Sorry, I could not complete this request. Please try again later.',
} as const;

export interface AgentRuntimeConfig {
  model: string;
  temperature: number | null;
  maxSteps: number;
  maxOutputTokens: number;
  maxCostUsd: number | null;
  parallelToolCalls: boolean;
  toolTimeoutMs: number;
  planning: boolean;
  /** The agent's own planning instruction (behavior_config.planning given as text); null: the default one. */
  planningInstruction: string | null;
  fallback: string;
  stopOnTools: string[];
  conversationMemory: { enabled: boolean; maxTokens: number };
  userPreferences: boolean;
  persistentMemory: boolean;
  retentionDays: number;
  platformTools: PlatformTool[];
}

type Source = 'agent' | 'platform_default' | 'provider_default';
type Sourced<T> = { value: T; source: Source };

const pick = <T>(own: T | null | undefined, fallback: T, fallbackSource: Source = 'platform_default'): Sourced<T> =>
  own === undefined || own === null ? { value: fallback, source: fallbackSource } : { value: own, source: 'agent' };

/**
 * behavior_config.planning as it takes effect: a boolean as it is; text is planning on with that
 * text as the instruction, and blank text says nothing to plan by, so planning is off.
 */
function effectivePlanning(planning: BehaviorConfig['planning']): boolean | string | undefined {
  if (typeof planning !== 'string') return planning;
  return planning.trim() === '' ? false : planning;
}

function resolveSourced(agent: AgentSettings, tenantDefaultModel: string | null, config: Pick<AppConfig, 'DEFAULT_MODEL'>) {
  const behavior = (agent.behaviorConfig ?? {}) as BehaviorConfig;
  const memory = (agent.memoryConfig ?? {}) as MemoryConfig;
  const tools = (agent.toolsConfig ?? {}) as ToolsConfig;
  const conversation = memory.conversation_memory;
  const conversationObject = typeof conversation === 'object' && conversation !== null ? conversation : null;
  return {
    model: agent.model ? pick(agent.model, '') : pick<string>(null, chooseModel(null, tenantDefaultModel, config.DEFAULT_MODEL)),
    temperature: pick<number | null>(agent.temperature == null ? null : Number(agent.temperature), null, 'provider_default'),
    max_steps: pick(behavior.max_steps, AGENT_DEFAULTS.maxSteps),
    max_output_tokens: pick(behavior.max_output_tokens, AGENT_DEFAULTS.maxOutputTokens),
    max_cost_usd: pick<number | null>(behavior.max_cost_usd ?? null, null),
    parallel_tool_calls: pick(behavior.execution?.parallel_tool_calls, true),
    tool_timeout_ms: pick(behavior.execution?.tool_timeout_ms, AGENT_DEFAULTS.toolTimeoutMs),
    planning: pick(effectivePlanning(behavior.planning), false),
    fallback: pick(behavior.fallback, AGENT_DEFAULTS.fallback),
    stop_on_tools: pick(behavior.termination?.stop_on_tools, [] as string[]),
    conversation_memory: pick(typeof conversation === 'boolean' ? conversation : conversationObject?.enabled, true),
    conversation_memory_max_tokens: pick(conversationObject?.max_tokens, AGENT_DEFAULTS.conversationMemoryTokens),
    user_preferences: pick(memory.user_preferences, false),
    persistent_memory: pick(memory.persistent_memory, false),
    retention_days: pick(memory.retention_days, AGENT_DEFAULTS.retentionDays),
    enabled_platform_tools: pick(tools.enabled_platform_tools, [] as PlatformTool[]),
  };
}

/**
 * Each runtime setting with its value and whether the agent, the platform or the provider decides it.
 * `fallback_models` is the chain a run takes after `model`: the agent's, else the tenant's, else the
 * platform's LLM_FALLBACK_MODELS (the tenant's counts as platform_default, as its default model does).
 */
export function describeEffectiveConfig(
  agent: AgentSettings,
  tenantDefaultModel: string | null,
  config: Pick<AppConfig, 'DEFAULT_MODEL' | 'LLM_FALLBACK_MODELS'>,
  tenantFallbacks: string[] | null = null,
): Record<string, Sourced<unknown>> {
  const { model, ...rest } = resolveSourced(agent, tenantDefaultModel, config);
  return { model, fallback_models: pick<string[]>(agent.fallbackModels, tenantFallbacks ?? config.LLM_FALLBACK_MODELS ?? []), ...rest };
}

export function resolveRuntimeConfig(agent: AgentSettings, tenantDefaultModel: string | null, config: Pick<AppConfig, 'DEFAULT_MODEL'>): AgentRuntimeConfig {
  const s = resolveSourced(agent, tenantDefaultModel, config);
  return {
    model: s.model.value,
    temperature: s.temperature.value,
    maxSteps: s.max_steps.value,
    maxOutputTokens: s.max_output_tokens.value,
    maxCostUsd: s.max_cost_usd.value,
    parallelToolCalls: s.parallel_tool_calls.value,
    toolTimeoutMs: s.tool_timeout_ms.value,
    planning: s.planning.value !== false,
    planningInstruction: typeof s.planning.value === 'string' ? s.planning.value.trim() : null,
    fallback: s.fallback.value,
    stopOnTools: s.stop_on_tools.value,
    conversationMemory: { enabled: s.conversation_memory.value, maxTokens: s.conversation_memory_max_tokens.value },
    userPreferences: s.user_preferences.value,
    persistentMemory: s.persistent_memory.value,
    retentionDays: s.retention_days.value,
    platformTools: s.enabled_platform_tools.value,
  };
}
