import type { Actor } from '../actor.js';
import { notFound } from '../errors.js';
import { recordAuditNow } from '../audit/audit.service.js';
// Tenants' own provider keys: stored encrypted, shown only as a preview, read back only to call the provider.
import type { EntityManager } from '../../db/orm.js';
import type { AppConfig } from '../config.js';
import { invalidInput } from '../errors.js';
import { listProviders } from './providers.js';
import { decryptSecret, encryptSecret, resolveEncryptionKey } from './secret-box.js';
import {
  deleteProviderKey, selectEncryptedProviderKey, selectKeyProviders, selectProviderKeys, upsertProviderKey, type ProviderKeyRow,
} from './store/provider-keys.js';

export interface ProviderKeyDeps {
  config: AppConfig;
}

export interface TenantProviderKeyView {
  provider: string;
  keyPreview: string;
  createdAt: string;
  updatedAt: string;
}

const MAX_KEY_LENGTH = 1000;

/** Enough to recognise a key (`sk-...wxyz`); short keys show nothing of themselves. */
export function previewProviderKey(apiKey: string): string {
  return apiKey.length >= 12 ? `${apiKey.slice(0, 3)}...${apiKey.slice(-4)}` : '...';
}

// Binds a ciphertext to its row: a copied encrypted_key does not decrypt under another tenant.
const keyContext = (tenantId: string, provider: string) => `tenant-provider-key:${tenantId}:${provider}`;

const toView = (row: ProviderKeyRow): TenantProviderKeyView => ({
  provider: row.provider,
  keyPreview: row.key_preview,
  createdAt: new Date(row.created_at).toISOString(),
  updatedAt: new Date(row.updated_at).toISOString(),
});

/** Stores (or replaces) the tenant's key for a provider the platform knows. */
export async function setTenantProviderKey(
  em: EntityManager,
  deps: ProviderKeyDeps,
  tenantId: string,
  provider: string,
  apiKey: string,
): Promise<TenantProviderKeyView> {
  const known = listProviders(deps.config).map((p) => p.name);
  if (!known.includes(provider)) {
    throw invalidInput(`Unknown provider "${provider}"`, [{ path: 'provider', message: `must be one of: ${known.join(', ')}` }]);
  }
  const key = apiKey.trim();
  if (!key || key.length > MAX_KEY_LENGTH || /\s/.test(key)) {
    throw invalidInput('Invalid provider key', [{ path: 'apiKey', message: `must be 1-${MAX_KEY_LENGTH} characters without spaces` }]);
  }
  const encrypted = encryptSecret(await resolveEncryptionKey(em, deps.config), key, keyContext(tenantId, provider));
  const row = await upsertProviderKey(em, tenantId, provider, encrypted, previewProviderKey(key));
  return toView(row);
}

/** Whether a key was removed. */
export async function deleteTenantProviderKey(em: EntityManager, tenantId: string, provider: string): Promise<boolean> {
  return deleteProviderKey(em, tenantId, provider);
}

export async function listTenantProviderKeys(em: EntityManager, tenantId: string): Promise<TenantProviderKeyView[]> {
  const rows = await selectProviderKeys(em, tenantId);
  return rows.map(toView);
}

export type ReadKeyResult = { found: false } | { found: true; apiKey: string | null };

/**
 * The tenant's key for `provider`, decrypted: `apiKey` null when a row exists but no longer
 * decrypts (ENCRYPTION_KEY changed), so the caller can refuse rather than silently bill the platform.
 */
export async function readTenantProviderKey(em: EntityManager, deps: ProviderKeyDeps, tenantId: string, provider: string): Promise<ReadKeyResult> {
  return openTenantProviderKey(em, deps, tenantId, provider, await selectEncryptedProviderKey(em, tenantId, provider));
}

/** Decrypts a stored key the caller already read (`encryptedKey` null: the tenant has none). */
export async function openTenantProviderKey(
  em: EntityManager,
  deps: ProviderKeyDeps,
  tenantId: string,
  provider: string,
  encryptedKey: string | null,
): Promise<ReadKeyResult> {
  if (encryptedKey === null) return { found: false };
  const key = await resolveEncryptionKey(em, deps.config);
  return { found: true, apiKey: decryptSecret(key, encryptedKey, keyContext(tenantId, provider)) };
}

/** Providers the tenant has a key for. */
export async function listTenantKeyProviders(em: EntityManager, tenantId: string): Promise<string[]> {
  return selectKeyProviders(em, tenantId);
}

/** Sets a tenant's key for `provider` and records it in the audit log (preview only). */
export async function saveTenantProviderKey(em: EntityManager, deps: ProviderKeyDeps, tenantId: string, actor: Actor, provider: string, apiKey: string) {
  const key = await setTenantProviderKey(em, deps, tenantId, provider, apiKey);
  await recordAuditNow(em, tenantId, actor, { action: 'provider_key.set', targetType: 'provider_key', targetId: provider, details: { preview: key.keyPreview } });
  return key;
}

/** Removes a tenant's key for `provider` (404 when there is none) and records it in the audit log. */
export async function removeTenantProviderKey(em: EntityManager, tenantId: string, actor: Actor, provider: string) {
  if (!(await deleteTenantProviderKey(em, tenantId, provider))) throw notFound('Provider key');
  await recordAuditNow(em, tenantId, actor, { action: 'provider_key.deleted', targetType: 'provider_key', targetId: provider });
}
