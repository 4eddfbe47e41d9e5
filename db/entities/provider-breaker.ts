import { defineEntity, p } from '@mikro-orm/core';

/**
 * An open breaker of a model provider's target (provider and credential), shared by every process.
 * Platform state, not a tenant's: the key names the credential by a digest only.
 */
export const ProviderBreaker = defineEntity({
  name: 'ProviderBreaker',
  tableName: 'provider_breakers',
  properties: {
    key: p.string().length(200).primary(),
    provider: p.string().length(100),
    credential: p.string().length(16),
    openUntil: p.datetime(),
    updatedAt: p.datetime().defaultRaw('now()'),
  },
});
