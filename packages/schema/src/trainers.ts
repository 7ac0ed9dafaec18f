// What kind of run a training job is: its trainer and its method. Both the request and the pre-flight report name them.
import { z } from 'zod';

export const TrainerType = z
  .enum(['sft', 'dpo', 'orpo', 'grpo'])
  .describe('sft needs a language_modeling dataset, dpo/orpo a preference one, grpo a prompt_only one');
export type TrainerType = z.infer<typeof TrainerType>;

export const TrainingMethod = z.enum(['Full', 'LoRA', 'QLoRA']).describe('QLoRA needs a CUDA GPU');
export type TrainingMethod = z.infer<typeof TrainingMethod>;
