import { ConfigError, loadConfig, type AppConfig } from '../../server/config.js';
import { CliError } from '../errors.js';

/** The server configuration (.env and environment) for commands that open the database. */
export function loadServerConfig(): AppConfig {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, ['Fix the variable in the environment or in ./.env.']);
    throw err;
  }
}
