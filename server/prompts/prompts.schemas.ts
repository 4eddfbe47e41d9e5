import { z } from 'zod';
import { keyPattern } from '../common/schemas.js';

export const promptSchema = z
  .object({
    id: z.string(),
    prompt_key: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    latest_version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Prompt' });

export const promptVersionSchema = z
  .object({
    version_number: z.number().int(),
    template: z.string(),
    note: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'PromptVersion' });

export const createPromptInput = z.object({
  prompt_key: keyPattern,
  name: z.string().trim().min(1).max(200),
  description: z.string().max(5000).nullable().optional(),
  template: z.string().min(1).max(100_000),
  note: z.string().max(2000).optional(),
});

export const addPromptVersionInput = z.object({
  promptKey: z.string().max(100),
  template: z.string().min(1).max(100_000),
  note: z.string().max(2000).optional(),
});
