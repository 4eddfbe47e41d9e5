// Async runs that end together have their final steps stored in one statement, each queuing its
// callback with the trace context of its own run: every callback's traceparent continues the trace
// of the request that started that run, none another's.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { signupTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

const RUNS = 20;

/** An HTTP server on 127.0.0.1 answering 200 to everything; `seen` collects the requests' paths and headers. */
async function listen(seen?: { path: string; headers: http.IncomingHttpHeaders }[]) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen?.push({ path: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('callbacks of async runs that end together', () => {
  let t: TestServer;
  let hook: Awaited<ReturnType<typeof listen>>;
  let collector: Awaited<ReturnType<typeof listen>>;
  const callbacks: { path: string; headers: http.IncomingHttpHeaders }[] = [];

  beforeAll(async () => {
    hook = await listen(callbacks);
    // Spans are exported here and not looked at: only the callbacks' headers are.
    collector = await listen();
    t = await startTestServer({
      WORKER_CONCURRENCY: String(RUNS), OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  });
  afterAll(async () => {
    await t?.close();
    for (const s of [hook?.server, collector?.server]) {
      s?.closeAllConnections();
      await new Promise((resolve) => (s ? s.close(resolve) : resolve(undefined)));
    }
  });

  it('each carry the trace of the request that started their run', async () => {
    const tenant = await signupTenant(t.api);
    const workflow = await createWorkflow(t.api, tenant.apiKey, 'Ends at once', [MANUAL_TRIGGER, { id: 'done', step_type: 'end', config: { output: { ok: true } } }]);
    const traceIds = Array.from({ length: RUNS }, () => randomBytes(16).toString('hex'));
    const started = await Promise.all(
      traceIds.map((traceId, n) =>
        t.api.post(`/v1/workflows/${workflow.workflow_key}/run`, { input: {}, mode: 'async', callback_url: `${hook.url}/cb/${n}` }, {
          headers: { ...bearer(tenant.apiKey), traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
        }),
      ),
    );
    expect(started.map((r) => r.status)).toEqual(traceIds.map(() => 202));
    await waitFor(() => callbacks.length >= RUNS, 'every callback');
    for (const [n, traceId] of traceIds.entries()) {
      const callback = callbacks.find((c) => c.path === `/cb/${n}`);
      expect(callback?.headers.traceparent, `run ${n}`).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    }
  });
});
