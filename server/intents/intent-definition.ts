// One shape for every runnable intent, built-in (code) or custom (database), so the runtime has one path.
import type { GuardrailsConfig } from '../guardrails/guardrails.types.js';
import type { JsonSchema } from '../llm/llm.types.js';

export interface ExecutionConfig {
  model?: string | null;
  temperature?: number | null;
  max_tokens?: number | null;
  /** The whole model step's time limit: every attempt, wait and fallback inside it. */
  timeout_ms?: number | null;
  /** Models that serve, in order, when `model` fails or cools down (null: the tenant's, then the platform's). */
  fallback_models?: string[] | null;
}

export interface CacheConfig {
  enabled: boolean;
  ttl_seconds?: number;
}

export interface RetrievalConfig {
  enabled: boolean;
  collection_ids?: string[];
  top_k?: number;
}

export interface IntentDefinition {
  /** `hiring/resume-analysis` for built-in intents, the row id for custom ones. */
  id: string;
  domain: string;
  key: string;
  displayName: string;
  description: string | null;
  builtIn: boolean;
  /** Custom intents: the live version number (part of the cache key). Built-in: a code revision. */
  version: number;
  /** Instructions sent as the system message. */
  systemPrompt: string;
  /** The user message; `{{input.field}}`, `{{context}}` and `{{history}}` are filled in. */
  promptTemplate: string;
  /** JSON Schema the input must satisfy beyond IntentRequest (null: none). */
  inputSchema: JsonSchema | null;
  outputSchema: JsonSchema;
  /** Conversational intents read `input.message` and the session history. */
  conversational: boolean;
  executionConfig: ExecutionConfig;
  guardrailsConfig: GuardrailsConfig | null;
  cacheConfig: CacheConfig | null;
  retrievalConfig: RetrievalConfig | null;
}
