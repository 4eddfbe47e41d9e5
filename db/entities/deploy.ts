import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/**
 * One `liya apply` that changed something: its plan and the gate's eval runs. Nothing of it is live
 * until the publish step applies the whole plan in one transaction. A plan that changes nothing is
 * not stored; the project itself never is (a publish brings it again, recognised by its digest).
 */
export const Deployment = defineEntity({
  name: 'Deployment',
  tableName: 'deployments',
  indexes: [
    // The list, newest first (paged by keyset), and retention (the newest per tenant are kept).
    { name: 'deployments_tenant_id_created_at_id_index', expression: `create index "deployments_tenant_id_created_at_id_index" on "deployments" ("tenant_id", "created_at" desc, "id" desc)` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    status: p.string().length(20),
    plan: p.json<Record<string, unknown>>(),
    prune: p.boolean(),
    minPassRate: p.double(),
    /** sha256 of the project the deployment was made with (a publish must bring the same). */
    baseDigest: p.string().length(64),
    /** [{suite, run_id}] */
    gate: p.json<{ suite: string; run_id: string; model?: string | null }[]>(),
    error: p.json<{ code: string; message: string }>().nullable(),
    minted: p.json<{ workflow_key: string; webhook_url: string }[]>(),
    /** Who made it: the key's audit name. */
    createdBy: p.string().length(200).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    publishedAt: p.datetime().nullable(),
  },
});

/**
 * What a tenant's owners and admins allow deploys to do: which environments' keys may deploy and
 * prune, the eval suites every deployment must pass, and the least pass rate of a gate. No row:
 * the defaults (production deploys and prunes; no gate required; every case must pass).
 */
export const DeployPolicy = defineEntity({
  name: 'DeployPolicy',
  tableName: 'deploy_policies',
  properties: {
    tenant: () => p.oneToOne(Tenant).primary().deleteRule('cascade'),
    deployEnvironments: p.json<string[]>(),
    pruneEnvironments: p.json<string[]>(),
    requiredGates: p.json<string[]>(),
    /** null: each deployment's own (default 1). */
    minPassRate: p.double().nullable(),
    updatedBy: p.string().length(320).nullable(),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
