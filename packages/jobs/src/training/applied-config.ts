// A job's training_config as it applies to that job, for a person comparing jobs (GET /jobs, the job page, compare):
// the stored config holds every default, also those its trainer or method never reads, and an `epochs` that max_steps
// overrides. Shown as stored, an SFT job listed GRPO's num_generations and a 100-step run read "epochs 3".
import type { TrainingJobRow } from '@ftp/platform';
import { hyperparameterApplies, type PreflightReport } from '@ftp/schema';

interface StoredConfig {
  method?: string;
  trainer_type?: string;
  reward_config?: unknown;
  hyperparameters?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The trainer a job's stored config runs: rows written before trainer_type had a default leave it out (sft). */
export const trainerOf = (job: Pick<TrainingJobRow, 'training_config'>): string => (job.training_config as StoredConfig).trainer_type ?? 'sft';

/** The config without the settings its trainer and method do not read, and with `epochs` the passes over the train
 *  split that max_steps makes (from the pre-flight report's steps per epoch, to one decimal) when max_steps is set. */
export function appliedTrainingConfig(stored: Record<string, unknown>, preflight: PreflightReport | null): Record<string, unknown> {
  const config = stored as StoredConfig;
  const trainer = trainerOf({ training_config: stored });
  const hyperparameters = Object.fromEntries(
    Object.entries(config.hyperparameters ?? {}).filter(([name]) => hyperparameterApplies(name, trainer, config.method)),
  );
  const maxSteps = Number(hyperparameters.max_steps ?? -1);
  if (maxSteps > 0) {
    const perEpoch = preflight?.steps.per_epoch;
    if (perEpoch) hyperparameters.epochs = Math.round((10 * maxSteps) / perEpoch) / 10;
    else delete hyperparameters.epochs; // unknown until the report is made; max_steps decides, not epochs
  }
  const { reward_config: rewards, ...rest } = config;
  return { ...rest, ...(trainer === 'grpo' && rewards !== undefined ? { reward_config: rewards } : {}), hyperparameters };
}
