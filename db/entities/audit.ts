import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_log',
  indexes: [
    // The list, newest first, paged by keyset, with and without its action filter.
    { name: 'audit_log_tenant_id_created_at_id_index', expression: `create index "audit_log_tenant_id_created_at_id_index" on "audit_log" ("tenant_id", "created_at" desc, "id" desc)` },
    { name: 'audit_log_tenant_id_action_created_at_id_index', expression: `create index "audit_log_tenant_id_action_created_at_id_index" on "audit_log" ("tenant_id", "action", "created_at" desc, "id" desc)` },
  ],
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
