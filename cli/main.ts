import { CommanderError } from 'commander';
import { EXIT_FAILURE, EXIT_USAGE } from './errors.js';
import { buildProgram, commandNameOf } from './program.js';

try {
  await (await buildProgram(process.argv)).parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  // commander has printed the message (or the help/version) already.
  const done = ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code) && err.exitCode === 0;
  // `liya plan` keeps 2 for "there are changes" (as terraform's -detailed-exitcode): its usage errors are 1.
  process.exitCode = done ? 0 : commandNameOf(process.argv) === 'plan' ? EXIT_FAILURE : EXIT_USAGE;
}
