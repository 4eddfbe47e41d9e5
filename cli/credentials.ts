// The dashboard login kept between CLI runs: one JSON file readable by its owner only.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface Credentials {
  /** Server the token was issued by. */
  url: string;
  token: string;
  email: string;
  tenantId: string;
  tenantName?: string;
  savedAt?: string;
}

/** LIYA_CONFIG_DIR, else $XDG_CONFIG_HOME/liya, else ~/.config/liya. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LIYA_CONFIG_DIR) return path.resolve(env.LIYA_CONFIG_DIR);
  const base = env.XDG_CONFIG_HOME ? path.resolve(env.XDG_CONFIG_HOME) : path.join(os.homedir(), '.config');
  return path.join(base, 'liya');
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(configDir(env), 'credentials.json');
}

export class CredentialsFileError extends Error {}

/** The stored login, or null when there is none. A damaged file is an error, not a silent logout. */
export async function readCredentials(file = credentialsPath()): Promise<Credentials | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CredentialsFileError(`Cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: Partial<Credentials>;
  try {
    parsed = JSON.parse(text) as Partial<Credentials>;
  } catch {
    throw new CredentialsFileError(`${file} is not valid JSON; run liya logout, then liya login`);
  }
  if (typeof parsed.url !== 'string' || typeof parsed.token !== 'string' || typeof parsed.email !== 'string' || typeof parsed.tenantId !== 'string') {
    throw new CredentialsFileError(`${file} is incomplete; run liya logout, then liya login`);
  }
  return parsed as Credentials;
}

/** Writes the file with mode 0600 (folder 0700) through a temporary file, so it is never half written. */
export async function writeCredentials(credentials: Credentials, file = credentialsPath()): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    await chmod(temp, 0o600); // the umask cannot widen it, but an odd filesystem might
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Removes the stored login; returns whether there was one. */
export async function deleteCredentials(file = credentialsPath()): Promise<boolean> {
  try {
    await rm(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** The `exp` claim of a JWT (seconds), without verifying it: only to say "expired" before a request. */
export function tokenExpiry(token: string): number | null {
  const payload = token.split('.')[1];
  if (!payload) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp : null;
  } catch {
    return null;
  }
}
