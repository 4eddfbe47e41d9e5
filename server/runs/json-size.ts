// How big a value is as JSON, without building the JSON: a run's limits are checked on values that
// may be far over them (a template that repeats a large input, a loop's growing list of results),
// and serialising such a value to measure it would itself take the memory the limit protects.

type Frame = { items: unknown[]; at: number } | { object: Record<string, unknown>; keys: string[]; at: number };

/**
 * The length of `JSON.stringify(value)` in characters, counting every string as its length plus
 * its quotes (escapes are not counted), or `max + 1` as soon as it is known to pass `max`. Values
 * that JSON drops or nulls (undefined, functions, symbols, NaN) count as `null`. The walk stops
 * at `max`, so it costs O(max) at most whatever the value's size (iteratively: any depth), and a
 * shared reference counts each time it appears, as JSON repeats it.
 */
export function jsonSize(value: unknown, max: number): number {
  let size = 0;
  const frames: Frame[] = [];
  let next: unknown = value;
  let pending = true;
  for (;;) {
    if (pending) {
      pending = false;
      const v = next;
      if (typeof v === 'string') size += v.length + 2;
      else if (typeof v === 'number') size += Number.isFinite(v) ? String(v).length : 4;
      else if (typeof v === 'boolean') size += v ? 4 : 5;
      else if (typeof v === 'bigint') size += String(v).length;
      else if (v === null || typeof v !== 'object') size += 4;
      else if (Array.isArray(v)) {
        size += 2 + Math.max(0, v.length - 1);
        frames.push({ items: v, at: 0 });
      } else if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
        next = (v as { toJSON: () => unknown }).toJSON();
        pending = true;
        continue;
      } else {
        const keys = Object.keys(v);
        size += 2 + Math.max(0, keys.length - 1);
        frames.push({ object: v as Record<string, unknown>, keys, at: 0 });
      }
      if (size > max) return max + 1;
    }
    const frame = frames.at(-1);
    if (!frame) return size;
    if ('items' in frame) {
      if (frame.at >= frame.items.length) frames.pop();
      else (next = frame.items[frame.at++]), (pending = true);
    } else if (frame.at >= frame.keys.length) frames.pop();
    else {
      const key = frame.keys[frame.at++];
      size += key.length + 3;
      next = frame.object[key];
      pending = true;
    }
  }
}
