// Streamed text must not show what the output guardrails would take out of the final answer
// (an e-mail address, a blocked term). Pieces are released only after the text so far has passed
// the output guardrails, as the guardrails rewrote it, and the last few characters are held back:
// they may be the start of something that is only recognisable once complete. At the end of the
// model call the rest is released from the checked answer itself.
import type { GuardrailsConfig } from '../guardrails/guardrails.types.js';
import { runPostLlm } from '../guardrails/run-post-llm.js';

/** Characters held back: longer than any entity the guardrails redact (an IBAN with spaces is ~42). */
const HOLD_BACK = 64;
/** The text so far is checked again once this much more has arrived. */
const CHECK_EVERY = 64;

export interface GuardedDeltas {
  push(text: string): void;
  /** The call ended; `checked` is its text after the output guardrails, or null when they blocked it. */
  end(checked: string | null): void;
}

export function createGuardedDeltas(config: GuardrailsConfig | null, emit: (text: string) => void): GuardedDeltas {
  let raw = '';
  let emitted = '';
  let checkedAt = 0;
  let stopped = false;

  const release = (safe: string) => {
    // What was already sent must still be the start of the checked text; if a rewrite reached into
    // it, nothing more is streamed (the final event carries the answer).
    if (!safe.startsWith(emitted)) {
      stopped = true;
      return;
    }
    if (safe.length > emitted.length) {
      emit(safe.slice(emitted.length));
      emitted = safe;
    }
  };

  return {
    push(text) {
      raw += text;
      if (stopped || raw.length - checkedAt < CHECK_EVERY) return;
      checkedAt = raw.length;
      const post = runPostLlm(raw, config, null);
      if (!post.passed) {
        stopped = true;
        return;
      }
      const safe = String(post.response);
      let cut = safe.length - HOLD_BACK;
      if (cut <= emitted.length) return;
      // Cut at a word boundary, so a word is never split by the hold-back.
      const space = safe.lastIndexOf(' ', cut);
      if (space > emitted.length) cut = space + 1;
      release(safe.slice(0, cut));
    },
    end(checked) {
      if (stopped || checked === null) return;
      release(checked);
    },
  };
}
