// Webhook URLs and signing secrets. A webhook workflow's first deploy mints its slug and a
// Standard Webhooks secret (`whsec_` + base64 of 32 bytes); redeploys keep both. Rotation keeps
// the previous secret valid for a grace period. Secrets are stored encrypted (they must be read
// back to verify signatures) and shown once. Async-run callbacks are signed with a key derived from
// it (see callbackSecretOf), never with the secret itself: a callback is a message signed by us, and
// under the webhook secret it would be a valid delivery to the workflow's own webhook URL.
import { createHmac, randomBytes } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { decryptSecretCached, encryptSecret, resolveEncryptionKey } from '../llm/secret-box.js';
import { webhookSecretKey } from '../net/signed-webhook.js';
import { publicUrl } from './engine/callback-tokens.js';
import { clearWebhookSecret, setWebhookSecretIfUnset } from './store/workflows.js';

const secretContext = (tenantId: string, workflowId: string) => `workflow-webhook-secret:${tenantId}:${workflowId}`;

export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
/**
 * The secret that signs a workflow's run callbacks: `whsec_` + base64 of HMAC-SHA256 keyed with the
 * webhook secret's key bytes (the base64 after `whsec_`, decoded) over "liya/run-callback/v1".
 * Receivers are shown it beside the webhook secret, or derive it themselves.
 */
export function callbackSecretOf(webhookSecret: string): string {
  const key = webhookSecretKey(webhookSecret) ?? Buffer.from(webhookSecret, 'utf8');
  return `whsec_${createHmac('sha256', key).update('liya/run-callback/v1').digest('base64')}`;
}

export const newWebhookSlug = () => randomBytes(16).toString('base64url');
export const webhookUrl = (deps: AppDeps, slug: string) => `${publicUrl(deps.config)}/webhooks/workflows/${slug}`;

export async function encryptWebhookSecret(em: EntityManager, deps: AppDeps, tenantId: string, workflowId: string, secret: string): Promise<string> {
  return encryptSecret(await resolveEncryptionKey(em, deps.config), secret, secretContext(tenantId, workflowId));
}

/** The plaintext of a stored secret (cached per ciphertext: a rotation stores a new one). */
export function decryptWebhookSecret(
  em: EntityManager | (() => EntityManager),
  deps: AppDeps,
  tenantId: string,
  workflowId: string,
  stored: string,
): Promise<string | null> {
  return decryptSecretCached(em, deps.config, stored, secretContext(tenantId, workflowId));
}

/**
 * Gives the workflow a secret when it has none (async callbacks of a manual workflow), for as long
 * as `use` takes: the new secret goes to `use` (null when one existed; two requests at once: only
 * one stores and shows its secret). When `use` throws, the minted secret is taken back, so a secret
 * nobody was shown never signs anything.
 */
export async function withMintedWebhookSecret<T>(em: EntityManager, deps: AppDeps, tenantId: string, workflowId: string, use: (minted: string | null) => Promise<T>): Promise<T> {
  const secret = newWebhookSecret();
  const stored = await encryptWebhookSecret(em, deps, tenantId, workflowId, secret);
  const minted = (await setWebhookSecretIfUnset(deps.sql, workflowId, tenantId, stored)) ? secret : null;
  try {
    return await use(minted);
  } catch (err) {
    if (minted) await clearWebhookSecret(deps.sql, workflowId, stored);
    throw err;
  }
}
