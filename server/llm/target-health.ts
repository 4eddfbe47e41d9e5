// Each target's health in this process: a breaker per provider and credential (cockatiel's), the
// provider's own "leave me alone until" (Retry-After) and a retry budget. The breaker's state is
// shared with every other process through `onChange` / `applyRemote` (breaker-sync.ts, wired in
// boot.ts): a breaker another process opened holds this process's breaker open (isolated) too.
import { createHash } from 'node:crypto';
import { BrokenCircuitError, CircuitState, CountBreaker, circuitBreaker, handleWhen, type CircuitBreakerPolicy } from 'cockatiel';
import { circuitOpen, type ProviderFailure } from './provider-errors.js';

/** What keys a target: its provider and the credential it calls with (never kept, only digested). */
export interface TargetIdentity {
  provider: string;
  baseURL: string;
  apiKey: string;
  /** Whether the credential is a tenant's own key. */
  tenantKey: boolean;
}

/** A provider failure thrown out of one attempt, so the breaker can tell what counts against it. */
export class CallFailure extends Error {
  constructor(readonly failure: ProviderFailure) {
    super(`provider call failed: ${failure.reason}`);
    this.name = 'CallFailure';
  }
}

export type CredentialKind = 'platform' | 'tenant';

/** A breaker opening or closing, as it is told to (and heard from) other processes. */
export interface BreakerChange {
  key: string;
  provider: string;
  credential: CredentialKind;
  state: 'open' | 'closed';
  /** Epoch ms until which no call goes to the target (open only). */
  openUntil: number;
}

export type BreakerStateName = 'closed' | 'open' | 'half_open';

/** One target's breaker as `liya doctor` and /metrics show it (never the credential itself). */
export interface BreakerReading {
  provider: string;
  credential: CredentialKind;
  /** A short digest of the credential, so two tenants' keys read apart (not reversible). */
  credentialId: string;
  state: BreakerStateName;
  /** Whether another process opened it (this one holds it open on its word). */
  remote: boolean;
  /** Epoch ms when a probe may next go (open only). */
  openUntil: number | null;
  /** Epoch ms until which the provider asked not to be called (Retry-After), when later than now. */
  rateLimitedUntil: number | null;
}

export interface TargetEntry {
  readonly key: string;
  readonly provider: string;
  readonly credential: CredentialKind;
  readonly credentialId: string;
  readonly policy: CircuitBreakerPolicy;
  openedAt: number | null;
  remoteUntil: number | null;
  isolation: { dispose(): void } | null;
  remoteTimer: NodeJS.Timeout | null;
  rateLimitedUntil: number;
  /** Retry budget: first attempts and retries in the current and the previous 10-s window. */
  budgetWindow: number;
  firsts: number;
  retries: number;
  previousFirsts: number;
  previousRetries: number;
}

export interface TargetHealthOptions {
  /** Calls seen before the breaker may open: it opens when more than half of the last 20 failed. */
  minCalls: number;
  /** How long an open breaker refuses calls before one probe may go. */
  cooldownMs: number;
  /** Retries allowed beyond 10 per window, as a share of first attempts in the last 10 s. */
  retryBudget: number;
  /** Told when this process's breaker for a target opens or closes (to tell the others). */
  onChange?: (change: BreakerChange) => void;
  now?: () => number;
}

export type Admission = { ok: true } | { ok: false; retryAfterMs: number; reason: 'circuit_open' | 'rate_limited' };

const BUDGET_WINDOW_MS = 10_000;
const BUDGET_FLOOR = 10;
/** How long past a remote breaker's end this process waits to hear it closed before trying on its own. */
const REMOTE_GRACE_FACTOR = 2;

const digest = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 12);

export interface TargetHealth {
  /** The entry for a target (made on first use; keyed by provider and credential). */
  entryOf(target: TargetIdentity): TargetEntry;
  /**
   * Whether a call may go to the target now; when not, how long until one may and why. `waited`:
   * the caller already waited out the provider's Retry-After (its own retry), so that alone does not refuse it.
   */
  admit(entry: TargetEntry, waited?: boolean): Admission;
  /** Runs one attempt under the target's breaker; a CallFailure that counts against the target counts. */
  run<T>(entry: TargetEntry, attempt: () => Promise<T>): Promise<T>;
  /** What `run` threw, with the breaker's own refusal (a race lost to another call) as a circuit_open CallFailure. */
  refusedAsFailure(entry: TargetEntry, err: unknown): unknown;
  /** A first attempt (a request) reached the target: it earns the target retries. */
  noteRequest(entry: TargetEntry): void;
  /** Whether the target's budget allows one more retry (and spends it when it does). */
  takeRetry(entry: TargetEntry): boolean;
  /** The provider asked not to be called for `ms` (Retry-After on a 429). */
  noteRetryAfter(entry: TargetEntry, ms: number): void;
  /** Another process opened or closed the breaker for `change.key`. */
  applyRemote(change: BreakerChange): void;
  /** Every target seen, as it stands now. */
  read(): BreakerReading[];
  /** Keys of the targets this process holds open on another process's word. */
  remoteKeys(): string[];
  close(): void;
}

export function createTargetHealth(options: TargetHealthOptions): TargetHealth {
  const now = options.now ?? Date.now;
  const entries = new Map<string, TargetEntry>();
  // Keys are digests of the credential: computed once per credential and provider (a provider's
  // base URL is fixed by the configuration), found again with two map reads and no string building.
  const keys = new Map<string, Map<string, { key: string; credentialId: string }>>();
  let applyingRemote = false;
  // Remote openings of targets this process has not called yet (applied on the first call).
  const pendingRemote = new Map<string, number>();

  function keyOf(target: TargetIdentity) {
    let byProvider = keys.get(target.apiKey);
    let known = byProvider?.get(target.provider);
    if (!known) {
      const credentialId = digest(`${target.baseURL}\n${target.apiKey}`);
      known = { key: `${target.provider}:${target.tenantKey ? 'tenant' : 'platform'}:${credentialId}`, credentialId };
      if (keys.size > 10_000) keys.clear();
      if (!byProvider) keys.set(target.apiKey, (byProvider = new Map()));
      byProvider.set(target.provider, known);
    }
    return known;
  }

  function tell(entry: TargetEntry, state: 'open' | 'closed') {
    if (applyingRemote) return;
    const openUntil = state === 'open' ? (entry.openedAt ?? now()) + options.cooldownMs : 0;
    options.onChange?.({ key: entry.key, provider: entry.provider, credential: entry.credential, state, openUntil });
  }

  function create(target: TargetIdentity): TargetEntry {
    const { key, credentialId } = keyOf(target);
    const policy = circuitBreaker(
      handleWhen((err) => err instanceof CallFailure && err.failure.countsAgainstTarget),
      { halfOpenAfter: options.cooldownMs, breaker: new CountBreaker({ threshold: 0.5, size: 20, minimumNumberOfCalls: Math.min(20, options.minCalls) }) },
    );
    const entry: TargetEntry = {
      key, provider: target.provider, credential: target.tenantKey ? 'tenant' : 'platform', credentialId, policy,
      openedAt: null, remoteUntil: null, isolation: null, remoteTimer: null, rateLimitedUntil: 0,
      budgetWindow: 0, firsts: 0, retries: 0, previousFirsts: 0, previousRetries: 0,
    };
    policy.onBreak((reason) => {
      if ('isolated' in reason) return;
      entry.openedAt = now();
      tell(entry, 'open');
    });
    policy.onReset(() => {
      entry.openedAt = null;
      tell(entry, 'closed');
    });
    return entry;
  }

  function entryOf(target: TargetIdentity): TargetEntry {
    const { key } = keyOf(target);
    let entry = entries.get(key);
    if (!entry) {
      entries.set(key, (entry = create(target)));
      // A remote opening heard before this process first called the target applies now.
      const until = pendingRemote.get(key);
      if (until !== undefined) {
        pendingRemote.delete(key);
        if (until > now()) holdOpen(entry, until);
      }
    }
    return entry;
  }

  function admit(entry: TargetEntry, waited = false): Admission {
    const at = now();
    switch (entry.policy.state) {
      case CircuitState.Closed:
        break;
      case CircuitState.Open: {
        // Due for its probe: let this call be it (the breaker half-opens on it).
        const until = (entry.openedAt ?? at) + options.cooldownMs;
        if (at < until) return { ok: false, retryAfterMs: until - at, reason: 'circuit_open' };
        break;
      }
      case CircuitState.HalfOpen:
        // A probe is in flight: the others do not wait on it (cockatiel would make them).
        return { ok: false, retryAfterMs: Math.min(options.cooldownMs, 1000), reason: 'circuit_open' };
      case CircuitState.Isolated:
        return { ok: false, retryAfterMs: Math.max(1000, (entry.remoteUntil ?? at) - at), reason: 'circuit_open' };
    }
    if (!waited && entry.rateLimitedUntil > at) return { ok: false, retryAfterMs: entry.rateLimitedUntil - at, reason: 'rate_limited' };
    return { ok: true };
  }

  // No frame of its own: a lost race with the breaker (BrokenCircuitError) is turned into a
  // circuit_open failure by the route (refusedAsFailure), which catches every attempt's error anyway.
  const run = <T>(entry: TargetEntry, attempt: () => Promise<T>): Promise<T> => entry.policy.execute(attempt);

  function refusedAsFailure(entry: TargetEntry, err: unknown): unknown {
    if (!(err instanceof BrokenCircuitError)) return err;
    // Lost a race with another call that opened it or took the probe: no call was made.
    const refused = admit(entry);
    return new CallFailure(circuitOpen(refused.ok ? options.cooldownMs : refused.retryAfterMs));
  }

  function rollBudget(entry: TargetEntry) {
    const window = Math.floor(now() / BUDGET_WINDOW_MS);
    if (window === entry.budgetWindow) return;
    const adjacent = window === entry.budgetWindow + 1;
    entry.previousFirsts = adjacent ? entry.firsts : 0;
    entry.previousRetries = adjacent ? entry.retries : 0;
    entry.firsts = 0;
    entry.retries = 0;
    entry.budgetWindow = window;
  }

  function noteRequest(entry: TargetEntry) {
    rollBudget(entry);
    entry.firsts += 1;
  }

  function takeRetry(entry: TargetEntry): boolean {
    rollBudget(entry);
    const allowed = BUDGET_FLOOR + options.retryBudget * (entry.firsts + entry.previousFirsts);
    if (entry.retries + entry.previousRetries >= allowed) return false;
    entry.retries += 1;
    return true;
  }

  function noteRetryAfter(entry: TargetEntry, ms: number) {
    entry.rateLimitedUntil = Math.max(entry.rateLimitedUntil, now() + ms);
  }

  function release(entry: TargetEntry) {
    if (entry.remoteTimer) clearTimeout(entry.remoteTimer);
    entry.remoteTimer = null;
    entry.remoteUntil = null;
    const isolation = entry.isolation;
    entry.isolation = null;
    if (!isolation) return;
    applyingRemote = true;
    try {
      isolation.dispose();
    } finally {
      applyingRemote = false;
    }
  }

  function applyRemote(change: BreakerChange) {
    const entry = entries.get(change.key);
    if (!entry) {
      // A target this process never called: remembered only once it is called (entryOf), so a
      // remote open is kept until then.
      if (change.state === 'open') pendingRemote.set(change.key, change.openUntil);
      else pendingRemote.delete(change.key);
      return;
    }
    if (change.state === 'closed') {
      pendingRemote.delete(change.key);
      if (entry.isolation) release(entry);
      else if (entry.policy.state === CircuitState.Open) {
        // Another process's probe closed it: this one needs no probe of its own.
        applyingRemote = true;
        try {
          entry.policy.isolate().dispose();
        } finally {
          applyingRemote = false;
        }
        entry.openedAt = null;
      }
      return;
    }
    holdOpen(entry, change.openUntil);
  }

  function holdOpen(entry: TargetEntry, openUntil: number) {
    if (entry.policy.state === CircuitState.Open || entry.policy.state === CircuitState.HalfOpen) return; // its own breaker already
    entry.remoteUntil = Math.max(entry.remoteUntil ?? 0, openUntil);
    if (!entry.isolation) {
      applyingRemote = true;
      try {
        entry.isolation = entry.policy.isolate();
      } finally {
        applyingRemote = false;
      }
    }
    // Not heard closed by then (the opener has no traffic to probe with, or is gone): try on our own.
    if (entry.remoteTimer) clearTimeout(entry.remoteTimer);
    const wait = Math.max(0, entry.remoteUntil - now()) + options.cooldownMs * REMOTE_GRACE_FACTOR;
    entry.remoteTimer = setTimeout(() => release(entry), wait);
    entry.remoteTimer.unref();
  }

  function stateOf(entry: TargetEntry): BreakerStateName {
    switch (entry.policy.state) {
      case CircuitState.Closed:
        return 'closed';
      case CircuitState.HalfOpen:
        return 'half_open';
      default:
        return 'open';
    }
  }

  function read(): BreakerReading[] {
    const at = now();
    return [...entries.values()].map((entry) => ({
      provider: entry.provider,
      credential: entry.credential,
      credentialId: entry.credentialId,
      state: stateOf(entry),
      remote: entry.isolation !== null,
      openUntil: entry.isolation ? entry.remoteUntil : entry.openedAt !== null ? entry.openedAt + options.cooldownMs : null,
      rateLimitedUntil: entry.rateLimitedUntil > at ? entry.rateLimitedUntil : null,
    }));
  }

  return {
    entryOf,
    admit,
    run,
    refusedAsFailure,
    noteRequest,
    takeRetry,
    noteRetryAfter,
    applyRemote,
    read,
    remoteKeys: () => [...entries.values()].filter((e) => e.isolation).map((e) => e.key).concat([...pendingRemote.keys()]),
    close() {
      for (const entry of entries.values()) if (entry.remoteTimer) clearTimeout(entry.remoteTimer);
    },
  };
}
