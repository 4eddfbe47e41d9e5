import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/**
 * One `liya apply`: the project it would make live, its plan, and the gate's eval runs. Nothing of
 * it is live until the publish step applies the whole plan in one transaction.
 */
export const Deployment = defineEntity({
  name: 'Deployment',
  tableName: 'deployments',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    status: p.string().length(20),
    project: p.json<Record<string, unknown>>(),
    plan: p.json<Record<string, unknown>>(),
    prune: p.boolean(),
    minPassRate: p.double(),
    /** sha256 of the tenant's export (eval kinds aside) the plan was made against. */
    baseDigest: p.string().length(64),
    /** [{suite, run_id}] */
    gate: p.json<{ suite: string; run_id: string }[]>(),
    error: p.json<{ code: string; message: string }>().nullable(),
    minted: p.json<{ workflow_key: string; webhook_url: string }[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    publishedAt: p.datetime().nullable(),
  },
});
