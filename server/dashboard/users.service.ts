import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { toDashboardUser } from '../auth/auth.service.js';
import type { DashboardScope } from '../auth/authenticate-dashboard.js';
import { hashPassword } from '../auth/passwords.js';
import { countTenantOwners, deleteUser, findTenantUser, insertUser, isEmailTaken, listTenantUsers, saveUserChanges } from '../auth/user-records.js';
import type { Role } from '../../db/column-values.js';
import { isUuid } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import { lockTenantForUpdate } from '../tenants/tenant-records.js';

export async function listUsers(em: EntityManager, tenantId: string, page: { limit: number; offset: number }) {
  const [users, total] = await listTenantUsers(em, tenantId, page);
  return { users: users.map(toDashboardUser), pagination: { total, limit: page.limit, offset: page.offset } };
}

// Only an owner may hand out or take away the owner role.
function assertMayManage(actorRole: Role, targetRole: Role, newRole?: Role) {
  if ((targetRole === 'owner' || newRole === 'owner') && actorRole !== 'owner') {
    throw new AppError('FORBIDDEN', 'Only an owner can grant, change or remove the owner role');
  }
}

export async function inviteUser(em: EntityManager, scope: DashboardScope, actor: Actor, input: { email: string; role: Role; password: string; fullName?: string }) {
  assertMayManage(scope.role, input.role);
  if (await isEmailTaken(em, input.email)) throw new AppError('EMAIL_TAKEN', 'An account already exists for this e-mail');
  const passwordHash = await hashPassword(input.password);
  return em.transactional(async (tx) => {
    const user = await insertUser(tx, { tenantId: scope.tenantId, email: input.email, fullName: input.fullName ?? null, passwordHash, role: input.role });
    // Another request took the e-mail since the check above.
    if (!user) throw new AppError('EMAIL_TAKEN', 'An account already exists for this e-mail');
    recordAudit(tx, scope.tenantId, actor, { action: 'user.invited', targetType: 'user', targetId: user.id, details: { email: user.email, role: user.role } });
    await saveUserChanges(tx);
    return { user: toDashboardUser(user) };
  });
}

async function lockTenantUser(tx: EntityManager, tenantId: string, userId: string) {
  if (!isUuid(userId)) throw notFound('User');
  // Serialise role changes within a tenant so two admins cannot demote the last two owners at once.
  await lockTenantForUpdate(tx, tenantId);
  const user = await findTenantUser(tx, tenantId, userId);
  if (!user) throw notFound('User');
  return user;
}

export async function changeUserRole(em: EntityManager, scope: DashboardScope, actor: Actor, userId: string, role: Role) {
  return em.transactional(async (tx) => {
    const user = await lockTenantUser(tx, scope.tenantId, userId);
    assertMayManage(scope.role, user.role, role);
    if (user.role === 'owner' && role !== 'owner' && (await countTenantOwners(tx, scope.tenantId)) <= 1) {
      throw new AppError('LAST_OWNER', 'The last owner cannot be demoted; make someone else owner first');
    }
    const previous = user.role;
    user.role = role;
    recordAudit(tx, scope.tenantId, actor, { action: 'user.role_changed', targetType: 'user', targetId: user.id, details: { email: user.email, from: previous, to: role } });
    await saveUserChanges(tx);
    return { user: toDashboardUser(user) };
  });
}

export async function removeUser(em: EntityManager, scope: DashboardScope, actor: Actor, userId: string) {
  await em.transactional(async (tx) => {
    const user = await lockTenantUser(tx, scope.tenantId, userId);
    assertMayManage(scope.role, user.role);
    if (user.role === 'owner' && (await countTenantOwners(tx, scope.tenantId)) <= 1) {
      throw new AppError('LAST_OWNER', 'The last owner cannot be removed');
    }
    recordAudit(tx, scope.tenantId, actor, { action: 'user.removed', targetType: 'user', targetId: user.id, details: { email: user.email, role: user.role } });
    await deleteUser(tx, user);
  });
}
