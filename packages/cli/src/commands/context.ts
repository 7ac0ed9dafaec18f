// What every command's action needs: the API client (settings resolved from flags, environment, config file)
// and whether to print JSON.
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { resolveSettings, type GlobalFlags } from '../config.ts';
import { Api } from '../http.ts';

export const JSON_HELP = 'print the API’s JSON document instead of text';

export interface Context {
  api: Api;
  json: boolean;
  /** Progress bars and live lines only for a person at a terminal. */
  interactive: boolean;
}

export function context(command: CommandUnknownOpts): Context {
  const options = command.optsWithGlobals() as GlobalFlags & { json?: boolean };
  const json = options.json === true;
  return {
    api: new Api(resolveSettings(options)),
    json,
    interactive: !json && process.stdout.isTTY === true && process.stderr.isTTY === true,
  };
}
