// A mail's `to` as tenants give it (one address, a comma-separated list with display names, or a
// list rendered from a template) turned into the bare addresses it goes to. Anything a mail header
// would read differently from what the sender meant is refused rather than guessed at.
import addressparser from 'nodemailer/lib/addressparser';
import { AppError } from '../errors.js';

/** Characters of all recipient text together, at most: far past any real list, short of costly parsing. */
export const MAX_RECIPIENT_TEXT = 64 * 1024;

// RFC 5321 caps a path at 256 octets (254 for the address) and a local part at 64.
const MAX_ADDRESS = 254;
const MAX_LOCAL_PART = 64;
// A dot-atom local part and a domain of letter-digit-hyphen labels with a top-level name: what
// every SMTP server accepts (quoted local parts and raw IP domains are left out on purpose).
const ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

const invalid = (message: string, details?: Record<string, unknown>) => new AppError('INVALID_INPUT', message, details);
const quote = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);

/** Whether `address` (already bare, no display name) is one this platform sends to. */
export function isMailAddress(address: string): boolean {
  if (address.length > MAX_ADDRESS || !ADDRESS.test(address)) return false;
  return address.indexOf('@') <= MAX_LOCAL_PART;
}

/**
 * The recipients of `to`, lower-cased, without display names and repeats, in the order given.
 * Accepts a string (one address or a comma-separated list, `Name <address>` allowed) or a list
 * of such strings. Throws INVALID_INPUT naming the first entry that is not an address.
 */
export function parseRecipients(to: unknown): string[] {
  const parts = typeof to === 'string' ? [to] : Array.isArray(to) ? to : to === null || to === undefined ? [] : null;
  if (!parts || parts.some((part) => typeof part !== 'string')) {
    throw invalid('to must be an e-mail address, a comma-separated list of addresses or a list of them');
  }
  const texts = parts as string[];
  let length = 0;
  for (const text of texts) {
    length += text.length;
    // A line break would start a new header line in the mail; the parser would read it as part of a group.
    if (CONTROL.test(text)) throw invalid('the recipients must not contain line breaks or other control characters');
  }
  if (length > MAX_RECIPIENT_TEXT) throw invalid(`the recipients are longer than ${MAX_RECIPIENT_TEXT} characters`);

  const seen = new Set<string>();
  for (const text of texts) {
    for (const entry of addressparser(text)) {
      if (entry.group) throw invalid(`${quote(text)} holds an address group ("${entry.name}: ...;"); list the addresses, separated by commas`);
      // `a@x.com b@x.com` parses as the address b with the name a: one of them would be dropped silently.
      if (entry.name.includes('@')) throw invalid(`${quote(`${entry.name} ${entry.address}`.trim())} is not one e-mail address; separate addresses with commas`);
      const address = entry.address.trim().toLowerCase();
      if (!isMailAddress(address)) throw invalid(`${quote(entry.address || entry.name)} is not an e-mail address`, { address: (entry.address || entry.name).slice(0, 320) });
      seen.add(address);
    }
  }
  if (seen.size === 0) throw invalid('the mail has no recipient: to is empty');
  return [...seen];
}
