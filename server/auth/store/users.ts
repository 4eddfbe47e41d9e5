// The users table (dashboard users of every tenant); this module alone writes it.
import type { Role } from '../../../db/column-values.js';
import { User, type IUser } from '../../../db/entities/user.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { IUser as UserRow } from '../../../db/entities/user.js';

/** A user with their tenant's state, as every dashboard request reads it. */
export interface DashboardUserLookupRow {
  id: string;
  email: string;
  role: Role;
  tenant_id: string;
  password_changed_at: Date | null;
  is_active: boolean;
}

/** The user and whether their tenant is active; undefined when there is no such user. */
export async function lookupDashboardUser(sql: SqlPool, userId: string): Promise<DashboardUserLookupRow | undefined> {
  const rows = await DASHBOARD_USER_LOOKUP.run(sql, { userId });
  return rows[0];
}

const DASHBOARD_USER_LOOKUP = statement<{ userId: string }>()('liya_dashboard_user_lookup', (p) =>
  build
    .selectFrom('users as u')
    .innerJoin('tenants as t', 't.id', 'u.tenant_id')
    .select(['u.id', 'u.email', 'u.role', 'u.tenant_id', 'u.password_changed_at', 't.is_active'])
    .where('u.id', '=', p.userId),
).as<DashboardUserLookupRow>();

/** Whether any user (of any tenant) has this e-mail. */
export async function isEmailTaken(em: EntityManager, email: string): Promise<boolean> {
  return Boolean(await em.findOne(User, { email }, { fields: ['id'] }));
}

export async function findUserByEmail(em: EntityManager, email: string): Promise<IUser | null> {
  return em.findOne(User, { email });
}

/** The user with their tenant loaded. */
export async function findUserWithTenantByEmail(em: EntityManager, email: string) {
  return em.findOne(User, { email }, { populate: ['tenant'] });
}

/** The user; throws (MikroORM's NotFoundError) when there is none. */
export async function getUser(em: EntityManager, userId: string): Promise<IUser> {
  return em.findOneOrFail(User, { id: userId });
}

export async function findTenantUser(em: EntityManager, tenantId: string, userId: string): Promise<IUser | null> {
  return em.findOne(User, { id: userId, tenant: tenantId });
}

/** A page of the tenant's users, oldest first, and how many it has. */
export async function listTenantUsers(em: EntityManager, tenantId: string, page: { limit: number; offset: number }): Promise<[IUser[], number]> {
  return em.findAndCount(User, { tenant: tenantId }, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit, offset: page.offset });
}

export async function countTenantOwners(em: EntityManager, tenantId: string): Promise<number> {
  return em.count(User, { tenant: tenantId, role: 'owner' });
}

/** Inserts the user now (with whatever else `em` holds); null when the e-mail is taken. */
export async function insertUser(
  em: EntityManager,
  values: { tenantId: string; email: string; fullName: string | null; passwordHash: string; role: Role },
): Promise<IUser | null> {
  const user = em.create(User, { tenant: values.tenantId, email: values.email, fullName: values.fullName, passwordHash: values.passwordHash, role: values.role });
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
  return user;
}

/**
 * Writes the changes made to loaded users, with whatever else the caller queued in `em` (an
 * e-mail token marked used, an audit entry).
 */
export async function saveUserChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/** Deletes the user now (with whatever else `em` holds, such as the caller's audit entry). */
export async function deleteUser(em: EntityManager, user: IUser): Promise<void> {
  em.remove(user);
  await em.flush();
}
