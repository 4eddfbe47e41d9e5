// A plan as text, the way `liya plan` and `liya apply` print it: one line per resource (+ create,
// ~ update, - delete), the changed fields of an update under it, and a summary. Pure: data in, lines out.
// Keys, field paths and values come from the files and the server: each is escaped, so none can
// break a line and forge another.
import type { FieldChange, Plan } from '../../server/deploys/deploys.schemas.js';
import { plural } from '../format.js';
import { redactSecrets } from './secrets.js';
import { escapeControls, shownName } from './shown-text.js';

/** How long one value may be on a field line. */
const VALUE_WIDTH = 80;
const SECRET_SHOWN = '(secret)';

export type PlanLineKind = 'create' | 'update' | 'delete' | 'field';

export interface PlanLine {
  kind: PlanLineKind;
  /** `+`, `~` or `-` */
  sign: string;
  text: string;
}

/** A value in compact JSON, cut to `width` characters. */
export function compactValue(value: unknown, secrets: ReadonlySet<string> = new Set(), width = VALUE_WIDTH): string {
  if (value === SECRET_SHOWN) return SECRET_SHOWN;
  // JSON escapes the C0 controls only: C1 controls and line separators are escaped here.
  const json = escapeControls(redactSecrets(JSON.stringify(value) ?? 'null', secrets)).replace(/\s+/g, ' ');
  return json.length > width ? `${json.slice(0, width - 1)}…` : json;
}

function fieldLine(change: FieldChange, secrets: ReadonlySet<string>): PlanLine {
  const path = shownName(change.path);
  switch (change.change) {
    case 'added':
      return { kind: 'field', sign: '+', text: `${path}: ${compactValue(change.after, secrets)}` };
    case 'removed':
      return { kind: 'field', sign: '-', text: `${path}: ${compactValue(change.before, secrets)}` };
    default:
      return { kind: 'field', sign: '~', text: `${path}: ${compactValue(change.before, secrets)} -> ${compactValue(change.after, secrets)}` };
  }
}

/** The plan's lines: each change in apply order, with an update's field lines under it. */
export function planLines(plan: Plan, secrets: ReadonlySet<string> = new Set()): PlanLine[] {
  const lines: PlanLine[] = [];
  for (const change of plan.changes) {
    const sign = change.action === 'create' ? '+' : change.action === 'update' ? '~' : '-';
    lines.push({ kind: change.action, sign, text: `${change.action} ${shownName(change.kind)} ${shownName(change.key)}` });
    if (change.action === 'update') for (const field of change.fields) lines.push(fieldLine(field, secrets));
  }
  return lines;
}

export const planHasChanges = (plan: Plan) => plan.summary.create + plan.summary.update + plan.summary.delete > 0;

/** The summary line. */
export function planSummary(plan: Plan): string {
  const { create, update, delete: del, unchanged } = plan.summary;
  if (!planHasChanges(plan)) return `No changes: the server matches the project (${plural(unchanged, 'resource')}).`;
  return `Plan: ${create} to create, ${update} to update, ${del} to delete, ${unchanged} unchanged.`;
}

/** What the server has that the project does not name, when they are kept (no --prune). */
export function untrackedNote(plan: Plan, prune: boolean): string | null {
  if (prune || plan.untracked.length === 0) return null;
  const names = plan.untracked.map((u) => `${shownName(u.kind)} ${shownName(u.key)}`);
  const shown = names.slice(0, 10).join(', ') + (names.length > 10 ? `, … (${names.length - 10} more)` : '');
  return `${plural(plan.untracked.length, 'resource')} on the server ${plan.untracked.length === 1 ? 'is' : 'are'} not in the project and stay${plan.untracked.length === 1 ? 's' : ''} (--prune deletes them): ${shown}`;
}

/**
 * The secret values the project gives, by where they go. The server never compares them in a plan
 * (that would confirm a guess), so they are not changes: the apply writes each one that differs.
 */
export function secretsNote(plan: Plan): string | null {
  const given = plan.secrets ?? [];
  if (!given.length) return null;
  const names = given.map((s) => `${shownName(s.kind)} ${shownName(s.key)} ${shownName(s.path)}`);
  const shown = names.slice(0, 10).join(', ') + (names.length > 10 ? `, … (${names.length - 10} more)` : '');
  return `${plural(given.length, 'secret value')} given, written where ${given.length === 1 ? 'it differs' : 'they differ'} from the stored ${given.length === 1 ? 'one' : 'ones'} (a plan never compares secrets): ${shown}`;
}
