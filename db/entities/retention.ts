import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/**
 * A tenant's own retention for one kind of history, in days, within its plan's bounds
 * (server/retention/retention-policy.ts). No row: the plan's default.
 */
export const TenantRetention = defineEntity({
  name: 'TenantRetention',
  tableName: 'tenant_retention',
  properties: {
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').primary(),
    kind: p.string().length(64).primary(),
    days: p.integer(),
    updatedBy: p.string().length(320).nullable(),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
