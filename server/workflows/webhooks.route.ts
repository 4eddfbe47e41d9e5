// The two unauthenticated workflow routes: signed webhook deliveries (POST /webhooks/workflows/<slug>)
// and run callbacks (POST /webhooks/workflow-callbacks/<token>). Webhook signatures cover the raw
// bytes, so these routes read the body as a buffer in their own scope.
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { nulError, rejectNulInJson, rejectNulInUrl } from '../http/reject-nul.js';
import { sendError } from '../http/send-error.js';
import { receiveCallback, receiveWebhook } from './triggers.service.js';

export const WEBHOOK_PATH = '/webhooks/workflows/{slug}';
export const CALLBACK_PATH = '/webhooks/workflow-callbacks/{token}';
const WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024;

export function registerWorkflowWebhooks(app: FastifyInstance, deps: AppDeps): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

    scope.post<{ Params: { slug: string } }>('/webhooks/workflows/:slug', { bodyLimit: WEBHOOK_BODY_LIMIT }, async (req, reply) => {
      try {
        rejectNulInUrl(req.params, {});
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const accepted = await receiveWebhook(deps.orm.em.fork(), deps, req.params.slug.slice(0, 200), body, req.headers);
        return reply.code(202).send({ success: true, data: { run_id: accepted.run_id, ...(accepted.duplicate ? { duplicate: true } : {}) } });
      } catch (err) {
        return sendError(req, reply, err);
      }
    });

    scope.post<{ Params: { token: string } }>('/webhooks/workflow-callbacks/:token', async (req, reply) => {
      try {
        rejectNulInUrl(req.params, {});
        const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
        let body: unknown = raw;
        // JSON is kept as JSON; any other body arrives as its text.
        if (raw.length && /json/i.test(String(req.headers['content-type'] ?? ''))) {
          try {
            body = JSON.parse(raw);
          } catch {
            throw new AppError('INVALID_JSON', 'The callback body is not valid JSON');
          }
          rejectNulInJson(raw, body);
        } else if (raw.includes('\u0000')) {
          throw nulError('(body)');
        }
        const accepted = await receiveCallback(deps, req.params.token.slice(0, 200), raw.length ? body : null);
        return reply.code(202).send({ success: true, data: accepted });
      } catch (err) {
        return sendError(req, reply, err);
      }
    });
  });
}
