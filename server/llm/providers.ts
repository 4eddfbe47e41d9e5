// Which providers exist and which one serves a model name.
import type { AppConfig } from '../config.js';

/** The name of the provider at OPENAI_BASE_URL / OPENAI_API_KEY (and of tenants' keys for it). */
export const DEFAULT_PROVIDER = 'openai';
export const OPENAI_API_URL = 'https://api.openai.com/v1';

export interface LlmProvider {
  name: string;
  baseUrl: string;
  /** The platform's key; a provider without one is either keyless (a local server) or tenant-keyed. */
  apiKey?: string;
  /** Whether the platform can call it on its own; a tenant's key makes an unconfigured provider usable. */
  configured: boolean;
}

export type ProviderConfig = Pick<AppConfig, 'OPENAI_BASE_URL' | 'OPENAI_API_KEY' | 'LLM_PROVIDERS'>;

/** The default provider first (configured when either of its variables is set), then LLM_PROVIDERS. */
export function listProviders(config: ProviderConfig): LlmProvider[] {
  const builtIn: LlmProvider = {
    name: DEFAULT_PROVIDER,
    baseUrl: config.OPENAI_BASE_URL ?? OPENAI_API_URL,
    apiKey: config.OPENAI_API_KEY,
    configured: !!(config.OPENAI_BASE_URL || config.OPENAI_API_KEY),
  };
  // A named provider always has a base URL; its key is optional (local servers need none).
  const named = (config.LLM_PROVIDERS ?? []).map((p) => ({ name: p.name, baseUrl: p.baseUrl, apiKey: p.apiKey, configured: true }));
  return [builtIn, ...named];
}

export interface ModelRef {
  provider: string;
  /** The model name the provider is sent (without the provider prefix). */
  model: string;
}

/**
 * `provider/model` names a provider; a bare name goes to the default provider. A prefix that names
 * no provider stays as given so the caller can refuse it rather than send it somewhere unintended.
 */
export function parseModelRef(ref: string): ModelRef {
  const slash = ref.indexOf('/');
  if (slash <= 0) return { provider: DEFAULT_PROVIDER, model: ref };
  return { provider: ref.slice(0, slash), model: ref.slice(slash + 1) };
}

/** Intent's model, else the tenant's default, else the platform's DEFAULT_MODEL. */
export function chooseModel(requested: string | null | undefined, tenantDefault: string | null | undefined, platformDefault: string): string {
  return requested?.trim() || tenantDefault?.trim() || platformDefault;
}
