// Which IP addresses an outbound request may dial: global unicast ones only. An IPv6 address that
// embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is judged by the IPv4 address it stands for,
// so `::ffff:169.254.169.254` or `::127.0.0.1` cannot pass for a public address; the IPv4 list is
// IANA's special-purpose registry plus multicast and the reserved block, and IPv6 is allowed only
// inside 2000::/3, minus the special-purpose parts there.
import net from 'node:net';

export interface AddressVerdict {
  family: 4 | 6;
  /**
   * What the address stands for: the IPv4 address an IPv6 one embeds (IPv4-mapped, IPv4-compatible,
   * NAT64 64:ff9b::/96, 6to4 2002::/16), else the address itself (an IPv6 zone left off).
   */
  effective: string;
  effectiveFamily: 4 | 6;
  /** The form of an IPv6 address that embeds an IPv4 one, else null. */
  embedding: EmbeddingForm | null;
  /** Why it may not be dialled, e.g. "a loopback address"; null for a global unicast address. */
  restriction: string | null;
  /** A cloud metadata address (169.254.169.254, fd00:ec2::254, 100.100.100.200) in any spelling. */
  metadata: boolean;
}

export type EmbeddingForm = 'IPv4-mapped' | 'IPv4-compatible' | 'NAT64' | '6to4';

type Range4 = [base: number, bits: number, what: string];

const ip4 = (text: string) => text.split('.').reduce((value, part) => value * 256 + Number(part), 0);

const SPECIAL_IPV4: Range4[] = (
  [
    ['0.0.0.0', 8, 'a "this network" address'],
    ['10.0.0.0', 8, 'a private address'],
    ['100.64.0.0', 10, 'a shared (CGNAT) address'],
    ['127.0.0.0', 8, 'a loopback address'],
    ['169.254.0.0', 16, 'a link-local address'],
    ['172.16.0.0', 12, 'a private address'],
    ['192.0.0.0', 24, 'an IETF protocol assignment'],
    ['192.0.2.0', 24, 'a documentation address'],
    ['192.31.196.0', 24, 'an AS112 address'],
    ['192.52.193.0', 24, 'an AMT address'],
    ['192.88.99.0', 24, 'a 6to4 relay anycast address'],
    ['192.168.0.0', 16, 'a private address'],
    ['192.175.48.0', 24, 'an AS112 address'],
    ['198.18.0.0', 15, 'a benchmarking address'],
    ['198.51.100.0', 24, 'a documentation address'],
    ['203.0.113.0', 24, 'a documentation address'],
    ['224.0.0.0', 4, 'a multicast address'],
    ['240.0.0.0', 4, 'a reserved address'],
  ] as const
).map(([base, bits, what]) => [ip4(base), bits, what]);

const METADATA_IPV4 = new Set(['169.254.169.254', '100.100.100.200']);
const METADATA_IPV6 = [parseIPv6('fd00:ec2::254')!];

function restrictIPv4(value: number): string | null {
  for (const [base, bits, what] of SPECIAL_IPV4) {
    // Unsigned shifts: the top bit of an IPv4 address is a sign bit to `>>`.
    if (value >>> (32 - bits) === base >>> (32 - bits)) return what;
  }
  return null;
}

function parseIPv4(text: string): number | null {
  return net.isIPv4(text) ? ip4(text) : null;
}

/** 16 bytes, or null when `text` is not an IPv6 address. */
function parseIPv6(text: string): Uint8Array | null {
  const address = text.replace(/%.*$/, '');
  if (!net.isIPv6(address)) return null;
  let hex = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(hex);
  if (dotted) {
    const value = parseIPv4(dotted[1]);
    if (value === null) return null;
    hex = `${hex.slice(0, dotted.index)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [left, right] = hex.split('::');
  const head = left ? left.split(':') : [];
  const tail = right ? right.split(':') : [];
  const words = right === undefined ? head : [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  if (words.length !== 8) return null;
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => {
    const value = parseInt(word, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

const readIPv4 = (bytes: Uint8Array, at: number) => ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0;
const formatIPv4 = (value: number) => [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join('.');
const zeros = (bytes: Uint8Array, from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0);
const startsWith = (bytes: Uint8Array, prefix: number[]) => prefix.every((b, i) => bytes[i] === b);

// Where an IPv6 address carries an IPv4 one that is what the packets reach: the name of the form
// and the offset of the IPv4 address in it.
function embeddedIPv4(bytes: Uint8Array): [form: EmbeddingForm, at: number] | null {
  if (zeros(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return ['IPv4-mapped', 12];
  if (zeros(bytes, 0, 12)) return ['IPv4-compatible', 12];
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b]) && zeros(bytes, 4, 12)) return ['NAT64', 12];
  if (startsWith(bytes, [0x20, 0x02])) return ['6to4', 2];
  return null;
}

function restrictIPv6(bytes: Uint8Array): string | null {
  if (zeros(bytes, 0, 16)) return 'the unspecified address';
  if (zeros(bytes, 0, 15) && bytes[15] === 1) return 'a loopback address';
  // Only 2000::/3 is global unicast.
  if ((bytes[0] & 0xe0) !== 0x20) {
    if ((bytes[0] & 0xfe) === 0xfc) return 'a unique local address';
    if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) return 'a link-local address';
    if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0xc0) return 'a site-local address';
    if (bytes[0] === 0xff) return 'a multicast address';
    return 'a reserved address';
  }
  // Teredo (2001::/32) lies inside 2001::/23 and is refused with it: the IPv4 address it carries
  // is a relay's, not the destination's.
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0x00 && bytes[3] === 0x00) return 'a Teredo address';
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] <= 0x01) return 'an IETF protocol assignment';
  if (startsWith(bytes, [0x20, 0x01, 0x0d, 0xb8])) return 'a documentation address';
  if (startsWith(bytes, [0x26, 0x20, 0x00, 0x4f, 0x80, 0x00])) return 'an AS112 address';
  if (bytes[0] === 0x3f && bytes[1] === 0xff && bytes[2] < 0x10) return 'a documentation address';
  return null;
}

/** How `address` (IPv4 or IPv6, in any spelling) is judged; null when it is not an IP address. */
export function inspectAddress(address: string): AddressVerdict | null {
  const v4 = parseIPv4(address);
  if (v4 !== null) {
    const effective = formatIPv4(v4);
    return { family: 4, effective, effectiveFamily: 4, embedding: null, restriction: restrictIPv4(v4), metadata: METADATA_IPV4.has(effective) };
  }
  const bytes = parseIPv6(address);
  if (!bytes) return null;
  const own = address.replace(/%.*$/, '');
  const metadata = METADATA_IPV6.some((m) => m.every((b, i) => b === bytes[i]));
  // :: and ::1 lie in ::/96 but are IPv6's own unspecified and loopback addresses.
  const special = zeros(bytes, 0, 15) && bytes[15] <= 1;
  const embedded = special ? null : embeddedIPv4(bytes);
  if (!embedded) return { family: 6, effective: own, effectiveFamily: 6, embedding: null, restriction: restrictIPv6(bytes), metadata };
  const [form, at] = embedded;
  const inner = readIPv4(bytes, at);
  const effective = formatIPv4(inner);
  const innerRestriction = restrictIPv4(inner);
  return {
    family: 6,
    effective,
    effectiveFamily: 4,
    embedding: form,
    restriction: innerRestriction && `the ${form} form of ${effective}, ${innerRestriction}`,
    metadata: metadata || METADATA_IPV4.has(effective),
  };
}
