// How agents' intent tools and workflows' intent steps name an intent. Declared with the intents so
// that both features read it from its owner rather than from each other.
import { isUuid } from '../common/schemas.js';

/** An intent reference: a custom intent's id, or `domain/intent_key` (built-in or custom). */
type IntentRef = { kind: 'id'; id: string } | { kind: 'key'; domain: string; intent: string };

export function parseIntentRef(ref: string): IntentRef | null {
  if (isUuid(ref)) return { kind: 'id', id: ref.toLowerCase() };
  const match = /^([a-z0-9_-]{1,100})\/([a-z0-9_-]{1,100})$/.exec(ref);
  return match ? { kind: 'key', domain: match[1], intent: match[2] } : null;
}
