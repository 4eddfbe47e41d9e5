// The process logger: JSON lines for log collectors, readable lines for a person at a terminal.
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
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

// A run callback's URL carries its single-use token, which works like a password: request lines
// show the route, not the token.
const SECRET_URL_PART = /^(\/webhooks\/workflow-callbacks\/)[^/?#]+/;

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
    url: typeof req.url === 'string' ? req.url.replace(SECRET_URL_PART, '$1[redacted]') : req.url,
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
// pino-pretty is CommonJS, so require keeps this function synchronous.
const loadPinoPretty = (): PinoPretty => createRequire(import.meta.url)('pino-pretty') as PinoPretty;

/**
 * Formats in this thread and writes synchronously: a transport would start a worker thread with
 * its own heap, and the API has to idle in little memory.
 */
function prettyStream(destination: NodeJS.WritableStream | undefined): DestinationStream {
  const pinoPretty = loadPinoPretty();
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
  const pinoOptions = { level: config.LOG_LEVEL, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, serializers: { req: serializeRequest } };
  if (resolveLogFormat(config.LOG_FORMAT, options.isTTY ?? process.stdout.isTTY) === 'pretty') {
    return pino(pinoOptions, prettyStream(options.destination));
  }
  return options.destination ? pino(pinoOptions, options.destination as DestinationStream) : pino(pinoOptions);
}
