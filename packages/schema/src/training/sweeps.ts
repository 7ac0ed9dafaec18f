// Sweeps (POST /sweeps, decisions.md "Sweeps and evaluation that decides"): a base training request, a search space
// over its training_config, an objective measured at the trials' evaluations, a budget, a sampler and a pruner. Optuna
// proposes the trials; each is an ordinary training job carrying the sweep's id; a trial the pruner stops early is a
// completed job with `pruned: true`. The schema's bounds of each searched field are the outer limits: a range or a
// choice outside them is a 422 naming the space's field (checked by the service, which parses the request with each
// extreme in place).
import { z } from 'zod';
import { boundedInt, documentedRules, Identifier, maybe, Timestamp } from '../common.ts';
import { JobStatus } from './job.ts';
import { TrainRequest } from './request.ts';

/** A field of training_config, dotted: `hyperparameters.learning_rate`, `hyperparameters.lora_rank`. */
export const SweepPath = z
  .string()
  .regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/, 'a dotted path into training_config, e.g. hyperparameters.learning_rate')
  .max(200);

const Range = <T extends z.ZodNumber>(kind: 'float' | 'int', value: T) =>
  z.strictObject({
    type: z.literal(kind),
    low: value.describe('The least value tried'),
    high: value.describe('The greatest value tried'),
    log: z.boolean().default(false).describe('Sample on a log scale (low > 0): learning rates, ranks'),
  });

export const SweepDimension = z
  .discriminatedUnion('type', [
    Range('float', z.number()),
    Range('int', z.number().int()),
    z.strictObject({
      type: z.literal('choice'),
      choices: z.array(z.union([z.number(), z.string(), z.boolean()])).min(1).max(64).describe('The values tried'),
    }),
  ])
  .superRefine((dimension, ctx) => {
    if (dimension.type === 'choice') {
      if (new Set(dimension.choices.map((c) => JSON.stringify(c))).size !== dimension.choices.length) {
        ctx.addIssue({ code: 'custom', path: ['choices'], message: 'a choice is listed twice' });
      }
      return;
    }
    if (dimension.low > dimension.high) ctx.addIssue({ code: 'custom', path: ['high'], message: `high ${dimension.high} is below low ${dimension.low}` });
    if (dimension.log && dimension.low <= 0) ctx.addIssue({ code: 'custom', path: ['low'], message: 'a log scale needs low > 0' });
  })
  .meta({
    id: 'SweepDimension',
    description: 'One searched field: a float or int range (optionally on a log scale), or a list of choices',
    ...documentedRules({ when: { required: ['log'], properties: { log: { const: true } } }, then: { properties: { low: { exclusiveMinimum: 0 } } } }),
  });
export type SweepDimension = z.infer<typeof SweepDimension>;

export const SweepObjective = z
  .strictObject({
    metric: z
      .string()
      .regex(/^[a-z][a-z0-9_/]*$/, 'a metric the trials’ evaluations report, e.g. eval_loss or valid_score')
      .default('eval_loss')
      .describe('A metric each evaluation of a trial reports: eval_loss, accuracy, perplexity, valid_score (with eval_config.graders)'),
    direction: z.enum(['minimize', 'maximize']).optional().describe('Default: minimize a loss or perplexity, maximize anything else'),
  })
  .meta({ id: 'SweepObjective', description: 'What the sweep optimises: a metric of the trials’ final evaluation' });

/** Whether an objective is minimised when its request does not say. */
export const minimizedByDefault = (metric: string): boolean => /loss|perplexity/.test(metric);

export const SweepBudget = z.strictObject({
  trials: boundedInt(1, 200).default(8).describe('Trials in all (a grid stops earlier once every point was tried)'),
  parallel: boundedInt(1, 32).default(1).describe('Trials queued at once; workers take them as they are free'),
});

export const SweepCreateRequest = z
  .strictObject({
    name: z.string().min(1).max(200).default('unnamed sweep'),
    training_request: TrainRequest.omit({ dry_run: true }).describe('The base training request every trial starts from (POST /train’s body); its eval_config must evaluate (steps or epoch)'),
    space: z
      .record(SweepPath, SweepDimension)
      .refine((space) => Object.keys(space).length > 0, 'name at least one field of training_config to search')
      .refine((space) => Object.keys(space).length <= 16, 'at most 16 fields')
      .meta({ minProperties: 1, maxProperties: 16 })
      .describe('training_config fields to search, by dotted path (hyperparameters.learning_rate); each value must be one the training request accepts'),
    objective: SweepObjective.prefault({}),
    budget: SweepBudget.prefault({}),
    sampler: z.enum(['tpe', 'random', 'grid']).default('tpe').describe('How Optuna proposes: TPE (a model of the results so far), random, or every point of a grid (choices and linear int ranges) in an order the seed shuffles'),
    pruner: z.enum(['median', 'successive_halving', 'none']).default('median').describe('What stops a trial early at an evaluation: below the median of the trials before it at that step (median), or successive halving'),
    startup_trials: boundedInt(0, 100).default(2).describe('tpe: random trials before it models the results; median: trials that finish before it prunes any'),
    seed: boundedInt(0).default(0).describe('The same seed proposes the same trials (until the first one ends)'),
  })
  .meta({ id: 'SweepCreateRequest', description: 'Start a hyperparameter sweep: trials are training jobs proposed by Optuna' });
export type SweepCreateRequest = z.infer<typeof SweepCreateRequest>;

export const SweepStatus = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']).meta({ id: 'SweepStatus' });
export type SweepStatus = z.infer<typeof SweepStatus>;

export const SweepTrial = z
  .object({
    trial: z.number().int().min(0).describe('Optuna’s trial number, in the order proposed'),
    job_id: maybe(Identifier).describe('The trial’s training job (null when it could not be submitted: see error)'),
    params: z.record(z.string(), z.unknown()).describe('The searched fields’ values, by path'),
    state: z.enum(['running', 'completed', 'pruned', 'failed']).describe('running: its job is queued or trains; pruned: stopped early at an evaluation, its job completed there'),
    job_status: maybe(JobStatus),
    value: maybe(z.number()).describe('The objective: the final evaluation’s (a pruned trial: its last)'),
    steps: z.record(z.string(), z.number()).describe('The objective at each evaluation step, as reported to the pruner'),
    error: maybe(z.string()).describe('Why it failed or was pruned'),
  })
  .meta({ id: 'SweepTrial' });
export type SweepTrial = z.infer<typeof SweepTrial>;

export const Sweep = z
  .object({
    sweep_id: Identifier,
    name: z.string(),
    status: SweepStatus,
    training_request: z.record(z.string(), z.unknown()).describe('The base training request (without hub_token)'),
    space: z.record(z.string(), SweepDimension),
    objective: z.object({ metric: z.string(), direction: z.enum(['minimize', 'maximize']) }),
    budget: z.object({ trials: z.number().int(), parallel: z.number().int() }),
    sampler: z.string(),
    pruner: z.string(),
    startup_trials: z.number().int(),
    seed: z.number().int(),
    trials: z.array(SweepTrial),
    best_job_id: maybe(Identifier).describe('The completed trial with the best objective (not a pruned one): use its model like any job’s'),
    best_value: maybe(z.number()),
    error: maybe(z.string()),
    created_at: Timestamp,
    updated_at: Timestamp,
    finished_at: maybe(Timestamp),
  })
  .meta({ id: 'Sweep', description: 'A sweep, its trials and the best one so far' });
export type Sweep = z.infer<typeof Sweep>;

export const SweepList = z.object({ sweeps: z.array(Sweep) }).meta({ id: 'SweepList' });
export type SweepList = z.infer<typeof SweepList>;
export const SweepParams = z.object({ sweep_id: Identifier.describe('From POST /sweeps') });
export const SweepCreated = z.object({ sweep_id: Identifier }).meta({ id: 'SweepCreated' });
export const SweepDeleteResult = z
  .object({ sweep_id: Identifier, deleted: z.literal(true), jobs: z.array(Identifier).describe('The trials’ jobs deleted with it, and their files') })
  .meta({ id: 'SweepDeleteResult' });
