// A receiver of event deliveries for tests: a local HTTP server that keeps every request and answers
// what the test scripts (a status, or no answer until released). `verify` checks a delivery's
// Standard Webhooks signature with a secret, as a receiver would.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedDelivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; version: number; timestamp: string; tenant_id: string; data: Record<string, any> };
}

export interface EventReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** What the next requests are answered (default 200); `hold` answers only when `release()` is called. */
  answer(status: number | 'hold'): void;
  release(): void;
  close(): Promise<void>;
}

export async function startEventReceiver(): Promise<EventReceiver> {
  const received: ReceivedDelivery[] = [];
  let status: number | 'hold' = 200;
  let held: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: ReceivedDelivery['json'];
      try {
        json = JSON.parse(body);
      } catch {
        json = { id: '', type: '', version: 0, timestamp: '', tenant_id: '', data: {} };
      }
      received.push({ path: req.url ?? '/', headers: req.headers, body, json });
      const send = (code: number) => {
        res.writeHead(code, { 'content-type': 'text/plain' });
        res.end(code < 300 ? 'ok' : `refused with ${code}`);
      };
      if (status === 'hold') held.push(() => send(200));
      else send(status);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const release = () => {
    const waiting = held;
    held = [];
    for (const send of waiting) send();
  };
  return {
    url,
    received,
    answer(next) {
      status = next;
    },
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The delivery's signature checked with `secret` (throws when it does not verify). */
export function verifyDelivery(delivery: ReceivedDelivery, secret: string): unknown {
  return new Webhook(secret).verify(delivery.body, {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature']),
  });
}
