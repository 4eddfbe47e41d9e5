import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

type Headers = Record<string, string | string[] | undefined>;

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Checks X-Admin-Secret in constant time (digests make the lengths equal). */
export function authenticateAdmin(secret: string | undefined, headers: Headers): void {
  if (!secret) throw new AppError('ADMIN_DISABLED', 'The admin API is disabled: set ADMIN_SECRET to enable it');
  const given = headers['x-admin-secret'];
  if (typeof given !== 'string' || given.length === 0) throw new AppError('ADMIN_UNAUTHORIZED', 'Send the admin secret in X-Admin-Secret');
  if (!timingSafeEqual(digest(given), digest(secret))) throw new AppError('ADMIN_UNAUTHORIZED', 'The admin secret is wrong');
}
