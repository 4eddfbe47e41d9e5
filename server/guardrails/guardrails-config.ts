import type { z } from 'zod';
import { PII_ENTITIES, type guardrailsConfigSchema, type PiiEntity } from './guardrails.types.js';

/**
 * A guardrails config as stored or sent: parsed (defaults applied) or raw JSON where any part may
 * be missing. `null`/`undefined` means "the defaults".
 */
export type GuardrailsConfigLike = z.input<typeof guardrailsConfigSchema> | null | undefined;

export type PiiAction = 'redact' | 'block' | 'flag' | 'off';
export type InjectionAction = 'block' | 'flag' | 'off';

export interface ResolvedGuardrailsConfig {
  piiAction: PiiAction;
  entities: readonly PiiEntity[];
  injectionAction: InjectionAction;
  blockedTerms: readonly string[];
  maxInputChars: number | null;
  outputPiiAction: PiiAction;
  outputSchema: boolean;
}

/**
 * Defaults: PII redact (every entity), injection block, no blocked terms, at most 100,000
 * characters (longer input is refused before any scan: scanning is linear but a megabyte would
 * hold the event loop for seconds); output PII redact, schema checked.
 */
export const DEFAULT_MAX_INPUT_CHARS = 100_000;
export const DEFAULT_GUARDRAILS: ResolvedGuardrailsConfig = {
  piiAction: 'redact',
  entities: PII_ENTITIES,
  injectionAction: 'block',
  blockedTerms: [],
  maxInputChars: DEFAULT_MAX_INPUT_CHARS,
  outputPiiAction: 'redact',
  outputSchema: true,
};

export function resolveGuardrailsConfig(config: GuardrailsConfigLike): ResolvedGuardrailsConfig {
  if (!config) return DEFAULT_GUARDRAILS;
  const entities = config.pii?.entities;
  return {
    piiAction: config.pii?.action ?? DEFAULT_GUARDRAILS.piiAction,
    entities: entities ? PII_ENTITIES.filter((e) => entities.includes(e)) : PII_ENTITIES,
    injectionAction: config.injection?.action ?? DEFAULT_GUARDRAILS.injectionAction,
    blockedTerms: config.blocked_terms ?? [],
    maxInputChars: config.max_input_chars ?? DEFAULT_MAX_INPUT_CHARS,
    outputPiiAction: config.output?.pii ?? DEFAULT_GUARDRAILS.outputPiiAction,
    outputSchema: config.output?.schema ?? true,
  };
}
