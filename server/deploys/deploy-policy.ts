// The deploy policy a tenant's owners and admins set (the dashboard): which environments' keys may
// deploy and prune, the gate suites every deployment must pass, and the least pass rate of a gate.
// A project never carries it, so no deployment can weaken it.
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso } from '../common/schemas.js';
import { AppError } from '../errors.js';
import { requirePermission, type ApiKeyScope } from '../keys/authenticate-api-key.js';
import type { DeployPolicyDto, DeployPolicyInput } from './deploys.schemas.js';
import { findDeployPolicy, saveDeployPolicy } from './store/deploy-policies.js';

/** What applies while a tenant's owners have set nothing: production keys deploy and prune; no gate is required. */
export const DEFAULT_DEPLOY_POLICY = {
  deploy_environments: ['production'],
  prune_environments: ['production'],
  required_gates: [] as string[],
  min_pass_rate: null as number | null,
};

export async function getDeployPolicy(em: EntityManager, tenantId: string): Promise<DeployPolicyDto> {
  const row = await findDeployPolicy(em, tenantId);
  if (!row) return { ...DEFAULT_DEPLOY_POLICY, updated_by: null, updated_at: null };
  return {
    deploy_environments: row.deployEnvironments,
    prune_environments: row.pruneEnvironments,
    required_gates: row.requiredGates,
    min_pass_rate: row.minPassRate == null ? null : Number(row.minPassRate),
    updated_by: row.updatedBy ?? null,
    updated_at: iso(row.updatedAt),
  };
}

/** Changes the fields given; the others keep their value. Audited with what it was and what it is. */
export async function updateDeployPolicy(em: EntityManager, tenantId: string, actor: Actor, input: DeployPolicyInput): Promise<{ policy: DeployPolicyDto }> {
  return em.transactional(async (tx) => {
    const before = await getDeployPolicy(tx, tenantId);
    const next = {
      deploy_environments: [...new Set(input.deploy_environments ?? before.deploy_environments)],
      prune_environments: [...new Set(input.prune_environments ?? before.prune_environments)],
      required_gates: [...new Set(input.required_gates ?? before.required_gates)],
      min_pass_rate: input.min_pass_rate !== undefined ? input.min_pass_rate : before.min_pass_rate,
    };
    await saveDeployPolicy(tx, tenantId, { deployEnvironments: next.deploy_environments, pruneEnvironments: next.prune_environments, requiredGates: next.required_gates, minPassRate: next.min_pass_rate }, actor.name);
    const { updated_by: _b, updated_at: _a, ...previous } = before;
    recordAudit(tx, tenantId, actor, { action: 'deploy_policy.updated', targetType: 'tenant', targetId: tenantId, details: { before: previous, after: next } });
    return { policy: await getDeployPolicy(tx, tenantId) };
  });
}

/**
 * Whether this key may deploy (and prune) now: the permission, and an environment the policy
 * allows. 403 PERMISSION_DENIED or DEPLOY_NOT_ALLOWED naming what is missing.
 */
export function assertMayDeploy(policy: DeployPolicyDto, key: ApiKeyScope, prune: boolean): void {
  requirePermission(key, 'project:deploy');
  const environment = key.environmentName ?? '';
  if (!policy.deploy_environments.includes(environment)) {
    throw new AppError('DEPLOY_NOT_ALLOWED', `Keys of the ${environment || 'unnamed'} environment may not deploy (the tenant's deploy policy allows: ${policy.deploy_environments.join(', ') || 'none'})`, {
      environment: key.environmentName,
      allowed: policy.deploy_environments,
    });
  }
  if (!prune) return;
  requirePermission(key, 'project:prune');
  if (!policy.prune_environments.includes(environment)) {
    throw new AppError('DEPLOY_NOT_ALLOWED', `Keys of the ${environment || 'unnamed'} environment may not prune (the tenant's deploy policy allows: ${policy.prune_environments.join(', ') || 'none'})`, {
      environment: key.environmentName,
      allowed: policy.prune_environments,
      prune: true,
    });
  }
}
