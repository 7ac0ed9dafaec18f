// ftune datasets upload | uploads | process | list | get | rm: the preprocessing service's /datasets.
import fs from 'node:fs';
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import cliProgress from 'cli-progress';
import type { DatasetDeleteResult, DatasetList, FieldMapping, ProcessedDataset, ProcessingMode, ProcessingResult, UploadList } from '@ftp/schema';
import { UsageError } from '../errors.ts';
import { segment } from '../http.ts';
import { formatBytes, formatTime, plural, printJson, printKeyValue, printLine, printTable } from '../output.ts';
import { uploadDataset } from '../upload.ts';
import { context, JSON_HELP } from './context.ts';

const MODES = ['language_modeling', 'prompt_only', 'preference'] as const;

/** The mapping flags each processing mode needs (the service's REQUIRED_FIELD_MAPPINGS, as flags). */
const REQUIRED_FLAGS: Record<ProcessingMode, ReadonlyArray<'user' | 'assistant' | 'chosen' | 'rejected'>> = {
  language_modeling: ['user', 'assistant'],
  prompt_only: ['user'],
  preference: ['user', 'chosen', 'rejected'],
};

/** A flag's value as a field mapping: with a `{column}` reference it is a template, otherwise a column name. */
export function fieldMapping(value: string): FieldMapping {
  return value.includes('{') ? { type: 'template', value } : { type: 'column', value };
}

function testSize(value: string): number {
  const size = Number(value);
  if (!value.trim() || !Number.isFinite(size) || size <= 0) {
    throw new InvalidArgumentError('a fraction (0 < x < 1) or a row count (≥ 1)');
  }
  return size;
}

function readConfigObject(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--config ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--config ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`--config ${file} must hold a JSON object (the process request's config)`);
  return value as Record<string, unknown>;
}

export function datasetsCommand(): Command {
  const datasets = new Command('datasets').description('upload, process, list and delete datasets (preprocessing service)');

  datasets
    .command('upload')
    .description('upload a dataset file (CSV, TSV, JSON, JSONL or Parquet) and print its dataset_id')
    .argument('<file>', 'the file to upload')
    .option('--json', JSON_HELP)
    .action(async (file, _options, command) => {
      const { api, json, interactive } = context(command);
      const bar = interactive
        ? new cliProgress.SingleBar(
            { format: 'uploading [{bar}] {percentage}% | {sent} of {size} | ETA {eta_formatted}', hideCursor: true, clearOnComplete: true },
            cliProgress.Presets.shades_classic,
          )
        : null;
      let started = false;
      let result;
      try {
        result = await uploadDataset(api, file, (sent, total) => {
          if (!bar) return;
          const payload = { sent: formatBytes(sent), size: formatBytes(total) };
          if (!started) {
            bar.start(Math.max(total, 1), sent, payload);
            started = true;
          } else bar.update(sent, payload);
        });
      } finally {
        bar?.stop();
      }
      if (json) return printJson(result);
      printKeyValue([
        ['dataset_id', result.dataset_id],
        ['filename', result.filename],
        ['size', formatBytes(result.size_bytes)],
        ['num_examples', result.num_examples],
        ['columns', result.columns],
      ]);
    });

  datasets
    .command('uploads')
    .description('list your uploaded files (processed or not): the dataset_id that process takes')
    .option('--json', JSON_HELP)
    .action(async (_options, command) => {
      const { api, json } = context(command);
      const result = await api.json<UploadList>('preprocessing', 'GET', '/datasets/uploads');
      if (json) return printJson(result);
      if (result.uploads.length === 0) return printLine('no uploads');
      printTable(
        ['ID', 'FILE', 'SIZE', 'EXAMPLES', 'COLUMNS', 'CREATED'],
        result.uploads.map((u) => [u.dataset_id, u.filename, formatBytes(u.size_bytes), u.num_examples, u.columns, formatTime(u.created_at)]),
      );
    });

  datasets
    .command('process')
    .description('convert an uploaded dataset to ChatML; print its processed_dataset_id and splits')
    .argument('<dataset_id>', 'the dataset_id of an upload')
    .requiredOption('--name <name>', 'name of the processed dataset')
    .option('--user <column>', 'user message: a column, or a template with {column} references')
    .option('--assistant <column>', 'assistant message: a column, or a template')
    .option('--system <text>', 'system message: text as written, with {column} references filled (a fixed prompt needs no column)')
    .addOption(new Option('--mode <mode>', 'processing mode (default language_modeling)').choices(MODES))
    .option('--chosen <column>', 'preference mode: the preferred answer (column or template)')
    .option('--rejected <column>', 'preference mode: the rejected answer (column or template)')
    .option('--test-size <x>', 'make a test split: a fraction (0 < x < 1) or a row count', testSize)
    .option('--config <file>', 'a JSON file with the whole config object (field_mappings, split_config, …); flags given beside it override its entries')
    .option('--json', JSON_HELP)
    .action(async (datasetId, options, command) => {
      const { api, json } = context(command);
      const mode: ProcessingMode = options.mode ?? 'language_modeling';
      const config: Record<string, unknown> = options.config ? readConfigObject(options.config) : {};
      if (!options.config) {
        const missing = REQUIRED_FLAGS[mode].filter((flag) => options[flag] === undefined);
        if (missing.length > 0) {
          throw new UsageError(`processing mode ${mode} needs ${missing.map((f) => `--${f}`).join(', ')} (or --config FILE)`);
        }
      }
      const mappings: Record<string, unknown> = { ...((config.field_mappings as Record<string, unknown> | undefined) ?? {}) };
      for (const [flag, key] of [['system', 'system_field'], ['user', 'user_field'], ['assistant', 'assistant_field'], ['chosen', 'chosen_field'], ['rejected', 'rejected_field']] as const) {
        const value = options[flag];
        // A system prompt is text: a bare word is that word, not a column of that name.
        if (value !== undefined) mappings[key] = flag === 'system' ? { type: 'template', value } : fieldMapping(value);
      }
      config.field_mappings = mappings;
      if (options.testSize !== undefined) config.split_config = { type: 'manual_split', test_size: options.testSize };
      const result = await api.json<ProcessingResult>('preprocessing', 'POST', '/datasets/process', {
        kind: 'work',
        json: { dataset_name: options.name, dataset_id: datasetId, ...(options.mode ? { processing_mode: options.mode } : {}), config },
      });
      if (json) return printJson(result);
      printKeyValue([
        ['processed_dataset_id', result.processed_dataset_id],
        ['dataset_name', result.dataset_name],
        ['processing_mode', result.processing_mode],
        ['status', result.status],
        ['num_examples', result.num_examples],
        ['splits', (result.full_splits ?? []).length > 0 ? result.full_splits.map((s) => `${s.split_name} (${plural(s.num_rows, 'row')})`) : result.splits],
      ]);
    });

  datasets
    .command('list')
    .description('list your processed datasets')
    .option('--json', JSON_HELP)
    .action(async (_options, command) => {
      const { api, json } = context(command);
      const result = await api.json<DatasetList>('preprocessing', 'GET', '/datasets');
      if (json) return printJson(result);
      if (result.datasets.length === 0) return printLine('no datasets');
      printTable(
        ['ID', 'NAME', 'STATUS', 'MODE', 'SOURCE', 'EXAMPLES', 'SPLITS', 'CREATED'],
        result.datasets.map((d) => [d.processed_dataset_id, d.dataset_name, d.status, d.processing_mode, d.dataset_source, d.num_examples, d.splits, formatTime(d.created_at)]),
      );
    });

  datasets
    .command('get')
    .description('show a processed dataset')
    .argument('<id>', 'processed_dataset_id')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const d = await api.json<ProcessedDataset>('preprocessing', 'GET', `/datasets/${segment(id)}`);
      if (json) return printJson(d);
      printKeyValue([
        ['processed_dataset_id', d.processed_dataset_id],
        ['dataset_name', d.dataset_name],
        ['dataset_id', d.dataset_id],
        ['dataset_source', d.dataset_source],
        ['dataset_subset', d.dataset_subset],
        ['processing_mode', d.processing_mode],
        ['modality', d.modality],
        ['status', d.status],
        ['progress', d.status === 'processing' && d.progress ? `${d.progress.done} of ${plural(d.progress.total, 'row')}` : undefined],
        ['error', d.error],
        ['created_at', d.created_at],
      ]);
      if (d.splits.length > 0) printTable(['SPLIT', 'ROWS', 'PATH'], d.splits.map((s) => [s.split_name, s.num_rows, s.path]));
    });

  datasets
    .command('rm')
    .description('delete a processed dataset (pd_…; its upload is kept) or an upload (ds_…; the datasets processed from it are kept)')
    .argument('<id>', 'processed_dataset_id, or an upload’s dataset_id')
    .option('--cancel-jobs', 'cancel the jobs and batches that still need it (else the API refuses, naming them)')
    .option('--json', JSON_HELP)
    .action(async (id, options: { cancelJobs?: boolean }, command) => {
      const { api, json } = context(command);
      const query = options.cancelJobs ? '?cancel_jobs=true' : '';
      const result = await api.json<DatasetDeleteResult>('preprocessing', 'DELETE', `/datasets/${segment(id)}${query}`);
      if (json) return printJson(result);
      printLine(result.message);
    });

  return datasets;
}
