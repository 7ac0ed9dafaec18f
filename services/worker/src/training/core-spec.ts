// A training config (a stored job's, or a dry run's) → the core's train spec (core/src/ftcore/train/spec.py). Only local paths and
// settings: secrets go to the child's environment (secretsEnvironment), never into this file.
import type { JobSecretValues } from '@ftp/platform';
import { namedGraders, type TrainingConfig } from '@ftp/schema';

export interface JobPaths {
  baseModel: string;
  trainFile: string;
  testFile?: string;
  outputDir: string;
  /** training_config.from_job with LoRA/QLoRA: the parent's adapter, trained on. */
  initAdapter?: string;
}

/** decisions.md: mlflow by default when MLFLOW_TRACKING_URI is set; otherwise the job page is the tracker. */
export function trackerProvider(config: TrainingConfig, mlflowUri: string | undefined): 'mlflow' | 'wandb' | 'none' {
  return config.tracker_config?.provider ?? (mlflowUri ? 'mlflow' : 'none');
}

export function trainSpec(config: TrainingConfig, paths: JobPaths, options: { resume: boolean; mlflowUri?: string }): Record<string, unknown> {
  const tracker = config.tracker_config;
  const provider = trackerProvider(config, options.mlflowUri);
  return {
    base_model: paths.baseModel,
    train_file: paths.trainFile,
    ...(paths.testFile ? { test_file: paths.testFile } : {}),
    output_dir: paths.outputDir,
    method: config.method,
    trainer_type: config.trainer_type,
    modality: config.modality,
    hyperparameters: config.hyperparameters,
    // A multi grader's graders as a map by name (OpenAI's form may hold one grader object there), as /v1 graders send it.
    eval_config: { ...config.eval_config, ...(config.eval_config.graders ? { graders: config.eval_config.graders.map(namedGraders) } : {}) },
    // Whole: the core's RewardItem holds every field of RewardConfig (core/tests/test_cli.py checks that against
    // openapi/training.json).
    reward_config: config.reward_config ?? [],
    ...(config.response_format ? { response_schema: config.response_format.json_schema.schema } : {}),
    tracker_config: { provider, project: tracker?.project ?? '', log_model: tracker?.log_model ?? 'end' },
    resume_from_checkpoint: options.resume,
    ...(paths.initAdapter ? { init_adapter: paths.initAdapter } : {}),
    device: 'auto',
  };
}

/** The tracker's settings as the environment the core's MLflow integration reads (transformers' MLflowCallback). */
export function trackerEnvironment(config: TrainingConfig, mlflowUri: string | undefined, jobName: string): Record<string, string> {
  if (trackerProvider(config, mlflowUri) !== 'mlflow' || !mlflowUri) return {};
  const logModel = config.tracker_config?.log_model ?? 'end';
  return {
    MLFLOW_TRACKING_URI: mlflowUri,
    MLFLOW_EXPERIMENT_NAME: config.tracker_config?.project || 'fine-tuning',
    MLFLOW_RUN_NAME: jobName,
    HF_MLFLOW_LOG_ARTIFACTS: logModel === 'false' ? 'FALSE' : 'TRUE',
  };
}

/** The job's credentials as the environment variables the core reads. */
export function secretsEnvironment(secrets: JobSecretValues | undefined, config: TrainingConfig): Record<string, string> {
  const env: Record<string, string> = {};
  if (secrets?.hubToken) env.HF_TOKEN = secrets.hubToken;
  if (secrets?.trackerApiKey) {
    if ((config.tracker_config?.provider ?? 'mlflow') === 'wandb') env.WANDB_API_KEY = secrets.trackerApiKey;
    else env.MLFLOW_TRACKING_TOKEN = secrets.trackerApiKey;
  }
  return env;
}

