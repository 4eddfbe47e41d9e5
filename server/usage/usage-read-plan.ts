// Which part of a usage range the daily rollup answers and which part needs raw events.
import type { UsageReadPlan } from './store/usage-reports.js';

const DAY_MS = 86_400_000;
const floorDay = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
const ceilDay = (ms: number) => Math.ceil(ms / DAY_MS) * DAY_MS;

/** The UTC day of `date` as YYYY-MM-DD (years past 9999 too, which toISOString writes as +010000). */
export function utcDay(date: Date | number): string {
  const d = new Date(date);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

/**
 * Splits [from, to) into the whole UTC days inside it (read from the rollup) and the partial day
 * at either edge (read from raw events, one tenant-day at most each).
 */
export function planUsageRead(range: { from: Date; to: Date; asOf: Date }): UsageReadPlan {
  const from = range.from.getTime();
  // Nothing is recorded after asOf yet, so a range reaching it may as well run to the end of its
  // last day: "this month so far" is then whole days, and today's events are never scanned.
  const to = range.to.getTime() >= range.asOf.getTime() ? ceilDay(range.to.getTime()) : range.to.getTime();
  const wholeFrom = ceilDay(from);
  const wholeTo = floorDay(to);
  if (wholeFrom >= wholeTo) return { days: null, raw: from < to ? [{ from: new Date(from), to: new Date(to) }] : [] };
  const raw = [];
  if (from < wholeFrom) raw.push({ from: new Date(from), to: new Date(wholeFrom) });
  if (wholeTo < to) raw.push({ from: new Date(wholeTo), to: new Date(to) });
  return { days: { from: utcDay(wholeFrom), to: utcDay(wholeTo) }, raw };
}
