// Worker entry when the server runs as TypeScript (tests, `run-ts`): worker threads do not inherit
// the main thread's TypeScript loader, so this registers tsx before importing the task module.
// The compiled server loads pool-worker.js directly and never uses this file.
import { register } from 'tsx/esm/api';

register();
const { default: runPoolMessage } = await import(new URL('./pool-worker.ts', import.meta.url).href);
export default runPoolMessage;
