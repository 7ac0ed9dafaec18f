// ftune train: POST /train, and with --follow the job's events until it ends (exit 0 only when it completed).
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import type { TrainResponse } from '@ftp/schema';
import { CliError, UsageError } from '../errors.ts';
import { followJob } from '../follow.ts';
import { printJson, printKeyValue } from '../output.ts';
import { context } from './context.ts';
import { printJob } from './jobs.ts';

export interface Setting {
  path: string[];
  value: unknown;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'prototype', 'constructor']);

/** `key=value`: a key without a dot is a hyperparameter, a dotted key a path under training_config; the value is
 *  JSON when it parses (numbers, booleans, null, lists), else the text. */
export function parseSetting(text: string, previous: Setting[] = []): Setting[] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected key=value, e.g. max_steps=100 or eval_config.eval_strategy=epoch');
  const key = text.slice(0, eq).trim();
  const raw = text.slice(eq + 1);
  const keys = key.split('.');
  if (keys.some((k) => k === '' || FORBIDDEN_KEYS.has(k))) throw new InvalidArgumentError(`${JSON.stringify(key)} is not a usable key`);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // not JSON: the text itself
  }
  return [...previous, { path: keys.length === 1 ? ['hyperparameters', key] : keys, value }];
}

/** Puts each setting into the training_config object, making the objects on its path. */
export function applySettings(config: Record<string, unknown>, settings: readonly Setting[]): void {
  for (const { path, value } of settings) {
    let node: Record<string, unknown> = config;
    for (const [index, key] of path.slice(0, -1).entries()) {
      const next = node[key];
      if (next === undefined) node[key] = {};
      else if (typeof next !== 'object' || next === null || Array.isArray(next)) {
        throw new UsageError(`--set ${path.join('.')}: ${path.slice(0, index + 1).join('.')} is already set to ${JSON.stringify(next)}, not an object`);
      }
      node = node[key] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = value;
  }
}

/** The options that make a training request's training_config, shared by `train` and `sweep create`. */
export function withTrainingOptions<C extends Command>(command: C) {
  return command
    .requiredOption('--dataset <id>', 'processed_dataset_id to train on')
    .requiredOption('--model <model>', 'base model: a hub id (owner/name) or a name in the local model store')
    .addOption(new Option('--provider <provider>', 'where the model comes from (service default: hub)').choices(['local', 'hub'] as const))
    .addOption(new Option('--method <method>', 'training method (service default: QLoRA, which needs a CUDA GPU)').choices(['LoRA', 'QLoRA', 'Full'] as const))
    .addOption(new Option('--trainer <trainer>', 'trainer type (service default: sft)').choices(['sft', 'dpo', 'orpo', 'grpo'] as const))
    .option(
      '--set <key=value>',
      'a hyperparameter (max_steps=100), or with a dot a path under training_config (eval_config.eval_strategy=epoch); repeatable; values are JSON when they parse',
      parseSetting,
    );
}

/** The training_config those options say. */
export function trainingConfigFrom(options: { model: string; provider?: string; method?: string; trainer?: string; set?: Setting[] }): Record<string, unknown> {
  const trainingConfig: Record<string, unknown> = {
    base_model_id: options.model,
    ...(options.provider ? { provider: options.provider } : {}),
    ...(options.method ? { method: options.method } : {}),
    ...(options.trainer ? { trainer_type: options.trainer } : {}),
  };
  applySettings(trainingConfig, options.set ?? []);
  return trainingConfig;
}

export function trainCommand(): Command {
  return withTrainingOptions(new Command('train').description('start a fine-tuning job on a processed dataset and print its job_id'))
    .option('--name <name>', 'job name')
    .option('--follow', 'follow the job until it ends; exit 0 only when it completes')
    .option('--json', 'print the API’s JSON document (with --follow: the final job)')
    .action(async (options, command) => {
      const { api, json, interactive } = context(command);
      const trainingConfig = trainingConfigFrom(options);
      const submitted = await api.json<TrainResponse>('training', 'POST', '/train', {
        // The pre-flight checks read the model's files (from the hub, the first time) before the job is accepted.
        kind: 'work',
        json: { processed_dataset_id: options.dataset, training_config: trainingConfig, ...(options.name ? { job_name: options.name } : {}) },
      });
      if (!options.follow) {
        if (json) return printJson(submitted);
        return printKeyValue([['job_id', submitted.job_id]]);
      }
      if (!json) printKeyValue([['job_id', submitted.job_id]]);
      const job = await followJob(api, submitted.job_id, json ? 'quiet' : interactive ? 'live' : 'lines');
      if (json) printJson(job);
      else printJob(job);
      if (job.status !== 'completed') throw new CliError(`job ${job.job_id} ${job.status}: ${job.error ?? 'no error given'}`);
    });
}
