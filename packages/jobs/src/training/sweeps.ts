// Sweeps (POST /sweeps) as domain functions: a request checked (the space within the training request's own bounds,
// an objective its evaluations report, the largest trial's pre-flight), stored and queued for a worker's `sweep` lane,
// which runs it (services/worker/src/sweeps); cancel, delete and how a sweep reads. A trial is an ordinary training
// job: its request is the base request with the trial's values set at their paths.
import { Conflict, newId, NotFound, UnprocessableEntity, type Platform, type SweepRow, type SweepTrialRow, type TrainingJobRow, type ValidationIssue } from '@ftp/platform';
import { minimizedByDefault, TrainRequest, type Sweep, type SweepCreateRequest, type SweepDimension } from '@ftp/schema';
import { sweepQueue } from '../queues/index.ts';
import { cancelTrainingJob, deleteTrainingJob } from './job-lifecycle.ts';
import { preflightTrainingJob } from './submit.ts';

const BODY = ['body'];
/** A sweep's stored request: what was asked, defaults filled in, the objective's direction decided, no secret. */
export type StoredSweepRequest = Omit<SweepCreateRequest, 'objective'> & { objective: { metric: string; direction: 'minimize' | 'maximize' } };
type BaseRequest = SweepCreateRequest['training_request'];

/** The base request with `params` (dotted paths into training_config) set: one trial's training request. */
export function trialRequest(base: BaseRequest | Record<string, unknown>, params: Record<string, unknown>, jobName?: string): TrainRequest {
  const request = structuredClone(base) as Record<string, unknown>;
  const config = (request.training_config ??= {}) as Record<string, unknown>;
  for (const [path, value] of Object.entries(params)) {
    const keys = path.split('.');
    let at = config;
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[keys.at(-1)!] = value;
  }
  if (jobName !== undefined) request.job_name = jobName;
  return request as TrainRequest;
}

/** The values a dimension's extremes take: its low and high, or each of its choices, with where each is written. */
function extremes(dimension: SweepDimension): Array<{ value: unknown; loc: string[] }> {
  if (dimension.type === 'choice') return dimension.choices.map((value, i) => ({ value, loc: ['choices', String(i)] }));
  return [{ value: dimension.low, loc: ['low'] }, { value: dimension.high, loc: ['high'] }];
}

/** Each dimension's extremes must be values the training request accepts at that path (its schema's bounds are the
 *  outer limits): the base request is parsed with each in place, and a refusal is a 422 naming the space's field. */
export function checkSpace(request: SweepCreateRequest): void {
  const issues: ValidationIssue[] = [];
  for (const [path, dimension] of Object.entries(request.space)) {
    const at = [...BODY, 'space', path];
    const target = ['training_config', ...path.split('.')].join('.');
    for (const { value, loc } of extremes(dimension)) {
      const parsed = TrainRequest.safeParse(trialRequest(request.training_request, { [path]: value }));
      if (parsed.success) continue;
      // The field's own refusal when there is one (a bound, a type), else whatever rule the value broke elsewhere.
      const issue = parsed.error.issues.find((i) => i.path.join('.') === target) ?? parsed.error.issues[0]!;
      const where = issue.path.join('.');
      const unknown = issue.code === 'unrecognized_keys' ? `; training_config has no field ${path}` : '';
      issues.push({ loc: [...at, ...loc], msg: `${JSON.stringify(value)} at ${path}: ${where === target ? '' : `${where}: `}${issue.message}${unknown}`, type: 'out_of_bounds' });
      break;
    }
    if (request.sampler === 'grid' && !(dimension.type === 'choice' || (dimension.type === 'int' && !dimension.log))) {
      issues.push({ loc: at, msg: `a grid tries every value: give ${path} choices (or make it a linear int range)`, type: 'value_error' });
    }
  }
  if (issues.length > 0) throw new UnprocessableEntity(issues);
}

/** The trial that needs the most memory, as far as a request can say: every range at its high end, every numeric
 *  choice at its largest. */
function largestTrial(request: SweepCreateRequest): TrainRequest {
  const params: Record<string, unknown> = {};
  for (const [path, dimension] of Object.entries(request.space)) {
    if (dimension.type !== 'choice') params[path] = dimension.high;
    else {
      const numbers = dimension.choices.filter((c): c is number => typeof c === 'number');
      params[path] = numbers.length > 0 ? Math.max(...numbers) : dimension.choices[0];
    }
  }
  return trialRequest(request.training_request, params);
}

/** Checks, stores and queues a sweep; its id. The base request is checked as POST /train checks one (dataset,
 *  trainer, model), and a worker's pre-flight of the largest trial must find a worker it fits on. */
export async function createSweep(platform: Platform, userId: string, request: SweepCreateRequest): Promise<string> {
  const config = request.training_request.training_config;
  const configLoc = [...BODY, 'training_request', 'training_config'];
  if (config.eval_config.eval_strategy === 'no') {
    throw new UnprocessableEntity({ loc: [...configLoc, 'eval_config', 'eval_strategy'], msg: `a sweep's objective (${request.objective.metric}) is measured at the trials' evaluations: set eval_strategy to steps or epoch (the dataset needs a test split)`, type: 'value_error' });
  }
  if (config.export_config.destination === 'hub') {
    throw new UnprocessableEntity({ loc: [...configLoc, 'export_config', 'destination'], msg: 'a sweep’s trials store their models in cloud storage: leave destination cloud, and export the best trial to the hub once the sweep names it', type: 'value_error' });
  }
  checkSpace(request);
  const largest = largestTrial(request);
  const report = await preflightTrainingJob(platform, userId, { ...largest, dry_run: true });
  if (report.estimates.length > 0 && !report.estimates.some((e) => e.fits)) {
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
    const most = Math.max(...report.estimates.map((e) => e.memory_bytes));
    throw new UnprocessableEntity({
      loc: [...BODY, 'space'],
      msg: `the largest trial (${Object.keys(request.space).join(', ')} at their greatest) needs about ${gib(report.memory.estimated_peak_bytes)} at its peak, more than any training worker has (${gib(most)}): lower those upper bounds`,
      type: 'does_not_fit',
    });
  }
  const sweepId = newId('sweep');
  const { hub_token: hubToken, ...base } = request.training_request;
  const trackerApiKey = base.training_config.tracker_config?.api_key;
  const stored: StoredSweepRequest = {
    ...request,
    training_request: { ...base, training_config: { ...base.training_config, ...(base.training_config.tracker_config ? { tracker_config: { ...base.training_config.tracker_config, api_key: undefined } } : {}) } },
    objective: { metric: request.objective.metric, direction: request.objective.direction ?? (minimizedByDefault(request.objective.metric) ? 'minimize' : 'maximize') },
  };
  await platform.sweeps.insert({ sweep_id: sweepId, user_id: userId, name: request.name, request: JSON.parse(JSON.stringify(stored)) as Record<string, unknown> });
  if (hubToken || trackerApiKey) await platform.secrets.put(sweepId, { hubToken, trackerApiKey });
  try {
    await platform.queue.add(sweepQueue, { sweepId });
  } catch (err) {
    await platform.secrets.drop(sweepId);
    await platform.sweeps.failQueued(sweepId, 'the queue was not available when the sweep was submitted; submit it again');
    throw err;
  }
  return sweepId;
}

/** Cancels a queued sweep at once, or has its holder cancel its running trials and end it. */
export async function cancelSweep(platform: Platform, userId: string, sweepId: string): Promise<SweepRow> {
  const row = await getSweep(platform, userId, sweepId);
  const cancelled = await platform.sweeps.cancel(userId, sweepId);
  if (!cancelled) throw new Conflict(`sweep ${sweepId} is already ${row.status}; only a queued or running sweep can be cancelled`);
  if (cancelled.status === 'cancelled') await platform.secrets.drop(sweepId);
  return cancelled;
}

/** Cancels a sweep's trials that still run (its holder, when the user cancelled it). */
export async function cancelTrials(platform: Platform, userId: string, jobs: readonly TrainingJobRow[]): Promise<void> {
  for (const job of jobs) await cancelTrainingJob(platform, userId, job.job_id).catch((err: unknown) => { if (!(err instanceof Conflict)) throw err; });
}

/** Deletes a finished sweep and its trials' jobs with everything they stored; returns the jobs deleted. */
export async function deleteSweep(platform: Platform, userId: string, sweepId: string): Promise<string[]> {
  const row = await getSweep(platform, userId, sweepId);
  if (row.status === 'queued' || row.status === 'running') throw new Conflict(`sweep ${sweepId} is ${row.status}; cancel it first (POST /sweeps/${sweepId}/cancel)`);
  const jobs = await platform.jobs.listOfSweep(sweepId);
  const deleted: string[] = [];
  for (const job of jobs) {
    await deleteTrainingJob(platform, userId, job.job_id);
    deleted.push(job.job_id);
  }
  await platform.sweeps.delete(userId, sweepId);
  return deleted;
}

/** The caller's sweep; 404 when it is not theirs. */
export async function getSweep(platform: Platform, userId: string, sweepId: string): Promise<SweepRow> {
  const row = await platform.sweeps.get(userId, sweepId);
  if (!row) throw new NotFound('sweep', sweepId);
  return row;
}

/** A sweep as the API shows it, with its trials and their jobs' statuses. */
export function presentSweep(row: SweepRow, trials: readonly SweepTrialRow[], jobs: ReadonlyMap<string, TrainingJobRow>): Sweep {
  const request = row.request as unknown as StoredSweepRequest;
  return {
    sweep_id: row.sweep_id,
    name: row.name,
    status: row.status,
    training_request: request.training_request as unknown as Record<string, unknown>,
    space: request.space,
    objective: request.objective,
    budget: request.budget,
    sampler: request.sampler,
    pruner: request.pruner,
    startup_trials: request.startup_trials,
    seed: request.seed,
    trials: trials.map((t) => ({
      trial: t.trial,
      job_id: t.job_id,
      params: t.params,
      state: t.state,
      job_status: t.job_id ? (jobs.get(t.job_id)?.status ?? null) : null,
      value: t.value,
      steps: t.steps,
      error: t.error,
    })),
    best_job_id: row.best_job_id,
    best_value: row.best_value,
    error: row.error,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    finished_at: row.finished_at ? row.finished_at.toISOString() : null,
  };
}
