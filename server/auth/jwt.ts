import { webcrypto } from 'node:crypto';
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

// Given raw bytes, jose imports them as a WebCrypto key on every call (0.3-0.8 ms of the request's
// CPU); the imported key is kept per secret instead. It can only verify HS256 signatures.
const verifyKeys = new WeakMap<Uint8Array, Promise<webcrypto.CryptoKey>>();
function verifyKeyOf(key: Uint8Array): Promise<webcrypto.CryptoKey> {
  let imported = verifyKeys.get(key);
  if (!imported) {
    imported = webcrypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    verifyKeys.set(key, imported);
  }
  return imported;
}

export async function verifyDashboardToken(key: Uint8Array, token: string): Promise<DashboardClaims> {
  try {
    // Only HS256 is accepted: `alg: none` and any other algorithm fail here.
    const { payload } = await jwtVerify(token, await verifyKeyOf(key), { algorithms: ['HS256'] });
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
