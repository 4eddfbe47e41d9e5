// Encryption at rest for secrets the platform must read back (tenants' provider keys).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { AppConfig } from '../config.js';
import { insertPlatformSettingIfAbsent, selectPlatformSetting } from '../settings/platform-settings.js';

const ALGORITHM = 'aes-256-gcm';
const VERSION = 'v1';
const SETTING_KEY = 'provider_key_encryption_key';

const resolvedKeys = new WeakMap<object, Promise<Buffer>>();

/**
 * The 32-byte AES key: derived from ENCRYPTION_KEY (HKDF-SHA256), or a random key generated once
 * and kept in platform_settings so every process of the platform shares it. Resolved once per
 * server (per config object), not on every secret read or written.
 */
export function resolveEncryptionKey(em: EntityManager, config: Pick<AppConfig, 'ENCRYPTION_KEY'>): Promise<Buffer> {
  let key = resolvedKeys.get(config);
  if (!key) {
    key = readOrCreateKey(em.fork(), config).catch((err: unknown) => {
      resolvedKeys.delete(config);
      throw err;
    });
    resolvedKeys.set(config, key);
  }
  return key;
}

async function readOrCreateKey(em: EntityManager, config: Pick<AppConfig, 'ENCRYPTION_KEY'>): Promise<Buffer> {
  if (config.ENCRYPTION_KEY) {
    return Buffer.from(hkdfSync('sha256', config.ENCRYPTION_KEY, 'liya', 'tenant-provider-keys/aes-256-gcm', 32));
  }
  const read = () => selectPlatformSetting(em, SETTING_KEY);
  let stored = await read();
  if (!stored) {
    // Two processes may race here: `do nothing` keeps the first key and both read it back.
    await insertPlatformSettingIfAbsent(em, SETTING_KEY, randomBytes(32).toString('base64url'));
    stored = await read();
  }
  const key = Buffer.from(stored!, 'base64url');
  if (key.length !== 32) throw new Error(`platform setting ${SETTING_KEY} is not a 32-byte key`);
  return key;
}

/**
 * `v1:<iv>:<tag>:<ciphertext>` (base64url). `context` is authenticated but not stored: a value
 * only decrypts for the row it was written for (e.g. tenant and provider), so rows can't be swapped.
 */
export function encryptSecret(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':');
}

/** The plaintext, or null when the value was written under another key or context, or is damaged. */
export function decryptSecret(key: Buffer, payload: string, context: string): string | null {
  const [version, iv, tag, body] = payload.split(':');
  if (version !== VERSION || iv === undefined || tag === undefined || body === undefined) return null;
  try {
    // A fixed tag length: GCM would otherwise accept a truncated (weaker) tag.
    const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

const decrypted = new Map<string, string | null>();
/**
 * decryptSecret with the server's key, remembered per value and context: secrets read on every
 * delivery or callback decrypt once (a rotation stores a new value). `em` makes the unit of work
 * that reads the key, only when it is not resolved yet.
 */
export async function decryptSecretCached(em: EntityManager | (() => EntityManager), config: Pick<AppConfig, 'ENCRYPTION_KEY'>, stored: string, context: string): Promise<string | null> {
  const cacheKey = `${context}\n${stored}`;
  const hit = decrypted.get(cacheKey);
  if (hit !== undefined) return hit;
  const plain = decryptSecret(await resolveEncryptionKey(typeof em === 'function' ? em() : em, config), stored, context);
  if (decrypted.size > 5000) decrypted.clear();
  decrypted.set(cacheKey, plain);
  return plain;
}
