import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { eventWebhooksDocument } from '../events/event-catalogue.js';
import type { ErrorCode } from '../errors.js';
import { appRouter } from '../router.js';
import type { RouteMeta } from '../trpc.js';
import { DESCRIPTION, LIMITS_DESCRIPTION } from './openapi-description.js';
import { AUTH_ERRORS, defaultErrorResponse, errorEnvelopeSchema, errorResponses, REQUEST_ID_HEADER, responseHeaderComponents, SECURITY } from './openapi-errors.js';
import { rawRoutes, tenantImportResultSchema } from './openapi-raw-routes.js';
import { streamRoutes } from './openapi-streams.js';

// The generator documents every success as 200 and errors in the adapter's own shape; this module
// rewrites both once: the real success status, our envelope, each route's error codes and the
// headers every answer carries. The raw routes and the streams are added beside the procedures.

interface ProcedureLike {
  _def: { meta?: RouteMeta; inputs: unknown[] };
}

type Operation = { operationId?: string; responses: Record<string, unknown>; security?: unknown; parameters?: unknown[]; requestBody?: unknown };
type SchemaNode = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Operations that take an Idempotency-Key (server/workflows/idempotency.ts), by `METHOD path`; the run's stream copies the run's. */
const IDEMPOTENT_OPERATIONS = new Set(['POST /v1/workflows/{workflowIdOrKey}/run', 'POST /v1/workflows/{workflowIdOrKey}/test-run', 'POST /v1/events']);

const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: '1-255 printable ASCII characters, kept 24 hours per tenant and workflow: a repeat with the same body answers the first run; another body is 422 IDEMPOTENCY_KEY_REUSED.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

function buildDocument(): OpenAPIObject {
  const doc = generateOpenApiDocument(appRouter, {
    title: 'Liya API',
    version: '1.0.0',
    description: `${DESCRIPTION}\n\n${LIMITS_DESCRIPTION}`,
    baseUrl: '/',
    securitySchemes: {
      ApiKeyBearer: { type: 'http', scheme: 'bearer', description: 'API key (svc_...) as a bearer token: /v1/* routes' },
      ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'API key in the x-api-key header: /v1/* routes' },
      DashboardJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Dashboard JWT from /auth/login or /auth/signup: /auth/* and /dashboard/* routes' },
      AdminSecret: { type: 'apiKey', in: 'header', name: 'X-Admin-Secret', description: 'The server\'s ADMIN_SECRET: /admin/* routes' },
    },
  });

  const procedures = appRouter._def.procedures as unknown as Record<string, ProcedureLike>;
  for (const procedure of Object.values(procedures)) {
    const meta = procedure._def.meta;
    if (!meta?.openapi) continue;
    const path = meta.openapi.path.replace(/\/$/, '');
    const operation = (doc.paths?.[path] as Record<string, Operation> | undefined)?.[meta.openapi.method.toLowerCase()];
    if (!operation) continue;
    const auth = meta.auth ?? 'none';
    const success = { ...(operation.responses['200'] as object), headers: REQUEST_ID_HEADER };
    const status = String(meta.successStatus ?? 200);
    const codes: ErrorCode[] = [...AUTH_ERRORS[auth], ...(meta.errors ?? [])];
    if (operation.parameters?.length || operation.requestBody) codes.push('INVALID_INPUT');
    if (operation.requestBody) codes.push('INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
    // Any write may lose a race with another request changing the same rows (errors.ts concurrentChangeError).
    if (meta.openapi.method !== 'GET') codes.push('CONFLICT');
    codes.push('INTERNAL_ERROR', 'DATABASE_UNAVAILABLE');
    operation.responses = { [status]: success, ...errorResponses([...new Set(codes)]) };
    operation.security = SECURITY[auth];
    if (auth === 'apiKey') {
      // The permission the route needs, as the role list of each API-key requirement (OpenAPI 3.1).
      if (!meta.permission) throw new Error(`${meta.openapi.method} ${meta.openapi.path} declares no permission`);
      operation.security = SECURITY.apiKey.map((requirement) => Object.fromEntries(Object.keys(requirement).map((name) => [name, [meta.permission!]])));
      (operation as Record<string, unknown>)['x-permission'] = meta.permission;
    }
    if (IDEMPOTENT_OPERATIONS.has(`${meta.openapi.method} ${path}`)) operation.parameters = [...(operation.parameters ?? []), IDEMPOTENCY_KEY_PARAMETER];
    if (meta.jsonSchemas) documentIntentSchemas(doc, operation, meta.jsonSchemas, status);
  }
  // mode async answers 202 on the run endpoints.
  for (const path of ['/v1/workflows/{workflowIdOrKey}/run', '/v1/workflows/{workflowIdOrKey}/test-run']) {
    const op = (doc.paths?.[path] as Record<string, Operation> | undefined)?.post;
    if (op) op.responses = { ...op.responses, '202': { ...(op.responses['200'] as object), description: 'mode async: accepted ({run_id, status})' } };
  }
  const streams = streamRoutes(doc);
  const paths: Record<string, unknown> = { ...rawRoutes(), ...doc.paths, ...streams.paths };
  doc.paths = paths as OpenAPIObject['paths'];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = (item as Record<string, Operation>)[method];
      if (operation) completeOperation(`${method.toUpperCase()} ${path}`, operation);
    }
  }
  // The generator's own error components describe a shape this server never sends.
  const generated = Object.fromEntries(Object.entries(doc.components?.schemas ?? {}).filter(([name]) => !name.startsWith('error.')));
  doc.components = {
    ...doc.components,
    schemas: { ...generated, ErrorEnvelope: errorEnvelopeSchema, TenantImportResult: tenantImportResultSchema(), ...streams.schemas } as never,
    headers: responseHeaderComponents as never,
  };
  (doc as unknown as { webhooks: unknown }).webhooks = eventWebhooksDocument();
  return doc;
}

/** What every operation has: an operationId, the HTTP layer's `default` answer, x-request-id on each response. */
function completeOperation(name: string, operation: Operation) {
  if (!operation.operationId) throw new Error(`${name} has no operationId`);
  operation.responses.default ??= defaultErrorResponse();
  for (const response of Object.values(operation.responses) as SchemaNode[]) {
    response.headers = { ...REQUEST_ID_HEADER, ...response.headers };
  }
}

// `{$ref: '#/components/schemas/X'}` -> a copy of X (one level), so it can be specialised per route.
function derefCopy(doc: OpenAPIObject, schema: SchemaNode | undefined): SchemaNode | undefined {
  if (!schema) return undefined;
  const ref = typeof schema.$ref === 'string' ? schema.$ref.replace('#/components/schemas/', '') : null;
  return structuredClone(ref ? (doc.components?.schemas?.[ref] as SchemaNode) : schema);
}

/** Intent routes: the body's `input` and the response's `data.output` get the intent's own schemas. */
function documentIntentSchemas(doc: OpenAPIObject, operation: Operation, schemas: NonNullable<RouteMeta['jsonSchemas']>, status: string) {
  const body = operation.requestBody as SchemaNode | undefined;
  const bodySchema = derefCopy(doc, body?.content?.['application/json']?.schema);
  if (bodySchema?.properties && schemas.input) {
    bodySchema.properties.input = schemas.input;
    body!.content['application/json'].schema = bodySchema;
  }
  const response = operation.responses[status] as SchemaNode | undefined;
  const responseSchema = derefCopy(doc, response?.content?.['application/json']?.schema);
  if (responseSchema?.properties?.data && schemas.output) {
    const data = derefCopy(doc, responseSchema.properties.data)!;
    data.properties.output = schemas.output;
    responseSchema.properties.data = data;
    response!.content['application/json'].schema = responseSchema;
  }
}

let cached: OpenAPIObject | null = null;

/** The served OpenAPI document (built once per process). */
export function getOpenApiDocument(): OpenAPIObject {
  cached ??= buildDocument();
  return cached;
}
