import { CommanderError } from 'commander';
import { EXIT_USAGE } from './errors.js';
import { buildProgram } from './program.js';

try {
  await (await buildProgram(process.argv)).parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  // commander has printed the message (or the help/version) already.
  const done = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code) && err.exitCode === 0;
  process.exitCode = done ? 0 : EXIT_USAGE;
}
