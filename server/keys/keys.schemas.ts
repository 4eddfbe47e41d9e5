// Wire shapes of API keys with permissions: named keys, environment permissions, the catalogue.
import { z } from 'zod';
import { PERMISSION_NAMES, PERMISSIONS, PERMISSION_PRESETS, PRESET_NAMES } from './permissions.js';

const permissionEnum = z.enum(PERMISSION_NAMES as [string, ...string[]]);

const permissionsField = z
  .array(permissionEnum)
  .min(1)
  .max(PERMISSION_NAMES.length)
  .transform((list) => [...new Set(list)])
  .describe(`Permissions: ${PERMISSION_NAMES.join(', ')}`);

const presetField = z.enum(PRESET_NAMES as [string, ...string[]]).describe(
  PRESET_NAMES.map((name) => `\`${name}\`: ${PERMISSION_PRESETS[name].join(', ')}`).join('; '),
);

export const apiKeySchema = z
  .object({
    id: z.string(),
    name: z.string().nullable().describe('The key\'s name; null for an environment\'s own key'),
    kind: z.enum(['environment', 'named']),
    environment: z.string().nullable().describe('The environment the key belongs to (its permissions bound the key\'s)'),
    permissions: z.array(z.string()).describe('What the key may do now: its own permissions within its environment\'s'),
    preset: z.string().nullable().describe('The preset `permissions` equals, if any'),
    apiKeyPreview: z.string().describe('First 12 and last 4 characters'),
    expires_at: z.string().nullable(),
    expired: z.boolean(),
    last_used_at: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyDto = z.infer<typeof apiKeySchema>;

export const createKeyInput = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-z0-9][a-z0-9_.-]*$/, 'Use lower-case letters, digits, ".", "-" and "_", starting with a letter or digit')
      .describe('Unique among the tenant\'s keys that are not revoked'),
    environment: z.string().min(1).max(64).optional().describe('Environment name (default `production`): the key\'s permissions stay within the environment\'s, and its work is attributed to it'),
    preset: presetField.optional(),
    permissions: permissionsField.optional(),
    expires_at: z.iso.datetime({ offset: true }).optional().describe('When the key stops working (401 API_KEY_EXPIRED after); absent: never'),
  })
  .meta({ id: 'CreateApiKeyRequest' });
export type CreateKeyInput = z.infer<typeof createKeyInput>;

export const createdKeySchema = z.object({
  key: apiKeySchema,
  apiKey: z.string().describe('The full key. Shown once: store it now.'),
});
export type CreatedKeyDto = z.infer<typeof createdKeySchema>;

export const keyListSchema = z.object({ keys: z.array(apiKeySchema) });

export const environmentPermissionsInput = z
  .object({
    id: z.string().max(64),
    preset: presetField.optional(),
    permissions: permissionsField.nullable().optional().describe('null: every permission (the default)'),
  })
  .meta({ id: 'EnvironmentPermissionsRequest' });

export const permissionCatalogSchema = z
  .object({
    permissions: z.array(z.object({ name: z.string(), description: z.string() })),
    presets: z.array(z.object({ name: z.string(), permissions: z.array(z.string()) })),
  })
  .meta({ id: 'PermissionCatalog' });
export type PermissionCatalogDto = z.infer<typeof permissionCatalogSchema>;

export const permissionCatalog = (): PermissionCatalogDto => ({
  permissions: PERMISSION_NAMES.map((name) => ({ name, description: PERMISSIONS[name] })),
  presets: PRESET_NAMES.map((name) => ({ name, permissions: [...PERMISSION_PRESETS[name]] })),
});
