// Entry of the document parser process when the server runs as TypeScript (tests, `run-ts`): a
// child process does not inherit its parent's TypeScript loader, so this registers tsx before
// loading the real entry. The compiled server starts parser-process.js directly.
import { register } from 'tsx/esm/api';

register();
await import(new URL('./parser-process.ts', import.meta.url).href);
