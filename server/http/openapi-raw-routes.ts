// The routes served beside the procedures (health probes, signed webhooks, this reference, the
// tenant archive), documented by hand from what their handlers send.
import { z } from 'zod';
import type { ErrorCode } from '../errors.js';
import { ARCHIVE_FORMAT_NOTE } from '../tenants/tenant-archive.js';
import { importResultSchema } from '../tenants/tenant-data.schemas.js';
import { AUTH_ERRORS, ERROR_ENVELOPE_REF, errorResponses, REQUEST_ID_HEADER, SECURITY } from './openapi-errors.js';

type SchemaNode = Record<string, any>;

const strictObject = (properties: Record<string, unknown>) => ({ type: 'object', required: Object.keys(properties), additionalProperties: false, properties });
/** `{success: true, data}`: every success envelope. */
const success = (data: unknown) => strictObject({ success: { type: 'boolean', const: true }, data });
const json = (description: string, schema: unknown) => ({ description, headers: REQUEST_ID_HEADER, content: { 'application/json': { schema } } });

const readiness = (status: string, ok: boolean | null) => {
  const flag = ok === null ? { type: 'boolean' } : { type: 'boolean', const: ok };
  return strictObject({ status: { type: 'string', const: status }, engine: flag, db: flag });
};

const webhookHeader = (name: string, description: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } });

const healthRoutes = {
  '/health/live': {
    get: {
      tags: ['Health'],
      operationId: 'health-live',
      summary: 'Liveness: the process is up',
      security: [],
      responses: { '200': json('Alive', success(strictObject({ status: { type: 'string', const: 'ok' } }))) },
    },
  },
  '/health/ready': {
    get: {
      tags: ['Health'],
      operationId: 'health-ready',
      summary: 'Readiness: database and job engine',
      security: [],
      responses: {
        '200': json('Ready', success(readiness('ready', true))),
        '503': json('Not ready (NOT_READY): `data` says which part is not', {
          allOf: [{ $ref: ERROR_ENVELOPE_REF }],
          type: 'object',
          required: ['data'],
          properties: { data: readiness('not_ready', null), error: { type: 'object', properties: { code: { type: 'string', enum: ['NOT_READY'] } } } },
        }),
      },
    },
  },
};

const webhookRoutes = {
  '/webhooks/workflows/{slug}': {
    post: {
      tags: ['Workflows'],
      operationId: 'workflows-receiveWebhook',
      summary: 'Start a run of a webhook-triggered workflow (signed delivery)',
      description:
        'Standard Webhooks v1: headers webhook-id, webhook-timestamp and webhook-signature (v1,<base64 HMAC-SHA256 of id.timestamp.body> with the whsec_ secret), over the raw body; 5-minute window. The JSON object body is the trigger input (attachments are read like on the run endpoint). A repeated webhook-id answers the first run_id with `duplicate: true` and starts nothing. The run executes on the job runner. ' +
        'The slug and the headers are checked before the body is read; a refusal while more than 64 KiB of the body is still to come closes the connection (`Connection: close`) instead of reading it.',
      security: [],
      parameters: [
        { name: 'slug', in: 'path', required: true, schema: { type: 'string' } },
        webhookHeader('webhook-id', 'The delivery\'s id: a repeat within 24 hours answers the first run'),
        webhookHeader('webhook-timestamp', 'Unix seconds, within 5 minutes of the server\'s clock'),
        webhookHeader('webhook-signature', 'Space-separated `v1,<base64>` signatures; one must match'),
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
      responses: {
        '202': json('Accepted: the run was queued (or, for a repeated webhook-id, the first delivery\'s run)', success({
          type: 'object',
          required: ['run_id'],
          additionalProperties: false,
          properties: { run_id: { type: 'string' }, duplicate: { type: 'boolean', const: true, description: 'Present when the webhook-id was delivered before' } },
        })),
        ...errorResponses(['INVALID_SIGNATURE', 'NOT_FOUND', 'INVALID_JSON', 'INVALID_INPUT', 'PAYLOAD_TOO_LARGE', 'CONCURRENCY_LIMIT', 'UNSUPPORTED_ATTACHMENT', 'ATTACHMENT_UNREADABLE', 'CONFLICT', 'INTERNAL_ERROR', 'DATABASE_UNAVAILABLE']),
      },
    },
  },
  '/webhooks/workflow-callbacks/{token}': {
    post: {
      tags: ['Workflows'],
      operationId: 'workflows-receiveCallback',
      summary: 'Continue a run waiting at a wait_for_callback step ({{run.callback_url}})',
      description: 'The body (JSON, or any text) becomes the step output. Single use: a second POST is 409 CALLBACK_ALREADY_RECEIVED and changes nothing. A callback before the run reaches its wait is kept for it. RUN_BUSY (the run is changing state) carries Retry-After.',
      security: [],
      parameters: [{ name: 'token', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: { required: false, content: { 'application/json': { schema: {} }, 'text/plain': { schema: { type: 'string' } } } },
      responses: {
        '202': json('Accepted', success(strictObject({ run_id: { type: 'string' }, accepted: { type: 'boolean', const: true } }))),
        ...errorResponses(['NOT_FOUND', 'CALLBACK_ALREADY_RECEIVED', 'RUN_BUSY', 'CONFLICT', 'INVALID_JSON', 'INVALID_INPUT', 'PAYLOAD_TOO_LARGE', 'INTERNAL_ERROR', 'DATABASE_UNAVAILABLE']),
      },
    },
  },
};

const referenceRoutes = {
  '/openapi.json': {
    get: {
      tags: ['Reference'],
      operationId: 'reference-openApiDocument',
      summary: 'This document',
      security: [],
      responses: { '200': json('OpenAPI 3.1 document', { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } } }) },
    },
  },
  '/docs': {
    get: {
      tags: ['Reference'],
      operationId: 'reference-docsPage',
      summary: 'Interactive API reference (served locally)',
      security: [],
      responses: { '200': { description: 'HTML page', headers: REQUEST_ID_HEADER, content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  },
};

/** The import's answer as a component (the raw route has no procedure to generate it from). */
export function tenantImportResultSchema(): SchemaNode {
  const generated = z.toJSONSchema(importResultSchema, { io: 'output' }) as SchemaNode;
  return generated.$defs?.TenantImportResult ?? generated;
}

/** The tenant export and import: raw routes that stream (server/http/tenant-archive-route.ts). */
function tenantArchiveRoutes(): Record<string, unknown> {
  const adminErrors: ErrorCode[] = [...AUTH_ERRORS.admin, 'INTERNAL_ERROR', 'DATABASE_UNAVAILABLE'];
  return {
    '/admin/tenants/{tenantId}/export': {
      get: {
        tags: ['Admin'],
        operationId: 'admin-exportTenant',
        summary: 'Export everything a tenant owns as one NDJSON archive, streamed',
        description:
          `${ARCHIVE_FORMAT_NOTE}\n\nAll tables are read in one consistent snapshot, streamed as they are read (any size, bounded memory). ` +
          '`?gzip=true` answers a gzip file (`application/gzip`); without it the archive is gzip-encoded in transit when the client sends ' +
          '`Accept-Encoding: gzip`. An error after the first line ends the archive without its trailer. `liya tenants export` saves it. ' +
          'Recorded in GET /admin/audit-log (`tenant.exported`).',
        security: SECURITY.admin,
        parameters: [
          { name: 'tenantId', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'gzip', in: 'query', required: false, schema: { type: 'string', enum: ['true', 'false'] }, description: 'true: the body is a .gz file (default false).' },
        ],
        responses: {
          '200': {
            description: 'The archive (header, rows, trailer)',
            headers: {
              ...REQUEST_ID_HEADER,
              'Content-Disposition': { description: 'attachment; filename="liya-tenant-<tenantId>.ndjson" (".ndjson.gz" with gzip=true)', schema: { type: 'string' } },
              'Cache-Control': { description: 'no-store', schema: { type: 'string' } },
            },
            content: { 'application/x-ndjson': { schema: { type: 'string' } }, 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
          },
          ...errorResponses([...adminErrors, 'NOT_FOUND', 'INVALID_INPUT']),
        },
      },
    },
    '/admin/tenants/import': {
      post: {
        tags: ['Admin'],
        operationId: 'admin-importTenant',
        summary: 'Recreate a tenant from its export archive (same ids), in one transaction',
        description:
          'The body is the archive exactly as GET /admin/tenants/{tenantId}/export wrote it: NDJSON, or gzip (recognised by its ' +
          'first bytes; `liya tenants import <file>` sends it). This route alone takes more than BODY_LIMIT_BYTES: up to ' +
          'TENANT_IMPORT_MAX_BYTES of NDJSON (default 4 GiB, counted uncompressed; more is 413), read as it arrives; the upload ' +
          'must still arrive within REQUEST_TIMEOUT_MS. All or nothing: 400 INVALID_ARCHIVE for a damaged, truncated (no trailer), ' +
          'miscounted or unknown-version archive, a table this server does not have, a row of another tenant, or an archive of a ' +
          'newer schema than this server\'s; 409 TENANT_EXISTS when the tenant id exists here; 409 IMPORT_CONFLICT when a unique value ' +
          '(a user\'s e-mail, a webhook slug) is taken here (`details.table`, `details.constraint`). Queued jobs are queued again ' +
          '(schedules go on). Credentials are not in an archive (`secrets_omitted`): set them again. Recorded in GET /admin/audit-log.',
        security: SECURITY.admin,
        requestBody: {
          required: true,
          content: { 'application/x-ndjson': { schema: { type: 'string' } }, 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
        },
        responses: {
          '201': json('Imported', success({ $ref: '#/components/schemas/TenantImportResult' })),
          ...errorResponses([...adminErrors, 'INVALID_ARCHIVE', 'TENANT_EXISTS', 'IMPORT_CONFLICT', 'CONFLICT', 'PAYLOAD_TOO_LARGE']),
        },
      },
    },
  };
}

/** Every raw route's path item, keyed by path. */
export function rawRoutes(): Record<string, unknown> {
  return { ...healthRoutes, ...webhookRoutes, ...referenceRoutes, ...tenantArchiveRoutes() };
}
