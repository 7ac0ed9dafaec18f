// A job's training_config as it applies to that job, for a person comparing jobs (GET /jobs, the job page, compare):
// the stored config holds every default, also those its trainer or method never reads, and an `epochs` that max_steps
// overrides. Shown as stored, an SFT job listed GRPO's num_generations and a 100-step run read "epochs 3".
import type { TrainingJobRow } from '@ftp/platform';
import { hyperparameterApplies, jobConfig, type PreflightReport, type TrainingConfig } from '@ftp/schema';

/** The trainer a job runs (a row written before trainer_type had a default is sft: jobConfig). */
export const trainerOf = (job: Pick<TrainingJobRow, 'job_id' | 'base_model_id' | 'training_config'>): string => jobConfig(job).trainer_type;

/** The config without the settings its trainer and method do not read, and with `epochs` the passes over the train
 *  split that max_steps makes (from the pre-flight report's steps per epoch, to one decimal) when max_steps is set. */
export type AppliedConfig = Omit<TrainingConfig, 'hyperparameters'> & { hyperparameters: Partial<TrainingConfig['hyperparameters']> };

export function appliedTrainingConfig(config: TrainingConfig, preflight: PreflightReport | null): AppliedConfig {
  const hyperparameters: Partial<TrainingConfig['hyperparameters']> = Object.fromEntries(
    Object.entries(config.hyperparameters).filter(([name]) => hyperparameterApplies(name, config.trainer_type, config.method)),
  );
  if (config.hyperparameters.max_steps > 0) {
    const perEpoch = preflight?.steps.per_epoch;
    if (perEpoch) hyperparameters.epochs = Math.round((10 * config.hyperparameters.max_steps) / perEpoch) / 10;
    else delete hyperparameters.epochs; // unknown until the report is made; max_steps decides, not epochs
  }
  const { reward_config: rewards, ...rest } = config;
  return { ...rest, ...(config.trainer_type === 'grpo' && rewards !== undefined ? { reward_config: rewards } : {}), hyperparameters };
}
