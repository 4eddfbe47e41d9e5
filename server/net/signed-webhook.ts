// Outgoing Standard Webhooks messages (run callbacks, custom scorer calls): signed with the
// receiver's secret and sent through the SSRF-safe client; and reading an answer without letting
// it fill the memory.
import { Webhook } from 'standardwebhooks';
import type { OutboundHttp } from './safe-http.js';

export interface SignedMessage {
  /** The webhook-id: deliveries of one message share it, so a receiver can drop a repeat. */
  id: string;
  /** The JSON text sent (the signature covers these exact bytes). */
  body: string;
  timeoutMs: number;
}

/** POSTs `message` to `url`, signed with `secret` (whsec_...): the webhook-id, -timestamp and -signature headers. */
export function postSignedWebhook(outbound: OutboundHttp, url: string, secret: string, message: SignedMessage): Promise<Response> {
  const at = new Date();
  return outbound.fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(message.id, at, message.body),
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
    const { value, done } = await reader.read();
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
