// Large inputs for the guardrail scan: realistic text (the labelled dataset's cases, which are
// dense in PII and injection phrases) and adversarial repetitions built to trip super-linear
// patterns (long runs without spaces, many digits, many near-miss patterns).
import { DATASET } from './dataset.js';

/** The dataset's texts joined by blank lines, cut at `size` characters. */
export function realisticText(size: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const text = DATASET[i % DATASET.length]!.text;
    parts.push(text);
    length += text.length + 2;
  }
  return parts.join('\n\n').slice(0, size);
}

export const repeatTo = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/** Adversarial units, each repeated to the size wanted. */
export const ADVERSARIAL_UNITS: Record<string, string> = {
  'one word, no space': 'a',
  'base64-like run': 'aB3+',
  'digit groups "1234 5678 "': '1234 5678 ',
  'digits, no separator': '7',
  'dotted "1."': '1.',
  'at signs "a@"': 'a@',
  'colons "1:"': '1:',
  'near-miss SSN "SSN 12-345-678 "': 'SSN 12-345-678 ',
  'near-miss e-mail "jane@example."': 'jane@example.',
  'near-miss secret "api_key=x "': 'api_key=x ',
  'trigger words "ignore previous "': 'ignore previous ',
  'HTML comments "<!-- ai rank "': '<!-- ai rank ',
  'chat turns "human: hi"': 'human: hi\n',
  'decoding words "decode base64 "': 'decode base64 ',
  'non-ASCII prose': 'Ｊａｎｅ — café résumé, naïve façade ✓ ',
};
