import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_log',
  indexes: [{ properties: ['tenant', 'createdAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    actorType: p.string().length(32),
    actorId: p.string().length(64).nullable(),
    actorName: p.string().length(320),
    action: p.string().length(100),
    targetType: p.string().length(64),
    targetId: p.string().length(200).nullable(),
    details: p.json<Record<string, unknown>>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
