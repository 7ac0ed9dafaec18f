// ftune comparisons create | list | get | rm: the inference service's /comparisons, two models compared by an LLM
// judge, each pair judged in both orders. A model is named as `job_…` (its adapter), `job_…/merged`, `job_…@STEP` (a
// checkpoint), `job_…@NAME` (a Tinker run's sampler weights, the run's id before the @) or `base:MODEL`; the summary
// prints A's wins, ties and losses, its share of the decided pairs with the Wilson interval, the judge's position
// consistency and the winner, if the interval declares one.
import { Command, InvalidArgumentError } from '@commander-js/extra-typings';
import type { ComparedModel, Comparison, ComparisonCreateRequest, ComparisonList } from '@ftp/schema';
import { segment } from '../http.ts';
import { formatTime, printJson, printKeyValue, printLine, printTable } from '../output.ts';
import { context, JSON_HELP } from './context.ts';
import { type CheckpointChoice, checkpointChoice, checkpointText, numberFrom, positiveInt } from './option-values.ts';

/** `job_…`, `job_…/merged`, `job_…@STEP` or `job_…@NAME` (with /merged too) or `base:MODEL`, as the API's model fields;
 *  after the @ as `--checkpoint` takes it (option-values.ts). */
export function comparedModel(value: string): Partial<ComparedModel> {
  if (value.startsWith('base:')) {
    if (value.length === 5) throw new InvalidArgumentError('base: needs the model after it (base:HuggingFaceTB/SmolLM2-135M-Instruct)');
    return { model_source: 'base', base_model_id: value.slice(5) };
  }
  const wrong = () =>
    new InvalidArgumentError('a job_id (its adapter), job_…/merged, job_…@STEP (a stored checkpoint), job_…@NAME (a Tinker run’s sampler weights, the run’s id before the @) or base:MODEL');
  const found = /^([^/@\s]+)(\/merged)?(?:@(.*))?$/.exec(value);
  if (!found) throw wrong();
  let checkpoint: CheckpointChoice | undefined;
  try {
    checkpoint = found[3] === undefined ? undefined : checkpointChoice(found[3]);
  } catch {
    throw wrong();
  }
  return { job_id: found[1]!, ...(found[2] ? { model_source: 'merged' } : {}), ...checkpoint };
}

const named = (model: Comparison['model_a']) =>
  model.model_source === 'base' ? `base ${model.base_model_id}` : `${model.model_source} of ${model.job_id}${checkpointText(model)}`;
const percent = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The summary as lines of key and value. */
export function summaryRows(c: Pick<Comparison, 'id' | 'model_a' | 'model_b' | 'judge' | 'pairs' | 'counts' | 'rates' | 'win_share' | 'interval' | 'position_consistency' | 'flipped' | 'unreadable' | 'winner'>): Array<[string, string | undefined]> {
  return [
    ['id', c.id],
    ['A', named(c.model_a)],
    ['B', named(c.model_b)],
    ['judge', c.judge.model],
    ['pairs', String(c.pairs)],
    ['A wins', `${c.counts.win} (${percent(c.rates.win)})`],
    ['ties', `${c.counts.tie} (${percent(c.rates.tie)})`],
    ['A losses', `${c.counts.loss} (${percent(c.rates.loss)})`],
    ['A’s share of decided pairs', c.win_share === null ? 'none decided' : `${percent(c.win_share)} (95% interval ${percent(c.interval[0])}–${percent(c.interval[1])})`],
    ['position consistency', `${percent(c.position_consistency)}${c.flipped.length > 0 ? ` (flipped on ${c.flipped.length}: ties)` : ''}`],
    ['unreadable verdicts', c.unreadable.length > 0 ? String(c.unreadable.length) : undefined],
    ['winner', c.winner === null ? 'none declared (the interval holds 50%)' : `${c.winner} (${named(c.winner === 'A' ? c.model_a : c.model_b)})`],
  ];
}

function printComparison(comparison: Comparison, verdicts: boolean): void {
  printKeyValue(summaryRows(comparison));
  if (verdicts) {
    const cut = (text: string) => (text.length > 40 ? `${text.slice(0, 39)}…` : text).replace(/\s+/g, ' ');
    printTable(['ROW', 'A', 'B', 'A FIRST', 'B FIRST', 'OUTCOME'], comparison.verdicts.map((v) => [
      String(v.sample_index), cut(v.answer_a), cut(v.answer_b), v.a_first ?? '?', v.b_first ?? '?', v.outcome,
    ]));
  }
}

export function comparisonsCommand(): Command {
  const comparisons = new Command('comparisons')
    .alias('compare')
    .description('compare two models with an LLM judge, each pair judged in both orders; list, show and delete comparisons (inference service)');

  comparisons
    .command('create')
    .description('answer a dataset’s prompts with two models and have a judge say which is better (waits for the result)')
    .argument('<dataset>', 'processed_dataset_id whose prompts (its test split) both models answer')
    .requiredOption('--a <model>', 'model A: job_… (adapter), job_…/merged, job_…@STEP (a stored checkpoint), job_…@NAME (a Tinker run’s sampler weights) or base:MODEL', comparedModel)
    .requiredOption('--b <model>', 'model B, named the same way', comparedModel)
    .requiredOption('--judge <model>', 'the judge: a base model or your ft:… model here, or a model at LLM_API_BASE')
    .option('--criteria <text>', 'what “better” means for this task')
    .option('--max-samples <n>', 'compare on at most this many rows', positiveInt)
    .option('--max-new-tokens <n>', 'tokens per answer (service default: 256)', positiveInt)
    .option('--temperature <x>', 'the models’ sampling temperature (service default: 0, greedy)', numberFrom(0, 2, 'a number from 0 to 2'))
    .option('--verdicts', 'also print every pair: both answers and both verdicts')
    .option('--json', JSON_HELP)
    .action(async (datasetId, options, command) => {
      const { api, json } = context(command);
      const hubToken = api.settings.hubToken;
      const request = {
        dataset_id: datasetId,
        model_a: options.a,
        model_b: options.b,
        judge: { model: options.judge, ...(options.criteria ? { criteria: options.criteria } : {}) },
        ...(options.maxSamples !== undefined ? { max_samples: options.maxSamples } : {}),
        ...(options.maxNewTokens !== undefined ? { max_new_tokens: options.maxNewTokens } : {}),
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        // A gated base model needs the hub's token; it is sent, never shown.
        ...(hubToken ? { hub_token: hubToken } : {}),
      } as Partial<ComparisonCreateRequest>;
      const comparison = await api.json<Comparison>('inference', 'POST', '/comparisons', { kind: 'work', json: request });
      if (json) return printJson(comparison);
      printComparison(comparison, options.verdicts === true);
    });

  comparisons
    .command('list')
    .description('list your comparisons, newest first')
    .option('--limit <n>', 'at most this many (service default: 20)', positiveInt)
    .option('--after <id>', 'the page after this comparison')
    .option('--json', JSON_HELP)
    .action(async (options, command) => {
      const { api, json } = context(command);
      const query = new URLSearchParams({ ...(options.limit ? { limit: String(options.limit) } : {}), ...(options.after ? { after: options.after } : {}) });
      const page = await api.json<ComparisonList>('inference', 'GET', `/comparisons${query.size > 0 ? `?${query}` : ''}`);
      if (json) return printJson(page);
      if (page.comparisons.length === 0) return printLine('no comparisons');
      printTable(['ID', 'A', 'B', 'JUDGE', 'W/T/L', 'WINNER', 'CREATED'], page.comparisons.map((c) => [
        c.id, named(c.model_a), named(c.model_b), c.judge.model, `${c.counts.win}/${c.counts.tie}/${c.counts.loss}`, c.winner ?? '-', formatTime(c.created_at),
      ]));
      if (page.has_more) printLine(`more: ftune comparisons list --after ${page.comparisons.at(-1)!.id}`);
    });

  comparisons
    .command('get')
    .description('show a comparison’s summary (and with --verdicts every pair)')
    .argument('<id>', 'comparison id (cmp_…)')
    .option('--verdicts', 'also print every pair: both answers and both verdicts')
    .option('--json', JSON_HELP)
    .action(async (id, options, command) => {
      const { api, json } = context(command);
      const comparison = await api.json<Comparison>('inference', 'GET', `/comparisons/${segment(id)}`);
      if (json) return printJson(comparison);
      printComparison(comparison, options.verdicts === true);
    });

  comparisons
    .command('rm')
    .description('delete a comparison')
    .argument('<id>', 'comparison id (cmp_…)')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const result = await api.json<{ id: string; deleted: true }>('inference', 'DELETE', `/comparisons/${segment(id)}`);
      if (json) return printJson(result);
      printLine(`comparison ${result.id} deleted`);
    });

  return comparisons;
}
