// The router's parts on their own: a target's breaker (opening, probing, closing, held open on
// another process's word), its retry budget, and the route's order of targets. Time is vitest's fake
// clock, moved by hand: nothing here waits.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { callRoute, type RoutePolicy } from '../../server/llm/call-route.js';
import type { ModelTarget } from '../../server/llm/llm.types.js';
import { classifyCallError, readRetryAfterMs, type ProviderFailure } from '../../server/llm/provider-errors.js';
import { CallFailure, createTargetHealth, type BreakerChange, type TargetHealth } from '../../server/llm/target-health.js';
import { AppError } from '../../server/errors.js';

const target = (provider: string, model: string, apiKey = 'k-platform', tenantKey = false): ModelTarget => ({
  provider, model, modelRef: provider === 'openai' ? model : `${provider}/${model}`, baseURL: `http://${provider}.test/v1`, apiKey, tenantKey,
});

const failure = (reason: ProviderFailure['reason'], extra: Partial<ProviderFailure> = {}): CallFailure =>
  new CallFailure({ reason, retryAfterMs: null, retryable: reason !== 'rejected', countsAgainstTarget: reason !== 'rejected', fallbackable: reason !== 'rejected', ...extra });

let health: TargetHealth;
let changes: BreakerChange[];
const COOLDOWN = 10_000;

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(new Date('2026-11-28T12:00:00Z'));
  changes = [];
  health = createTargetHealth({ minCalls: 4, cooldownMs: COOLDOWN, retryBudget: 0.1, onChange: (c) => changes.push(c) });
});
afterEach(() => {
  health.close();
  vi.useRealTimers();
});

const fail = (t: ModelTarget, reason: ProviderFailure['reason'] = 'server_error') => health.run(health.entryOf(t), async () => Promise.reject(failure(reason))).catch(() => undefined);
const succeed = (t: ModelTarget) => health.run(health.entryOf(t), async () => 'ok');

describe('a target\'s breaker', () => {
  it('opens once over half of its calls failed (with the minimum seen), refuses calls, then lets one probe close it', async () => {
    const primary = target('openai', 'gpt-4o-mini');
    const entry = health.entryOf(primary);
    for (let i = 0; i < 3; i++) await fail(primary);
    expect(health.admit(entry)).toEqual({ ok: true }); // 3 calls: under the minimum of 4
    await fail(primary);
    expect(health.admit(entry)).toEqual({ ok: false, retryAfterMs: COOLDOWN, reason: 'circuit_open' });
    expect(changes).toEqual([{ key: entry.key, provider: 'openai', credential: 'platform', state: 'open', openUntil: Date.now() + COOLDOWN }]);

    vi.advanceTimersByTime(COOLDOWN);
    expect(health.admit(entry)).toEqual({ ok: true }); // due for its probe
    await succeed(primary);
    expect(health.read()).toEqual([expect.objectContaining({ provider: 'openai', credential: 'platform', state: 'closed' })]);
    expect(changes.map((c) => c.state)).toEqual(['open', 'closed']);
  });

  it('a request the provider refused does not count against the target', async () => {
    const primary = target('openai', 'gpt-4o-mini');
    for (let i = 0; i < 10; i++) await fail(primary, 'rejected');
    expect(health.admit(health.entryOf(primary))).toEqual({ ok: true });
  });

  it('keys apart the platform\'s credential and each tenant\'s own: one opening cools none of the others', async () => {
    const platform = target('openai', 'gpt-4o-mini');
    const tenantA = target('openai', 'gpt-4o-mini', 'sk-tenant-a', true);
    const tenantB = target('openai', 'gpt-4o-mini', 'sk-tenant-b', true);
    for (let i = 0; i < 4; i++) await fail(tenantA);
    expect(health.admit(health.entryOf(tenantA)).ok).toBe(false);
    expect(health.admit(health.entryOf(tenantB)).ok).toBe(true);
    expect(health.admit(health.entryOf(platform)).ok).toBe(true);
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ credential: 'tenant' });
    expect(changes[0].key).not.toContain('sk-tenant-a');
  });

  it('another process\'s opening holds it open here until that process says it closed', async () => {
    const primary = target('openai', 'gpt-4o-mini');
    const entry = health.entryOf(primary);
    health.applyRemote({ key: entry.key, provider: 'openai', credential: 'platform', state: 'open', openUntil: Date.now() + COOLDOWN });
    expect(health.admit(entry)).toMatchObject({ ok: false, reason: 'circuit_open' });
    expect(health.read()[0]).toMatchObject({ state: 'open', remote: true });
    expect(changes).toEqual([]); // never announced back
    health.applyRemote({ key: entry.key, provider: 'openai', credential: 'platform', state: 'closed', openUntil: 0 });
    expect(health.admit(entry)).toEqual({ ok: true });
    expect(changes).toEqual([]);
  });

  it('a remote opening heard before this process ever called the target applies on its first call', () => {
    const primary = target('openai', 'gpt-4o-mini');
    // The key another process announces (the same provider and credential), computed elsewhere.
    const other = createTargetHealth({ minCalls: 4, cooldownMs: COOLDOWN, retryBudget: 0.1 });
    const key = other.entryOf(primary).key;
    health.applyRemote({ key, provider: 'openai', credential: 'platform', state: 'open', openUntil: Date.now() + COOLDOWN });
    expect(health.read()).toEqual([]);
    expect(health.admit(health.entryOf(primary))).toMatchObject({ ok: false, reason: 'circuit_open' });
  });

  it('nothing heard of the opener past its end and a grace: this process tries on its own', () => {
    const primary = target('openai', 'gpt-4o-mini');
    const entry = health.entryOf(primary);
    health.applyRemote({ key: entry.key, provider: 'openai', credential: 'platform', state: 'open', openUntil: Date.now() + COOLDOWN });
    vi.advanceTimersByTime(COOLDOWN * 3 + 1);
    expect(health.admit(entry)).toEqual({ ok: true });
  });
});

describe('the retry budget', () => {
  it('allows 10 retries per window plus a tenth of the requests', () => {
    const primary = target('openai', 'gpt-4o-mini');
    const entry = health.entryOf(primary);
    for (let i = 0; i < 100; i++) health.noteRequest(entry);
    let granted = 0;
    while (health.takeRetry(entry)) granted++;
    expect(granted).toBe(20);
  });
});

describe('a route', () => {
  const policy = (): RoutePolicy => ({ health, retries: 2, maxWaitMs: 20_000, sleep: async () => undefined });

  it('retries the primary, then the fallback serves; a refused request goes nowhere else', async () => {
    const primary = target('openai', 'gpt-4o-mini');
    const backup = target('backup', 'fake-model');
    const calls: string[] = [];
    const served = await callRoute(policy(), [primary], {}, async (t) => {
      calls.push(t.modelRef);
      if (t === primary) throw failure('server_error', { status: 503 });
      return 'answer';
    }, async () => [backup]);
    expect(served).toMatchObject({ value: 'answer', fallback: true, attempts: 4 });
    expect(served.target).toBe(backup);
    expect(calls).toEqual(['gpt-4o-mini', 'gpt-4o-mini', 'gpt-4o-mini', 'backup/fake-model']);

    calls.length = 0;
    const refused = await callRoute(policy(), [primary], {}, async (t) => {
      calls.push(t.modelRef);
      throw failure('rejected', { status: 400, retryable: false, fallbackable: false });
    }, async () => [backup]).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).details).toMatchObject({ reason: 'rejected', status: 400, attempts: 1 });
    expect(calls).toEqual(['gpt-4o-mini']);
  });

  it('a Retry-After the primary asks for moves the call to a healthy fallback at once', async () => {
    const primary = target('openai', 'gpt-4o-mini');
    const backup = target('backup', 'fake-model');
    const calls: string[] = [];
    const served = await callRoute(policy(), [primary], {}, async (t) => {
      calls.push(t.modelRef);
      if (t === primary) throw failure('rate_limited', { status: 429, retryAfterMs: 5000 });
      return 'answer';
    }, async () => [backup]);
    expect(served.target).toBe(backup);
    expect(calls).toEqual(['gpt-4o-mini', 'backup/fake-model']);
    // The primary is left alone until its Retry-After has passed.
    expect(health.admit(health.entryOf(primary))).toMatchObject({ ok: false, reason: 'rate_limited' });
  });

  it('every target cooling down: 503 LLM_UNAVAILABLE with the soonest Retry-After, and no call', async () => {
    const primary = target('openai', 'gpt-4o-mini');
    for (let i = 0; i < 4; i++) await fail(primary);
    const err = await callRoute(policy(), [primary], {}, async () => 'never').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'LLM_UNAVAILABLE', status: 503, headers: { 'Retry-After': String(COOLDOWN / 1000) } });
    expect((err as AppError).details).toMatchObject({ reason: 'circuit_open', retryable: true, retry_after_seconds: COOLDOWN / 1000 });
  });
});

describe('classifying what a call threw', () => {
  it('undici\'s "terminated" and socket resets are provider failures; our own errors are not', () => {
    expect(classifyCallError(new TypeError('terminated'))).toMatchObject({ reason: 'truncated', retryable: true });
    expect(classifyCallError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toMatchObject({ reason: 'connection', retryable: true });
    expect(classifyCallError(new SyntaxError('Unexpected end of JSON input'))).toMatchObject({ reason: 'invalid_response', retryable: true });
    expect(classifyCallError(new AppError('BUDGET_EXHAUSTED', 'no'))).toBeNull();
  });

  it('reads Retry-After in milliseconds, seconds or as a date', () => {
    const headers = (h: Record<string, string>) => new Headers(h);
    expect(readRetryAfterMs(headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(readRetryAfterMs(headers({ 'retry-after': '2' }))).toBe(2000);
    expect(readRetryAfterMs(headers({ 'retry-after': new Date(Date.now() + 3000).toUTCString() }))).toBe(3000);
    expect(readRetryAfterMs(headers({}))).toBeNull();
  });
});
