// ftune eval: POST /evaluation on the inference service, which answers once every sample is generated and scored;
// the metrics as a table, the warnings (a metric that could not be computed, train used for lack of a test split)
// on stderr, and with --samples N that many predictions beside their references.
import { Command, InvalidArgumentError, Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import type { ChatMessage, EvaluationMetric, EvaluationRequest, EvaluationResult } from '@ftp/schema';
import { UsageError } from '../errors.ts';
import { jobLogEnd, watchJobLog } from '../events.ts';
import type { Api } from '../http.ts';
import { formatDuration, printJson, printKeyValue, printTable } from '../output.ts';
import { context } from './context.ts';
import { CHECKPOINT_HELP, checkpointChoice, numberFrom, positiveInt } from './option-values.ts';

const METRICS: readonly EvaluationMetric[] = ['rouge', 'bertscore', 'accuracy', 'exact_match', 'bleu', 'meteor', 'recall', 'precision', 'f1'];
const TASKS = ['conversation', 'qa', 'summarization', 'translation', 'classification', 'general'] as const;

function metricList(value: string): EvaluationMetric[] {
  const names = value.split(',').map((m) => m.trim()).filter(Boolean);
  const unknown = names.filter((m) => !METRICS.includes(m as EvaluationMetric));
  if (names.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`comma-separated metrics from ${METRICS.join(', ')}${unknown.length ? ` (not ${unknown.join(', ')})` : ''}`);
  return names as EvaluationMetric[];
}

function sampleCount(value: string): number {
  return value.trim() === '0' ? 0 : positiveInt(value);
}

/** Metric rows: a metric with sub-scores (rouge) gives one row per score. */
export function metricRows(metrics: EvaluationResult['metrics']): Array<[string, number]> {
  return Object.entries(metrics).flatMap(([name, value]): Array<[string, number]> =>
    typeof value === 'number' ? [[name, value]] : Object.entries(value).map(([sub, v]): [string, number] => [`${name}.${sub}`, v]));
}

function messageText(message: ChatMessage | undefined): string {
  if (!message) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join(' ');
}

function printResult(result: EvaluationResult, samples: number | undefined): void {
  printKeyValue([['dataset_id', result.dataset_id], ['num_samples', result.num_samples]]);
  printTable(['METRIC', 'VALUE'], metricRows(result.metrics));
  for (const note of result.notes ?? []) process.stderr.write(`note (${note.metric}): ${note.note}\n`);
  for (const warning of result.warnings) {
    process.stderr.write(`warning: ${typeof warning === 'string' ? warning : `${warning.metric} could not be computed: ${warning.error}`}\n`);
  }
  if (samples === undefined || samples === 0 || result.samples.length === 0) return;
  printTable(['#', 'PROMPT (last message)', 'REFERENCE', 'PREDICTION'], sampleRows(result.samples, process.stdout.columns));
}

/** The sample table's rows, each text on one line and cut to its share of a terminal `columns` wide (120 when not a
 *  terminal), so the table keeps its shape (#39: a long prediction ran the table off the screen); --json has it all. */
export function sampleRows(samples: EvaluationResult['samples'], columns = 120): Array<[number, string, string, string]> {
  const width = Math.max(16, Math.floor((columns - 16) / 3) - 3); // # column and the borders and padding of four cells
  return samples.map((s) => [s.sample_index, cut(messageText(s.input.at(-1)), width), cut(s.reference, width), cut(s.prediction, width)]);
}

function cut(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** What a job's evaluation waits for, as the worker tells the job's log ("an evaluation waits: loading …: 15 s so
 *  far"), on stderr while it waits; on a terminal, the time so far when nothing was said for 10 s (#39: a first
 *  evaluation waited 30-55 s on a cold model with one line said). */
async function waitSaying<T>(api: Api, job: { jobId: string; from: string | undefined } | undefined, answer: Promise<T>, interactive: boolean): Promise<T> {
  const started = Date.now();
  let said = Date.now();
  const say = (text: string) => {
    process.stderr.write(`(${text})\n`);
    said = Date.now();
  };
  const ticker = interactive
    ? setInterval(() => {
        if (Date.now() - said >= 10_000) say(`still evaluating: ${formatDuration((Date.now() - started) / 1000)} so far`);
      }, 1_000)
    : undefined;
  const WAITS = 'an evaluation waits: ';
  const watch = job ? watchJobLog(api, job.jobId, job.from, (m) => m.startsWith(WAITS), (m) => say(`waiting: ${m.slice(WAITS.length)}`), answer) : Promise.resolve();
  try {
    return await answer;
  } finally {
    clearInterval(ticker);
    await watch;
  }
}

export function evalCommand(): CommandUnknownOpts {
  return new Command('eval')
    .description('evaluate a trained job’s model (or a base model with --base) on a processed dataset’s test split and print the metrics')
    .argument('[job]', 'job_id of the trained model (leave out with --base)')
    .requiredOption('--dataset <id>', 'processed_dataset_id; its test split is used (train when it has none)')
    .option('--base <model>', 'evaluate this base model alone instead of a job’s model')
    .addOption(new Option('--source <source>', 'with a job: its adapter over the base, or the merged model (service default: adapter)').choices(['adapter', 'merged'] as const))
    .option('--checkpoint <step|name>', `with a job: evaluate this instead of the final model: ${CHECKPOINT_HELP}`, checkpointChoice)
    .addOption(new Option('--task <type>', 'metric suite (service default: general, rouge and bleu)').choices(TASKS).conflicts('metrics'))
    .option('--metrics <list>', `comma-separated metrics instead of a suite: ${METRICS.join(', ')}`, metricList)
    .option('--max-samples <n>', 'evaluate at most this many rows', positiveInt)
    .option('--samples <n>', 'print this many predictions beside their references (the API returns them)', sampleCount)
    .option('--max-new-tokens <n>', 'longest prediction, in tokens (service default: 256)', positiveInt)
    .option('--temperature <x>', '0 is greedy (service default: 0)', numberFrom(0, Number.MAX_VALUE, 'a number ≥ 0'))
    .option('--fast', 'generate with llama.cpp on the GGUF instead of transformers')
    .option('--json', 'print the API’s JSON document (the evaluation result)')
    .action(async (jobId, options, command) => {
      const { api, json, interactive } = context(command);
      if ((jobId === undefined) === (options.base === undefined)) throw new UsageError('name the model: a job_id, or --base MODEL (not both)');
      if (options.base !== undefined && (options.source || options.checkpoint !== undefined)) {
        throw new UsageError('--source and --checkpoint choose among a job’s models; they do not go with --base');
      }
      const hubToken = api.settings.hubToken;
      const request: Partial<EvaluationRequest> = {
        dataset_id: options.dataset,
        ...(jobId !== undefined
          ? { job_id: jobId, ...(options.source ? { model_source: options.source } : {}), ...options.checkpoint }
          : { model_source: 'base', base_model_id: options.base }),
        ...(options.task ? { task_type: options.task } : {}),
        ...(options.metrics ? { metrics: options.metrics } : {}),
        ...(options.maxSamples !== undefined ? { max_samples: options.maxSamples } : {}),
        ...(options.samples !== undefined ? { num_sample_results: options.samples } : {}),
        ...(options.maxNewTokens !== undefined ? { max_new_tokens: options.maxNewTokens } : {}),
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.fast ? { use_fast_engine: true } : {}),
        // A gated base model needs the hub's token; it is sent, never shown.
        ...(hubToken ? { hub_token: hubToken } : {}),
      };
      if (interactive) process.stderr.write(`evaluating ${jobId ?? options.base} on ${options.dataset}; the answer comes once every sample is scored…\n`);
      // Where the job's log is now: what it gets after that is what this evaluation waits for. A job the log cannot be
      // read of is not watched; the evaluation's own answer says what is wrong with it.
      const watched = jobId === undefined ? undefined : await jobLogEnd(api, jobId).then((from) => ({ jobId, from }), () => undefined);
      const answer = api.json<EvaluationResult>('inference', 'POST', '/evaluation', { kind: 'work', json: request });
      const result = await waitSaying(api, watched, answer, interactive);
      if (json) return printJson(result);
      printResult(result, options.samples);
    });
}
