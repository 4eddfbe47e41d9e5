// Where a project holds secrets: the one declared list, shared with the CLI through the project file
// schema (`x-secret-paths` of schema/liya-project.schema.json), which it may read but not import.
// Only at these paths is a `${NAME}` reference filled in from the environment (by `liya apply`) or
// kept as the stored value (by the server); a reference anywhere else is refused, so a CI job's
// variables can never land in a plain field. Values at these paths are stored encrypted, shown as
// set or unset, exported as references, and never compared by a plan.
import type { ValidationIssue } from '../errors.js';
import { KIND_LIST, RESOURCE_KINDS, SECRET_REFERENCE, type Project, type ResourceKind } from './project.schemas.js';

export interface SecretPath {
  kind: ResourceKind;
  /** Dotted, `*` for any key or index. */
  path: string;
  holds: string;
}

export const SECRET_PATHS: readonly SecretPath[] = [
  { kind: 'agent', path: 'tools_config.mcp_servers.*.headers.*', holds: 'MCP server header values' },
  { kind: 'workflow', path: 'steps.*.config.headers.*', holds: 'http_request step header values' },
  { kind: 'workflow', path: 'steps.*.config.url', holds: 'an http_request step URL that carries credentials (user:password@, or a query parameter such as token, key, secret, signature)' },
  { kind: 'eval_suite', path: 'custom_scorer_webhook_secret', holds: 'the custom scorer webhook\'s signing secret' },
];

const PATTERNS = SECRET_PATHS.map((p) => ({ kind: p.kind, segments: p.path.split('.') }));

/** Whether `path` (inside a resource of `kind`) is a declared secret path. */
export function isSecretPath(kind: ResourceKind, path: readonly (string | number)[]): boolean {
  return PATTERNS.some((p) => p.kind === kind && p.segments.length === path.length && p.segments.every((s, i) => s === '*' || s === String(path[i])));
}

/** Every `${NAME}` reference of the project that stands outside a secret path, as issues at `project.<list>.<index>.<path>`. */
export function misplacedReferences(project: Project): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const walk = (kind: ResourceKind, value: unknown, path: (string | number)[], at: string) => {
    if (typeof value === 'string') {
      if (SECRET_REFERENCE.test(value) && !isSecretPath(kind, path)) {
        issues.push({
          path: `${at}.${path.join('.')}`,
          message: `${value} is a secret reference, and ${path.join('.')} is not a place for secrets (secrets go only in: ${SECRET_PATHS.filter((p) => p.kind === kind).map((p) => p.path).join(', ') || `nowhere in a ${kind}`})`,
          code: 'misplaced_secret_reference',
        });
      }
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(kind, v, [...path, i], at));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(kind, v, [...path, k], at);
  };
  for (const kind of RESOURCE_KINDS) {
    const list = KIND_LIST[kind];
    (project[list] as unknown[]).forEach((resource, index) => walk(kind, resource, [], `project.${list}.${index}`));
  }
  return issues;
}
