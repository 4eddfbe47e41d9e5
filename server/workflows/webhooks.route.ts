// The two unauthenticated workflow routes: signed webhook deliveries (POST /webhooks/workflows/<slug>)
// and run callbacks (POST /webhooks/workflow-callbacks/<token>). Webhook signatures cover the raw
// bytes, so these routes read the body as a buffer in their own scope. Anyone can reach them, so
// each checks what it can before reading a byte of the body (an onRequest hook): a bad credential
// costs a lookup, never the upload, the parse or the hash of up to 25 MiB.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { checkJsonBody } from '../common/json-body.js';
import { nulError, rejectNulInUrl } from '../common/reject-nul.js';
import { sendError } from '../http/send-error.js';
import { checkWebhookHeaders, findWebhookWorkflow, receiveCallback, receiveWebhook, verifyCallback, type CallbackToken, type WebhookWorkflow } from './triggers.service.js';

/** Deliveries may carry attachments (18 MB of files is ~25 MB of base64 JSON). */
const WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024;
/** A callback body becomes a step's output: no attachments, so far less. */
const CALLBACK_BODY_LIMIT = 1024 * 1024;

/** What the onRequest checks found, for the handler once the body is in. */
const checkedWebhooks = new WeakMap<FastifyRequest, WebhookWorkflow>();
const checkedCallbacks = new WeakMap<FastifyRequest, CallbackToken>();

/** Refused with more than this still to come, the connection is closed rather than drained. */
const DRAIN_LIMIT = 64 * 1024;

/**
 * An onRequest hook: `check` runs before the body is read. When it throws, its error is the answer
 * and the request goes no further: the body is never parsed. Node would read and discard the rest
 * of a body still arriving, so for a large one the connection is closed after the answer instead.
 */
const checkFirst =
  (check: (req: FastifyRequest) => Promise<void>) =>
  (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    check(req).then(done, (err: unknown) => {
      const declared = Number(req.headers['content-length'] ?? 0);
      if (req.headers['transfer-encoding'] !== undefined || declared > DRAIN_LIMIT) reply.header('connection', 'close');
      void sendError(req, reply, err);
    });
  };

export function registerWorkflowWebhooks(app: FastifyInstance, deps: AppDeps): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

    const webhookCheck = checkFirst(async (req) => {
      const params = req.params as { slug: string };
      rejectNulInUrl(params, {});
      checkedWebhooks.set(req, await findWebhookWorkflow(deps, params.slug.slice(0, 200)));
      checkWebhookHeaders(req.headers);
    });
    scope.post<{ Params: { slug: string } }>('/webhooks/workflows/:slug', { bodyLimit: WEBHOOK_BODY_LIMIT, onRequest: webhookCheck }, async (req, reply) => {
      try {
        const workflow = checkedWebhooks.get(req);
        if (!workflow) throw new Error('the webhook route ran without its onRequest check');
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const accepted = await receiveWebhook(() => deps.orm.em.fork(), deps, workflow, body, req.headers);
        return reply.code(202).send({ success: true, data: { run_id: accepted.run_id, ...(accepted.duplicate ? { duplicate: true } : {}) } });
      } catch (err) {
        return sendError(req, reply, err);
      }
    });

    const callbackCheck = checkFirst(async (req) => {
      const params = req.params as { token: string };
      rejectNulInUrl(params, {});
      checkedCallbacks.set(req, await verifyCallback(deps, params.token.slice(0, 200)));
    });
    scope.post<{ Params: { token: string } }>('/webhooks/workflow-callbacks/:token', { bodyLimit: CALLBACK_BODY_LIMIT, onRequest: callbackCheck }, async (req, reply) => {
      try {
        const token = checkedCallbacks.get(req);
        if (!token) throw new Error('the callback route ran without its onRequest check');
        const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
        let body: unknown = raw;
        // JSON is kept as JSON; any other body arrives as its text.
        if (raw.length && /json/i.test(String(req.headers['content-type'] ?? ''))) {
          try {
            body = JSON.parse(raw);
          } catch {
            throw new AppError('INVALID_JSON', 'The callback body is not valid JSON');
          }
          checkJsonBody(raw, body);
        } else if (raw.includes('\u0000')) {
          throw nulError('(body)');
        }
        const accepted = await receiveCallback(deps, token, raw.length ? body : null);
        return reply.code(202).send({ success: true, data: accepted });
      } catch (err) {
        return sendError(req, reply, err);
      }
    });
  });
}
