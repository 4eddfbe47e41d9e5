import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

// The only reader of process.env. Every variable is documented in .env.example.
const boolFlag = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', 'on', 'off'])
  .transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.string().url().optional(),
  PG_DATA_DIR: z.string().default('./.liya/pg'),
  PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  WORKER: boolFlag.default(true),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  JWT_SECRET: z.string().min(32, 'JWT_SECRET must be at least 32 characters').optional(),
  JWT_TTL_SECONDS: z.coerce.number().int().min(60).default(7 * 24 * 3600),
  ADMIN_SECRET: z.string().min(16, 'ADMIN_SECRET must be at least 16 characters').optional(),
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().default('Liya <no-reply@localhost>'),
  APP_URL: z.string().url().default('http://localhost:3000'),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).default(10),
  LOGIN_WINDOW_SECONDS: z.coerce.number().int().min(1).default(15 * 60),
  TRUST_PROXY: boolFlag.default(false),
});

export type AppConfig = z.infer<typeof configSchema>;

export class ConfigError extends Error {}

/**
 * Reads the configuration from `env` (default: process.env, after loading `./.env` when present;
 * variables already set win over the file).
 */
export function loadConfig(env: NodeJS.ProcessEnv = readProcessEnv()): AppConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

function readProcessEnv(): NodeJS.ProcessEnv {
  const file = path.resolve('.env');
  if (existsSync(file)) process.loadEnvFile(file);
  return process.env;
}
