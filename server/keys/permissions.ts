// What an API key may do. Every /v1 operation declares one permission next to its route metadata
// (RouteMeta.permission); the API-key procedure refuses a key without it (403 PERMISSION_DENIED),
// and the OpenAPI document lists it as the role of the operation's API-key security requirement.
//
// A key's permissions: an environment key has its environment's (every permission unless the
// owner tightened them); a named key has the set it was created with, within its environment's.
// Within a request they are a bit mask: one AND decides, and two scopes compare as numbers.

/** Every permission, in the order they are documented, with what it allows. */
export const PERMISSIONS = {
  'intents:read': 'List custom domains and the intents of a domain',
  'intents:run': 'Run intents (POST /v1/run, /v1/hiring/*, custom domain intents) and guardrail checks',
  'knowledge:read': 'Read collections, documents and ingestion jobs; query knowledge',
  'collections:write': 'Create, change and delete collections',
  'documents:write': 'Upload and delete documents',
  'agents:read': 'Read agent definitions',
  'agents:write': 'Create, change, deploy and delete agents',
  'agents:run': 'Run agents (and their streams)',
  'workflows:read': 'Read workflow definitions, versions, actions and saved state',
  'workflows:write': 'Create, change, deploy, toggle and delete workflows; rotate webhook secrets; test runs; delete saved values',
  'workflows:run': 'Run workflows (and their streams), send events, decide approvals, retry and cancel runs',
  'runs:read': 'Read agent and workflow runs, sessions and transcripts',
  'evals:read': 'Read eval datasets, suites, runs, results and comparisons',
  'evals:write': 'Create, change and delete eval datasets, cases, suites and reviews; pin baselines',
  'evals:run': 'Start eval runs (suites, model comparisons, external outputs), score responses, cancel and resume runs',
  'project:read': 'Export the project, plan a project, read deployments',
  'project:deploy': 'Deploy and publish projects (as the deploy policy allows)',
  'project:prune': 'Deploy with prune: delete what a project does not name (as the deploy policy allows)',
  'events:read': 'Read event subscriptions, the event catalogue, recorded events and their deliveries',
  'events:write': 'Create, change, test and delete event subscriptions, rotate their secrets, resume them, replay events',
  // In the full preset and environment keys' default power only: it deletes history for good.
  'data:erase': 'Erase one end user\'s data by the user_id the API was called with (POST /v1/erasures)',
} as const;

export type Permission = keyof typeof PERMISSIONS;
export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];

const reads = PERMISSION_NAMES.filter((p) => p.endsWith(':read'));

/** Named sets a key can be created from. */
export const PERMISSION_PRESETS = {
  full: PERMISSION_NAMES,
  'read-only': reads,
  'run-only': ['intents:run', 'agents:run', 'workflows:run', 'runs:read'],
  'ingest-only': ['knowledge:read', 'documents:write'],
  // A CI job: plan, deploy (with a gate whose eval runs it follows), nothing else.
  deploy: ['evals:read', 'project:read', 'project:deploy'],
} as const satisfies Record<string, readonly Permission[]>;

export type PermissionPreset = keyof typeof PERMISSION_PRESETS;
export const PRESET_NAMES = Object.keys(PERMISSION_PRESETS) as PermissionPreset[];

const BIT = new Map(PERMISSION_NAMES.map((p, i) => [p, 1 << i]));

/** Every permission as a mask. */
export const ALL_PERMISSIONS_MASK = PERMISSION_NAMES.reduce((mask, p) => mask | BIT.get(p)!, 0);

/** The mask of a stored list (null: every permission). Names this release does not know are ignored. */
export function permissionMask(list: readonly string[] | null | undefined): number {
  if (list == null) return ALL_PERMISSIONS_MASK;
  let mask = 0;
  for (const name of list) mask |= BIT.get(name as Permission) ?? 0;
  return mask;
}

export const hasPermission = (mask: number, permission: Permission) => (mask & BIT.get(permission)!) !== 0;

/** The permissions of a mask, in documented order. */
export const permissionList = (mask: number): Permission[] => PERMISSION_NAMES.filter((p) => hasPermission(mask, p));

/** The preset a list is exactly, if any (a list shown back to its owner names its preset). */
export function presetOf(mask: number): PermissionPreset | null {
  return PRESET_NAMES.find((name) => permissionMask(PERMISSION_PRESETS[name]) === mask) ?? null;
}
