// Wire shapes of a tenant's retention settings (GET and PATCH /dashboard/retention).
import { z } from 'zod';
import { HISTORY_KINDS, HISTORY_POLICY, type HistoryKind } from './retention-policy.js';

const retentionKindSchema = z
  .object({
    kind: z.enum(HISTORY_KINDS),
    description: z.string().describe('What goes when its time is up'),
    days: z.number().int().describe('Days the tenant keeps it now: its own setting, or the plan\'s days without one'),
    plan_days: z.number().int().describe('The plan\'s days: the most the tenant may set'),
    min_days: z.number().int().describe('The least the tenant may set'),
    custom: z.boolean().describe('Whether the tenant set its own days'),
    hiring_floor_days: z
      .number()
      .int()
      .nullable()
      .describe('Rows of the hiring domain are kept at least this long, whatever `days` says; null: the floor does not apply to this kind'),
  })
  .meta({ id: 'RetentionKind' });

export const retentionSchema = z
  .object({
    plan: z.string().describe('The tenant\'s billing plan, which bounds every setting'),
    hiring_floor_days: z.number().int().describe('The hiring domain\'s floor (HIRING_RETENTION_FLOOR_DAYS); 0: none'),
    kinds: z.array(retentionKindSchema),
  })
  .meta({ id: 'Retention' });
export type RetentionDto = z.infer<typeof retentionSchema>;

const daysField = (kind: HistoryKind) =>
  z
    .number()
    .int()
    .min(1)
    .max(36_500)
    .nullable()
    .optional()
    .describe(`Days to keep ${kind} (${HISTORY_POLICY[kind].minDays} up to the plan's days); null: back to the plan's days`);

type RetentionUpdateShape = { [K in HistoryKind]: ReturnType<typeof daysField> };

export const retentionUpdateInput = z
  .object(Object.fromEntries(HISTORY_KINDS.map((kind) => [kind, daysField(kind)])) as RetentionUpdateShape)
  .meta({ id: 'RetentionUpdate' });
export type RetentionUpdateInput = z.infer<typeof retentionUpdateInput>;
