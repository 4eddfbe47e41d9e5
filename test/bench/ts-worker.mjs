// Worker-thread entry for TypeScript: workers do not inherit the main thread's tsx loader, so this
// registers it and then imports the TypeScript module named by workerData.entry (a file URL).
import { workerData } from 'node:worker_threads';

const { register } = await import('tsx/esm/api');
register();
await import(workerData.entry);
