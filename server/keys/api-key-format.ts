import { createHash, randomBytes } from 'node:crypto';

// svc_ + base64url of 32 random bytes (43 characters).
const KEY_PATTERN = /^svc_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return `svc_${randomBytes(32).toString('base64url')}`;
}

export function isWellFormedApiKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** SHA-256 hex digest: the only form of a key that is stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** First 12 and last 4 characters, e.g. `svc_AbCdEfGh...wxyz`. */
export function previewApiKey(key: string): string {
  return `${key.slice(0, 12)}...${key.slice(-4)}`;
}
