// The resource kinds of a project folder as the CLI sees them. The CLI may not import the server's
// values, so it keeps its own copy; the `satisfies` clauses make the type check fail when the
// server's project schema gains or loses a kind or a list.
import type { Project, ResourceKind } from '../../server/deploys/project.schemas.js';

/** The list of the project document that holds each kind (the server's KIND_LIST). */
export const KIND_LIST = {
  domain: 'domains',
  prompt: 'prompts',
  collection: 'collections',
  intent: 'intents',
  guardrails: 'guardrails',
  workflow: 'workflows',
  agent: 'agents',
  eval_dataset: 'eval_datasets',
  eval_suite: 'eval_suites',
} as const satisfies Record<ResourceKind, keyof Project>;

export type Kind = ResourceKind;
export type ListName = (typeof KIND_LIST)[Kind];

export const KINDS = Object.keys(KIND_LIST) as Kind[];

export const isKind = (value: unknown): value is Kind => typeof value === 'string' && Object.hasOwn(KIND_LIST, value);

/** A resource's key within its kind, as the server names it (an intent's includes its domain). */
export function resourceKeyOf(kind: Kind, resource: Record<string, unknown>): string {
  const key = kind === 'guardrails' ? (resource.key ?? 'tenant') : resource.key;
  return kind === 'intent' ? `${String(resource.domain)}/${String(key)}` : String(key);
}

/** A resource as it travels: plain JSON. */
export type ResourceData = Record<string, unknown>;

/** The project document the CLI sends: one list per kind. */
export type ProjectDocument = Record<ListName, ResourceData[]>;

export const emptyProject = (): ProjectDocument => Object.fromEntries(KINDS.map((kind) => [KIND_LIST[kind], []])) as unknown as ProjectDocument;
