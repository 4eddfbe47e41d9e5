// Flag value parsers: a bad value stops commander with a usage error before any request is sent.
import { InvalidArgumentError } from 'commander';

export function parseInteger(min = 0, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('Not an integer.');
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`Must be between ${min} and ${max}.`);
    return n;
  };
}

/** A quota: a non-negative integer, or "none" / "unlimited" to clear it (null). */
export function parseQuota(value: string): number | null {
  if (['none', 'unlimited', 'null'].includes(value.trim().toLowerCase())) return null;
  return parseInteger(0)(value);
}

/** "a,b , c" -> ["a", "b", "c"]; "" -> []. */
export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
}

/** Seconds (may be fractional) -> milliseconds. */
export function parseSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('Must be a positive number of seconds.');
  return Math.round(n * 1000);
}
