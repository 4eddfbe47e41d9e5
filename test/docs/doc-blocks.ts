// The shell in the docs' code blocks, read as a POSIX shell would read these simple lines, for the
// tests that run the docs (test/docs/*.test.ts): the blocks of a markdown file, the commands of a
// block, and the request a curl command sends.
import { readFile } from 'node:fs/promises';

export interface DocBlock {
  /** The fence's info string: its language (`sh`, `bash`, `json`, ...). */
  lang: string;
  text: string;
}

/** The fenced code blocks of a markdown file, in order. */
export async function readBlocks(file: string): Promise<DocBlock[]> {
  const markdown = await readFile(file, 'utf8');
  return [...markdown.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
}

/**
 * Splits a block into commands of words, as a POSIX shell would for these simple lines: quotes,
 * backslash-newline continuations, comments, and $VAR expanded from `vars`.
 */
export function splitCommands(block: string, vars: Record<string, string>): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | null = null;
  const expand = (text: string) => text.replace(/\$([A-Z_][A-Z0-9_]*)/g, (_, name: string) => vars[name] ?? '');
  const endWord = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  for (let i = 0; i < block.length; i++) {
    const c = block[i]!;
    if (c === '\\' && block[i + 1] === '\n') {
      i++;
    } else if (c === "'") {
      const close = block.indexOf("'", i + 1);
      word = (word ?? '') + block.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      const close = block.indexOf('"', i + 1);
      word = (word ?? '') + expand(block.slice(i + 1, close));
      i = close;
    } else if (c === '#' && word === null) {
      while (i < block.length && block[i] !== '\n') i++;
      i--;
    } else if (c === '\n') {
      endWord();
      if (words.length) commands.push(words);
      words = [];
    } else if (c === ' ' || c === '\t') {
      endWord();
    } else {
      word = (word ?? '') + (c === '$' ? '' : c);
      if (c === '$') {
        // $VAR is expanded; anything else after a $ ($(...), $1) is kept as written.
        const name = /^[A-Z_][A-Z0-9_]*/.exec(block.slice(i + 1))?.[0] ?? '';
        word += name ? (vars[name] ?? '') : '$';
        i += name.length;
      }
    }
  }
  endWord();
  if (words.length) commands.push(words);
  return commands;
}

export interface Request {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export function parseCurl(words: string[]): Request {
  const request: Request = { method: 'GET', url: '', headers: {} };
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    if (w === '-s') continue;
    else if (w === '-X') request.method = words[++i]!;
    else if (w === '-H') {
      const header = words[++i]!;
      const colon = header.indexOf(':');
      request.headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (w === '-d') {
      request.body = words[++i]!;
      if (request.method === 'GET') request.method = 'POST';
    } else request.url = w;
  }
  return request;
}
