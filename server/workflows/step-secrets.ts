// Credentials of http_request steps: every header value, and a URL that carries credentials (a
// user:password@ part, or a query parameter named like a credential). They are stored encrypted,
// never shown (a header reads `***`; such a URL reads with `***` in place of each credential), and a
// masked value sent back keeps the stored one, only for the same step calling the same origin:
// pointing a step at a new address must not send it the old credentials.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { decryptSecret, encryptSecret, resolveEncryptionKey } from '../llm/secret-box.js';
import type { StepDef } from './step-types.js';

/** How a stored credential reads. */
export const MASKED_SECRET = '***';
const ENCRYPTED_PREFIX = 'v1:';
/** The stored, encrypted URL of a step whose URL carries credentials (its `url` is the masked form). */
const URL_SECRET_KEY = 'url_secret';

const CREDENTIAL_PARAMETER = /token|secret|passw(or)?d|pwd|api[-_]?key|^key$|auth|signature|^sig$|credential|session/i;

const headerContext = (tenantId: string, stepId: string, header: string) => `workflow-step:${tenantId}:${stepId}:header:${header.toLowerCase()}`;
const urlContext = (tenantId: string, stepId: string) => `workflow-step:${tenantId}:${stepId}:url`;

export const isHttpRequestStep = (step: Pick<StepDef, 'step_type' | 'action_id'>) => step.step_type === 'action' && step.action_id === 'http_request';

const hasTemplate = (text: string) => text.includes('{{');

function parseUrl(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/** Whether a literal URL carries credentials: a user or password, or a credential-named query parameter with a literal value. */
export function hasUrlCredentials(url: string): boolean {
  const parsed = parseUrl(url);
  if (!parsed) return false;
  if (parsed.username || parsed.password) return true;
  return [...parsed.searchParams].some(([name, value]) => CREDENTIAL_PARAMETER.test(name) && value !== '' && !hasTemplate(value) && value !== MASKED_SECRET);
}

/** Whether a URL holds a masked credential (`***`), as an export writes one: it keeps the stored URL or has none. */
export function hasMaskedCredentials(url: string): boolean {
  const parsed = parseUrl(url);
  if (!parsed) return false;
  if (decodeURIComponent(parsed.username) === MASKED_SECRET) return true;
  return [...parsed.searchParams].some(([name, value]) => CREDENTIAL_PARAMETER.test(name) && value === MASKED_SECRET);
}

/** The URL with each credential replaced by `***`. */
export function maskUrl(url: string): string {
  const parsed = parseUrl(url);
  if (!parsed) return url;
  if (parsed.username || parsed.password) {
    parsed.username = MASKED_SECRET;
    parsed.password = '';
  }
  for (const [name, value] of [...parsed.searchParams]) {
    if (CREDENTIAL_PARAMETER.test(name) && value !== '' && !hasTemplate(value)) parsed.searchParams.set(name, MASKED_SECRET);
  }
  // URLSearchParams encodes `*`; the masked form reads as it is shown.
  return parsed.toString().replace(/%2A%2A%2A/g, MASKED_SECRET);
}

/** Where a URL sends its requests; the whole text when templates make it unknown. */
function destinationOf(url: unknown): string {
  if (typeof url !== 'string') return '';
  const parsed = hasTemplate(url.split('/').slice(0, 3).join('/')) ? null : parseUrl(url);
  return parsed ? parsed.origin : url;
}

/**
 * Whether two step URLs call the same origin: the rule for keeping stored header values (a plan asks
 * it of the project's URL before an apply, protectStepSecrets of the stored one when saving).
 */
export const sameDestination = (a: unknown, b: unknown) => destinationOf(a) === destinationOf(b);

const headersOf = (step: StepDef) => (step.config.headers && typeof step.config.headers === 'object' ? (step.config.headers as Record<string, unknown>) : null);

/** The step as it may be shown (API reads, run traces, validation): credentials masked, the encrypted URL left out. */
export function maskStepSecrets(step: StepDef): StepDef {
  if (!isHttpRequestStep(step)) return step;
  const { [URL_SECRET_KEY]: secretUrl, ...config } = step.config;
  const headers = headersOf(step);
  if (headers) config.headers = Object.fromEntries(Object.keys(headers).map((name) => [name, MASKED_SECRET]));
  if (secretUrl === undefined && typeof config.url === 'string' && hasUrlCredentials(config.url)) config.url = maskUrl(config.url);
  return { ...step, config };
}

/**
 * The steps to store: each http_request header value and credential-carrying URL encrypted; a masked
 * value kept from `previous` (the stored steps) when the same step still calls the same origin.
 */
export async function protectStepSecrets(em: EntityManager, deps: Pick<AppDeps, 'config'>, tenantId: string, steps: StepDef[], previous: StepDef[] | null): Promise<StepDef[]> {
  if (!steps.some(isHttpRequestStep)) return steps;
  const key = await resolveEncryptionKey(em, deps.config);
  const before = new Map((previous ?? []).filter(isHttpRequestStep).map((s) => [s.id, s]));
  return steps.map((step) => {
    if (!isHttpRequestStep(step)) return step;
    const prior = before.get(step.id);
    const config = { ...step.config };
    delete config[URL_SECRET_KEY];
    const keepsHeaders = prior !== undefined && sameDestination(prior.config.url, config.url);
    // The URL: the stored one kept when it (or its masked form) comes back; new credentials encrypted.
    if (typeof config.url === 'string') {
      const priorUrl = typeof prior?.config.url === 'string' ? prior.config.url : null;
      const priorSecret = prior?.config[URL_SECRET_KEY];
      if (priorUrl !== null && (config.url === priorUrl || config.url === maskUrl(priorUrl))) {
        if (typeof priorSecret === 'string') {
          config.url = priorUrl;
          config[URL_SECRET_KEY] = priorSecret;
        } else if (hasUrlCredentials(priorUrl)) {
          // Stored before credentials were encrypted: encrypted now.
          config[URL_SECRET_KEY] = encryptSecret(key, priorUrl, urlContext(tenantId, step.id));
          config.url = maskUrl(priorUrl);
        }
      } else if (hasUrlCredentials(config.url)) {
        config[URL_SECRET_KEY] = encryptSecret(key, config.url, urlContext(tenantId, step.id));
        config.url = maskUrl(config.url);
      }
    }
    const headers = headersOf(step);
    if (headers) {
      const priorHeaders = (prior && keepsHeaders ? headersOf(prior) : null) ?? {};
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(headers)) {
        const stored = Object.entries(priorHeaders).find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];
        if (value === MASKED_SECRET || (typeof stored === 'string' && value === stored)) {
          // Only a value stored for this very step and header, at the same destination, is kept (one
          // stored before header values were encrypted is encrypted now).
          if (typeof stored === 'string') out[name] = stored.startsWith(ENCRYPTED_PREFIX) ? stored : encryptSecret(key, stored, headerContext(tenantId, step.id, name));
          continue;
        }
        out[name] = encryptSecret(key, typeof value === 'string' ? value : JSON.stringify(value), headerContext(tenantId, step.id, name));
      }
      config.headers = out;
    }
    return { ...step, config };
  });
}

/** The step with its credentials decrypted, for the engine to send (values that no longer decrypt are left out). */
export async function revealStepSecrets(em: EntityManager, deps: Pick<AppDeps, 'config'>, tenantId: string, step: StepDef): Promise<StepDef> {
  const headers = headersOf(step);
  const secretUrl = step.config[URL_SECRET_KEY];
  if (!headers && typeof secretUrl !== 'string') return step;
  const key = await resolveEncryptionKey(em, deps.config);
  const config = { ...step.config };
  delete config[URL_SECRET_KEY];
  if (typeof secretUrl === 'string') config.url = decryptSecret(key, secretUrl, urlContext(tenantId, step.id)) ?? config.url;
  if (headers) {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string') continue;
      // A value stored before header values were encrypted is sent as it is.
      const plain = value.startsWith(ENCRYPTED_PREFIX) ? decryptSecret(key, value, headerContext(tenantId, step.id, name)) : value;
      if (plain !== null) out[name] = plain;
    }
    config.headers = out;
  }
  return { ...step, config };
}
