// Outgoing Standard Webhooks messages (run callbacks, custom scorer calls, event deliveries): signed with the
// receiver's secret and sent through the SSRF-safe client; and reading an answer without letting
// it fill the memory.
import { Webhook } from 'standardwebhooks';
import { OutboundLimitError } from './limited-body.js';
import type { OutboundHttp } from './safe-http.js';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const STANDARD_PREFIX = 'whsec_';

/**
 * The key bytes a secret signs with: a Standard Webhooks secret (`whsec_` + base64) its decoded
 * bytes, any other secret its UTF-8 bytes. Null for `whsec_` followed by no base64, which has no key.
 */
export function webhookSecretKey(secret: string): Buffer | null {
  if (!secret.startsWith(STANDARD_PREFIX)) return secret.length ? Buffer.from(secret, 'utf8') : null;
  const encoded = secret.slice(STANDARD_PREFIX.length);
  return encoded.length && BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : null;
}

export interface SignedMessage {
  /** The webhook-id: deliveries of one message share it, so a receiver can drop a repeat. */
  id: string;
  /** The JSON text sent (the signature covers these exact bytes). */
  body: string;
  timeoutMs: number;
}

/**
 * POSTs `message` to `url`, signed as Standard Webhooks v1 with the key of `secret` (webhookSecretKey):
 * the webhook-id, -timestamp and -signature headers. With several secrets (a rotation's grace: the
 * new one and the previous), the header carries one signature per secret, space-separated, as the
 * standard allows: a receiver that knows either verifies.
 */
export function postSignedWebhook(outbound: OutboundHttp, url: string, secret: string | readonly string[], message: SignedMessage): Promise<Response> {
  const keys = (typeof secret === 'string' ? [secret] : secret).map(webhookSecretKey);
  if (keys.length === 0 || keys.some((key) => !key)) return Promise.reject(new Error('the signing secret is whsec_ without base64 after it'));
  const at = new Date();
  return outbound.fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': keys.map((key) => new Webhook(key!, { format: 'raw' }).sign(message.id, at, message.body)).join(' '),
    },
    body: message.body,
    signal: AbortSignal.timeout(message.timeoutMs),
  });
}

/** Reads a response body up to `max` bytes, so one answer cannot fill the memory. */
export async function readLimited(res: Response, max: number): Promise<{ text: string; truncated: boolean }> {
  if (!res.body) return { text: '', truncated: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    let read: Awaited<ReturnType<typeof reader.read>>;
    try {
      read = await reader.read();
    } catch (error) {
      // The client's own byte cap ends the body as a cut too, not as a failure.
      if (!(error instanceof OutboundLimitError && error.limit === 'body_bytes')) throw error;
      truncated = true;
      break;
    }
    const { value, done } = read;
    if (done) break;
    if (size + value.length > max) {
      chunks.push(value.subarray(0, max - size));
      truncated = true;
      await reader.cancel();
      break;
    }
    chunks.push(value);
    size += value.length;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}
