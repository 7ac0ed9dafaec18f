// ftune: the fine-tuning pipeline from the command line, over the services' public HTTP APIs only.
// Exit codes: 0 done; 1 the API refused, a service could not be reached, or a followed job did not complete;
// 2 a usage error (unknown command or flag, a bad value, a bad config file).
import fs from 'node:fs';
import { Command, CommanderError } from '@commander-js/extra-typings';
import { DEFAULT_URLS, ENV_NAMES } from './config.ts';
import { chatCommand } from './commands/chat.ts';
import { datasetsCommand } from './commands/datasets.ts';
import { evalCommand } from './commands/eval.ts';
import { evaluationsCommand } from './commands/evaluations.ts';
import { comparisonsCommand } from './commands/comparisons.ts';
import { sweepCommand } from './commands/sweeps.ts';
import { exportCommand, exportsCommand } from './commands/exports.ts';
import { jobsCommand } from './commands/jobs.ts';
import { trainCommand } from './commands/train.ts';
import { CliError } from './errors.ts';

function version(): string {
  const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

export function buildProgram(): Command {
  const program = new Command('ftune')
    .description('Fine-tune models with the pipeline’s services: datasets, training jobs, exports, chat and evaluation.')
    .version(version())
    .option('--preprocessing-url <url>', `preprocessing service (env ${ENV_NAMES.preprocessing}, default ${DEFAULT_URLS.preprocessing})`)
    .option('--training-url <url>', `training service (env ${ENV_NAMES.training}, default ${DEFAULT_URLS.training})`)
    .option('--export-url <url>', `export service (env ${ENV_NAMES.export}, default ${DEFAULT_URLS.export})`)
    .option('--inference-url <url>', `inference service (env ${ENV_NAMES.inference}, default ${DEFAULT_URLS.inference})`)
    .option('--openai-url <url>', `OpenAI-compatible service, for chat (env ${ENV_NAMES.openai}, default ${DEFAULT_URLS.openai})`)
    .option('--api-key <key>', `API key sent as a bearer token (env ${ENV_NAMES.apiKey})`)
    .addHelpText(
      'after',
      `\nSettings: flags, then environment variables, then $XDG_CONFIG_HOME/ftune/config.json (~/.config/ftune/config.json)\n` +
        `with the same keys, e.g. {"${ENV_NAMES.training}": "http://host:8002", "${ENV_NAMES.apiKey}": "…"}.\n` +
        `The model hub's token (exports to the hub, gated base models) comes from ${ENV_NAMES.hubToken} or that file only.\n` +
        `Every command takes --json to print the API's JSON document.`,
    );
  program.addCommand(datasetsCommand());
  program.addCommand(trainCommand());
  program.addCommand(sweepCommand());
  program.addCommand(jobsCommand());
  program.addCommand(exportCommand());
  program.addCommand(exportsCommand());
  program.addCommand(chatCommand());
  program.addCommand(evalCommand());
  program.addCommand(evaluationsCommand());
  program.addCommand(comparisonsCommand());
  // On every command: usage errors come back to main() (which exits 2, where commander would exit 1) with a hint.
  const configure = (command: Command) => {
    command.exitOverride().showHelpAfterError('(add --help for usage)');
    checkRequiredAfterUnknown(command);
    for (const sub of command.commands) configure(sub as unknown as Command);
  };
  configure(program);
  return program;
}

/** Commander checks required options before it looks for unknown ones, so `ftune train --datset x` said "required
 *  option '--dataset <id>' not specified" and never that --datset is unknown (#54). Checked just before the action
 *  instead, after the unknown options: a misspelt flag is named, with the one it resembles. */
function checkRequiredAfterUnknown(command: Command): void {
  const required = command.options.filter((option) => option.mandatory);
  if (required.length === 0) return;
  for (const option of required) option.mandatory = false;
  command.hook('preAction', (hooked) => {
    const missing = required.find((option) => hooked.getOptionValue(option.attributeName()) === undefined);
    if (missing) hooked.error(`error: required option '${missing.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
  });
}

function printError(message: string): void {
  for (const line of message.split('\n')) process.stderr.write(`error: ${line}\n`);
}

/** Runs the command line (`argv` as process.argv gives it) and returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // Output piped into `head` and closed early is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof CliError) {
      printError(err.message);
      return err.exitCode;
    }
    printError(`unexpected: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}
