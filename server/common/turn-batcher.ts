// Writes asked for in one turn of the event loop, sent together: one statement (one round trip,
// one commit) for many callers instead of one each. Each caller still waits for its own outcome;
// the callers only share the trip. A lone item goes as its own statement, and so does every item
// of a group the database refused for a reason other than being unreachable, so only the caller
// whose value was refused sees that error.
import { isDatabaseUnavailable } from '../errors.js';

export interface TurnBatcherOptions<I, O> {
  /** Items per statement at most; more wait for the next statement of the same turn. */
  maxBatch: number;
  /** Items with the same key never share a statement (say, two claims of one idempotency key). */
  conflictKey?: (item: I) => string | null;
  /** The group's statement: one outcome per item, in order. */
  sendMany: (items: I[]) => Promise<O[]>;
  /** The item's statement of its own. */
  sendOne: (item: I) => Promise<O>;
}

export interface TurnBatcher<I, O> {
  send(item: I): Promise<O>;
}

interface Pending<I, O> {
  item: I;
  resolve: (outcome: O) => void;
  reject: (err: unknown) => void;
}

export function createTurnBatcher<I, O>(options: TurnBatcherOptions<I, O>): TurnBatcher<I, O> {
  let pending: Pending<I, O>[] = [];
  let scheduled = false;

  const sendAlone = (p: Pending<I, O>) => options.sendOne(p.item).then(p.resolve, p.reject);

  async function sendGroup(group: Pending<I, O>[]): Promise<void> {
    if (group.length === 1) return sendAlone(group[0]);
    let outcomes: O[];
    try {
      outcomes = await options.sendMany(group.map((p) => p.item));
    } catch (err) {
      if (isDatabaseUnavailable(err)) {
        for (const p of group) p.reject(err);
        return;
      }
      for (const p of group) void sendAlone(p);
      return;
    }
    group.forEach((p, i) => p.resolve(outcomes[i]));
  }

  function flush(): void {
    scheduled = false;
    let rest = pending;
    pending = [];
    while (rest.length) {
      const group: Pending<I, O>[] = [];
      const later: Pending<I, O>[] = [];
      const keys = new Set<string>();
      for (const p of rest) {
        const key = options.conflictKey?.(p.item) ?? null;
        if (group.length >= options.maxBatch || (key !== null && keys.has(key))) later.push(p);
        else {
          if (key !== null) keys.add(key);
          group.push(p);
        }
      }
      void sendGroup(group);
      rest = later;
    }
  }

  return {
    send(item) {
      return new Promise<O>((resolve, reject) => {
        pending.push({ item, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          // After the current turn: callers whose previous writes just came back ask for theirs first.
          setImmediate(flush);
        }
      });
    },
  };
}

/** One batcher per pool (per database), made on first use. */
export function perPool<P extends object, I, O>(make: (pool: P) => TurnBatcher<I, O>): (pool: P) => TurnBatcher<I, O> {
  const batchers = new WeakMap<P, TurnBatcher<I, O>>();
  return (pool) => {
    let batcher = batchers.get(pool);
    if (!batcher) {
      batcher = make(pool);
      batchers.set(pool, batcher);
    }
    return batcher;
  };
}
