// The project folder is the boundary of `liya export`, `plan` and `apply`: nothing outside it is
// read, written or deleted, and no symbolic link inside it is followed. A link can lead anywhere —
// another checkout's private files, /proc/self/environ, a folder an export would empty — and a
// project folder often comes from a pull request, so the files decide nothing about where the CLI
// reads or writes. Every folder on the way to a file is checked, and files are opened without
// following a last link (O_NOFOLLOW), which also closes the gap between the check and the open.
// A file is read only up to a size cap, checked before reading, so a huge file never reaches the parser.
import { constants } from 'node:fs';
import { lstat, mkdir, open } from 'node:fs/promises';
import path from 'node:path';

const MiB = 1024 * 1024;
/** The largest project the server takes (the body of a plan or a deployment: PROJECT_BODY_LIMIT of its deploys router). */
const SERVER_PROJECT_BYTES = 25 * MiB;
/**
 * The largest YAML file read. One resource's file is far smaller than a whole project, and parsing
 * YAML takes some 40 times the file's size in memory, so 4 MiB keeps a file near 160 MB while parsing.
 */
export const MAX_YAML_FILE_BYTES = 4 * MiB;
/** The largest cases file read (JSON Lines or CSV, parsed line by line): more would not fit in a project the server takes. */
export const MAX_CASES_FILE_BYTES = SERVER_PROJECT_BYTES;

/** Windows has neither flag: there the checks on the way (lstat) are what refuses a link. */
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
const NO_BLOCK = constants.O_NONBLOCK ?? 0;

export const LINK_RULE = 'liya follows no symbolic links inside the project folder';

/** What opening a file that is a link fails with (O_NOFOLLOW): ELOOP, EMLINK on some BSDs. */
export const isLinkRefusal = (err: unknown) => ['ELOOP', 'EMLINK'].includes(String((err as NodeJS.ErrnoException).code));

/** `full` is inside `root` (both absolute, resolved; `root` itself does not count). */
export function isInside(root: string, full: string): boolean {
  const relative = path.relative(root, full);
  return relative !== '' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

const missing = (err: unknown) => ['ENOENT', 'ENOTDIR'].includes(String((err as NodeJS.ErrnoException).code));

/** The first symbolic link on the way from `root` (not checked: the folder the user named) down to `full` (checked), or null. */
export async function linkOnTheWay(root: string, full: string): Promise<string | null> {
  let at = root;
  for (const part of path.relative(root, full).split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    const info = await lstat(at).catch((err: unknown) => {
      if (missing(err)) return null;
      throw err;
    });
    if (!info) return null;
    if (info.isSymbolicLink()) return at;
  }
  return null;
}

/** A file over its size cap: refused before it is parsed. */
export class FileTooLargeError extends Error {
  constructor(
    readonly size: number,
    readonly limit: number,
  ) {
    super(`the file is ${(size / MiB).toFixed(1)} MiB, over the limit of ${limit / MiB} MiB`);
    this.name = 'FileTooLargeError';
  }
}

/** The server's limit, as told beside a file's. */
export const SERVER_LIMIT_TEXT = `the server takes at most ${SERVER_PROJECT_BYTES / MiB} MiB per project`;

/** The text of a regular file of at most `limit` bytes; the last part of the path must not be a link (check the folders on the way first). */
export async function readCappedFile(file: string, limit: number): Promise<string> {
  // O_NONBLOCK: a FIFO named like a project file must not hang the command on open.
  const handle = await open(file, constants.O_RDONLY | NO_FOLLOW | NO_BLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
    if (info.size > limit) throw new FileTooLargeError(info.size, limit);
    // The size is checked again while reading: a file may grow, and some (under /proc) say 0.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(MiB, limit + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > limit) throw new FileTooLargeError(Math.max(total, info.size), limit);
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** A path an export would write or remove through a symbolic link. */
export class SymlinkRefusedError extends Error {
  constructor(readonly link: string) {
    super(`${link} is a symbolic link: liya export writes and deletes nothing through links`);
    this.name = 'SymlinkRefusedError';
  }
}

/** Creates the folders from `root` down to `folder`, one at a time, refusing any that is a link. */
async function makeFolders(root: string, folder: string): Promise<void> {
  let at = root;
  for (const part of path.relative(root, folder).split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    let info = await lstat(at).catch((err: unknown) => (missing(err) ? null : Promise.reject(err)));
    if (!info) {
      await mkdir(at).catch((err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? undefined : Promise.reject(err)));
      info = await lstat(at);
    }
    if (info.isSymbolicLink()) throw new SymlinkRefusedError(path.relative(root, at));
    if (!info.isDirectory()) throw Object.assign(new Error(`${path.relative(root, at)} is not a folder`), { code: 'ENOTDIR' });
  }
}

/** Writes `content` to `root`/`relative` (with `/`), following no link on the way or at the file. */
export async function writeInside(root: string, relative: string, content: string): Promise<void> {
  const full = path.join(root, ...relative.split('/'));
  await mkdir(root, { recursive: true });
  await makeFolders(root, path.dirname(full));
  const info = await lstat(full).catch((err: unknown) => (missing(err) ? null : Promise.reject(err)));
  if (info?.isSymbolicLink()) throw new SymlinkRefusedError(relative);
  let handle;
  try {
    handle = await open(full, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | NO_FOLLOW | NO_BLOCK, 0o666);
  } catch (err) {
    if (isLinkRefusal(err)) throw new SymlinkRefusedError(relative);
    throw err;
  }
  try {
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
}
