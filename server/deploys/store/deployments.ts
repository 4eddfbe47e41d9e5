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

/**
 * Moves a gating deployment to `publishing` unless another request did first: one conditional
 * UPDATE decides, so two publishes of one deployment never both apply it.
 */
export async function claimDeploymentForPublish(em: EntityManager, tenantId: string, id: string): Promise<boolean> {
  const claimed = await em.nativeUpdate(Deployment, { id, tenant: tenantId, status: 'gating' }, { status: 'publishing' });
  return claimed === 1;
}
