// The deploy_policies table; this module alone writes it.
import { DeployPolicy } from '../../../db/entities/deploy.js';
import type { EntityManager } from '../../../db/orm.js';
import type { InferEntity } from '@mikro-orm/core';

export type DeployPolicyRow = InferEntity<typeof DeployPolicy>;

export interface DeployPolicyValues {
  deployEnvironments: string[];
  pruneEnvironments: string[];
  requiredGates: string[];
  minPassRate: number | null;
}

/** The tenant's policy; null when its owners never set one (the defaults apply). */
export async function findDeployPolicy(em: EntityManager, tenantId: string): Promise<DeployPolicyRow | null> {
  return em.findOne(DeployPolicy, { tenant: tenantId });
}

/** Writes the tenant's policy now, replacing the one it had. */
export async function saveDeployPolicy(em: EntityManager, tenantId: string, values: DeployPolicyValues, updatedBy: string): Promise<DeployPolicyRow> {
  const existing = await findDeployPolicy(em, tenantId);
  const row = existing ?? em.create(DeployPolicy, { tenant: tenantId, ...values, updatedBy });
  Object.assign(row, values, { updatedBy, updatedAt: new Date() });
  await em.flush();
  return row;
}
