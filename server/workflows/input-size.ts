// How much of a run's input counts against its plan's run_input_bytes and run_state_bytes: all of it
// but the text read from its attached files. readAttachments puts that text in three places (each
// file's entry, `attachment_texts`, `attachments_text`) and bounds it by itself
// (MAX_ATTACHMENT_TEXT_CHARS, from the specification's 18 MB of files a run may carry), so the
// attachment limits hold on every plan while everything else a run holds stays within its plan's.
import { jsonSize } from '../runs/json-size.js';

const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/**
 * The size (as jsonSize counts) the attachments' text takes in a run input made by readAttachments:
 * each file's text twice (its entry and `attachment_texts`) and `attachments_text` once. 0 for an
 * input without an `attachments` array: its `attachment_texts` and `attachments_text`, if any, are
 * the caller's own (readAttachments replaces them whenever `attachments` is an array).
 */
export function attachmentTextSize(input: Record<string, unknown>): number {
  const { attachments, attachment_texts: texts, attachments_text: combined } = input;
  if (!Array.isArray(attachments) || !Array.isArray(texts) || typeof combined !== 'string') return 0;
  return 2 * jsonSize(texts, UNBOUNDED) + jsonSize(combined, UNBOUNDED);
}

/** The size of `input` as the run limits count it (without its attachments' text), or `max + 1` once it is known to pass `max`. */
export function countedInputSize(input: Record<string, unknown>, max: number): number {
  const apart = attachmentTextSize(input);
  return Math.max(0, jsonSize(input, max + apart) - apart);
}
