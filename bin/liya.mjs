#!/usr/bin/env node
import { ensureModernNode, runTypeScript } from './launch.mjs';

if (ensureModernNode(new URL(import.meta.url).pathname)) await runTypeScript('cli/main.ts');
