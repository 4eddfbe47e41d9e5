// An evaluation slice's case inputs, scanned a few cases ahead of their runs (see scanCaseInput:
// scans back to back keep their code, and the provider SDK's, in the CPU's caches).
import { totalChars } from '../guardrails/run-pre-llm.js';
import { SCAN_INLINE_MAX_CHARS } from '../guardrails/scan-pool.js';
import type { IntentDefinition } from '../intents/intent-definition.js';
import { scanCaseInput, type CaseInputScan } from '../intents/run-intent.service.js';
import type { TenantRuntime } from '../tenants/tenant-runtime.js';
import type { PendingCase } from './store/eval-results.js';

/**
 * Case inputs scanned ahead at once: at most this many, holding at most SCAN_INLINE_MAX_CHARS
 * characters together (or one larger input, which goes to the worker-thread pool alone), so a
 * round of scans holds the event loop no longer than one large input's scan did.
 */
const SCAN_AHEAD_CASES = 16;

/** What the scans read when they run: the slice's current run, tenant and intent (a slice may re-read them). */
export interface ScanSource {
  readonly run: { readonly execution_mode: string };
  readonly tenant: TenantRuntime;
  readonly intent: IntentDefinition | null;
}

/** The case's input as its intent run sees it. */
export const caseInputOf = (c: PendingCase): Record<string, unknown> => (c.message ? { ...c.input, message: c.message } : c.input);

/**
 * The pending cases' inputs, scanned ahead of their runs (intent runs only): the first worker to
 * reach a case not scanned yet scans it and the ones after it that fit (SCAN_AHEAD_CASES), back to
 * back. `take(index)` hands a case its scan once.
 */
export function scansAhead(ctx: ScanSource, pending: readonly PendingCase[]) {
  const scans = new Map<number, Promise<CaseInputScan | null>>();
  let scannedTo = 0;
  const scanFrom = (from: number) => {
    const { tenant, intent } = ctx;
    let chars = 0;
    let at = from;
    for (; at < pending.length && at - from < SCAN_AHEAD_CASES; at++) {
      const input = caseInputOf(pending[at]!);
      const size = totalChars(input);
      // The first case always (a larger one goes to the pool alone); the others while they fit.
      if (at > from && chars + size > SCAN_INLINE_MAX_CHARS) break;
      chars += size;
      const scan = scanCaseInput(tenant, intent!, input);
      // A case that fails before it reads its scan (the slice stopped) leaves it unread.
      scan.catch(() => undefined);
      scans.set(at, scan);
    }
    scannedTo = at;
  };
  return {
    take(index: number): Promise<CaseInputScan | null> | undefined {
      if (ctx.run.execution_mode !== 'liya_intent' || !ctx.intent) return undefined;
      if (index >= scannedTo) scanFrom(index);
      const scan = scans.get(index);
      scans.delete(index);
      return scan;
    },
  };
}
