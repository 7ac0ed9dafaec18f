// ftune sweep create | list | get | cancel | rm: the training service's /sweeps, trials proposed by Optuna and run as
// training jobs. The base request is made as `ftune train` makes one (--dataset, --model, --set …); each --search names
// a field and its range: `learning_rate=float:1e-5:1e-3:log`, `lora_rank=int:4:32`, `lora_rank=choice:8,16,32` (a key
// without a dot is a hyperparameter, as with --set). --follow prints each trial as it ends and exits 0 only when the
// sweep completed.
import { setTimeout as sleep } from 'node:timers/promises';
import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import type { Sweep, SweepDimension, SweepList } from '@ftp/schema';
import { CliError } from '../errors.ts';
import { segment } from '../http.ts';
import { formatTime, printJson, printKeyValue, printLine, printTable } from '../output.ts';
import { context, JSON_HELP, type Context } from './context.ts';
import { positiveInt } from './option-values.ts';
import { trainingConfigFrom, withTrainingOptions } from './train.ts';

const SEARCH_HELP = 'a field to search and its range: KEY=float:LOW:HIGH[:log], KEY=int:LOW:HIGH[:log] or KEY=choice:A,B,…; KEY a hyperparameter, or with a dot a path under training_config; repeatable';

/** One --search: the space's path and its dimension. */
export function parseSearch(text: string, previous: Record<string, SweepDimension> = {}): Record<string, SweepDimension> {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected KEY=float:LOW:HIGH[:log], KEY=int:LOW:HIGH[:log] or KEY=choice:A,B,…');
  const key = text.slice(0, eq).trim();
  const path = key.includes('.') ? key : `hyperparameters.${key}`;
  const [kind, ...rest] = text.slice(eq + 1).split(':');
  const number = (value: string | undefined, what: string) => {
    const n = Number(value);
    if (value === undefined || value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`${key}: ${what} must be a number, not ${JSON.stringify(value ?? '')}`);
    return n;
  };
  let dimension: SweepDimension;
  if (kind === 'float' || kind === 'int') {
    if (rest.length < 2 || rest.length > 3 || (rest[2] !== undefined && rest[2] !== 'log')) throw new InvalidArgumentError(`${key}: expected ${kind}:LOW:HIGH or ${kind}:LOW:HIGH:log`);
    dimension = { type: kind, low: number(rest[0], 'LOW'), high: number(rest[1], 'HIGH'), log: rest[2] === 'log' };
  } else if (kind === 'choice') {
    const choices = rest.join(':').split(',').map((c) => c.trim()).filter((c) => c !== '').map((c) => {
      try {
        return JSON.parse(c) as number | string | boolean;
      } catch {
        return c;
      }
    });
    if (choices.length === 0) throw new InvalidArgumentError(`${key}: choice needs values, e.g. choice:8,16,32`);
    dimension = { type: 'choice', choices };
  } else {
    throw new InvalidArgumentError(`${key}: the range is float:…, int:… or choice:…, not ${JSON.stringify(kind)}`);
  }
  return { ...previous, [path]: dimension };
}

const value = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toPrecision(4));
const shortPath = (path: string) => path.replace(/^hyperparameters\./, '');

function printSweep(sweep: Sweep): void {
  printKeyValue([
    ['sweep_id', sweep.sweep_id],
    ['name', sweep.name],
    ['status', sweep.status],
    ['objective', `${sweep.objective.direction} ${sweep.objective.metric}`],
    ['trials', `${sweep.trials.length} of ${sweep.budget.trials} (${sweep.budget.parallel} at once; ${sweep.sampler}, ${sweep.pruner} pruner, seed ${sweep.seed})`],
    ['best', sweep.best_job_id ? `${sweep.best_job_id} (${sweep.objective.metric} ${value(sweep.best_value)})` : '-'],
    ['error', sweep.error ?? undefined],
  ]);
  const paths = Object.keys(sweep.space);
  printTable(['TRIAL', 'JOB', 'STATE', ...paths.map(shortPath), sweep.objective.metric.toUpperCase(), 'NOTE'], sweep.trials.map((t) => [
    String(t.trial), t.job_id ?? '-', t.state === 'running' && t.job_status ? `running (${t.job_status})` : t.state,
    ...paths.map((p) => JSON.stringify(t.params[p])), value(t.value), t.job_id === sweep.best_job_id ? 'best' : t.state === 'completed' ? '' : (t.error ?? ''),
  ]));
}

/** Polls the sweep until it ends, a line for each trial as it ends (none with --json). */
async function followSweep({ api, json }: Context, sweepId: string): Promise<Sweep> {
  const told = new Set<string>();
  for (;;) {
    const sweep = await api.json<Sweep>('training', 'GET', `/sweeps/${segment(sweepId)}`);
    for (const t of sweep.trials) {
      const key = `${t.trial}:${t.state}`;
      if (json || told.has(key)) continue;
      told.add(key);
      const params = Object.entries(t.params).map(([p, v]) => `${shortPath(p)}=${JSON.stringify(v)}`).join(' ');
      printLine(t.state === 'running' ? `trial ${t.trial} started: ${t.job_id} ${params}` : `trial ${t.trial} ${t.state}: ${sweep.objective.metric} ${value(t.value)}${t.state === 'completed' ? '' : ` (${t.error ?? ''})`}`);
    }
    if (sweep.status !== 'queued' && sweep.status !== 'running') return sweep;
    await sleep(2000);
  }
}

export function sweepCommand(): Command {
  const sweep = new Command('sweep').alias('sweeps').description('hyperparameter sweeps: trials proposed by Optuna, run as training jobs, the behind ones pruned (training service)');

  withTrainingOptions(sweep.command('create').description('start a sweep from a base training request and a search space; print its sweep_id'))
    .requiredOption('--search <key=range>', SEARCH_HELP, parseSearch)
    .option('--objective <metric>', 'what the trials’ evaluations report that the sweep optimises (service default: eval_loss); append :max or :min to say which way', (v) => v)
    .option('--trials <n>', 'trials in all (service default: 8)', positiveInt)
    .option('--parallel <n>', 'trials at once (service default: 1)', positiveInt)
    .addOption(new Option('--sampler <sampler>', 'how trials are proposed (service default: tpe)').choices(['tpe', 'random', 'grid'] as const))
    .addOption(new Option('--pruner <pruner>', 'what stops a trial that is behind (service default: median)').choices(['median', 'successive_halving', 'none'] as const))
    .option('--startup-trials <n>', 'trials before TPE models the results and the median pruner prunes (service default: 2)', (v) => Number.parseInt(v, 10))
    .option('--seed <n>', 'the same seed proposes the same trials (service default: 0)', (v) => Number.parseInt(v, 10))
    .option('--name <name>', 'sweep name (each trial’s job is named after it)')
    .option('--follow', 'print each trial as it ends until the sweep does; exit 0 only when it completed')
    .option('--json', JSON_HELP)
    .action(async (options, command) => {
      const ctx = context(command);
      const { api, json } = ctx;
      const [metric, way] = (options.objective ?? '').split(':');
      if (way !== undefined && way !== 'max' && way !== 'min') throw new InvalidArgumentError('--objective: METRIC, METRIC:max or METRIC:min');
      const hubToken = api.settings.hubToken;
      const request = {
        training_request: { processed_dataset_id: options.dataset, training_config: trainingConfigFrom(options), ...(hubToken ? { hub_token: hubToken } : {}) },
        space: options.search,
        ...(metric || way ? { objective: { ...(metric ? { metric } : {}), ...(way ? { direction: way === 'max' ? 'maximize' : 'minimize' } : {}) } } : {}),
        ...(options.trials !== undefined || options.parallel !== undefined ? { budget: { ...(options.trials !== undefined ? { trials: options.trials } : {}), ...(options.parallel !== undefined ? { parallel: options.parallel } : {}) } } : {}),
        ...(options.sampler ? { sampler: options.sampler } : {}),
        ...(options.pruner ? { pruner: options.pruner } : {}),
        ...(options.startupTrials !== undefined ? { startup_trials: options.startupTrials } : {}),
        ...(options.seed !== undefined ? { seed: options.seed } : {}),
        ...(options.name ? { name: options.name } : {}),
      };
      // The largest trial's pre-flight runs on a worker before the sweep is accepted.
      const created = await api.json<{ sweep_id: string }>('training', 'POST', '/sweeps', { kind: 'work', json: request });
      if (!options.follow) return json ? printJson(created) : printKeyValue([['sweep_id', created.sweep_id]]);
      if (!json) printKeyValue([['sweep_id', created.sweep_id]]);
      const ended = await followSweep(ctx, created.sweep_id);
      if (json) printJson(ended);
      else printSweep(ended);
      if (ended.status !== 'completed') throw new CliError(`sweep ${ended.sweep_id} ${ended.status}: ${ended.error ?? 'no error given'}`);
    });

  sweep
    .command('list')
    .description('list your sweeps, newest first')
    .option('--json', JSON_HELP)
    .action(async (options, command) => {
      const { api, json } = context(command);
      const list = await api.json<SweepList>('training', 'GET', '/sweeps');
      if (json) return printJson(list);
      if (list.sweeps.length === 0) return printLine('no sweeps');
      printTable(['ID', 'NAME', 'STATUS', 'TRIALS', 'BEST', 'CREATED'], list.sweeps.map((s) => [
        s.sweep_id, s.name, s.status, `${s.trials.length}/${s.budget.trials}`, s.best_job_id ? `${s.best_job_id} (${value(s.best_value)})` : '-', formatTime(s.created_at),
      ]));
    });

  sweep
    .command('get')
    .description('show a sweep and its trials (with --follow, until it ends)')
    .argument('<id>', 'sweep id (sweep_…)')
    .option('--follow', 'print each trial as it ends until the sweep does; exit 0 only when it completed')
    .option('--json', JSON_HELP)
    .action(async (id, options, command) => {
      const ctx = context(command);
      const found = options.follow ? await followSweep(ctx, id) : await ctx.api.json<Sweep>('training', 'GET', `/sweeps/${segment(id)}`);
      if (ctx.json) printJson(found);
      else printSweep(found);
      if (options.follow && found.status !== 'completed') throw new CliError(`sweep ${found.sweep_id} ${found.status}: ${found.error ?? 'no error given'}`);
    });

  sweep
    .command('cancel')
    .description('cancel a sweep: its running trials are cancelled, its completed ones kept')
    .argument('<id>', 'sweep id (sweep_…)')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const found = await api.json<Sweep>('training', 'POST', `/sweeps/${segment(id)}/cancel`);
      if (json) return printJson(found);
      printLine(`sweep ${found.sweep_id} ${found.status === 'cancelled' ? 'cancelled' : 'cancelling: its worker cancels its running trials'}`);
    });

  sweep
    .command('rm')
    .description('delete an ended sweep and its trials’ jobs with everything they stored')
    .argument('<id>', 'sweep id (sweep_…)')
    .option('--json', JSON_HELP)
    .action(async (id, _options, command) => {
      const { api, json } = context(command);
      const result = await api.json<{ sweep_id: string; deleted: true; jobs: string[] }>('training', 'DELETE', `/sweeps/${segment(id)}`);
      if (json) return printJson(result);
      printLine(`sweep ${result.sweep_id} deleted, with ${result.jobs.length} jobs`);
    });

  return sweep;
}
