// Wire shapes of a tenant's custom domains (the groups its custom intents live in).
import { z } from 'zod';
import { bodyBoolean, bodyInt, keyPattern } from '../common/schemas.js';

export const customDomainSchema = z
  .object({
    id: z.string(),
    domain_key: z.string(),
    display_name: z.string(),
    description: z.string().nullable(),
    is_active: z.boolean(),
    sort_order: z.number().int(),
    intent_count: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'CustomDomain' });
export type CustomDomainDto = z.infer<typeof customDomainSchema>;

export const createDomainInput = z.object({
  domain_key: keyPattern,
  display_name: z.string().trim().min(1).max(200),
  description: z.string().max(5000).nullable().optional(),
  is_active: bodyBoolean().optional(),
  sort_order: bodyInt(-1_000_000, 1_000_000).optional(),
});

export const updateDomainInput = z.object({
  domainKey: z.string().max(100),
  display_name: z.string().trim().min(1).max(200).optional(),
  description: z.string().max(5000).nullable().optional(),
  is_active: bodyBoolean().optional(),
  sort_order: bodyInt(-1_000_000, 1_000_000).optional(),
});
