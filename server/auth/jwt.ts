import type { Role } from '../../db/column-values.js';
import { errors, jwtVerify, SignJWT } from 'jose';

import { isUuid } from '../common/schemas.js';
import { AppError } from '../errors.js';

export interface DashboardClaims {
  sub: string;
  tid: string;
  role: Role;
  iat: number;
  exp: number;
}

export async function signDashboardToken(key: Uint8Array, ttlSeconds: number, claims: { userId: string; tenantId: string; role: Role }): Promise<string> {
  return new SignJWT({ tid: claims.tenantId, role: claims.role })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.userId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(key);
}

export async function verifyDashboardToken(key: Uint8Array, token: string): Promise<DashboardClaims> {
  try {
    // Only HS256 is accepted: `alg: none` and any other algorithm fail here.
    const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'] });
    // Ids are checked here so a malformed one is a 401, never a failed database cast.
    if (typeof payload.sub !== 'string' || typeof payload.tid !== 'string' || !isUuid(payload.sub) || !isUuid(payload.tid) || typeof payload.iat !== 'number' || typeof payload.exp !== 'number') {
      throw new AppError('INVALID_TOKEN', 'The token is missing required claims');
    }
    return payload as unknown as DashboardClaims;
  } catch (err) {
    if (err instanceof AppError) throw err;
    if (err instanceof errors.JWTExpired) throw new AppError('TOKEN_EXPIRED', 'The token has expired; log in again');
    throw new AppError('INVALID_TOKEN', 'The token is invalid');
  }
}
