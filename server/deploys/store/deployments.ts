// The deployments table; this module alone writes it.
import { Deployment } from '../../../db/entities/deploy.js';
import type { EntityManager } from '../../../db/orm.js';
import type { InferEntity } from '@mikro-orm/core';

export type DeploymentRow = InferEntity<typeof Deployment>;

export interface NewDeployment {
  tenantId: string;
  status: string;
  project: Record<string, unknown>;
  plan: Record<string, unknown>;
  prune: boolean;
  minPassRate: number;
  baseDigest: string;
  gate: { suite: string; run_id: string }[];
  minted: { workflow_key: string; webhook_url: string }[];
  publishedAt: Date | null;
}

/** A new deployment, written now. */
export async function insertDeployment(em: EntityManager, values: NewDeployment): Promise<DeploymentRow> {
  const { tenantId, ...rest } = values;
  const row = em.create(Deployment, { tenant: tenantId, ...rest, error: null });
  await em.flush();
  return row;
}

export async function findTenantDeployment(em: EntityManager, tenantId: string, id: string): Promise<DeploymentRow | null> {
  return em.findOne(Deployment, { id, tenant: tenantId });
}

/** Writes the changes made to loaded deployments. */
export async function saveDeployments(em: EntityManager): Promise<void> {
  await em.flush();
}
