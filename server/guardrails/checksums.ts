// Checksums and structural validators used by the PII detectors: a number that only looks like a
// card, an IBAN or an SSN must not be redacted.

/** Luhn (mod 10) over a string of digits. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Issuer prefixes and lengths of the card networks (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro). */
export function cardNetwork(digits: string): string | null {
  const n = digits.length;
  const p2 = Number(digits.slice(0, 2));
  const p3 = Number(digits.slice(0, 3));
  const p4 = Number(digits.slice(0, 4));
  const p6 = Number(digits.slice(0, 6));
  if (digits[0] === '4' && (n === 13 || n === 16 || n === 19)) return 'visa';
  if (((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) && n === 16) return 'mastercard';
  if ((p2 === 34 || p2 === 37) && n === 15) return 'amex';
  if ((p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649) || (p6 >= 622126 && p6 <= 622925)) && n >= 16 && n <= 19) return 'discover';
  if (p4 >= 3528 && p4 <= 3589 && n >= 16 && n <= 19) return 'jcb';
  if (((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39 || p4 === 3095) && n >= 14 && n <= 19) return 'diners';
  if (p2 === 62 && n >= 16 && n <= 19) return 'unionpay';
  if ((p2 === 50 || (p2 >= 56 && p2 <= 69)) && n >= 12 && n <= 19) return 'maestro';
  return null;
}

/** A card number: a known network's prefix and length, and a valid Luhn check digit. */
export function isCardNumber(digits: string): boolean {
  if (digits.length < 12 || digits.length > 19) return false;
  if (/^(\d)\1+$/.test(digits)) return false;
  return cardNetwork(digits) !== null && luhnValid(digits);
}

/**
 * US Social Security Number rules: area 000, 666 and 900-999 are never issued, nor group 00 or
 * serial 0000.
 */
export function isValidSsn(area: string, group: string, serial: string): boolean {
  if (!/^\d{3}$/.test(area) || !/^\d{2}$/.test(group) || !/^\d{4}$/.test(serial)) return false;
  if (area === '000' || area === '666' || area[0] === '9') return false;
  if (group === '00' || serial === '0000') return false;
  return true;
}

/** IBAN length per country (ISO 13616 registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22,
  CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22,
  GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30,
  KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20,
  MR: 27, MT: 31, MU: 30, NI: 28, NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22,
  RU: 33, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26,
  UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
};

/** An IBAN (spaces removed, upper case): registered country, its length, and ISO 7064 mod 97-10 = 1. */
export function isValidIban(compact: string): boolean {
  const iban = compact.toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban)) return false;
  const expected = IBAN_LENGTHS[iban.slice(0, 2)];
  if (expected === undefined || iban.length !== expected) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : ch;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

/** Shannon entropy in bits per character. */
export function shannonEntropy(value: string): number {
  if (!value) return 0;
  const counts = new Map<string, number>();
  for (const ch of value) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) {
    const p = count / value.length;
    entropy -= p * Math.log2(p);
  }
  return entropy;
}
