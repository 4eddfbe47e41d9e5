// The process logger: JSON lines for log collectors, readable lines for a person at a terminal.
import { logContext } from './observability/telemetry.js';
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger, type LoggerOptions as LoggerOptionsOfPino } from 'pino';
import type { AppConfig } from './config.js';

// Secrets and credentials never reach a log line: request headers that carry them, and the same
// names wherever an object logged next to a message holds them.
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["proxy-authorization"]',
  'req.headers["x-api-key"]',
  'req.headers["x-admin-secret"]',
  'req.headers.cookie',
  '*.authorization',
  '*.password',
  '*.apiKey',
  '*.token',
  '*.secret',
  '*.adminSecret',
  '*.ADMIN_SECRET',
  '*.JWT_SECRET',
  '*.ENCRYPTION_KEY',
  '*.OPENAI_API_KEY',
  '*.DATABASE_URL',
  '*.SMTP_URL',
];

// A run callback's URL carries its single-use token, which works like a password: log lines show
// the route, not the token. The router decodes the path before it matches (so
// /%77ebhooks/workflow-callbacks/<token> reaches the callback route), so URLs are matched decoded,
// in any letter case and anywhere in them: a near miss that reached no route still carries a live
// token. Messages and errors get the same treatment, since fastify writes some URLs into them.
const CALLBACK_PATH = '/webhooks/workflow-callbacks/';
const CALLBACK_IN_TEXT = /(\/webhooks\/workflow-callbacks\/)[^\s"'<>`]*/gi;
const TOKEN_SHAPE = /[A-Za-z0-9_-]{22}\.\d{1,6}\.[A-Za-z0-9_-]{32}/g;
const MAY_CARRY_TOKEN = /%|workflow-callbacks|[A-Za-z0-9_-]{22}\.\d{1,6}\./i;

/** Percent-decoding that never throws: a malformed or non-UTF-8 sequence is decoded byte by byte. */
function decodeLoosely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
}

/** A few rounds, so a token encoded twice over shows up as well. */
function decodeRounds(text: string): string {
  let decoded = text;
  for (let round = 0; round < 3 && decoded.includes('%'); round++) {
    const next = decodeLoosely(decoded);
    if (next === decoded) break;
    decoded = next;
  }
  return decoded;
}

/** `url` as a log line may show it: a run callback token cut off, however the URL spells it. */
export function redactUrl(url: string): string {
  if (!MAY_CARRY_TOKEN.test(url)) return url;
  const decoded = decodeRounds(url);
  const at = decoded.toLowerCase().indexOf(CALLBACK_PATH);
  if (at >= 0) return `${decoded.slice(0, at + CALLBACK_PATH.length)}[redacted]`;
  const redacted = decoded.replace(TOKEN_SHAPE, '[redacted]');
  return redacted === decoded ? url : redacted;
}

/** Free text (a message, an error's message or stack) with any run callback token cut out. */
export function redactText(text: string): string {
  if (!MAY_CARRY_TOKEN.test(text)) return text;
  const decoded = decodeRounds(text);
  const redacted = decoded.replace(CALLBACK_IN_TEXT, '$1[redacted]').replace(TOKEN_SHAPE, '[redacted]');
  return redacted === decoded ? text : redacted;
}

/** pino's error serializer, with tokens cut out of the message and the stack. */
function serializeError(err: Error) {
  const out = pino.stdSerializers.err(err);
  if (typeof out.message === 'string') out.message = redactText(out.message);
  if (typeof out.stack === 'string') out.stack = redactText(out.stack);
  return out;
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** The request as fastify logs it ("incoming request"), with secret URL parts redacted. */
export function serializeRequest(req: LoggedRequest) {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

export type LogFormat = 'json' | 'pretty';

/** `auto` is pretty on a terminal and JSON anywhere else (a file, a pipe, a container's log driver). */
export function resolveLogFormat(setting: AppConfig['LOG_FORMAT'], isTTY: boolean | undefined = process.stdout.isTTY): LogFormat {
  if (setting === 'auto') return isTTY ? 'pretty' : 'json';
  return setting;
}

export interface LoggerOptions {
  /** Where lines go (default: stdout). */
  destination?: NodeJS.WritableStream;
  /** Whether stdout is a terminal, for LOG_FORMAT=auto (default: process.stdout.isTTY). */
  isTTY?: boolean;
}

type PinoPretty = typeof import('pino-pretty');

// Loaded only when pretty output is asked for: production (JSON) never carries the formatter.
// pino-pretty is CommonJS, so require keeps this function synchronous. It is an optional feature
// (a peerDependency, left out by `npm ci --omit=peer`): null when it is not installed.
function loadPinoPretty(): PinoPretty | null {
  try {
    return createRequire(import.meta.url)('pino-pretty') as PinoPretty;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') return null;
    throw err;
  }
}

/**
 * Formats in this thread and writes synchronously: a transport would start a worker thread with
 * its own heap, and the API has to idle in little memory.
 */
function prettyStream(pinoPretty: PinoPretty, destination: NodeJS.WritableStream | undefined): DestinationStream {
  return pinoPretty({
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    ...(destination ? { destination } : {}),
  });
}

/** The logger of a server or worker process, at LOG_LEVEL in LOG_FORMAT. */
export function createLogger(config: Pick<AppConfig, 'LOG_LEVEL' | 'LOG_FORMAT'>, options: LoggerOptions = {}): Logger {
  const pinoOptions: LoggerOptionsOfPino = {
    level: config.LOG_LEVEL,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { req: serializeRequest, err: serializeError },
    // tenant_id, run_id and run_kind on every line written while serving a run; trace_id when tracing.
    mixin: () => logContext() ?? {},
    hooks: {
      // The message text, where fastify writes a raw URL now and then ("Route POST:/... not found").
      logMethod(args, method) {
        for (let i = 0; i < args.length; i++) if (typeof args[i] === 'string') args[i] = redactText(args[i] as string);
        return method.apply(this, args);
      },
    },
  };
  const pretty = resolveLogFormat(config.LOG_FORMAT, options.isTTY ?? process.stdout.isTTY) === 'pretty' ? loadPinoPretty() : null;
  if (pretty) return pino(pinoOptions, prettyStream(pretty, options.destination));
  const log = options.destination ? pino(pinoOptions, options.destination as DestinationStream) : pino(pinoOptions);
  // LOG_FORMAT=auto asks for pretty lines where they can be had; an explicit pretty is told why not.
  if (config.LOG_FORMAT === 'pretty') log.warn('LOG_FORMAT=pretty needs pino-pretty, an optional feature this install left out: logging JSON');
  return log;
}
