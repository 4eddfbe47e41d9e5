// Wraps a command's action: any error becomes a message on stderr and a non-zero exit code.
import type { FieldLabels } from './errors.js';

/** The action resolves to an exit code (default 0); a thrown error is reported with `labels` for its fields. */
export function action<A extends unknown[]>(handler: (...args: A) => Promise<number | void>, labels?: FieldLabels) {
  return async (...args: A): Promise<void> => {
    try {
      const code = await handler(...args);
      process.exitCode = code ?? 0;
    } catch (err) {
      // Loaded here: output.js brings ink and React, which `liya worker` otherwise never needs.
      const { reportError } = await import('./output.js');
      process.exitCode = await reportError(err, labels);
    }
  };
}
