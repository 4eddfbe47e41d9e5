// Model providers that fail: what callers see during an outage, how fast the other processes learn
// of it, and what routing costs when nothing fails.
//
// 1. Outage. Two fake providers (the primary at OPENAI_BASE_URL and `backup` from LLM_PROVIDERS,
//    with LLM_FALLBACK_MODELS naming it), each in a worker thread of its own, and two Liya processes
//    on one database, as users run them (`liya start`, defaults): A takes a steady load at a fixed
//    rate (autocannon, staggered so the requests come evenly rather than in one burst a second; POST
//    /v1/hiring/career-path, every input unique so the output cache never answers), B takes none and
//    is only observed. From 5 s into the load the primary answers every chat call 503 (no
//    Retry-After) for 30 s; the breaker keeps its default cooldown (10 s). Counted from the providers' own logs (each request
//    carries a marker, so attempts are counted per request): requests, answers other than 2xx,
//    attempts on the primary before and after its breaker opened (the moment the provider_breakers
//    row was written, polled every 20 ms), upstream attempts per request once it was open, answers
//    the fallback served, and that the primary serves again once the outage ends (a probe closed
//    the breaker). Targets: no caller sees an error; at most 1.1 upstream attempts per request once
//    the breaker is open (every provider counted, not only the primary).
// 2. Propagation. A fresh pair of processes with a short breaker cooldown: the outage is switched
//    on while a light load runs on A, and B's GET /admin/diagnostics is polled every 10 ms until it
//    shows the primary's breaker open on A's word (remote: true); then the outage ends and the
//    probe closes it everywhere; a few times. The time from A's row (updated_at) to B's first
//    answer showing it open. Target: at most 1 s. (B called the primary before, so its own breaker
//    shows what it heard, not the shared table read for targets it never called.)
// 3. Router overhead. In this process, every provider healthy: main-thread CPU per call of
//    gateway.completeChat (a route with a fallback, usage handed to a sink so nothing is written)
//    against the same request body sent with the openai SDK client built the same way, both to the
//    fake primary (its thread's CPU is not counted), in alternating batches so drift falls on both.
//    Target: at most 50 µs more per call. Also, without I/O: the gateway around an SDK client that
//    answers at once, the route with its breakers, and the breaker alone.
//
// Figures are printed and written to results/providers.json; targets are reported PASS/MISS, never
// asserted. A run breaks (throws) only when something other than a figure is wrong.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import { ensureDatabase, type EntityManager } from '../../db/orm.js';
import { loadConfig } from '../../server/config.js';
import { callRoute } from '../../server/llm/call-route.js';
import { createOpenAiClient, loadOpenAiSdk } from '../../server/llm/client-cache.js';
import { createLlmGateway } from '../../server/llm/llm-gateway.js';
import type { ChatCallRequest, ModelTarget } from '../../server/llm/llm.types.js';
import { waitFor } from '../support/wait-for.js';
import { type ProviderCall, type ProvidersFakeThread, startProvidersFakeThread } from './providers-fake-thread.js';
import {
  benchDatabase, callJson, Cleanup, fmt, latencyFigures, processCpuUs, signUpBenchTenant, sourceHash, startLiyaProcess, table, withDatabase,
} from './lib.js';

const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'providers.json');
const DATABASE = 'liya_bench_providers';
const ADMIN_SECRET = 'bench-admin-secret-0123456789abcdef';
const ROUTE = '/v1/hiring/career-path';
const MODEL = 'gpt-4o-mini';
const FALLBACK_REF = `backup/${MODEL}`;
const PRIMARY_KEY = 'sk-bench-primary';
const BACKUP_KEY = 'sk-bench-backup';
const ROLE = 'Data analyst with four years of SQL, Python and dashboards, aiming for analytics engineering';
const TARGETS = { non2xx: 0, attemptsPerRequestAfterOpen: 1.1, propagationMs: 1000, overheadUs: 50 };
const ROW_POLL_MS = 20;
const PROPAGATION_POLL_MS = 10;

export interface ProvidersSettings {
  /** Requests per second on A in the outage phase (autocannon's overallRate). */
  rate: number;
  /** Connections carrying that rate (a slow answer holds one, so there are spare ones). */
  connections: number;
  /** Seconds of load in the outage phase. */
  loadSeconds: number;
  /** When the outage starts and how long it lasts, in seconds. */
  outageStartSeconds: number;
  outageSeconds: number;
  /** Times the propagation phase opens and closes the breaker. */
  propagationRepeats: number;
  /** LLM_BREAKER_COOLDOWN_MS of the propagation phase's processes. */
  propagationCooldownMs: number;
  /** Calls per arm in the router overhead phase. */
  calls: number;
}

const runBody = (marker: string) => JSON.stringify({ input: { user_id: 'bench-user', current_role: `${ROLE} (bench-req-${marker})` } });
const adminHeaders = { 'x-admin-secret': ADMIN_SECRET };
const now = () => performance.timeOrigin + performance.now();

let sequence = 0;
/** One intent run with a new marker; the status. */
async function runOnce(url: string, apiKey: string, prefix: string): Promise<number> {
  const res = await fetch(`${url}${ROUTE}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: runBody(`${prefix}${process.pid}x${++sequence}`),
  });
  const text = await res.text();
  if (res.status !== 200) console.log(`  ${prefix} run answered HTTP ${res.status}: ${text.slice(0, 300)}`);
  return res.status;
}

/** `concurrency` callers running intents one after another on `url` until stopped; statuses counted. */
function startDriver(url: string, apiKey: string, concurrency: number, prefix: string) {
  let stopped = false;
  const statuses: Record<string, number> = {};
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopped) {
      const status = await runOnce(url, apiKey, prefix).catch(() => 0);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  });
  return {
    statuses,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

interface BreakerDto { provider: string; credential: string; state: string; remote: boolean; open_until: string | null }

/** The primary's (platform-key) breaker as a process's GET /admin/diagnostics shows it (null: not listed). */
async function diagnosticsBreaker(url: string): Promise<BreakerDto | null> {
  const res = await callJson(url, 'GET', '/admin/diagnostics', adminHeaders);
  if (res.status !== 200) throw new Error(`GET /admin/diagnostics: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  const breakers = (res.body?.data?.breakers ?? []) as BreakerDto[];
  return breakers.find((b) => b.provider === 'openai' && b.credential === 'platform') ?? null;
}

/** The primary's shared breaker row: when it was written and until when it is open (epoch ms), or null. */
async function breakerRow(db: pg.Client): Promise<{ updatedAt: number; openUntil: number } | null> {
  const { rows } = await db.query<{ updated_at: number; open_until: number }>(
    `select (extract(epoch from updated_at) * 1000)::float8 as updated_at, (extract(epoch from open_until) * 1000)::float8 as open_until
       from provider_breakers where provider = 'openai' and credential = 'platform'`,
  );
  return rows[0] ? { updatedAt: rows[0].updated_at, openUntil: rows[0].open_until } : null;
}

/**
 * Polls the primary's row every `everyMs` until stopped: each opening (a new updated_at: the first,
 * then each failed probe's) and each closing (the row gone), with when the poll saw it.
 */
function watchBreakerRow(databaseUrl: string, everyMs: number) {
  const events: { event: 'open' | 'closed'; updatedAt: number | null; seenAt: number }[] = [];
  let stopped = false;
  const client = new pg.Client({ connectionString: databaseUrl });
  const done = (async () => {
    await client.connect();
    try {
      let last: number | null = null;
      while (!stopped) {
        const row = await breakerRow(client);
        const seenAt = now();
        if (row && row.updatedAt !== last) events.push({ event: 'open', updatedAt: row.updatedAt, seenAt });
        if (!row && last !== null) events.push({ event: 'closed', updatedAt: null, seenAt });
        last = row?.updatedAt ?? null;
        await sleep(everyMs);
      }
    } finally {
      await client.end();
    }
  })();
  return {
    events,
    firstOpen: () => events.find((e) => e.event === 'open') ?? null,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/**
 * Polls a process's diagnostics every `everyMs` until `until()` holds of the primary's breaker or
 * `deadline` (epoch ms) passes; the first answer that satisfied it: when its request was sent and
 * when its answer arrived (the state changed before the latter).
 */
async function pollDiagnostics(url: string, everyMs: number, until: (b: BreakerDto | null) => boolean, deadline: number) {
  let polls = 0;
  const roundTrips: number[] = [];
  while (now() < deadline) {
    const sentAt = now();
    const breaker = await diagnosticsBreaker(url);
    const receivedAt = now();
    polls++;
    roundTrips.push(receivedAt - sentAt);
    if (until(breaker)) return { sentAt, receivedAt, polls, roundTrip: latencyFigures(roundTrips), breaker };
    await sleep(everyMs);
  }
  return null;
}

const openRemote = (b: BreakerDto | null) => b?.state === 'open' && b.remote;
const closed = (b: BreakerDto | null) => b?.state === 'closed';

async function sleepUntil(at: number) {
  const wait = at - now();
  if (wait > 0) await sleep(wait);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? (sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2) : 0;
};
const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);

function liyaEnv(primaryUrl: string, backupUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OPENAI_BASE_URL: primaryUrl,
    OPENAI_API_KEY: PRIMARY_KEY,
    DEFAULT_MODEL: MODEL,
    LLM_PROVIDERS: JSON.stringify([{ name: 'backup', baseUrl: backupUrl, apiKey: BACKUP_KEY }]),
    LLM_FALLBACK_MODELS: JSON.stringify([FALLBACK_REF]),
    ADMIN_SECRET,
    ...extra,
  };
}

// ---------------------------------------------------------------- a steady load

/** Load generators started apart within each second (see steadyLoad). */
const STAGGER = 10;

/**
 * `rate` requests per second for `seconds`, as evenly as autocannon allows. Its rate limit lets each
 * connection send its share at the start of every second, so one run is one burst a second (and a
 * breaker's probe would wait for the next burst); STAGGER runs started 1/STAGGER s apart, each with
 * its share of the rate and the connections, send a burst of rate/STAGGER every 1/STAGGER s. They run
 * in this thread, which serves nothing under test (the servers are processes of their own), so every
 * response's status and latency is seen as it comes (latencies as measured: no correction for
 * coordinated omission).
 */
async function steadyLoad(options: { url: string; headers: Record<string, string>; body: string; rate: number; connections: number; seconds: number }) {
  const share = (total: number, i: number) => Math.floor(total / STAGGER) + (i < total % STAGGER ? 1 : 0);
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  const runs: Promise<Result>[] = [];
  for (let i = 0; i < STAGGER; i++) {
    const rate = share(options.rate, i);
    if (rate === 0) continue;
    if (i > 0) await sleep(1000 / STAGGER);
    const run = autocannon({
      url: options.url,
      method: 'POST',
      headers: options.headers,
      body: options.body,
      idReplacement: true,
      connections: Math.max(1, share(options.connections, i)),
      overallRate: rate,
      duration: options.seconds,
      timeout: 30,
      ignoreCoordinatedOmission: true,
    });
    run.on('response', (_client, statusCode, _bytes, ms) => {
      latencies.push(ms);
      statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    });
    runs.push(Promise.resolve(run));
  }
  const results = await Promise.all(runs);
  const figures = latencyFigures(latencies);
  const sorted = [...latencies].sort((x, y) => x - y);
  return {
    answers: latencies.length,
    answers2xx: Object.entries(statusCodes).filter(([code]) => code.startsWith('2')).reduce((n, [, count]) => n + count, 0),
    statusCodes,
    errors: results.reduce((n, r) => n + r.errors, 0),
    timeouts: results.reduce((n, r) => n + r.timeouts, 0),
    latency: { p50: figures.p50Ms, p90: sorted[Math.min(sorted.length - 1, Math.floor(0.9 * sorted.length))] ?? 0, p99: figures.p99Ms, max: figures.maxMs },
  };
}

// ---------------------------------------------------------------- 1. the outage

type Fakes = { primary: ProvidersFakeThread; backup: ProvidersFakeThread };

type Window = 'healthy' | 'outage, breaker closed' | 'outage, breaker open' | 'after the outage';

interface WindowFigures {
  window: Window;
  /** Requests whose first upstream attempt fell in the window. */
  requests: number;
  primaryAttempts: number;
  backupAttempts: number;
  attemptsPerRequest: number;
  primaryAttemptsPerRequest: number;
  /** Requests the fallback answered. */
  fallbackServed: number;
  primaryServed: number;
}

/** Splits the requests by when their first attempt reached a provider; attempts and who served each. */
function splitByWindow(primary: ProviderCall[], backup: ProviderCall[], marks: { outageOn: number; opened: number; outageOff: number }) {
  const byMarker = new Map<string, { first: number; primary: number; backup: number; servedBy: 'primary' | 'backup' | null }>();
  const note = (call: ProviderCall, side: 'primary' | 'backup') => {
    if (!call.marker) return;
    let entry = byMarker.get(call.marker);
    if (!entry) byMarker.set(call.marker, (entry = { first: call.at, primary: 0, backup: 0, servedBy: null }));
    entry.first = Math.min(entry.first, call.at);
    entry[side] += 1;
    if (call.status === 200) entry.servedBy = side;
  };
  for (const call of primary) note(call, 'primary');
  for (const call of backup) note(call, 'backup');
  const windowOf = (at: number): Window => (at < marks.outageOn ? 'healthy' : at < marks.opened ? 'outage, breaker closed' : at < marks.outageOff ? 'outage, breaker open' : 'after the outage');
  const windows: Window[] = ['healthy', 'outage, breaker closed', 'outage, breaker open', 'after the outage'];
  const figures = windows.map((window): WindowFigures => {
    const entries = [...byMarker.values()].filter((e) => windowOf(e.first) === window);
    const primaryAttempts = entries.reduce((n, e) => n + e.primary, 0);
    const backupAttempts = entries.reduce((n, e) => n + e.backup, 0);
    return {
      window,
      requests: entries.length,
      primaryAttempts,
      backupAttempts,
      attemptsPerRequest: entries.length ? (primaryAttempts + backupAttempts) / entries.length : 0,
      primaryAttemptsPerRequest: entries.length ? primaryAttempts / entries.length : 0,
      fallbackServed: entries.filter((e) => e.servedBy === 'backup').length,
      primaryServed: entries.filter((e) => e.servedBy === 'primary').length,
    };
  });
  const unserved = [...byMarker.values()].filter((e) => e.servedBy === null).length;
  return { figures, requests: byMarker.size, unserved, withoutMarker: [...primary, ...backup].filter((c) => !c.marker).length };
}

async function runOutagePhase(
  settings: ProvidersSettings,
  databaseUrl: string,
  fakes: Fakes,
  cleanup: Cleanup,
) {
  const { primary, backup } = fakes;
  const pair = new Cleanup();
  cleanup.add('outage phase processes', () => pair.run());
  console.log('starting liya A and B on one database (liya start, defaults; both fake providers in worker threads) ...');
  const a = await startLiyaProcess(databaseUrl, pair, liyaEnv(primary.url, backup.url));
  const b = await startLiyaProcess(databaseUrl, pair, liyaEnv(primary.url, backup.url));
  const apiKey = await signUpBenchTenant(a.url, 'Bench Providers Corp');
  // Warm both; B calls the primary once, so its diagnostics show its own breaker (what it heard).
  for (let i = 0; i < 30; i++) if ((await runOnce(a.url, apiKey, 'warm')) !== 200) throw new Error('a warm-up run on A failed');
  for (let i = 0; i < 3; i++) if ((await runOnce(b.url, apiKey, 'warm')) !== 200) throw new Error('a warm-up run on B failed');
  const before = await diagnosticsBreaker(b.url);
  if (!closed(before)) throw new Error(`B's diagnostics do not show the primary's breaker closed after its warm-up: ${JSON.stringify(before)}`);
  await primary.calls(true);
  await backup.calls(true);

  const cooldownMs = loadConfig(liyaEnv(primary.url, backup.url)).LLM_BREAKER_COOLDOWN_MS;
  console.log(
    `outage phase: ${settings.rate} requests/s on A for ${settings.loadSeconds} s (${settings.connections} connections); the primary answers 503 from ` +
      `${settings.outageStartSeconds} s to ${settings.outageStartSeconds + settings.outageSeconds} s; breaker cooldown ${cooldownMs} ms (default) ...`,
  );
  const rowWatch = watchBreakerRow(databaseUrl, ROW_POLL_MS);
  const t0 = now();
  const cpu0 = { a: processCpuUs(a.child.pid!), b: processCpuUs(b.child.pid!) };
  const load = steadyLoad({
    url: `${a.url}${ROUTE}`,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: runBody('[<id>]'),
    rate: settings.rate,
    connections: settings.connections,
    seconds: settings.loadSeconds,
  });
  const outageOnAt = t0 + settings.outageStartSeconds * 1000;
  const outageOffAt = outageOnAt + settings.outageSeconds * 1000;
  // B under load: polled every 10 ms from just before the outage until it shows the breaker open.
  const propagationUnderLoad = (async () => {
    await sleepUntil(outageOnAt - 500);
    return pollDiagnostics(b.url, PROPAGATION_POLL_MS, openRemote, outageOnAt + 15_000);
  })();
  const switches = (async () => {
    await sleepUntil(outageOnAt);
    const on = await primary.outage(true);
    await sleepUntil(outageOffAt);
    const off = await primary.outage(false);
    return { on, off };
  })();
  const result = await load;
  const loadEnd = now();
  const loadSpanS = (loadEnd - t0) / 1000;
  const cpu1 = { a: processCpuUs(a.child.pid!), b: processCpuUs(b.child.pid!) };
  const { on, off } = await switches;
  const seenByB = await propagationUnderLoad;

  // Recovery: the breaker must close on a probe once the outage ended (the load may have ended first).
  let recovery: { closedSeenAt: number | null; firstPrimaryServedAt: number | null; extraRuns: number } = { closedSeenAt: null, firstPrimaryServedAt: null, extraRuns: 0 };
  const recoveryDeadline = now() + 3 * cooldownMs + 10_000;
  while (now() < recoveryDeadline) {
    const closedEvent = rowWatch.events.find((e) => e.event === 'closed' && e.seenAt > off);
    const served = (await primary.calls()).find((c) => c.at > off && c.status === 200);
    if (closedEvent && served) {
      recovery = { closedSeenAt: closedEvent.seenAt, firstPrimaryServedAt: served.at, extraRuns: recovery.extraRuns };
      break;
    }
    if (now() - loadEnd > 500) {
      if ((await runOnce(a.url, apiKey, 'recover')) !== 200) throw new Error('a run after the outage failed');
      recovery.extraRuns++;
    }
    await sleep(100);
  }
  await rowWatch.stop();
  const bAfter = await waitFor(async () => {
    const breaker = await diagnosticsBreaker(b.url);
    return closed(breaker) ? breaker : null;
  }, "B's diagnostics to show the primary's breaker closed again", 2 * cooldownMs + 10_000).catch(() => null);
  const aAfter = await diagnosticsBreaker(a.url);
  // A last request after recovery must be served by the primary.
  const lastMarkerCalls = (await primary.calls()).length;
  const lastStatus = await runOnce(a.url, apiKey, 'after');
  const lastServedByPrimary = lastStatus === 200 && (await primary.calls()).slice(lastMarkerCalls).some((c) => c.status === 200);

  const primaryCalls = await primary.calls(true);
  const backupCalls = await backup.calls(true);
  const opened = rowWatch.firstOpen();
  if (!opened?.updatedAt) throw new Error('the primary\'s breaker never opened during the outage (no provider_breakers row was seen)');
  const openedAt = opened.updatedAt;
  const split = splitByWindow(primaryCalls, backupCalls, { outageOn: on, opened: openedAt, outageOff: off });
  const primaryDuringOutage = primaryCalls.filter((c) => c.at >= on && c.at < off);
  const attemptsBeforeOpen = primaryDuringOutage.filter((c) => c.at < openedAt).length;
  const attemptsAfterOpen = primaryDuringOutage.filter((c) => c.at >= openedAt);
  // Every call the primary got while its breaker was open, outage or not: the probes.
  const closedAt = recovery.closedSeenAt ?? Number.POSITIVE_INFINITY;
  const probes = primaryCalls.filter((c) => c.at >= openedAt && c.at <= closedAt).map((c) => ({ atS: Math.round(c.at - t0) / 1000, status: c.status }));
  const afterOpen = split.figures.find((w) => w.window === 'outage, breaker open')!;
  const requestsSent = result.answers + result.errors;
  const openings = rowWatch.events.filter((e) => e.event === 'open');
  await pair.run();

  const figures = {
    load: {
      rate: settings.rate,
      connections: settings.connections,
      seconds: settings.loadSeconds,
      requestsSent,
      reqPerSec: result.answers / loadSpanS,
      answers2xx: result.answers2xx,
      non2xx: result.answers - result.answers2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes: result.statusCodes,
      latencyMs: result.latency,
      cpuUsPerRequest: { a: (cpu1.a - cpu0.a) / Math.max(1, requestsSent), b: (cpu1.b - cpu0.b) / Math.max(1, requestsSent) },
    },
    timeline: {
      outageOnS: (on - t0) / 1000,
      breakerOpenedS: (openedAt - t0) / 1000,
      breakerOpenedAfterOutageMs: openedAt - on,
      /** Openings of the primary's breaker: the first, then one per failed probe. */
      openings: openings.length,
      outageOffS: (off - t0) / 1000,
      breakerClosedSeenS: recovery.closedSeenAt === null ? null : (recovery.closedSeenAt - t0) / 1000,
      firstPrimaryServedAfterOutageMs: recovery.firstPrimaryServedAt === null ? null : recovery.firstPrimaryServedAt - off,
      loadEndedS: (loadEnd - t0) / 1000,
      runsAfterTheLoadToRecover: recovery.extraRuns,
    },
    primaryAttemptsDuringOutage: {
      total: primaryDuringOutage.length,
      beforeOpen: attemptsBeforeOpen,
      afterOpen: attemptsAfterOpen.length,
      afterOpenAtS: attemptsAfterOpen.map((c) => Math.round(c.at - t0) / 1000),
    },
    probes,
    afterOpen: {
      requests: afterOpen.requests,
      upstreamAttempts: afterOpen.primaryAttempts + afterOpen.backupAttempts,
      attemptsPerRequest: afterOpen.attemptsPerRequest,
      primaryAttemptsPerRequest: afterOpen.primaryAttemptsPerRequest,
    },
    fallbackServed: split.figures.reduce((n, w) => n + w.fallbackServed, 0),
    windows: split.figures,
    requestsSeenUpstream: split.requests,
    requestsNeverServedUpstream: split.unserved,
    callsWithoutMarker: split.withoutMarker,
    propagationUnderLoadMs: seenByB ? seenByB.receivedAt - openedAt : null,
    propagationUnderLoadPoll: seenByB ? { polls: seenByB.polls, roundTripP50Ms: seenByB.roundTrip.p50Ms, roundTripMaxMs: seenByB.roundTrip.maxMs } : null,
    recovered: {
      breakerClosed: recovery.closedSeenAt !== null,
      primaryServesAgain: recovery.firstPrimaryServedAt !== null && lastServedByPrimary,
      aDiagnostics: aAfter,
      bDiagnostics: bAfter,
    },
  };
  return { figures, apiKey };
}

// ---------------------------------------------------------------- 2. propagation

async function runPropagationPhase(
  settings: ProvidersSettings,
  databaseUrl: string,
  fakes: Fakes,
  db: pg.Client,
  apiKey: string,
  cleanup: Cleanup,
) {
  const { primary, backup } = fakes;
  // A breaker left by the previous pair (it should have closed) would be read by the new pair at start.
  await db.query(`delete from provider_breakers`);
  const pair = new Cleanup();
  cleanup.add('propagation phase processes', () => pair.run());
  console.log(`propagation phase: a new pair with LLM_BREAKER_COOLDOWN_MS=${settings.propagationCooldownMs}; ${settings.propagationRepeats} outages, B polled every ${PROPAGATION_POLL_MS} ms ...`);
  const env = liyaEnv(primary.url, backup.url, { LLM_BREAKER_COOLDOWN_MS: String(settings.propagationCooldownMs) });
  const a = await startLiyaProcess(databaseUrl, pair, env);
  const b = await startLiyaProcess(databaseUrl, pair, env);
  for (let i = 0; i < 10; i++) if ((await runOnce(a.url, apiKey, 'warm')) !== 200) throw new Error('a warm-up run on A failed');
  for (let i = 0; i < 3; i++) if ((await runOnce(b.url, apiKey, 'warm')) !== 200) throw new Error('a warm-up run on B failed');
  if (!closed(await diagnosticsBreaker(b.url))) throw new Error('B does not show the primary\'s breaker closed after its warm-up');

  const repeats: { propagationMs: number; lowerBoundMs: number; pollRoundTripMs: number; polls: number; closedEverywhereMs: number; non2xx: number }[] = [];
  for (let rep = 0; rep < settings.propagationRepeats; rep++) {
    if (await breakerRow(db)) throw new Error('the primary\'s breaker row is still there before an outage');
    const driver = startDriver(a.url, apiKey, 4, 'prop');
    const rowWatch = watchBreakerRow(databaseUrl, PROPAGATION_POLL_MS);
    const on = await primary.outage(true);
    const seen = await pollDiagnostics(b.url, PROPAGATION_POLL_MS, openRemote, on + 20_000);
    // The row is polled on its own, so B's slower answers do not delay it.
    await waitFor(() => rowWatch.firstOpen(), 'the primary\'s breaker row', 20_000);
    const off = await primary.outage(false);
    const closedAt = await pollDiagnostics(b.url, 50, closed, off + 5 * settings.propagationCooldownMs + 20_000);
    // B may also let go on its own once A's word is old; the row goes only when A's probe closed it.
    await waitFor(async () => !(await breakerRow(db)), 'the primary\'s breaker row to be gone (a probe closed it)', 20_000);
    await rowWatch.stop();
    await driver.stop();
    await primary.calls(true);
    await backup.calls(true);
    const opened = rowWatch.firstOpen()!;
    if (!seen) throw new Error('B never showed the primary\'s breaker open on A\'s word');
    if (!closedAt) throw new Error('B never showed the primary\'s breaker closed again after the outage');
    const non2xx = Object.entries(driver.statuses).filter(([status]) => status !== '200').reduce((n, [, count]) => n + count, 0);
    repeats.push({
      propagationMs: seen.receivedAt - opened.updatedAt!,
      lowerBoundMs: seen.sentAt - opened.updatedAt!,
      pollRoundTripMs: seen.receivedAt - seen.sentAt,
      polls: seen.polls,
      closedEverywhereMs: closedAt.receivedAt - off,
      non2xx,
    });
    console.log(`  outage ${rep + 1}: B showed it open ${fmt(seen.receivedAt - opened.updatedAt!, 1)} ms after A wrote the row (its poll took ${fmt(seen.receivedAt - seen.sentAt, 1)} ms); closed everywhere ${fmt(closedAt.receivedAt - off, 0)} ms after the outage ended`);
  }
  await pair.run();
  const values = repeats.map((r) => r.propagationMs);
  return {
    cooldownMs: settings.propagationCooldownMs,
    pollEveryMs: PROPAGATION_POLL_MS,
    repeats,
    minMs: Math.min(...values),
    medianMs: median(values),
    maxMs: Math.max(...values),
  };
}

// ---------------------------------------------------------------- 3. router overhead

interface ArmFigures { calls: number; cpuUsPerCall: number; cpuUsMedian: number; wallUsPerCall: number }

async function runOverheadPhase(settings: ProvidersSettings, fakes: Fakes) {
  const config = loadConfig({ NODE_ENV: 'production', ...liyaEnv(fakes.primary.url, fakes.backup.url) });
  const gateway = createLlmGateway({ config });
  const primaryTarget: ModelTarget = { provider: 'openai', modelRef: MODEL, model: MODEL, baseURL: fakes.primary.url, apiKey: PRIMARY_KEY, tenantKey: false };
  const fallbackTarget: ModelTarget = { provider: 'backup', modelRef: FALLBACK_REF, model: MODEL, baseURL: fakes.backup.url, apiKey: BACKUP_KEY, tenantKey: false };
  // With a route given and usage handed to a sink, the gateway must not touch the EntityManager.
  const em = new Proxy({}, { get: (_, prop) => { throw new Error(`completeChat read em.${String(prop)}`); } }) as unknown as EntityManager;
  const messages: ChatCallRequest['messages'] = [
    { role: 'system', content: 'You are a career coach. Answer with three concrete next steps, one line each.' },
    { role: 'user', content: `${ROLE}. What should I learn next?` },
  ];
  let sunk = 0;
  const request: ChatCallRequest = {
    usage: { tenantId: '00000000-0000-4000-8000-000000000000', kind: 'bench' },
    route: { primary: primaryTarget, fallbacks: async () => [fallbackTarget] },
    messages,
    usageSink: () => void sunk++,
  };
  await loadOpenAiSdk();
  const client = createOpenAiClient({ baseURL: fakes.primary.url, apiKey: PRIMARY_KEY, maxRetries: 0, timeout: config.LLM_TIMEOUT_MS });
  // The body the gateway sends for this request (no tools, temperature or max_tokens), and the same per-call options.
  const body = { model: MODEL, messages };
  const arms: Record<'sdk' | 'gateway', () => Promise<unknown>> = {
    sdk: () => client.chat.completions.create(body, { timeout: config.LLM_TIMEOUT_MS, signal: undefined }),
    gateway: () => gateway.completeChat(em, request),
  };
  const check = await gateway.completeChat(em, request);
  if (check.modelRef !== MODEL || check.fallback || check.attempts !== 1 || !check.content) throw new Error(`the gateway's answer is not the primary's: ${JSON.stringify(check).slice(0, 300)}`);

  const batch = 20;
  const samples = { sdk: [] as number[], gateway: [] as number[] };
  const wall = { sdk: 0, gateway: 0 };
  const batchMeans: { sdk: number; gateway: number }[] = [];
  const runBatch = async (arm: 'sdk' | 'gateway', keep: boolean) => {
    const cpu: number[] = [];
    const started = performance.now();
    for (let i = 0; i < batch; i++) {
      const c0 = process.threadCpuUsage();
      await arms[arm]();
      const c1 = process.threadCpuUsage(c0);
      cpu.push(c1.user + c1.system);
    }
    if (keep) {
      samples[arm].push(...cpu);
      wall[arm] += performance.now() - started;
    }
    return mean(cpu);
  };
  console.log(`router overhead: ${settings.calls} calls per arm in batches of ${batch}, alternating (main thread CPU per call) ...`);
  for (let i = 0; i < 5; i++) for (const arm of ['sdk', 'gateway'] as const) await runBatch(arm, false);
  const batches = Math.max(1, Math.round(settings.calls / batch));
  for (let k = 0; k < batches; k++) {
    const order = k % 2 === 0 ? (['sdk', 'gateway'] as const) : (['gateway', 'sdk'] as const);
    const pairMeans = { sdk: 0, gateway: 0 };
    for (const arm of order) pairMeans[arm] = await runBatch(arm, true);
    batchMeans.push(pairMeans);
  }
  const arm = (name: 'sdk' | 'gateway'): ArmFigures => ({
    calls: samples[name].length,
    cpuUsPerCall: mean(samples[name]),
    cpuUsMedian: median(samples[name]),
    wallUsPerCall: (1000 * wall[name]) / samples[name].length,
  });
  const sdk = arm('sdk');
  const gw = arm('gateway');
  const pairDiffs = batchMeans.map((m) => m.gateway - m.sdk);
  const sd = Math.sqrt(pairDiffs.reduce((n, d) => n + (d - mean(pairDiffs)) ** 2, 0) / Math.max(1, pairDiffs.length - 1));
  const halfWidth = (1.96 * sd) / Math.sqrt(pairDiffs.length);

  // The gateway around an SDK client that answers at once (no I/O, no SDK): all it adds, without the noise of the calls.
  const stubAnswer = { id: 'chatcmpl-stub', object: 'chat.completion', created: 0, model: MODEL, choices: [{ index: 0, message: { role: 'assistant', content: 'Learn dbt.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 40, completion_tokens: 4, total_tokens: 44 } };
  const stubClient = { chat: { completions: { create: async () => stubAnswer } } };
  const stubGateway = createLlmGateway({ config, createClient: () => stubClient as unknown as ReturnType<typeof createOpenAiClient> });
  const stubRequest: ChatCallRequest = { ...request, route: { primary: primaryTarget, fallbacks: async () => [fallbackTarget] } };

  // The route and the breaker alone, no I/O: what serving from a route adds around a call.
  const health = gateway.health;
  const entry = health.entryOf(primaryTarget);
  const policy = { health, retries: config.LLM_MAX_RETRIES, maxWaitMs: config.LLM_MAX_RETRY_WAIT_MS };
  const answer = async () => 1;
  const fallbacks = async () => [fallbackTarget];
  const cpuPer = async (n: number, fn: () => Promise<unknown>) => {
    for (let i = 0; i < 1000; i++) await fn();
    const c0 = process.threadCpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const c1 = process.threadCpuUsage(c0);
    return (c1.user + c1.system) / n;
  };
  const gatewayWithoutIoUs = (await cpuPer(50_000, () => stubGateway.completeChat(em, stubRequest))) - (await cpuPer(50_000, () => stubClient.chat.completions.create()));
  stubGateway.health.close();
  const routeOnlyUs = await cpuPer(50_000, () => callRoute(policy, [primaryTarget], {}, answer, fallbacks));
  const breakerOnlyUs = await cpuPer(50_000, async () => {
    if (!health.admit(entry).ok) throw new Error('the primary\'s breaker is not closed');
    return health.run(entry, answer);
  });
  const state = gateway.breakers().find((b) => b.provider === 'openai');
  if (state?.state !== 'closed') throw new Error(`the primary's breaker is ${state?.state} after the overhead phase`);
  health.close();
  return {
    calls: settings.calls,
    batch,
    sdk,
    gateway: gw,
    addedCpuUsPerCall: gw.cpuUsPerCall - sdk.cpuUsPerCall,
    addedCpuUsMedian: gw.cpuUsMedian - sdk.cpuUsMedian,
    addedCpuUsPerBatchPair: { pairs: pairDiffs.length, mean: mean(pairDiffs), ci95: [mean(pairDiffs) - halfWidth, mean(pairDiffs) + halfWidth], median: median(pairDiffs), min: Math.min(...pairDiffs), max: Math.max(...pairDiffs) },
    gatewayWithoutIoUs,
    routeAndBreakerWithoutIoUs: routeOnlyUs,
    breakerAdmitAndRunUs: breakerOnlyUs,
    usageEventsToSink: sunk,
  };
}

// ---------------------------------------------------------------- the benchmark

export async function runProvidersBench(adminUrl: string, cleanup: Cleanup, settings: ProvidersSettings) {
  const serverSource = await sourceHash();
  const loadAtStart = os.loadavg();
  await ensureDatabase(adminUrl, DATABASE);
  const databaseUrl = withDatabase(adminUrl, DATABASE);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup.add('bench database client', () => db.end());
  const primary = await startProvidersFakeThread('primary');
  cleanup.add('primary fake provider', () => primary.close());
  const backup = await startProvidersFakeThread('backup');
  cleanup.add('backup fake provider', () => backup.close());
  const fakes = { primary, backup };

  const outage = await runOutagePhase(settings, databaseUrl, fakes, cleanup);
  const propagation = await runPropagationPhase(settings, databaseUrl, fakes, db, outage.apiKey, cleanup);
  const overhead = await runOverheadPhase(settings, fakes);

  // ------------------------------------------------------------ report
  const o = outage.figures;
  const pass = {
    non2xx: o.load.non2xx === 0 && o.load.errors === 0 && o.load.timeouts === 0,
    attemptsPerRequest: o.afterOpen.attemptsPerRequest <= TARGETS.attemptsPerRequestAfterOpen,
    recovered: o.recovered.breakerClosed && o.recovered.primaryServesAgain,
    propagation: propagation.maxMs <= TARGETS.propagationMs,
    overhead: overhead.addedCpuUsPerCall <= TARGETS.overheadUs,
  };
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  console.log('');
  console.log(`server source (server/ + db/) sha256 ${serverSource}`);
  console.log(`1. outage: POST ${ROUTE} on A at ${o.load.rate}/s for ${o.load.seconds} s; the primary down from ${fmt(o.timeline.outageOnS)} s to ${fmt(o.timeline.outageOffS)} s`);
  console.log(
    table(
      ['process A under load', 'req/s', 'requests', 'non-2xx', 'errors', 'p50 ms', 'p99 ms', 'max ms', 'A CPU µs/req', 'B CPU µs/req'],
      [[
        'whole run', fmt(o.load.reqPerSec), o.load.requestsSent, o.load.non2xx, o.load.errors + o.load.timeouts, fmt(o.load.latencyMs.p50), fmt(o.load.latencyMs.p99), fmt(o.load.latencyMs.max),
        fmt(o.load.cpuUsPerRequest.a, 0), fmt(o.load.cpuUsPerRequest.b, 0),
      ]],
    ),
  );
  console.log('(B takes no requests; its CPU is its share of the shared breakers, its job runner and the diagnostics polled on it)');
  console.log('');
  console.log(
    table(
      ['requests by first attempt', 'requests', 'primary attempts', 'backup attempts', 'attempts/req', 'primary/req', 'fallback served', 'primary served'],
      o.windows.map((w) => [w.window, w.requests, w.primaryAttempts, w.backupAttempts, fmt(w.attemptsPerRequest, 3), fmt(w.primaryAttemptsPerRequest, 3), w.fallbackServed, w.primaryServed]),
    ),
  );
  console.log(
    `breaker opened ${fmt(o.timeline.breakerOpenedAfterOutageMs, 0)} ms into the outage (${o.timeline.openings} openings: the first, then one per failed probe); ` +
      `primary attempts during the outage: ${o.primaryAttemptsDuringOutage.beforeOpen} before it opened, ${o.primaryAttemptsDuringOutage.afterOpen} after (probes); ` +
      `calls to the primary while its breaker was open: ${o.probes.map((p) => `${fmt(p.atS, 3)} s (${p.status})`).join(', ') || 'none'}`,
  );
  console.log(
    `recovery: breaker closed (row gone) seen at ${o.timeline.breakerClosedSeenS === null ? 'never' : `${fmt(o.timeline.breakerClosedSeenS, 2)} s`}, ` +
      `first answer from the primary ${o.timeline.firstPrimaryServedAfterOutageMs === null ? 'never' : `${fmt(o.timeline.firstPrimaryServedAfterOutageMs, 0)} ms after the outage ended`}` +
      `${o.timeline.runsAfterTheLoadToRecover ? ` (${o.timeline.runsAfterTheLoadToRecover} runs after the load)` : ''}; A shows ${o.recovered.aDiagnostics?.state ?? 'nothing'}, B shows ${o.recovered.bDiagnostics?.state ?? 'not closed'}`,
  );
  if (o.propagationUnderLoadMs !== null) console.log(`B showed the breaker open ${fmt(o.propagationUnderLoadMs, 1)} ms after A wrote it (under load, B polled every ${PROPAGATION_POLL_MS} ms)`);
  console.log('');
  console.log(`target: no answer other than 2xx to callers: ${o.load.non2xx} non-2xx, ${o.load.errors} errors, ${o.load.timeouts} timeouts  ${verdict(pass.non2xx)}`);
  console.log(
    `target: upstream attempts per request once the breaker was open at most ${TARGETS.attemptsPerRequestAfterOpen}: ${fmt(o.afterOpen.attemptsPerRequest, 3)} ` +
      `(${o.afterOpen.upstreamAttempts} attempts, both providers, for ${o.afterOpen.requests} requests; the primary alone ${fmt(o.afterOpen.primaryAttemptsPerRequest, 4)})  ${verdict(pass.attemptsPerRequest)}`,
  );
  console.log(`check: the primary serves again after the outage (a probe closed the breaker): ${verdict(pass.recovered)}`);
  console.log('');
  console.log(`2. propagation (cooldown ${propagation.cooldownMs} ms): A's provider_breakers row written -> B's diagnostics first show it open (remote)`);
  console.log(
    table(
      ['outage', 'propagation ms', 'poll sent ms', 'poll round trip ms', 'polls', 'closed everywhere after ms', 'non-2xx'],
      propagation.repeats.map((r, i) => [i + 1, fmt(r.propagationMs, 1), fmt(r.lowerBoundMs, 1), fmt(r.pollRoundTripMs, 1), r.polls, fmt(r.closedEverywhereMs, 0), r.non2xx]),
    ),
  );
  console.log(`target: at most ${TARGETS.propagationMs} ms: min ${fmt(propagation.minMs, 1)} / median ${fmt(propagation.medianMs, 1)} / max ${fmt(propagation.maxMs, 1)} ms  ${verdict(pass.propagation)}`);
  console.log('("propagation" ends when B\'s answer arrived, an upper bound; "poll sent" is when that poll was sent)');
  console.log('');
  console.log(`3. router overhead: ${overhead.sdk.calls} calls each, alternating batches of ${overhead.batch}, fake provider in another thread (its CPU not counted)`);
  console.log(
    table(
      ['one chat call', 'main thread CPU µs/call', 'median µs', 'wall µs/call'],
      [
        ['openai SDK, direct', fmt(overhead.sdk.cpuUsPerCall), fmt(overhead.sdk.cpuUsMedian), fmt(overhead.sdk.wallUsPerCall, 0)],
        ['gateway.completeChat (route + fallback)', fmt(overhead.gateway.cpuUsPerCall), fmt(overhead.gateway.cpuUsMedian), fmt(overhead.gateway.wallUsPerCall, 0)],
        ['difference', fmt(overhead.addedCpuUsPerCall), fmt(overhead.addedCpuUsMedian), fmt(overhead.gateway.wallUsPerCall - overhead.sdk.wallUsPerCall, 0)],
      ],
    ),
  );
  console.log(
    `per batch pair (${overhead.addedCpuUsPerBatchPair.pairs}), gateway - SDK: mean ${fmt(overhead.addedCpuUsPerBatchPair.mean)} µs, 95% interval ${fmt(overhead.addedCpuUsPerBatchPair.ci95[0])} to ${fmt(overhead.addedCpuUsPerBatchPair.ci95[1])}, ` +
      `median ${fmt(overhead.addedCpuUsPerBatchPair.median)} (${fmt(overhead.addedCpuUsPerBatchPair.min)} to ${fmt(overhead.addedCpuUsPerBatchPair.max)})`,
  );
  console.log(
    `without I/O (50,000 calls each): the gateway around an SDK client that answers at once ${fmt(overhead.gatewayWithoutIoUs, 2)} µs per call, ` +
      `of which the route with its breakers ${fmt(overhead.routeAndBreakerWithoutIoUs, 2)} µs and the breaker alone (admit + run) ${fmt(overhead.breakerAdmitAndRunUs, 2)} µs`,
  );
  console.log(`target: at most ${TARGETS.overheadUs} µs of CPU more per call than the SDK: ${fmt(overhead.addedCpuUsPerCall)} µs  ${verdict(pass.overhead)}`);

  const note = `the load generator, both fake providers (worker threads), PostgreSQL and both Liya processes share this machine's ${os.cpus().length} cores`;
  const results = {
    benchmark: 'providers',
    date: new Date().toISOString(),
    environment: { database: benchDatabase(), serverSourceHash: serverSource, node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, loadAverageAtStart: loadAtStart, loadAverageAtEnd: os.loadavg(), note },
    settings: { ...settings, route: `POST ${ROUTE}`, fallback: FALLBACK_REF, rowPollMs: ROW_POLL_MS, propagationPollMs: PROPAGATION_POLL_MS },
    outage: o,
    propagation,
    overhead,
    targets: {
      non2xx: { max: TARGETS.non2xx, measured: o.load.non2xx + o.load.errors + o.load.timeouts, pass: pass.non2xx },
      attemptsPerRequestAfterOpen: { max: TARGETS.attemptsPerRequestAfterOpen, measured: o.afterOpen.attemptsPerRequest, basis: 'every provider\'s attempts for the requests whose first attempt came after the breaker opened and before the outage ended', pass: pass.attemptsPerRequest },
      recovered: { pass: pass.recovered },
      propagationMs: { max: TARGETS.propagationMs, measured: propagation.maxMs, basis: `worst of ${propagation.repeats.length}`, pass: pass.propagation },
      addedCpuUsPerCall: { max: TARGETS.overheadUs, measured: overhead.addedCpuUsPerCall, pass: pass.overhead },
    },
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  return results;
}
