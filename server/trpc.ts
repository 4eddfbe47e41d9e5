import { initTRPC } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { Role } from '../db/column-values.js';
import type { EntityManager } from '../db/orm.js';
import { AppError, type ErrorCode } from './errors.js';
import type { Actor } from './actor.js';
import type { AppDeps } from './deps.js';
import { authenticateAdmin } from './auth/admin-auth.js';
import { roleAtLeast } from './auth/roles.js';
import { authenticateApiKey, beginKeyedRequest, confirmKeyedRequest, keyActor, requirePermission, type ApiKeyScope } from './keys/authenticate-api-key.js';
import type { Permission } from './keys/permissions.js';
import type { TenantScope } from './tenants/tenant-scope.js';
import { authenticateDashboard, type DashboardScope } from './auth/authenticate-dashboard.js';


export interface RequestInfo {
  id: string;
  ip: string;
  headers: Record<string, string | string[] | undefined>;
}

/** What a procedure may set on its HTTP response (status 201, Retry-After, ...). */
export interface ResponseHolder {
  status?: number;
  headers: Record<string, string>;
}

export interface Context {
  deps: AppDeps;
  em: EntityManager;
  req: RequestInfo;
  res: ResponseHolder;
}

export type AuthKind = 'none' | 'apiKey' | 'dashboard' | 'admin';

export interface RouteMeta extends OpenApiMeta {
  /** Success status (default 200); also used to document the route. */
  successStatus?: number;
  /** Error codes this route answers beyond the ones its auth kind implies (for the OpenAPI document). */
  errors?: ErrorCode[];
  /** Set by the base procedures; drives the security section of the OpenAPI document. */
  auth?: AuthKind;
  /** JSON Schemas documented for `input` (request body) and `data.output` (response) of intent routes. */
  jsonSchemas?: { input?: Record<string, unknown> | null; output?: Record<string, unknown> | null };
  /** Largest request body of this route in bytes (default: BODY_LIMIT_BYTES, the server-wide limit). */
  bodyLimit?: number;
  /** What an API key needs to call this route (every API-key route declares one; server/keys/permissions.ts). */
  permission?: Permission;
  /**
   * Runs before the request's body is read: refuses (throws) a request the process should not take
   * now, else answers what gives its place back when the response is sent.
   */
  admission?: (deps: AppDeps, headers: RequestInfo['headers']) => Promise<() => void>;
}


const t = initTRPC
  .context<Context>()
  .meta<RouteMeta>()
  .create();

export const router = t.router;
export const mergeRouters = t.mergeRouters;

// Routes declare their success status in meta; the HTTP layer sends ctx.res.status. Each base
// procedure records it in its one middleware (a middleware step per request is not free).
const recordStatus = (ctx: Context, meta: RouteMeta | undefined) => {
  if (meta?.successStatus) ctx.res.status = meta.successStatus;
};

export const publicProcedure = t.procedure.meta({ auth: 'none' }).use(({ ctx, meta, next }) => {
  recordStatus(ctx, meta);
  return next();
});

/**
 * An API-key procedure: the key must hold `permission` (403 PERMISSION_DENIED). The permission is
 * declared here, with the route, and documented as the role of its API-key security requirement.
 */
export function apiKeyProcedure(permission: Permission) {
  return t.procedure.meta({ auth: 'apiKey', permission }).use(async ({ ctx, meta, next }) => {
    recordStatus(ctx, meta);
    const scope: ApiKeyScope = requirePermission(await authenticateApiKey(ctx.deps, ctx.req.headers), permission);
    const actor: Actor = keyActor(scope);
    // The one tenant scope services take, built here once per request.
    const tenantScope: TenantScope = { tenantId: scope.tenantId, environmentId: scope.environmentId, plan: scope.plan, tenant: scope.tenant };
    return next({ ctx: { ...ctx, tenantId: scope.tenantId, apiKey: scope, scope: tenantScope, actor } });
  });
}

/**
 * An API-key procedure that may read the key in its own first statement (intent runs:
 * server/keys/authenticate-api-key.ts, KeyedRequest). Whatever fails before the key was read, an
 * invalid input too, answers the key's 401/403 first when the key turns out not to be valid.
 */
export function keyedRunProcedure(permission: Permission) {
  return t.procedure.meta({ auth: 'apiKey', permission }).use(async ({ ctx, meta, next }) => {
    recordStatus(ctx, meta);
    const key = await beginKeyedRequest(ctx.deps, ctx.req.headers, permission);
    const result = await next({ ctx: { ...ctx, key } });
    if (!result.ok && !key.scope) await confirmKeyedRequest(ctx.deps, key);
    return result;
  });
}

/** A dashboard (JWT) procedure open to `minRole` and above (default: every role). */
export function dashboardProcedure(minRole: Role = 'viewer') {
  return t.procedure.meta({ auth: 'dashboard' }).use(async ({ ctx, meta, next }) => {
    recordStatus(ctx, meta);
    const scope: DashboardScope = await authenticateDashboard(ctx.deps, ctx.req.headers);
    if (!roleAtLeast(scope.role, minRole)) {
      throw new AppError('FORBIDDEN', `This action needs the ${minRole} role or higher`, { required_role: minRole, role: scope.role });
    }
    const actor: Actor = { type: 'user', id: scope.userId, name: scope.email };
    return next({ ctx: { ...ctx, tenantId: scope.tenantId, user: scope, actor } });
  });
}

export const adminProcedure = t.procedure
  .meta({ auth: 'admin' })
  .use(async ({ ctx, meta, next }) => {
    recordStatus(ctx, meta);
    authenticateAdmin(ctx.deps.config.ADMIN_SECRET, ctx.req.headers);
    const actor: Actor = { type: 'admin', id: null, name: 'admin' };
    return next({ ctx: { ...ctx, actor } });
  });

