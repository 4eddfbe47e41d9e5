// Secrets in project files are references, `${ENV_NAME}`, never values, and only where secrets go:
// the server's declared list, read from the project file schema (`x-secret-paths`). There `liya apply`
// fills each in from its environment when the variable is set (and not empty), and sends the
// reference itself otherwise, so the server keeps the value it has (or says that it has none). A
// reference anywhere else is never filled in: it is a problem of the file, reported at its line. The
// values filled in are remembered so that nothing the CLI prints can show one.

/** The server's SECRET_REFERENCE (the CLI may not import it). */
const SECRET_REFERENCE = /^\$\{([A-Z_][A-Z0-9_]{0,127})\}$/;

export interface ResolvedSecrets {
  /** The values filled in from the environment (to hide from any output). */
  values: Set<string>;
  /** The references left as they are (their variable is not set). */
  unset: Set<string>;
}

/** A declared secret path: dotted, `*` for any key or index. */
export interface SecretPathPattern {
  kind: string;
  path: string;
}

/** A reference where no secret may stand: the path inside the resource, and the reference. */
export interface MisplacedReference {
  path: (string | number)[];
  value: string;
}

/** NAME when `value` is a reference `${NAME}`. */
export const secretReferenceName = (value: string): string | undefined => SECRET_REFERENCE.exec(value)?.[1];

export const newResolvedSecrets = (): ResolvedSecrets => ({ values: new Set(), unset: new Set() });

/** Whether `path` of a resource of `kind` is one of the declared secret paths. */
export function isSecretPath(patterns: readonly SecretPathPattern[], kind: string, path: readonly (string | number)[]): boolean {
  return patterns.some((p) => {
    if (p.kind !== kind) return false;
    const segments = p.path.split('.');
    return segments.length === path.length && segments.every((s, i) => s === '*' || s === String(path[i]));
  });
}

/**
 * A copy of the resource `value` of `kind` with each `${NAME}` at a secret path replaced by $NAME
 * when it is set. A reference anywhere else is left as it is and pushed to `misplaced`.
 */
export function resolveSecrets(
  value: unknown,
  env: NodeJS.ProcessEnv,
  found: ResolvedSecrets,
  where: { kind: string; patterns: readonly SecretPathPattern[]; misplaced: MisplacedReference[] },
  path: (string | number)[] = [],
): unknown {
  if (typeof value === 'string') {
    const name = secretReferenceName(value);
    if (!name) return value;
    if (!isSecretPath(where.patterns, where.kind, path)) {
      where.misplaced.push({ path, value });
      return value;
    }
    const secret = env[name];
    if (secret === undefined || secret === '') {
      found.unset.add(name);
      return value;
    }
    found.values.add(secret);
    return secret;
  }
  if (Array.isArray(value)) return value.map((v, i) => resolveSecrets(v, env, found, where, [...path, i]));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveSecrets(v, env, found, where, [...path, k])]));
  }
  return value;
}

/** `text` with every secret value in `secrets` replaced by `(secret)`. */
export function redactSecrets(text: string, secrets: ReadonlySet<string>): string {
  let out = text;
  // Longest first, so a secret that contains another is hidden whole.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (secret.length >= 4) out = out.split(secret).join('(secret)');
    // JSON-escaped, as it appears inside a compact JSON value.
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret && escaped.length >= 4) out = out.split(escaped).join('(secret)');
  }
  return out;
}
