import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import { isoRequired } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { createDefaultEnvironments } from '../keys/keys.service.js';
import { queueMail } from '../mail/outbox.js';
import { insertTenant } from '../tenants/tenant-records.js';
import { getTenantProfile } from '../tenants/tenants.service.js';
import type { DashboardUserDto } from './auth.schemas.js';
import type { DashboardScope } from './authenticate-dashboard.js';
import { signDashboardToken } from './jwt.js';
import { getDummyHash, hashPassword, verifyPassword } from './passwords.js';
import { findEmailTokenWithUser, insertEmailToken, useUserEmailTokens, type EmailTokenKind } from './store/email-tokens.js';
import { countRecentLoginFailures, insertLoginAttempt } from './store/login-attempts.js';
import { findUserByEmail, findUserWithTenantByEmail, getUser, insertUser, isEmailTaken, saveUserChanges, type UserRow } from './store/users.js';

const VERIFY_TTL_MS = 48 * 3600 * 1000;
const RESET_TTL_MS = 3600 * 1000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export function toDashboardUser(user: UserRow): DashboardUserDto {
  return {
    id: user.id,
    email: user.email,
    fullName: user.fullName ?? null,
    role: user.role,
    emailVerified: user.emailVerified,
    createdAt: isoRequired(user.createdAt),
  };
}

async function issueEmailToken(em: EntityManager, userId: string, kind: EmailTokenKind, ttlMs: number): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await insertEmailToken(em, { userId, kind, tokenHash: hashToken(token), expiresAt: new Date(Date.now() + ttlMs) });
  return token;
}

export async function sendVerificationMail(em: EntityManager, deps: AppDeps, user: { id: string; email: string }) {
  const token = await issueEmailToken(em, user.id, 'verify_email', VERIFY_TTL_MS);
  const link = `${deps.config.APP_URL}/verify-email?token=${token}`;
  await queueMail(em, deps, {
    to: user.email,
    kind: 'verify_email',
    subject: 'Confirm your e-mail address',
    body: `Welcome to Liya.\n\nConfirm your e-mail address with this link (valid for 48 hours):\n${link}\n\nOr send the token to POST /auth/verify-email: ${token}\n`,
    link,
  });
}

export interface SignupInput {
  companyName: string;
  email: string;
  password: string;
  fullName?: string;
}

/** Creates the tenant (trial plan, hiring domain), its owner, both environments and their keys. */
export async function signup(em: EntityManager, deps: AppDeps, input: SignupInput) {
  if (await isEmailTaken(em, input.email)) {
    throw new AppError('EMAIL_TAKEN', 'An account already exists for this e-mail');
  }
  const passwordHash = await hashPassword(input.password);
  return em.transactional(async (tx) => {
    const tenant = await insertTenant(tx, { name: input.companyName, type: 'trial', plan: 'trial', billingEmail: input.email, enabledDomains: ['hiring'] });
    const user = await insertUser(tx, { tenantId: tenant.id, email: input.email, fullName: input.fullName ?? null, passwordHash, role: 'owner' });
    // Another signup took the e-mail since the check above.
    if (!user) throw new AppError('EMAIL_TAKEN', 'An account already exists for this e-mail');
    const production = await createDefaultEnvironments(tx, tenant.id);
    await sendVerificationMail(tx, deps, user);
    const token = await signDashboardToken(deps.jwtKey, deps.config.JWT_TTL_SECONDS, { userId: user.id, tenantId: tenant.id, role: 'owner' });
    return {
      token,
      user: { id: user.id, email: user.email, role: user.role },
      tenant: { tenantId: tenant.id, tenantName: tenant.name, plan: tenant.plan },
      apiKey: production.apiKey,
    };
  });
}

async function assertNotRateLimited(em: EntityManager, deps: AppDeps, email: string) {
  const windowStart = new Date(Date.now() - deps.config.LOGIN_WINDOW_SECONDS * 1000);
  // Failures since the window opened and since the last successful login.
  const { failures, oldest } = await countRecentLoginFailures(em, email, windowStart);
  if (failures >= deps.config.LOGIN_MAX_FAILURES) {
    const retryAfter = Math.max(1, Math.ceil((new Date(oldest!).getTime() + deps.config.LOGIN_WINDOW_SECONDS * 1000 - Date.now()) / 1000));
    throw new AppError('RATE_LIMITED', 'Too many failed logins for this e-mail; try again later', { retry_after_seconds: retryAfter }, { 'Retry-After': String(retryAfter) });
  }
}

export async function login(em: EntityManager, deps: AppDeps, input: { email: string; password: string }, ip: string) {
  await assertNotRateLimited(em, deps, input.email);
  const user = await findUserWithTenantByEmail(em, input.email);
  const valid = await verifyPassword(user?.passwordHash ?? (await getDummyHash()), input.password);
  await insertLoginAttempt(em, { email: input.email, succeeded: Boolean(user && valid), ip });
  if (!user || !valid) throw new AppError('INVALID_CREDENTIALS', 'The e-mail or password is wrong');
  const tenant = user.tenant;
  if (!tenant.isActive) throw new AppError('ACCOUNT_INACTIVE', 'The account is deactivated');
  const token = await signDashboardToken(deps.jwtKey, deps.config.JWT_TTL_SECONDS, { userId: user.id, tenantId: tenant.id, role: user.role });
  return { token, user: { id: user.id, email: user.email, role: user.role }, tenant: { tenantId: tenant.id, tenantName: tenant.name, plan: tenant.plan } };
}

export async function refreshToken(deps: AppDeps, scope: DashboardScope) {
  return { token: await signDashboardToken(deps.jwtKey, deps.config.JWT_TTL_SECONDS, { userId: scope.userId, tenantId: scope.tenantId, role: scope.role }) };
}

export async function getMe(em: EntityManager, scope: DashboardScope) {
  const user = await getUser(em, scope.userId);
  return { user: toDashboardUser(user), tenant: await getTenantProfile(em, scope.tenantId) };
}

async function consumeEmailToken(em: EntityManager, token: string, kind: EmailTokenKind) {
  const record = await findEmailTokenWithUser(em, hashToken(token), kind);
  if (!record || record.usedAt || record.expiresAt.getTime() < Date.now()) {
    throw new AppError('INVALID_INPUT', 'The token is invalid, expired or already used', { issues: [{ path: 'token', message: 'invalid or expired' }] });
  }
  record.usedAt = new Date();
  return record;
}

export async function verifyEmail(em: EntityManager, token: string) {
  return em.transactional(async (tx) => {
    const record = await consumeEmailToken(tx, token, 'verify_email');
    const user = record.user;
    user.emailVerified = true;
    await saveUserChanges(tx);
    return { user: toDashboardUser(user) };
  });
}

export async function resendVerification(em: EntityManager, deps: AppDeps, scope: DashboardScope) {
  const user = await getUser(em, scope.userId);
  if (user.emailVerified) return { sent: false };
  await em.transactional((tx) => sendVerificationMail(tx, deps, user));
  return { sent: true };
}

/** Always succeeds, so the answer never tells whether an account exists. */
export async function requestPasswordReset(em: EntityManager, deps: AppDeps, email: string) {
  const user = await findUserByEmail(em, email);
  if (!user) return;
  await em.transactional(async (tx) => {
    const token = await issueEmailToken(tx, user.id, 'password_reset', RESET_TTL_MS);
    const link = `${deps.config.APP_URL}/reset-password?token=${token}`;
    await queueMail(tx, deps, {
      to: user.email,
      kind: 'password_reset',
      subject: 'Reset your password',
      body: `Someone asked to reset the password of this account. If it was you, use this link (valid for one hour):\n${link}\n\nOr send the token with a new password to POST /auth/password-reset/confirm: ${token}\n\nIf it was not you, ignore this message.\n`,
      link,
    });
  });
}

/** Sets a new password; every token issued before now stops working. */
export async function confirmPasswordReset(em: EntityManager, input: { token: string; password: string }) {
  const passwordHash = await hashPassword(input.password);
  await em.transactional(async (tx) => {
    const record = await consumeEmailToken(tx, input.token, 'password_reset');
    const user = record.user;
    user.passwordHash = passwordHash;
    // Whole seconds, as in the JWT `iat`, so a token issued right after still works.
    user.passwordChangedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    await saveUserChanges(tx);
    await useUserEmailTokens(tx, user.id, 'password_reset');
  });
}
