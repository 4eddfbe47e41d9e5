// A project folder read into the project document the server takes: every *.yaml / *.yml file under
// it (dot-folders and node_modules left out; where a file lives does not matter) holds one resource,
// `kind:` and that kind's fields. Every problem is reported at file:line:column, all at once: YAML
// syntax, schema errors, an unknown kind, a key defined twice, a missing or bad cases file. Each
// resource remembers its file, so the server's issues about it can be reported there too. Nothing
// outside the folder is read and no symbolic link inside it is followed (see folder-boundary.ts): a
// linked YAML file or folder, and a cases file outside or through a link, are problems too; so is a
// file over its size cap, found before it is read.
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { readCsvCases, readJsonLines, type CasesRead } from './cases-files.js';
import { fileSchema } from './file-schema.js';
import { FileTooLargeError, isInside, isLinkRefusal, LINK_RULE, linkOnTheWay, MAX_CASES_FILE_BYTES, MAX_YAML_FILE_BYTES, readCappedFile, SERVER_LIMIT_TEXT } from './folder-boundary.js';
import { emptyProject, isKind, KIND_LIST, KINDS, resourceKeyOf, type Kind, type ListName, type ProjectDocument, type ResourceData } from './project-kinds.js';
import { closest, fieldLabel, problemText, schemaProblems } from './schema-errors.js';
import { newResolvedSecrets, resolveSecrets, type MisplacedReference, type ResolvedSecrets, type SecretPathPattern } from './secrets.js';
import { escapeControls } from './shown-text.js';
import { parseYaml, positionOf, type Position, type YamlSource } from './yaml-source.js';

export interface FileIssue {
  /** As shown: relative to the working directory (absolute outside it). */
  file: string;
  line: number;
  column: number;
  message: string;
}

/** File names and messages (which quote the files' keys and values) escaped: none can break the line. */
export const formatIssue = (i: FileIssue) => `${escapeControls(i.file)}:${i.line}:${i.column}: ${escapeControls(i.message)}`;

/** The project folder has problems; nothing was sent. */
export class ProjectFilesError extends Error {
  constructor(
    readonly issues: FileIssue[],
    message = `${issues.length} problem${issues.length === 1 ? '' : 's'} in the project files`,
  ) {
    super(message);
    this.name = 'ProjectFilesError';
  }
}

export interface ResourceOrigin {
  kind: Kind;
  key: string;
  source: YamlSource;
  /** A dataset whose cases come from a cases_file: that file and the line of each case. */
  cases?: { file: string; lines: number[] };
}

export interface LoadedProject {
  dir: string;
  /** The document to send, secrets filled in. */
  project: ProjectDocument;
  /** Where each resource of `project` comes from, list by list, index by index. */
  origins: Record<ListName, ResourceOrigin[]>;
  secrets: ResolvedSecrets;
  files: number;
}

/** How a file is named in messages: relative to the working directory when it is under it, else absolute. */
export function displayPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : path.resolve(file);
}

const YAML_FILE = /\.ya?ml$/i;
const skipped = (entry: Dirent) => entry.name.startsWith('.') || entry.name === 'node_modules';

const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The YAML files of the folder (absolute paths, sorted), and the symbolic links it holds that are
 * named as YAML files or lead to folders: never followed, they are problems (skipped silently, the
 * resources in them would look deleted to a plan with --prune).
 */
export async function listProjectFiles(dir: string): Promise<{ files: string[]; links: string[] }> {
  const files: string[] = [];
  const links: string[] = [];
  const walk = async (folder: string) => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      if (skipped(entry)) continue;
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isSymbolicLink()) {
        if (YAML_FILE.test(entry.name) || (await stat(full).catch(() => null))?.isDirectory()) links.push(full);
      } else if (YAML_FILE.test(entry.name) && entry.isFile()) files.push(full);
    }
  };
  await walk(dir);
  return { files: files.sort(byPath), links: links.sort(byPath) };
}

interface ParsedFile {
  kind: Kind;
  key: string;
  resource: ResourceData;
  source: YamlSource;
  cases?: { file: string; lines: number[] };
}

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

async function readCasesFile(file: string): Promise<CasesRead> {
  const text = await readCappedFile(file, MAX_CASES_FILE_BYTES);
  return /\.csv$/i.test(file) ? readCsvCases(text) : readJsonLines(text);
}

const tooLarge = (err: FileTooLargeError, what: string) => `${err.message} for ${what} (${SERVER_LIMIT_TEXT})`;

/** One file of the folder `root` (a real path): its resource, or the problems that keep it from being one (pushed to `issues`). */
async function parseFile(root: string, file: string, issues: FileIssue[]): Promise<ParsedFile | null> {
  const shown = displayPath(file);
  const issue = (position: Position, message: string) => issues.push({ file: shown, line: position.line, column: position.column, message });
  let text: string;
  try {
    text = await readCappedFile(file, MAX_YAML_FILE_BYTES);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (err instanceof FileTooLargeError) issue({ line: 1, column: 1 }, tooLarge(err, 'a project file'));
    // Replaced by a link since the folder was listed.
    else if (isLinkRefusal(err)) issue({ line: 1, column: 1 }, `a symbolic link; ${LINK_RULE}`);
    else issue({ line: 1, column: 1 }, `cannot read the file: ${code ?? (err as Error).message}`);
    return null;
  }
  const source = parseYaml(shown, text);
  if (source.errors.length) {
    source.errors.forEach((e) => issue(e.position, e.message));
    return null;
  }
  let value: unknown;
  try {
    value = source.doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    issue({ line: 1, column: 1 }, (err as Error).message);
    return null;
  }
  const start = positionOf(source, []);
  if (value === null || value === undefined) {
    issue(start, `the file is empty; a project file holds one resource: kind: ${KINDS.join(' | ')}, and its fields`);
    return null;
  }
  if (!isObject(value)) {
    issue(start, 'a project file holds one resource: a mapping with kind: and its fields');
    return null;
  }
  const kind = value.kind;
  if (kind === undefined) {
    issue(start, `missing field "kind" (one of: ${KINDS.join(', ')})`);
    return null;
  }
  if (!isKind(kind)) {
    const suggestion = typeof kind === 'string' ? closest(kind, KINDS) : undefined;
    issue(positionOf(source, ['kind']), `unknown kind ${JSON.stringify(kind)}${suggestion ? `; did you mean "${suggestion}"?` : ''} (kinds: ${KINDS.join(', ')})`);
    return null;
  }

  const schema = fileSchema();
  const validate = schema.validatorFor(kind);
  if (!validate(value)) {
    for (const problem of schemaProblems(validate.errors ?? [], schema.resolve)) {
      issue(positionOf(source, problem.path, { key: problem.atKey }), problemText(problem));
    }
    return null;
  }

  const { kind: _kind, cases_file: casesFile, ...resource } = value;
  let cases: ParsedFile['cases'];
  if (typeof casesFile === 'string') {
    const full = path.resolve(path.dirname(file), casesFile);
    const casesShown = displayPath(full);
    const casesIssue = (message: string) => {
      issue(positionOf(source, ['cases_file']), `cases_file: ${message}`);
      return null;
    };
    // `file` was reached from `root` through no link, so the path's `..` resolve as the disk does.
    if (!isInside(root, full)) return casesIssue(`${casesFile} is outside the project folder`);
    const link = await linkOnTheWay(root, full);
    if (link === full) return casesIssue(`${casesFile} is a symbolic link; ${LINK_RULE}`);
    if (link) return casesIssue(`${casesFile} goes through a symbolic link (${displayPath(link)}); ${LINK_RULE}`);
    let read: CasesRead;
    try {
      read = await readCasesFile(full);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (err instanceof FileTooLargeError) {
        issues.push({ file: casesShown, line: 1, column: 1, message: tooLarge(err, 'a cases file') });
        return null;
      }
      if (isLinkRefusal(err)) return casesIssue(`${casesFile} is a symbolic link; ${LINK_RULE}`);
      if (code === 'ENOTFILE' || code === 'EISDIR') return casesIssue(`${casesShown} is not a file`);
      return casesIssue(code === 'ENOENT' ? `${casesShown} does not exist` : `cannot read ${casesShown}: ${code ?? (err as Error).message}`);
    }
    const lineIssues: FileIssue[] = read.problems.map((p) => ({ file: casesShown, line: p.line, column: 1, message: p.message }));
    for (const c of read.cases) {
      if (schema.validateCase(c.value)) continue;
      for (const problem of schemaProblems(schema.validateCase.errors ?? [], schema.resolve)) {
        lineIssues.push({ file: casesShown, line: c.line, column: 1, message: problemText(problem) });
      }
    }
    if (lineIssues.length) {
      issues.push(...lineIssues);
      return null;
    }
    resource.cases = read.cases.map((c) => c.value);
    cases = { file: casesShown, lines: read.cases.map((c) => c.line) };
  }
  return { kind, key: resourceKeyOf(kind, resource), resource, source, cases };
}

/** Reads and checks the folder; throws ProjectFilesError listing every problem. */
export async function loadProject(dir: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedProject> {
  const info = await stat(path.resolve(dir)).catch(() => null);
  if (!info?.isDirectory()) throw new ProjectFilesError([], `${dir} is not a folder`);
  // The folder named may itself be a link (or under one): its real path is the boundary.
  const root = await realpath(path.resolve(dir));
  const { files, links } = await listProjectFiles(root);
  if (files.length === 0 && links.length === 0) {
    throw new ProjectFilesError([], `${dir} holds no project files (*.yaml or *.yml); write them, or start from a server's: liya export --dir ${dir}`);
  }
  const issues: FileIssue[] = links.map((link) => ({ file: displayPath(link), line: 1, column: 1, message: `a symbolic link; ${LINK_RULE} (copy the file or folder in instead)` }));
  const parsed: ParsedFile[] = [];
  for (const file of files) {
    const one = await parseFile(root, file, issues);
    if (one) parsed.push(one);
  }

  const project = emptyProject();
  const origins = Object.fromEntries(KINDS.map((kind) => [KIND_LIST[kind], []])) as unknown as Record<ListName, ResourceOrigin[]>;
  const secrets = newResolvedSecrets();
  const secretPaths = (fileSchema().root['x-secret-paths'] ?? []) as SecretPathPattern[];
  const defined = new Map<string, ParsedFile>();
  for (const p of parsed) {
    const id = `${p.kind} ${p.key}`;
    const first = defined.get(id);
    if (first) {
      const where = (f: ParsedFile) => {
        const at = positionOf(f.source, f.kind === 'guardrails' && f.resource.key === undefined ? [] : ['key']);
        return { ...at, text: `${f.source.file}:${at.line}:${at.column}` };
      };
      const here = where(p);
      issues.push({ file: p.source.file, line: here.line, column: here.column, message: `duplicate ${p.kind} "${p.key}": ${where(first).text} defines it too` });
      continue;
    }
    defined.set(id, p);
    const list = KIND_LIST[p.kind];
    const misplaced: MisplacedReference[] = [];
    project[list].push(resolveSecrets(p.resource, env, secrets, { kind: p.kind, patterns: secretPaths, misplaced }) as ResourceData);
    for (const m of misplaced) {
      // A case of a cases file is reported at its own line there.
      const caseLine = p.cases && m.path[0] === 'cases' ? p.cases.lines[Number(m.path[1])] : undefined;
      const at = caseLine !== undefined ? { file: p.cases!.file, line: caseLine, column: 1 } : { file: p.source.file, ...positionOf(p.source, m.path) };
      const allowed = secretPaths.filter((s) => s.kind === p.kind).map((s) => s.path);
      issues.push({
        ...at,
        message: escapeControls(
          `${fieldLabel(m.path)}: ${m.value} is a secret reference, and secrets go only where the server keeps them encrypted (${allowed.length ? `in a ${p.kind}: ${allowed.join(', ')}` : `nowhere in a ${p.kind}`}); it is not filled in`,
        ),
      });
    }
    origins[list].push({ kind: p.kind, key: p.key, source: p.source, cases: p.cases });
  }
  if (issues.length) {
    const order = new Map(files.map((f, i) => [displayPath(f), i]));
    issues.sort((a, b) => (order.get(a.file) ?? files.length) - (order.get(b.file) ?? files.length) || a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
    throw new ProjectFilesError(issues);
  }
  return { dir: root, project, origins, secrets, files: files.length };
}

/**
 * Where the server's issue `project.<list>.<index>.<field...>` points in the folder: the resource's
 * file and the line of the field (as deep as the file has it), or the line of a case in its cases
 * file. Null for a path outside the project document.
 */
export function locateServerIssue(loaded: LoadedProject, issuePath: string): { file: string; line: number; column: number; field: string } | null {
  const [head, list, index, ...rest] = issuePath.split('.');
  if (head !== 'project' || !list || !Object.hasOwn(loaded.origins, list)) return null;
  const origin = loaded.origins[list as ListName][Number(index)];
  if (!origin) return null;
  const field = fieldLabel(rest);
  if (origin.cases && rest[0] === 'cases' && rest.length > 1) {
    const line = origin.cases.lines[Number(rest[1])];
    if (line !== undefined) return { file: origin.cases.file, line, column: 1, field: fieldLabel(rest.slice(2)) };
  }
  const segments = origin.cases && rest[0] === 'cases' ? ['cases_file'] : rest;
  const at = positionOf(origin.source, segments);
  return { file: origin.source.file, line: at.line, column: at.column, field };
}

/** The file of the resource `kind` `key` (a change the server refused names its resource so). */
export function locateResource(loaded: LoadedProject, kind: unknown, key: unknown): { file: string; line: number; column: number } | null {
  if (typeof kind !== 'string' || typeof key !== 'string' || !isKind(kind)) return null;
  const origin = loaded.origins[KIND_LIST[kind]].find((o) => o.key === key);
  if (!origin) return null;
  const at = positionOf(origin.source, []);
  return { file: origin.source.file, line: at.line, column: at.column };
}
