// `liya export`: a project document as a folder of files, at deterministic paths and with a stable
// text (fields in the schema's order, lists in key order, fixed YAML options), so two exports of the
// same state are byte-identical and a diff in review shows only what changed. It writes and deletes
// nothing through a symbolic link: a linked folder could make --force empty a folder elsewhere.
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { fileSchema, SCHEMA_FILE_NAME, type FileSchema, type JsonSchema } from './file-schema.js';
import { linkOnTheWay, SymlinkRefusedError, writeInside } from './folder-boundary.js';
import { listProjectFiles } from './load-project.js';
import { KIND_LIST, KINDS, type Kind, type ProjectDocument, type ResourceData } from './project-kinds.js';
import { secretReferenceName } from './secrets.js';

/** The folders an export writes (and `--force` empties), and the files it writes at the root. */
export const MANAGED_FOLDERS = ['domains', 'prompts', 'collections', 'intents', 'workflows', 'agents', 'evals/datasets', 'evals/suites'];
export const MANAGED_ROOT_FILES = ['guardrails.yaml', SCHEMA_FILE_NAME];

const YAML_OPTIONS = {
  indent: 2,
  // Never fold long lines: a changed word shows as one changed line.
  lineWidth: 0,
  minContentWidth: 0,
  // Equal values are written out each time, never as anchors and aliases.
  aliasDuplicateObjects: false,
} as const;

export interface ExportedFile {
  /** Relative to the folder, with `/`. */
  path: string;
  content: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/** The branch of an alternative (a nullable object or list) that `value` takes. */
function branchFor(schema: unknown, value: unknown, resolve: FileSchema['resolve'], depth = 0): JsonSchema {
  const s = resolve(schema);
  const alternatives = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (!Array.isArray(alternatives) || depth > 10) return s;
  for (const alternative of alternatives) {
    const b = branchFor(alternative, value, resolve, depth + 1);
    if ((b.type === 'object' && isObject(value)) || (b.type === 'array' && Array.isArray(value))) return b;
  }
  return s;
}

/** `value` with the keys of each object in the schema's order (keys the schema does not name keep theirs, after). */
function inSchemaOrder(value: unknown, schema: unknown, resolve: FileSchema['resolve']): unknown {
  if (Array.isArray(value)) {
    const items = branchFor(schema, value, resolve).items;
    return value.map((v) => inSchemaOrder(v, items, resolve));
  }
  if (!isObject(value)) return value;
  const s = branchFor(schema, value, resolve);
  const properties = (s.properties ?? {}) as Record<string, unknown>;
  const named = Object.keys(properties).filter((k) => Object.hasOwn(value, k));
  const others = Object.keys(value).filter((k) => !Object.hasOwn(properties, k));
  return Object.fromEntries([...named, ...others].map((k) => [k, inSchemaOrder(value[k], properties[k], resolve)]));
}

/** A file name from a name: lower-case letters, digits and dashes. */
export function slugOf(name: string, fallback: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 80)
    .replace(/-+$/, '');
  return slug || fallback;
}

const SAFE_KEY = /^[a-z0-9_-]{1,100}$/;

/** File names unique within each folder: the first (in key order) keeps the name, the next get -2, -3, ... */
function nameAllocator() {
  const used = new Map<string, Set<string>>();
  return (folder: string, base: string): string => {
    const taken = used.get(folder) ?? new Set<string>();
    used.set(folder, taken);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    return name;
  };
}

const byKey = (a: ResourceData, b: ResourceData) => {
  const ka = `${String(a.domain ?? '')}/${String(a.key)}`;
  const kb = `${String(b.domain ?? '')}/${String(b.key)}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
};

function folderAndName(kind: Kind, resource: ResourceData): { folder: string; base: string } {
  const key = String(resource.key ?? '');
  const safe = (k: string, fallback: string) => (SAFE_KEY.test(k) ? k : slugOf(k, fallback));
  switch (kind) {
    case 'intent':
      return { folder: `intents/${safe(String(resource.domain ?? ''), 'domain')}`, base: safe(key, 'intent') };
    case 'guardrails':
      return { folder: '', base: 'guardrails' };
    case 'eval_dataset':
      return { folder: 'evals/datasets', base: slugOf(key, 'dataset') };
    case 'eval_suite':
      return { folder: 'evals/suites', base: slugOf(key, 'suite') };
    default:
      return { folder: `${KIND_LIST[kind]}`, base: safe(key, kind) };
  }
}

/** The files of an export of `project` (the schema file included), sorted by path. */
export function renderProjectFiles(project: ProjectDocument, schema: FileSchema = fileSchema()): ExportedFile[] {
  const files: ExportedFile[] = [{ path: SCHEMA_FILE_NAME, content: schema.text }];
  const allocate = nameAllocator();
  for (const kind of KINDS) {
    const definition = schema.definitionOf(kind);
    for (const resource of [...(project[KIND_LIST[kind]] ?? [])].sort(byKey)) {
      const { folder, base } = folderAndName(kind, resource);
      const name = allocate(folder, base);
      const file = folder ? `${folder}/${name}.yaml` : `${name}.yaml`;
      const schemaRef = path.posix.relative(path.posix.dirname(file), SCHEMA_FILE_NAME);
      let data: ResourceData = { kind, ...resource };
      if (kind === 'eval_dataset') {
        // The cases go to a JSON Lines file beside it: one line per case reads well in a diff.
        const { cases, ...rest } = data;
        const casesFile = `${name}.jsonl`;
        const caseSchema = schema.resolve(((definition.properties ?? {}) as Record<string, unknown>).cases).items;
        const lines = (Array.isArray(cases) ? cases : []).map((c) => `${JSON.stringify(inSchemaOrder(c, caseSchema, schema.resolve))}\n`);
        files.push({ path: `${folder}/${casesFile}`, content: lines.join('') });
        data = { ...rest, cases_file: casesFile };
      }
      const ordered = inSchemaOrder(data, definition, schema.resolve);
      const header = `# yaml-language-server: $schema=${schemaRef.startsWith('.') ? schemaRef : `./${schemaRef}`}\n`;
      files.push({ path: file, content: header + stringify(ordered, YAML_OPTIONS) });
    }
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Files in `dir` an export would replace or that liya reads as project files (relative paths). */
export async function existingProjectFiles(dir: string): Promise<string[]> {
  const found = new Set<string>();
  const walk = async (folder: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) await walk(full);
      else found.add(path.relative(dir, full));
    }
  };
  for (const folder of MANAGED_FOLDERS) {
    // A linked folder is not walked: what it leads to is not the folder's.
    const link = await linkOnTheWay(dir, path.join(dir, folder)).catch(() => null);
    if (link) found.add(path.relative(dir, link));
    else await walk(path.join(dir, folder));
  }
  try {
    const { files, links } = await listProjectFiles(dir);
    for (const file of [...files, ...links]) found.add(path.relative(dir, file));
  } catch {
    // no folder yet
  }
  return [...found].sort();
}

/**
 * The symbolic links among the folders and root files an export writes or removes, and the folders
 * on the way to them (`evals` for `evals/datasets`): relative to `dir`, sorted. `dir` itself is the
 * folder the user named, link or not.
 */
export async function managedLinks(dir: string): Promise<string[]> {
  const found = new Set<string>();
  for (const managed of [...MANAGED_FOLDERS, ...MANAGED_ROOT_FILES]) {
    const link = await linkOnTheWay(dir, path.join(dir, ...managed.split('/')));
    if (link) found.add(path.relative(dir, link).split(path.sep).join('/'));
  }
  return [...found].sort();
}

/** Removes what an export writes (the managed folders and root files), nothing else; refuses, before removing anything, when one of them is a link. */
export async function clearManagedFiles(dir: string): Promise<void> {
  const [link] = await managedLinks(dir);
  if (link) throw new SymlinkRefusedError(link);
  // rm removes a link found inside a managed folder, never what it leads to.
  for (const folder of MANAGED_FOLDERS) await rm(path.join(dir, folder), { recursive: true, force: true });
  for (const file of MANAGED_ROOT_FILES) await rm(path.join(dir, file), { force: true });
}

/** Writes the files under `dir`; throws SymlinkRefusedError at a link on the way to one, or at one. */
export async function writeProjectFiles(dir: string, files: ExportedFile[]): Promise<void> {
  for (const file of files) await writeInside(dir, file.path, file.content);
}

/** The `${NAME}` references an export holds (the variables `liya apply` will want). */
export function secretReferencesOf(value: unknown, found = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    const name = secretReferenceName(value);
    if (name) found.add(name);
  } else if (Array.isArray(value)) value.forEach((v) => secretReferencesOf(v, found));
  else if (isObject(value)) Object.values(value).forEach((v) => secretReferencesOf(v, found));
  return found;
}

/**
 * Levels a resource may nest: a project body holding it is at most 100 levels deep (the server's
 * limit), and the body, `project`, its list and the resource itself take the first four.
 */
export const MAX_RESOURCE_DEPTH = 97;

/** The path to the first value nested deeper than `limit` levels in `value`, or null (walked without recursion: any depth is safe). */
export function tooDeepPath(value: unknown, limit = MAX_RESOURCE_DEPTH): string[] | null {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }];
  while (stack.length) {
    const { value: v, path } = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    if (path.length >= limit) return path;
    for (const [key, child] of Object.entries(v)) stack.push({ value: child, path: [...path, key] });
  }
  return null;
}
