// A Tinker training run as the console reads it: the training service presents one as a job (trainer tinker, its
// optim_steps its progress, paused while idle) whose saved weights are its checkpoints. What the job page and the jobs
// list say of one — its settings, its state in words, a saved weights' kind and /v1 model name — pure, so tested
// without a browser.
import type { CheckpointList, TrainingJob } from '../../api/types.ts';

export type SavedWeights = CheckpointList['checkpoints'][number];

/** What a run's training_config holds (packages/jobs/src/tinker/runs.ts presentTinkerRun). */
export interface TinkerRunConfig {
  trainer_type: 'tinker';
  method: string;
  base_model_id: string;
  /** The SDK's `<session_id>:train:<n>`. */
  model_id: string;
  session_id: string;
  lora: { rank: number; train_mlp: boolean; train_attn: boolean; train_unembed: boolean; seed: number | null };
}

/** The run's settings, or undefined for a job that is not a Tinker run. */
export function tinkerConfigOf(job: Pick<TrainingJob, 'training_config'> | undefined): TinkerRunConfig | undefined {
  const config = job?.training_config as Partial<TinkerRunConfig> | undefined;
  return config?.trainer_type === 'tinker' ? (config as TinkerRunConfig) : undefined;
}

export const isTinkerRun = (job: Pick<TrainingJob, 'training_config'> | undefined): boolean => tinkerConfigOf(job) !== undefined;

/** What a run is doing, in words: pause and resume do not apply to it (its worker lets it go when idle, and its next
 *  call from the SDK takes one again). */
export function runState(job: Pick<TrainingJob, 'status' | 'error'>): string {
  switch (job.status) {
    case 'training':
      return 'held by a worker';
    case 'paused':
      return 'idle — its state is saved; the next call from the SDK resumes it';
    case 'queued':
      return 'queued';
    case 'failed':
      return job.error ? `failed: ${job.error}` : 'failed';
    default:
      return job.status;
  }
}

/** The status a run's badge shows: an idle run is "paused" to the jobs API, but nobody paused it. */
export function runStatusLabel(job: Pick<TrainingJob, 'status' | 'training_config'>): string {
  return job.status === 'paused' && isTinkerRun(job) ? 'idle' : job.status;
}

/** A saved weights' kind: a state to load (save_state) or weights to sample and serve (save_weights_for_sampler). */
export function weightsKindLabel(kind: SavedWeights['kind']): string {
  return kind === 'weights' ? 'state' : kind === 'sampler_weights' ? 'sampler' : '—';
}

/** The /v1 model name of a run's sampler weights. */
export function tinkerModelName(runId: string, name: string): string {
  return `tinker:${runId}:${name}`;
}

/** The layers its LoRA adapts, in words: "MLP, attention, output layer". */
export function loraLayers(lora: TinkerRunConfig['lora']): string {
  const layers = [lora.train_mlp && 'MLP', lora.train_attn && 'attention', lora.train_unembed && 'output layer'].filter(Boolean);
  return layers.length ? layers.join(', ') : 'none';
}

/** A job's name in the jobs list: a run's is its model_id (its job_name is "tinker <model_id>", and a badge says tinker). */
export function jobDisplayName(job: Pick<TrainingJob, 'job_name' | 'training_config'>): string {
  return tinkerConfigOf(job)?.model_id ?? job.job_name;
}

/** Whether a run can be cancelled (a failed one has ended) and deleted (no worker holds it, nor is about to). */
export function runActions(job: Pick<TrainingJob, 'status'>): { cancel: boolean; remove: boolean } {
  return { cancel: ['queued', 'training', 'paused'].includes(job.status), remove: job.status === 'paused' || job.status === 'failed' };
}
