// The import rules of ARCHITECTURE.md, checked by test/architecture.test.ts (part of `npm test`).
// Paths are relative to the project root. `$1` in a `to` path is the feature the `from` path matched.

/** Modules every feature may use (besides its own folder). */
const PLATFORM = '^server/(common|tenants|keys|llm|net|jobs|runs|usage|audit|mail|retention)/|^server/(config|errors|logger|actor|deps)\\.ts$';

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
