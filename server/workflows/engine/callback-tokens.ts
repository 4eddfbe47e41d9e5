// Callback URLs of waiting runs: the server's public address and the signed token that names a run's callback wait.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The server's public address (webhook and callback URLs). */
export const publicUrl = (config: { PUBLIC_URL?: string; PORT: number }) => (config.PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');

const callbackMac = (key: string, runId: string, seq: number) => createHmac('sha256', key).update(`${runId}:${seq}`).digest('base64url').slice(0, 32);

/** The token of a run's `seq`-th callback wait: run id, seq and a MAC under the run's own key. */
export function callbackToken(runId: string, seq: number, key: string): string {
  return `${Buffer.from(runId.replace(/-/g, ''), 'hex').toString('base64url')}.${seq}.${callbackMac(key, runId, seq)}`;
}

/** The run id and seq a token names (unverified), or null when it is not shaped like one. */
export function parseCallbackToken(token: string): { runId: string; seq: number; mac: string } | null {
  const match = /^([A-Za-z0-9_-]{22})\.(\d{1,6})\.([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match) return null;
  const hex = Buffer.from(match[1], 'base64url').toString('hex');
  if (hex.length !== 32) return null;
  return { runId: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`, seq: Number(match[2]), mac: match[3] };
}

export function verifyCallbackToken(parsed: { runId: string; seq: number; mac: string }, key: string): boolean {
  const expected = Buffer.from(callbackMac(key, parsed.runId, parsed.seq));
  const given = Buffer.from(parsed.mac);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The URL that ends a run's `seq`-th callback wait; null for a run without a callback key. */
export const buildCallbackUrl = (base: string, run: { id: string; callbackKey: string | null }, seq: number) =>
  run.callbackKey ? `${base}/webhooks/workflow-callbacks/${callbackToken(run.id, seq, run.callbackKey)}` : null;
