/**
 * Polls `probe` every `everyMs` (default 100 ms) until it returns something truthy; throws after
 * `timeoutMs` (default 15 s). The timeout bounds a condition the test waits for, never the speed of
 * the code under test: a loaded machine only makes the wait longer.
 */
export async function waitFor<T>(probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = 15_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
