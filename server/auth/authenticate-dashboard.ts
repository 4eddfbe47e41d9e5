import type { Role } from '../../db/column-values.js';
import { AppError } from '../errors.js';
import type { AppDeps } from '../deps.js';
import { verifyDashboardToken } from './jwt.js';
import { lookupDashboardUser } from './store/users.js';

export interface DashboardScope {
  userId: string;
  tenantId: string;
  email: string;
  role: Role;
  token: { iat: number; exp: number };
}

type Headers = Record<string, string | string[] | undefined>;

export async function authenticateDashboard(deps: AppDeps, headers: Headers): Promise<DashboardScope> {
  const auth = headers.authorization;
  if (typeof auth !== 'string' || auth.trim() === '') throw new AppError('UNAUTHORIZED', 'Send the dashboard token as Authorization: Bearer <JWT>');
  const match = /^Bearer\s+(\S+)$/i.exec(auth.trim());
  if (!match) throw new AppError('INVALID_TOKEN', 'The Authorization header must be Bearer <JWT>');
  const claims = await verifyDashboardToken(deps.jwtKey, match[1]);
  // The role and the tenant's state come from the database, so changes apply at once.
  const user = await lookupDashboardUser(deps.sql, claims.sub);
  if (!user || user.tenant_id !== claims.tid) throw new AppError('INVALID_TOKEN', 'The token does not belong to an existing user');
  if (user.password_changed_at && claims.iat < Math.floor(new Date(user.password_changed_at).getTime() / 1000)) {
    throw new AppError('INVALID_TOKEN', 'The password was changed after this token was issued; log in again');
  }
  if (!user.is_active) throw new AppError('ACCOUNT_INACTIVE', 'The account is deactivated');
  return { userId: user.id, tenantId: user.tenant_id, email: user.email, role: user.role, token: { iat: claims.iat, exp: claims.exp } };
}
