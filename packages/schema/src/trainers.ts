// What kind of run a training job is: its trainer and its method. Both the request and the pre-flight report name them.
import { z } from 'zod';
import type { ProcessingMode } from './preprocessing.ts';

/** The dataset each trainer trains on (its processed dataset's processing_mode): `x-dataset-modes` in the OpenAPI
 *  document, the one statement that the submit checks, the /v1 jobs, the console's launch form and the core follow. */
export const TRAINER_DATASET_MODE = { sft: 'language_modeling', dpo: 'preference', orpo: 'preference', grpo: 'prompt_only' } as const satisfies Record<string, ProcessingMode>;

export const TrainerType = z
  .enum(['sft', 'dpo', 'orpo', 'grpo'])
  .describe('sft needs a language_modeling dataset, dpo/orpo a preference one, grpo a prompt_only one')
  .meta({ 'x-dataset-modes': TRAINER_DATASET_MODE });
export type TrainerType = z.infer<typeof TrainerType>;

export const TrainingMethod = z.enum(['Full', 'LoRA', 'QLoRA']).describe('QLoRA needs a CUDA GPU');
export type TrainingMethod = z.infer<typeof TrainingMethod>;
