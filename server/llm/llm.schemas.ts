// Wire types of model settings shared by every feature that names models (tenants, intents, agents, suites).
import { z } from 'zod';

/** Most fallbacks a chain holds after its primary model. */
export const MAX_FALLBACK_MODELS = 3;

/**
 * Models that serve, in order, when the primary fails in a way another model may cure or cools
 * down: `provider/model` or a bare name (the default provider). An empty list means no fallback.
 */
export const fallbackModelsSchema = z
  .array(z.string().trim().min(1).max(200))
  .max(MAX_FALLBACK_MODELS)
  .refine((list) => new Set(list).size === list.length, 'Each fallback model may appear once')
  .describe(`Models that serve, in order, when the primary model fails (rate limit, outage, timeout) or is cooling down: provider/model or a bare name, at most ${MAX_FALLBACK_MODELS}; [] means never fall back`);
