import { defineEntity, p } from '@mikro-orm/core';

/**
 * The operator's log of what was done to tenants as a whole (deleted, exported, imported). No
 * foreign key to tenants and no tenant_id column on purpose: an entry must outlive the tenant it
 * names, and a tenant's deletion never finds it among the tenant's rows.
 */
export const PlatformAuditEntry = defineEntity({
  name: 'PlatformAuditEntry',
  tableName: 'platform_audit_log',
  indexes: [
    // The list, newest first, paged by keyset.
    { name: 'platform_audit_log_created_at_id_index', expression: `create index "platform_audit_log_created_at_id_index" on "platform_audit_log" ("created_at" desc, "id" desc)` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    actorType: p.string().length(32),
    actorName: p.string().length(320),
    action: p.string().length(100),
    targetType: p.string().length(64),
    targetId: p.string().length(200).nullable(),
    details: p.json<Record<string, unknown>>(),
    createdAt: p.datetime().defaultRaw('now()'),
  },
});
