// The import rules of ARCHITECTURE.md, checked by test/architecture.test.ts (part of `npm test`).
// Paths are relative to the project root. `$1` in a `to` path is the feature the `from` path matched.

/**
 * The platform: modules every feature may use (besides its own folder), which never import a
 * feature themselves (platform-not-features). The process's configuration and dependencies
 * (config, deps, logger, errors, actor), shared helpers (common), tenants and their API keys, the
 * model gateway (llm), the way out to other servers (net), the job queue (jobs), what every run
 * shares (runs: lineage, steps, the ports features call each other through), usage metering,
 * the audit log, mail, retention, the guardrail checks every run applies, telemetry
 * (observability), platform settings and events out (what every feature's changes feed, recorded
 * by database triggers). db/ (entities, connections, the typed statement path) is
 * under the platform too. server/http/ is transport: only routes, routers and the wiring import it
 * (features-not-transport), and what it serves is put together in boot.ts and router.ts.
 */
const PLATFORM = '^server/(common|tenants|keys|llm|net|jobs|runs|usage|audit|mail|retention|guardrails|observability|settings|events)/|^server/(config|errors|logger|actor|deps)\\.ts$';

/** Store modules of the platform whose statement pieces another store may build on (see no-foreign-store). */
const PLATFORM_STORES = '^server/(tenants|keys|jobs|usage|runs)/store/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Import circles hide the real layering. Where two features call each other, declare a port (server/runs/run-ports.ts) and wire it in boot.ts.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'entities-only-in-stores',
      comment: "Entities are the stores' business: a service gets the row types it needs re-exported from its feature's store.",
      severity: 'error',
      from: { pathNot: '^(db/|server/.+/store/)' },
      to: { path: '^db/entities/' },
    },
    {
      name: 'database-only-in-stores',
      comment: 'SQL lives in store/ modules. Elsewhere an EntityManager or SqlPool is only passed on (a type import); the process wiring (boot, main, the worker runner, the local CLI commands) opens them.',
      severity: 'error',
      from: { pathNot: '^(db/|server/.+/store/|server/(boot|main)\\.ts$|worker/runner\\.ts$|cli/local/)' },
      to: {
        path: '^(db/(sql-pool|kysely|unique-violation|orm|embedded)\\.ts$|node_modules/(@mikro-orm/[^/]+|pg|kysely)/)',
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'platform-not-features',
      comment: 'The platform serves every feature and depends on none: a platform module that needs a feature declares a port (server/runs/run-ports.ts) that boot.ts wires, or the type it carries moves to the platform (net/mcp-client.types.ts).',
      severity: 'error',
      // A platform folder's routes and routers are transport, like every other router.
      from: { path: [PLATFORM, '^db/'], pathNot: '\\.(router|route)\\.ts$' },
      to: { path: '^server/', pathNot: PLATFORM },
    },
    {
      name: 'no-foreign-store',
      comment: "A folder's store/ is its own: another folder reaches its tables through a module of the owning folder outside store/ (its services, or the <name>-records.ts that delegates to the store), so a store can change without its callers noticing.",
      severity: 'error',
      from: { path: '^server/([^/]+)/', pathNot: '^server/[^/]+/store/' },
      to: { path: '^server/[^/]+/store/', pathNot: '^server/$1/' },
    },
    {
      name: 'no-foreign-store-from-stores',
      comment: "A store builds only on its own folder's stores, and on the statement pieces of a few platform stores (the job queue's add_job, the usage event insert, tenant and API key columns, the online evaluation sample queue) so that one statement or one transaction does the work: never on a feature's store.",
      severity: 'error',
      from: { path: '^server/([^/]+)/store/' },
      to: { path: '^server/[^/]+/store/', pathNot: ['^server/$1/', PLATFORM_STORES] },
    },
    {
      name: 'features-not-transport',
      comment: 'Services and engines know nothing of HTTP: only routes, routers and the wiring import server/http/.',
      severity: 'error',
      from: { path: '^server/', pathNot: '^server/(http/|boot\\.ts$|main\\.ts$|router\\.ts$)|\\.(router|route)\\.ts$' },
      to: { path: '^server/http/' },
    },
    {
      name: 'router-own-feature',
      comment: 'A router is a thin layer over its own feature: it imports its services and schemas, the platform modules and trpc.ts, never another feature.',
      severity: 'error',
      from: { path: '^server/([^/]+)/.+\\.router\\.ts$' },
      to: { path: '^server/', pathNot: [`^server/$1/`, PLATFORM, '^server/trpc\\.ts$'] },
    },
    {
      name: 'cli-server-types-only',
      comment: 'The CLI talks HTTP; it shares the server\'s wire types (import type, erased at build). Its local start, worker and migrate commands run the server in-process.',
      severity: 'error',
      from: { path: '^cli/', pathNot: '^cli/(local/|commands/(start|worker|migrate)\\.ts$)' },
      to: { path: '^(server|db|worker)/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    // TypeScript 7 has no JS API yet; swc parses the sources (type-only imports included).
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)dist/' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.json'] },
  },
};
