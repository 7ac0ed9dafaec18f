// ftune evaluations create | list | get | cancel | rm | logs: the inference service's /evaluations, standard
// benchmarks (lm-eval tasks, HumanEval) run by a worker in the background. create --follow prints the evaluation's log
// until it ends and exits 0 only when it completed; results print as one row per task and metric, the base model's
// figure beside the model's with --with-base.
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import type { BenchmarkResults, Evaluation, EvaluationCreateRequest, EvaluationList } from '@ftp/schema';
import { CliError, UsageError } from '../errors.ts';
import { logEvents } from '../events.ts';
import { segment, type Api } from '../http.ts';
import { formatTime, formatValue, printJson, printKeyValue, printLine, printTable } from '../output.ts';
import { context, JSON_HELP } from './context.ts';
import { CHECKPOINT_HELP, checkpointChoice, checkpointText, numberFrom, positiveInt } from './option-values.ts';

function names(value: string): string[] {
  const list = value.split(',').map((n) => n.trim()).filter(Boolean);
  if (list.length === 0) throw new InvalidArgumentError('a comma-separated list');
  return list;
}

function positiveInts(value: string): number[] {
  return names(value).map(positiveInt);
}

/** One row per lm-eval task and metric and per HumanEval pass@k: the model's value (± lm-eval's stderr), and the
 *  base's beside it when there is one. */
export function resultRows(evaluation: Pick<Evaluation, 'results' | 'base_results'>): string[][] {
  const figure = (value: unknown) => (typeof value === 'number' ? formatValue(Number(value.toPrecision(4))) : '-');
  const rows: string[][] = [];
  const base = evaluation.base_results;
  for (const [task, metrics] of Object.entries(evaluation.results?.lm_eval?.results ?? {})) {
    for (const [metric, score] of Object.entries(metrics)) {
      const stderr = score.stderr === null ? '' : ` ± ${figure(score.stderr)}`;
      rows.push([task, metric, `${figure(score.value)}${stderr}`, ...(base ? [figure(base.lm_eval?.results[task]?.[metric]?.value)] : [])]);
    }
  }
  const passAt = (results: BenchmarkResults | null | undefined) => Object.entries(results?.humaneval ?? {}).filter(([key]) => key.startsWith('pass@'));
  for (const [key, value] of passAt(evaluation.results)) {
    rows.push(['humaneval', key, figure(value), ...(base ? [figure(base.humaneval?.[key])] : [])]);
  }
  // The dataset's metrics and graders: a metric with parts (rouge) is a row per part.
  const flat = (results: BenchmarkResults | null | undefined) =>
    Object.entries(results?.dataset?.metrics ?? {}).flatMap(([name, value]) => (typeof value === 'number' ? [[name, value] as const] : Object.entries(value).map(([part, v]) => [`${name}.${part}`, v] as const)));
  const baseScores = new Map(flat(base));
  for (const [name, value] of flat(evaluation.results)) {
    rows.push([`dataset ${evaluation.results!.dataset!.dataset_id}`, name, figure(value), ...(base ? [figure(baseScores.get(name))] : [])]);
  }
  return rows;
}

function printEvaluation(evaluation: Evaluation): void {
  printKeyValue([
    ['id', evaluation.id],
    ['status', evaluation.status],
    ['error', evaluation.error ?? undefined],
    ['model', evaluation.job_id ? `${evaluation.model_source} of ${evaluation.job_id}${checkpointText(evaluation)}` : evaluation.base_model_id],
    ['base_model_id', evaluation.base_model_id],
    ['created_at', evaluation.created_at],
    ['started_at', evaluation.started_at ?? undefined],
    ['finished_at', evaluation.finished_at ?? undefined],
  ]);
  const rows = resultRows(evaluation);
  if (rows.length > 0) printTable(['TASK', 'METRIC', 'VALUE', ...(evaluation.base_results ? ['BASE'] : [])], rows);
}

/** Prints the evaluation's log until it ends; returns it as it ended. */
async function follow(api: Api, id: string, quiet: boolean): Promise<Evaluation> {
  for await (const event of logEvents(api, { service: 'inference', path: `/evaluations/${segment(id)}/events`, kind: 'evaluation', id })) {
    const data = event.data as Record<string, unknown>;
    if (event.event === 'end') {
      if ('deleted' in data) throw new CliError(`evaluation ${id} was deleted while it was followed`);
      return data as unknown as Evaluation;
    }
    if (quiet) continue;
    if (event.event === 'status') printLine(`status: ${String(data.status)}${data.error ? ` (${String(data.error)})` : ''}`);
    else if (event.event === 'log') printLine(`${data.model === 'base' ? '[base] ' : ''}${String(data.message)}`);
  }
  throw new CliError(`the event stream of evaluation ${id} ended without its final status`);
}

function createCommand() {
  return new Command('create')
    .description('run benchmarks (and score a dataset) on a trained job’s model (or a base model with --base) in the background')
    .argument('[job]', 'job_id of the trained model (leave out with --base)')
    .option('--base <model>', 'benchmark this base model alone instead of a job’s model')
    .addOption(new Option('--source <source>', 'with a job: its adapter over the base, or the merged model (service default: adapter)').choices(['adapter', 'merged'] as const))
    .option('--checkpoint <step|name>', `with a job: this instead of the final model: ${CHECKPOINT_HELP}`, checkpointChoice)
    .option('--tasks <names>', 'comma-separated lm-eval tasks or groups (lm-eval’s, or the worker’s LM_EVAL_TASK_DIRS)', names)
    .option('--num-fewshot <n>', 'few-shot examples per prompt (default: each task’s)', numberFrom(0, 64, 'a whole number from 0 to 64'))
    .option('--limit <n>', 'examples per task: a count, or a fraction below 1', numberFrom(Number.MIN_VALUE, Number.MAX_SAFE_INTEGER, 'a number above 0'))
    .option('--chat-template', 'render lm-eval’s prompts through the model’s chat template')
    .option('--humaneval', 'also run HumanEval (the model’s code is run in a sandbox)')
    .option('--humaneval-limit <n>', 'the first N HumanEval problems', positiveInt)
    .option('--humaneval-samples <n>', 'completions per problem (service default: 1)', positiveInt)
    .option('--humaneval-k <list>', 'comma-separated k of pass@k (service default: 1)', positiveInts)
    .option('--humaneval-temperature <x>', '0 is greedy (service default: 0)', numberFrom(0, 2, 'a number from 0 to 2'))
    .option('--humaneval-max-new-tokens <n>', 'tokens per completion at most (service default: 512)', positiveInt)
    .option('--dataset <id>', 'also score the model on this processed dataset’s test split, as `ftune eval` does')
    .option('--metrics <names>', 'with --dataset: comma-separated metrics (rouge, bleu, exact_match, …)', names)
    .option('--task <type>', 'with --dataset: a metric suite (qa, summarization, …) instead of --metrics')
    .option('--max-samples <n>', 'with --dataset: score at most this many rows', positiveInt)
    .option('--with-base', 'with a job: also run the benchmarks and the dataset scoring on its base model')
    .option('--follow', 'print its log until it ends; exit 0 only when it completes')
    .option('--json', 'print the API’s JSON document (with --follow: the final evaluation)')
    .action(async (jobId, options, command) => {
      const { api, json } = context(command);
      if ((jobId === undefined) === (options.base === undefined)) throw new UsageError('name the model: a job_id, or --base MODEL (not both)');
      if (options.base !== undefined && (options.source || options.checkpoint !== undefined || options.withBase)) {
        throw new UsageError('--source, --checkpoint and --with-base choose among a job’s models; they do not go with --base');
      }
      const humanevalFlags = [options.humanevalLimit, options.humanevalSamples, options.humanevalK, options.humanevalTemperature, options.humanevalMaxNewTokens];
      const humaneval = options.humaneval || humanevalFlags.some((v) => v !== undefined);
      if (options.dataset === undefined && (options.metrics || options.task || options.maxSamples !== undefined)) {
        throw new UsageError('--metrics, --task and --max-samples choose how --dataset is scored; name the dataset with --dataset');
      }
      const hubToken = api.settings.hubToken;
      const benchmarked = options.tasks !== undefined || humaneval;
      const request: Partial<EvaluationCreateRequest> = {
        ...(jobId !== undefined
          ? { job_id: jobId, ...(options.source ? { model_source: options.source } : {}), ...options.checkpoint, ...(options.withBase ? { with_base: true } : {}) }
          : { model_source: 'base', base_model_id: options.base }),
        ...(options.dataset !== undefined
          ? {
              dataset: {
                dataset_id: options.dataset,
                ...(options.metrics ? { metrics: options.metrics } : {}),
                ...(options.task ? { task_type: options.task } : {}),
                ...(options.maxSamples !== undefined ? { max_samples: options.maxSamples } : {}),
              } as NonNullable<EvaluationCreateRequest['dataset']>,
            }
          : {}),
        // Benchmarks only when some were asked for (an evaluation may score its dataset alone).
        ...(benchmarked || options.dataset === undefined ? { benchmarks: {
          ...(options.tasks ? { tasks: options.tasks } : {}),
          ...(options.numFewshot !== undefined ? { num_fewshot: options.numFewshot } : {}),
          ...(options.limit !== undefined ? { limit: options.limit } : {}),
          apply_chat_template: options.chatTemplate === true,
          ...(humaneval
            ? {
                humaneval: {
                  ...(options.humanevalLimit !== undefined ? { limit: options.humanevalLimit } : {}),
                  ...(options.humanevalSamples !== undefined ? { samples: options.humanevalSamples } : {}),
                  ...(options.humanevalK !== undefined ? { k: options.humanevalK } : {}),
                  ...(options.humanevalTemperature !== undefined ? { temperature: options.humanevalTemperature } : {}),
                  ...(options.humanevalMaxNewTokens !== undefined ? { max_new_tokens: options.humanevalMaxNewTokens } : {}),
                } as NonNullable<NonNullable<EvaluationCreateRequest['benchmarks']>['humaneval']>,
              }
            : {}),
        } } : {}),
        // A gated base model needs the hub's token; it is sent, never shown.
        ...(hubToken ? { hub_token: hubToken } : {}),
      };
      const created = await api.json<Evaluation>('inference', 'POST', '/evaluations', { kind: 'work', json: request });
      if (!options.follow) return json ? printJson(created) : printEvaluation(created);
      if (!json) printKeyValue([['id', created.id]]);
      const ended = await follow(api, created.id, json);
      if (json) printJson(ended);
      else printEvaluation(ended);
      if (ended.status !== 'completed') throw new CliError(`evaluation ${ended.id} ${ended.status}${ended.error ? `: ${ended.error}` : ''}`);
    });
}

export function evaluationsCommand(): Command {
  const evaluations = new Command('evaluations')
    .alias('evaluation')
    .description('run standard benchmarks (lm-eval tasks, HumanEval) on models in the background; list, show, cancel, delete them, read their logs (inference service)');
  evaluations.addCommand(createCommand());

  evaluations
    .command('list')
    .description('list your evaluations, newest first')
    .option('--limit <n>', 'at most this many (service default: 20)', positiveInt)
    .option('--after <id>', 'the page after this evaluation')
    .option('--json', JSON_HELP)
    .action(async (options, command) => {
      const { api, json } = context(command);
      const query = new URLSearchParams({ ...(options.limit ? { limit: String(options.limit) } : {}), ...(options.after ? { after: options.after } : {}) });
      const page = await api.json<EvaluationList>('inference', 'GET', `/evaluations${query.size > 0 ? `?${query}` : ''}`);
      if (json) return printJson(page);
      if (page.evaluations.length === 0) return printLine('no evaluations');
      printTable(['ID', 'STATUS', 'MODEL', 'TASKS', 'CREATED'], page.evaluations.map((e) => [
        e.id, e.status, e.job_id ?? e.base_model_id,
        [...(e.request.benchmarks?.tasks ?? []), ...(e.request.benchmarks?.humaneval ? ['humaneval'] : []), ...(e.request.dataset ? [e.request.dataset.dataset_id] : [])].join(', '), formatTime(e.created_at),
      ]));
      if (page.has_more) printLine(`more: ftune evaluations list --after ${page.evaluations.at(-1)!.id}`);
    });

  const byId = (name: 'get' | 'cancel', description: string, method: 'GET' | 'POST', suffix: string) =>
    evaluations
      .command(name)
      .description(description)
      .argument('<id>', 'evaluation id (evalrun_…)')
      .option('--json', JSON_HELP)
      .action(async (id, _options, command) => {
        const { api, json } = context(command);
        const evaluation = await api.json<Evaluation>('inference', method, `/evaluations/${segment(id)}${suffix}`);
        if (json) return printJson(evaluation);
        printEvaluation(evaluation);
      });
  byId('get', 'show an evaluation and, once completed, its results', 'GET', '');
  byId('cancel', 'cancel a queued or running evaluation (a running one’s benchmark is stopped)', 'POST', '/cancel');

  evaluations
    .command('rm')
    .description('delete a finished evaluation (cancel a running one first)')
    .argument('<id>', 'evaluation id (evalrun_…)')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const result = await api.json<{ id: string; deleted: true }>('inference', 'DELETE', `/evaluations/${segment(id)}`);
      if (json) return printJson(result);
      printLine(`evaluation ${result.id} deleted`);
    });

  evaluations
    .command('logs')
    .description('print an evaluation’s log; a queued or running one is followed until it ends')
    .argument('<id>', 'evaluation id (evalrun_…)')
    .action(async (id, _options, command) => {
      const { api } = context(command);
      const ended = await follow(api, id, false);
      printLine(`end: ${ended.status}${ended.error ? ` (${ended.error})` : ''}`);
    });

  return evaluations;
}
