#!/usr/bin/env node
import { fileURLToPath } from 'node:url';
import { applyServerRuntime, ensureModernNode, runCompiled } from './launch.mjs';

const script = fileURLToPath(import.meta.url);
if (ensureModernNode(script)) {
  applyServerRuntime(script);
  await runCompiled('cli/main.js');
}
