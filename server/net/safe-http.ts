// The one way out of the platform: every outbound HTTP call (agent tools, MCP servers, webhooks)
// goes through here, so server-side request forgery is refused in one place. The address check runs
// when each socket connects, on the address actually dialled, so DNS rebinding cannot slip past it:
// our own lookup judges every resolved address (address-policy.ts), and request-filtering-agent's
// agents check what it hands them once more. Every body read is capped in bytes and time.
import { outboundTraceHeaders } from '../observability/telemetry.js';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { pipeline, Readable } from 'node:stream';
import zlib from 'node:zlib';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { inspectAddress } from './address-policy.js';
import { limitedBody, OutboundLimitError, type BodyLimit } from './limited-body.js';

export interface OutboundHttpOptions {
  /**
   * Hosts allowed even when they resolve to a private address: names, IPs or CIDR ranges (default: none).
   * A listed name may resolve to any private address except cloud metadata ones (list those by IP).
   */
  allowedHosts?: string[];
  /**
   * Per call time limit (default 10 s), response head and body: a `fetch` body still streaming then
   * errors. An event stream's body has `streamTimeoutMs` instead.
   */
  timeoutMs?: number;
  /**
   * Largest response body, after decompression (default 1 MiB): `get` cuts the rest off and sets
   * `truncated`; a `fetch` body hands over this many bytes, then errors with an OutboundLimitError.
   */
  maxBytes?: number;
  /** For a `fetch` answered with `text/event-stream`: largest single event, instead of a cap on the whole body (default: maxBytes). */
  maxEventBytes?: number;
  /** For a `fetch` answered with `text/event-stream`: the whole call's time limit, counted from its start (default: timeoutMs). */
  streamTimeoutMs?: number;
  /** Resolves a host name to every address it has (default: the system resolver, `dns.lookup` with `all`). */
  resolveHost?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Redirects followed, each hop checked again (default 5). */
  maxRedirects?: number;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export interface OutboundGetOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Default: the client's `timeoutMs`; covers the whole call, body included. */
  timeoutMs?: number;
}

export interface OutboundGetResult {
  status: number;
  /** The URL finally answered, after redirects. */
  url: string;
  contentType: string | null;
  text: string;
  truncated: boolean;
  /** Body bytes read (at most maxBytes). */
  bytes: number;
}

export interface OutboundHttp {
  /**
   * A fetch-compatible function (WHATWG Request/Response types) for libraries that take `fetch` (the
   * MCP SDK): streams the response body (SSE must work), honours init.signal, method, headers and
   * body (string, Uint8Array, URLSearchParams). The body errors with an OutboundLimitError past
   * maxBytes (an event stream: past maxEventBytes in one event, or past streamTimeoutMs).
   */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** GET a URL and read its body as text (up to maxBytes). */
  get(url: string, options?: OutboundGetOptions): Promise<OutboundGetResult>;
}

/** Thrown (or the fetch promise rejected) when a target is refused: code 'OUTBOUND_BLOCKED', with the host in the message. */
export class OutboundBlockedError extends Error {
  readonly code = 'OUTBOUND_BLOCKED';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OutboundBlockedError';
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
// AWS/GCP/Azure/OpenStack, AWS over IPv6, Alibaba: credentials live there, so a listed *name* whose DNS
// is changed to point at them is still refused; listing the IP itself is the deliberate way in.
const METADATA_IPS = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200'];
// Browsers' fetch drops authorization on a cross-origin redirect; cookies are no better to leak.
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];
// Set by node from the URL and the body; a caller's copy would be stale after a redirect.
const TRANSPORT_HEADERS = ['host', 'content-length', 'transfer-encoding', 'connection'];
const BODY_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-location'];
// request-filtering-agent 3.2.1 refuses with plain Errors worded like
// "DNS lookup 127.0.0.1(family:4, host:localhost) is not allowed. Because, It is private IP address."
const LIBRARY_REFUSAL = /^DNS lookup (.*?)\(.*is not allowed\. Because,? (.*)$/;

interface AllowList {
  names: Set<string>;
  addresses: net.BlockList;
  hasAddresses: boolean;
}

interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: Buffer;
}

type AgentPair = Record<'http:' | 'https:', http.Agent>;

interface Route {
  agent: http.Agent;
  lookup?: net.LookupFunction;
}

/** An outbound HTTP client that refuses private, loopback, link-local, CGNAT and metadata addresses unless allow-listed. */
export function createOutboundHttp(options: OutboundHttpOptions = {}): OutboundHttp {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const maxRedirects = options.maxRedirects ?? 5;
  const maxEventBytes = options.maxEventBytes ?? maxBytes;
  const streamTimeoutMs = options.streamTimeoutMs ?? timeoutMs;
  const resolveHost = options.resolveHost ?? resolveWithSystem;
  const allow = parseAllowList(options.allowedHosts ?? []);
  const agents = createAgents(allow);

  // Why `address` may not be dialled (null: it may). A listed name may reach any address but a
  // metadata one; a listed address (or range) is reached whatever it is.
  function refusalOf(address: string, nameListed: boolean): string | null {
    const verdict = inspectAddress(address);
    if (!verdict) return 'not an IP address';
    const listed = isListed(allow, address, verdict.family) || isListed(allow, verdict.effective, verdict.effectiveFamily);
    if (verdict.metadata) return listed ? null : 'a cloud metadata address (list the address itself to allow it)';
    if (listed || nameListed) return null;
    return verdict.restriction && `${verdict.restriction} (allow it with OUTBOUND_ALLOWED_HOSTS)`;
  }

  // Runs whenever a socket connects: it resolves the name, judges every address and hands only
  // judged ones to the socket, so the address dialled is the address checked.
  function checkedLookup(url: URL, nameListed: boolean, pinned?: ResolvedAddress[]): net.LookupFunction {
    return ((hostname: string, lookupOptions: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
      (pinned ? Promise.resolve(pinned) : resolveHost(hostname)).then(
        (found) => {
          const usable: ResolvedAddress[] = [];
          for (const { address } of found) {
            const refusal = refusalOf(address, nameListed);
            if (refusal) return callback(new OutboundBlockedError(`Outbound request to ${url.host} refused: ${hostname} resolves to ${address}, ${refusal}`));
            // An IPv4-mapped address is dialled as the IPv4 address it is, which the library's check understands too.
            const verdict = inspectAddress(address)!;
            usable.push(verdict.embedding === 'IPv4-mapped' ? { address: verdict.effective, family: 4 } : { address, family: verdict.family });
          }
          const wanted = familyNumber(lookupOptions.family);
          const fitting = wanted ? usable.filter((a) => a.family === wanted) : usable;
          if (!fitting.length) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }));
          if (lookupOptions.all) callback(null, fitting);
          else callback(null, fitting[0].address, fitting[0].family);
        },
        (error: unknown) => callback(error),
      );
    }) as net.LookupFunction;
  }

  // The library's own allow-list knows no names, and warns (with a stack) each time it compares an
  // address with a CIDR of the other family; so we decide what is allowed, and the library refuses
  // every private address on the connections we did not allow.
  async function route(url: URL): Promise<Route> {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
    const protocol = url.protocol as keyof AgentPair;
    const family = net.isIP(host);
    if (family) {
      const refusal = refusalOf(host, false);
      if (refusal) throw new OutboundBlockedError(`Outbound request to ${url.host} refused: ${host} is ${refusal}`);
      const verdict = inspectAddress(host)!;
      const listed = isListed(allow, host, family) || isListed(allow, verdict.effective, verdict.effectiveFamily);
      return { agent: (listed ? agents.trusted : agents.checked)[protocol] };
    }
    if (allow.names.has(host)) return { agent: agents.trusted[protocol], lookup: checkedLookup(url, true) };
    if (allow.hasAddresses) {
      // Costs one more lookup, only when IPs or ranges are listed.
      const found = await resolveHost(host).catch((): ResolvedAddress[] => []);
      if (found.length && found.every((a) => isListedAddress(allow, a.address))) {
        // Pinned to the addresses just checked: a second DNS answer cannot differ (rebinding).
        return { agent: agents.trusted[protocol], lookup: checkedLookup(url, false, found) };
      }
    }
    return { agent: agents.checked[protocol], lookup: checkedLookup(url, false) };
  }

  async function sendFollowing(first: Hop, signal: AbortSignal, redirect: Request['redirect']) {
    let hop = first;
    for (let redirects = 0; ; redirects++) {
      assertAllowedUrl(hop.url);
      const response = await sendOnce(hop, await untilAborted(route(hop.url), signal), signal);
      const location = response.headers.location;
      if (redirect === 'manual' || !REDIRECT_STATUSES.has(response.statusCode ?? 0) || !location) {
        return { response, url: hop.url, redirected: redirects > 0 };
      }
      response.destroy();
      if (redirect === 'error') throw new TypeError(`Outbound request to ${hop.url.host} was redirected (redirect: 'error')`);
      if (redirects >= maxRedirects) throw new Error(`Outbound request to ${first.url.host} was redirected more than ${maxRedirects} times`);
      hop = redirectHop(hop, response.statusCode!, new URL(location, hop.url));
    }
  }

  return {
    async fetch(input, init) {
      const url = new URL(input instanceof Request ? input.url : String(input));
      // Before `new Request`, which would reject userinfo with a less telling TypeError.
      assertAllowedUrl(url);
      // Request normalises method, headers and every body type exactly as global fetch would.
      const request = new Request(input, init);
      const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
      const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
      const startedAt = Date.now();
      const deadline = startDeadline(url.host, timeoutMs, signal);
      try {
        const hop = { url, method: request.method, headers: cleanHeaders(request.headers), body };
        const sent = await sendFollowing(hop, deadline.signal, request.redirect);
        const limit = { host: sent.url.host, maxBytes, maxEventBytes: isEventStream(sent.response) ? maxEventBytes : 0 };
        if (limit.maxEventBytes) {
          // An event stream may outlive the head's time limit, up to its own, counted from the start.
          const message = `Outbound response from ${limit.host} cut off: event stream exceeded ${streamTimeoutMs} ms`;
          deadline.restartTimer(streamTimeoutMs - (Date.now() - startedAt), () => new OutboundLimitError('stream_time', message));
        }
        sent.response.once('close', deadline.dispose);
        return toResponse(sent.response, sent.url, request.method, sent.redirected, limit);
      } catch (error) {
        deadline.dispose();
        throw error;
      }
    },

    async get(target, getOptions = {}) {
      const url = new URL(target);
      const deadline = startDeadline(url.host, getOptions.timeoutMs ?? timeoutMs, getOptions.signal);
      try {
        const hop = { url, method: 'GET', headers: cleanHeaders(new Headers(getOptions.headers)) };
        const { response, url: finalUrl } = await sendFollowing(hop, deadline.signal, 'follow');
        const contentType = response.headers['content-type'] ?? null;
        const { body, bytes, truncated } = await readCapped(decodedBody(response), maxBytes);
        return { status: response.statusCode ?? 0, url: finalUrl.href, contentType, text: decodeText(body, contentType), truncated, bytes };
      } finally {
        deadline.dispose();
      }
    },
  };
}

function parseAllowList(entries: string[]): AllowList {
  const names = new Set<string>();
  const addresses = new net.BlockList();
  let hasAddresses = false;
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
    if (!entry) continue;
    const slash = entry.indexOf('/');
    if (slash >= 0) {
      const [ip, bits] = [entry.slice(0, slash), entry.slice(slash + 1)];
      const family = net.isIP(ip);
      if (!family || !/^\d{1,3}$/.test(bits) || Number(bits) > (family === 6 ? 128 : 32)) {
        throw new Error(`Invalid CIDR range in the outbound allow-list: ${raw}`);
      }
      addresses.addSubnet(ip, Number(bits), family === 6 ? 'ipv6' : 'ipv4');
      hasAddresses = true;
    } else if (net.isIP(entry)) {
      addresses.addAddress(entry, net.isIPv6(entry) ? 'ipv6' : 'ipv4');
      hasAddresses = true;
    } else {
      names.add(entry.replace(/\.$/, ''));
    }
  }
  return { names, addresses, hasAddresses };
}

function isListed(allow: AllowList, address: string, family: number): boolean {
  return allow.addresses.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

// Listed in the spelling the resolver used or as the IPv4 address it embeds.
function isListedAddress(allow: AllowList, address: string): boolean {
  const verdict = inspectAddress(address);
  if (!verdict) return false;
  return isListed(allow, address, verdict.family) || isListed(allow, verdict.effective, verdict.effectiveFamily);
}

async function resolveWithSystem(hostname: string): Promise<ResolvedAddress[]> {
  return dns.promises.lookup(hostname, { all: true });
}

function familyNumber(family: dns.LookupOptions['family']): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

function isEventStream(response: http.IncomingMessage): boolean {
  return (response.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase() === 'text/event-stream';
}

function createAgents(allow: AllowList): { checked: AgentPair; trusted: AgentPair } {
  // Keep-alive is safe: the check runs in createConnection, i.e. for every new socket.
  const checked = { keepAlive: true };
  const trusted = {
    keepAlive: true,
    allowPrivateIPAddress: true,
    denyIPAddressList: METADATA_IPS.filter((ip) => !isListed(allow, ip, net.isIP(ip))),
  };
  return {
    checked: { 'http:': new RequestFilteringHttpAgent(checked), 'https:': new RequestFilteringHttpsAgent(checked) },
    trusted: { 'http:': new RequestFilteringHttpAgent(trusted), 'https:': new RequestFilteringHttpsAgent(trusted) },
  };
}

function assertAllowedUrl(url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundBlockedError(`Outbound request to ${url.protocol}//${url.host} refused: only http and https URLs are allowed`);
  }
  if (url.username || url.password) {
    throw new OutboundBlockedError(`Outbound request to ${url.host} refused: URLs carrying credentials are not allowed`);
  }
}

function cleanHeaders(headers: Headers): Record<string, string> {
  const result = Object.fromEntries(headers);
  for (const name of TRANSPORT_HEADERS) delete result[name];
  return result;
}

function redirectHop(hop: Hop, status: number, url: URL): Hop {
  // As fetch does: 303, and 301/302 after a POST, continue as a GET without the body.
  const toGet = status === 303 ? hop.method !== 'HEAD' : (status === 301 || status === 302) && hop.method === 'POST';
  const headers = { ...hop.headers };
  if (toGet) for (const name of BODY_HEADERS) delete headers[name];
  if (url.origin !== hop.url.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
  return { url, method: toGet ? 'GET' : hop.method, headers, body: toGet ? undefined : hop.body };
}

// One signal for the caller's abort and our time limit, so the socket has a single thing to obey.
function startDeadline(host: string, timeoutMs: number, callerSignal?: AbortSignal | null) {
  const controller = new AbortController();
  const onCallerAbort = () => controller.abort(callerSignal!.reason);
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  const timeout = () => controller.abort(new Error(`Outbound request to ${host} timed out after ${timeoutMs} ms`));
  let timer = setTimeout(timeout, timeoutMs).unref();
  return {
    signal: controller.signal,
    restartTimer: (ms: number, reason: () => Error) => {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(reason()), Math.max(0, ms)).unref();
    },
    dispose: () => {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

// A resolver that hangs must not outlive the time limit.
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function sendOnce(hop: Hop, { agent, lookup }: Route, signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const transport = hop.url.protocol === 'https:' ? https : http;
    // The trace continues at the receiver (W3C traceparent) when tracing is on; a caller's own header wins.
    const headers = { ...outboundTraceHeaders(), ...hop.headers, ...(hop.body ? { 'content-length': String(hop.body.length) } : {}) };
    const request = transport.request(hop.url, { method: hop.method, headers, agent, lookup });
    let response: http.IncomingMessage | undefined;
    // Stays attached while the body streams, so an abort also ends a response being read.
    const onAbort = () => {
      request.destroy(signal.reason);
      response?.destroy(signal.reason);
    };
    const release = () => signal.removeEventListener('abort', onAbort);
    signal.addEventListener('abort', onAbort, { once: true });
    request.on('error', (error) => {
      if (response) return;
      release();
      reject(describeRefusal(error, hop.url));
    });
    request.on('response', (incoming) => {
      response = incoming;
      incoming.once('close', release);
      resolve(incoming);
    });
    request.end(hop.body);
  });
}

function describeRefusal(error: Error, url: URL): Error {
  const refusal = LIBRARY_REFUSAL.exec(error.message);
  if (!refusal) return error;
  const why = /denyIPAddressList/.test(refusal[2]) ? 'a cloud metadata address' : 'a private, loopback, link-local or reserved address';
  return new OutboundBlockedError(
    `Outbound request to ${url.host} refused: ${refusal[1]} is ${why} (allow it with OUTBOUND_ALLOWED_HOSTS)`,
    { cause: error },
  );
}

// Fetch hands out decoded bodies; servers may compress even though we never ask them to.
function decodedBody(response: http.IncomingMessage): Readable {
  const encoding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const lenient = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip' ? zlib.createGunzip(lenient)
    : encoding === 'deflate' ? zlib.createInflate(lenient)
    : encoding === 'br' ? zlib.createBrotliDecompress()
    : null;
  if (!decoder) return response;
  return pipeline(response, decoder, () => undefined);
}

function toResponse(response: http.IncomingMessage, url: URL, method: string, redirected: boolean, limit: BodyLimit): Response {
  const status = response.statusCode ?? 0;
  const headers = new Headers();
  for (let i = 0; i < response.rawHeaders.length; i += 2) {
    try {
      headers.append(response.rawHeaders[i], response.rawHeaders[i + 1]);
    } catch {
      // A header undici deems invalid is dropped rather than failing the whole response.
    }
  }
  let body: ReadableStream<Uint8Array> | null = null;
  if (method === 'HEAD' || NULL_BODY_STATUSES.has(status)) {
    response.resume();
  } else {
    const decoded = decodedBody(response);
    if (decoded !== response) {
      headers.delete('content-encoding');
      headers.delete('content-length');
    }
    body = limitedBody(decoded, limit);
  }
  const result = new Response(body, { status, statusText: response.statusMessage, headers });
  // Constructed responses have an empty url; callers (the MCP SDK) resolve redirects against it.
  Object.defineProperties(result, { url: { value: url.href }, redirected: { value: redirected } });
  return result;
}

// Stops at maxBytes + one chunk in memory, however much the server sends.
async function readCapped(stream: Readable, maxBytes: number) {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let truncated = false;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const room = maxBytes - bytes;
    truncated = chunk.length > room;
    chunks.push(truncated ? chunk.subarray(0, room) : chunk);
    bytes += Math.min(chunk.length, room);
    if (truncated) break;
  }
  return { body: Buffer.concat(chunks), bytes, truncated };
}

function decodeText(body: Buffer, contentType: string | null): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder().decode(body);
  }
}
