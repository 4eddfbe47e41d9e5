import { z } from 'zod';

// Body fields are validated exactly as sent (http/rest-routes.ts serves the procedures; no adapter
// coerces "7" to 7 any more). These wrappers date from trpc-to-openapi's own adapter, which did,
// and left a transform (a pipe) alone. They stay because the OpenAPI document is generated from the
// schemas as they are: without them the request bodies' defaults are documented differently.
const strict = <T extends z.ZodType>(schema: T) => schema.transform((v) => v as z.output<T>);
/** Keeps a nested body object as it is in the generated document (see above). */
export const noCoerce = strict;

export const bodyInt = (min = 0, max = Number.MAX_SAFE_INTEGER) => strict(z.number().int().min(min).max(max));
export const bodyNumber = (min = -Number.MAX_VALUE, max = Number.MAX_VALUE) => strict(z.number().min(min).max(max));
export const bodyBoolean = () => strict(z.boolean());

export const paginationSchema = z.object({
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});
export type Pagination = z.infer<typeof paginationSchema>;

/** `page` (from 1) and `pageSize` (default 20, larger than 100 is clamped to 100). */
export const pageQuery = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce.number().int().min(1).default(20).transform((n) => Math.min(n, 100)),
};

/** `limit` (default 20, clamped to 100) and `offset` (default 0). */
export const limitOffsetQuery = {
  limit: z.coerce.number().int().min(1).default(20).transform((n) => Math.min(n, 100)),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
};

export function pageToLimitOffset(page: number, pageSize: number) {
  return { limit: pageSize, offset: (page - 1) * pageSize };
}

/** `{success: true, data}` */
export const ok = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });
export const okEmpty = z.object({ success: z.literal(true) });

export const envelope = <T>(data: T) => ({ success: true as const, data });

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids that cannot exist are "not found" without asking the database. */
export const isUuid = (value: string) => UUID_PATTERN.test(value);

export const iso = (date: Date | string | null | undefined): string | null =>
  date == null ? null : new Date(date).toISOString();
export const isoRequired = (date: Date | string): string => new Date(date).toISOString();

/** `YYYY-MM` in UTC: the usage month. */
export const monthKey = (date = new Date()) => date.toISOString().slice(0, 7);
/** The first instant of `date`'s UTC month: usage months start there. */
export const startOfMonth = (date = new Date()) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
export const startOfNextMonth = (date = new Date()) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1));

/** A resource key (domain, intent, prompt, agent, workflow): lower-case letters, digits, - and _. */
export const keyPattern = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[a-z0-9_-]+$/, 'Use lower-case letters, digits, - and _');
