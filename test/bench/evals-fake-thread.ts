// The evaluations benchmark's fake provider, in a worker thread of its own (it loads the fake and
// nothing of the server): every chat answer waits the configured latency, and the thread counts
// what it saw, so the benchmark can check each case reached the intent and the judge once (by its
// case marker), and how busy the provider was (calls in flight, time with none in flight).
import { setTimeout as sleep } from 'node:timers/promises';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { FakeRequest } from '../support/fake-llm.js';
import { serveFakeProviderThread, startFakeProviderThread } from './fake-llm-thread.js';

const WORKER_ROLE = 'evals-fake-llm';
/** The marker each benchmark case carries in its input (`evalbench-<phase>-<n>`). */
const MARKER = /evalbench-[a-z]+-[0-9]+/;

export interface MarkerCounts {
  /** Calls carrying a case marker. */
  withMarker: number;
  withoutMarker: number;
  distinctMarkers: number;
  /** Markers seen in more than one call (the first few). */
  repeated: string[];
  repeatedCount: number;
}

export interface EvalsFakeStats {
  /** Every request received (chat and anything else). */
  requests: number;
  chatRequests: number;
  judge: MarkerCounts;
  intent: MarkerCounts;
  /** Most chat calls waiting on the latency at once (0 ms: not measured, the answer does not wait). */
  peakInFlight: number;
  /** The first chat call received and the last one answered (epoch ms; null: none). */
  firstCallAt: number | null;
  lastAnswerAt: number | null;
  /** Between those: the time no chat call was in flight, in all and the longest stretch (latency > 0 only). */
  idleMs: number;
  longestIdleMs: number;
}

/** The last intent and judge chat request bodies received (the baseline replays them). */
export interface EvalsFakeSamples {
  intent: any;
  judge: any;
}

type Command = { cmd: 'configure'; latencyMs: number } | { cmd: 'stats' | 'samples' | 'close' };
type Reply = { stats?: EvalsFakeStats; samples?: EvalsFakeSamples };

export interface EvalsFakeThread {
  /** Base URL for the SDK, ending in /v1. */
  url: string;
  /** Sets the latency of every answer and forgets what was received so far. */
  configure(latencyMs: number): Promise<void>;
  stats(): Promise<EvalsFakeStats>;
  samples(): Promise<EvalsFakeSamples>;
  close(): Promise<void>;
}

export async function startEvalsFakeThread(): Promise<EvalsFakeThread> {
  const thread = await startFakeProviderThread<Command, Reply>(import.meta.url, 'evals fake provider thread', { role: WORKER_ROLE });
  return {
    url: thread.url,
    async configure(latencyMs) {
      await thread.call({ cmd: 'configure', latencyMs });
    },
    async stats() {
      return (await thread.call({ cmd: 'stats' })).stats!;
    },
    async samples() {
      return (await thread.call({ cmd: 'samples' })).samples!;
    },
    close: () => thread.close(),
  };
}

// ---------------------------------------------------------------- inside the worker

/** Epoch milliseconds with sub-millisecond precision. */
const now = () => performance.timeOrigin + performance.now();

function counts(map: Map<string, number>, without: number): MarkerCounts {
  const repeated = [...map].filter(([, n]) => n > 1);
  return {
    withMarker: [...map.values()].reduce((a, b) => a + b, 0),
    withoutMarker: without,
    distinctMarkers: map.size,
    repeated: repeated.slice(0, 5).map(([m, n]) => `${m} x${n}`),
    repeatedCount: repeated.length,
  };
}

if (!isMainThread && parentPort && (workerData as { role?: string } | null)?.role === WORKER_ROLE) {
  const { startFakeLlm } = await import('../support/fake-llm.js');
  const fake = await startFakeLlm();
  let latencyMs = 0;
  let inFlight = 0;
  let peakInFlight = 0;
  const freshTimes = () => ({ firstCallAt: null as number | null, lastAnswerAt: null as number | null, idleSince: null as number | null, idleMs: 0, longestIdleMs: 0 });
  const freshSeen = () => ({ judge: new Map<string, number>(), intent: new Map<string, number>(), judgeWithout: 0, intentWithout: 0 });
  let times = freshTimes();
  let seen = freshSeen();
  const samples: EvalsFakeSamples = { intent: null, judge: null };
  const textOf = (body: FakeRequest['body']) => ((body?.messages ?? []) as { content?: unknown }[]).map((m) => (typeof m?.content === 'string' ? m.content : '')).join('\n');
  // Called for every chat request; undefined: the fake's default answer (the schema sampled).
  const handler = async (request: FakeRequest) => {
    const judge = request.body?.response_format?.json_schema?.name === 'eval_judge';
    const marker = MARKER.exec(textOf(request.body))?.[0];
    samples[judge ? 'judge' : 'intent'] = request.body;
    if (marker === undefined) seen[judge ? 'judgeWithout' : 'intentWithout']++;
    else {
      const map = judge ? seen.judge : seen.intent;
      map.set(marker, (map.get(marker) ?? 0) + 1);
    }
    const at = now();
    times.firstCallAt ??= at;
    if (inFlight === 0 && times.idleSince !== null) {
      const idle = at - times.idleSince;
      times.idleMs += idle;
      if (idle > times.longestIdleMs) times.longestIdleMs = idle;
    }
    inFlight++;
    if (inFlight > peakInFlight) peakInFlight = inFlight;
    try {
      if (latencyMs > 0) await sleep(latencyMs);
    } finally {
      inFlight--;
      times.lastAnswerAt = now();
      if (inFlight === 0) times.idleSince = times.lastAnswerAt;
    }
    return undefined;
  };
  fake.script(handler);
  serveFakeProviderThread<Command, Reply>(parentPort, fake.url, async (msg) => {
    if (msg.cmd === 'configure') {
      fake.reset(); // forgets the log and the script
      fake.script(handler);
      latencyMs = msg.latencyMs;
      peakInFlight = 0;
      times = freshTimes();
      seen = freshSeen();
      return {};
    }
    if (msg.cmd === 'stats') {
      return {
        stats: {
          requests: fake.requests.length,
          chatRequests: fake.chatRequests().length,
          judge: counts(seen.judge, seen.judgeWithout),
          intent: counts(seen.intent, seen.intentWithout),
          peakInFlight: latencyMs > 0 ? peakInFlight : 0,
          firstCallAt: times.firstCallAt,
          lastAnswerAt: times.lastAnswerAt,
          idleMs: latencyMs > 0 ? times.idleMs : 0,
          longestIdleMs: latencyMs > 0 ? times.longestIdleMs : 0,
        },
      };
    }
    if (msg.cmd === 'samples') return { samples };
    if (msg.cmd === 'close') await fake.close();
    return {};
  });
}
