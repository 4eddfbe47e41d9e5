#!/usr/bin/env node
// Usage: node bin/run-ts.mjs <file.ts> [args...] — runs a TypeScript file on a modern Node.
import { ensureModernNode, runTypeScript } from './launch.mjs';

if (ensureModernNode(new URL(import.meta.url).pathname)) {
  const [entry, ...rest] = process.argv.slice(2);
  if (!entry) {
    console.error('usage: run-ts <file.ts> [args...]');
    process.exit(2);
  }
  process.argv = [process.argv[0], entry, ...rest];
  await runTypeScript(entry);
}
