// Secrets in project files are references, `${ENV_NAME}`, never values: `liya apply` fills each in
// from its environment when the variable is set (and not empty), and sends the reference itself
// otherwise, so the server keeps the value it has (or says that it has none). The values filled in
// are remembered so that nothing the CLI prints can show one.

/** The server's SECRET_REFERENCE (the CLI may not import it). */
const SECRET_REFERENCE = /^\$\{([A-Z_][A-Z0-9_]{0,127})\}$/;

export interface ResolvedSecrets {
  /** The values filled in from the environment (to hide from any output). */
  values: Set<string>;
  /** The references left as they are (their variable is not set). */
  unset: Set<string>;
}

/** NAME when `value` is a reference `${NAME}`. */
export const secretReferenceName = (value: string): string | undefined => SECRET_REFERENCE.exec(value)?.[1];

export const newResolvedSecrets = (): ResolvedSecrets => ({ values: new Set(), unset: new Set() });

/** A copy of `value` with every `${NAME}` string replaced by $NAME when it is set. */
export function resolveSecrets(value: unknown, env: NodeJS.ProcessEnv, found: ResolvedSecrets): unknown {
  if (typeof value === 'string') {
    const name = secretReferenceName(value);
    if (!name) return value;
    const secret = env[name];
    if (secret === undefined || secret === '') {
      found.unset.add(name);
      return value;
    }
    found.values.add(secret);
    return secret;
  }
  if (Array.isArray(value)) return value.map((v) => resolveSecrets(v, env, found));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveSecrets(v, env, found)]));
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
