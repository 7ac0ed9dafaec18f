// The pre-flight report (decisions.md "Checkpoints, pre-flight, continuation"): what a training run will see and cost,
// told before it runs; the answer of POST /train with dry_run, and the first record of every job.
import { z } from 'zod';
import { Identifier, maybe } from '../common.ts';
import { TrainerType, TrainingMethod } from '../trainers.ts';

const count = z.number().int().nonnegative();

export const PreflightWarning = z.object({
  code: z.string().describe('no_end_of_turn, no_assistant_turn, train_test_duplicates, truncated, batch_larger_than_split, few_steps, no_evaluation, equal_rewards, dpo_no_end_of_turn, does_not_fit, …'),
  message: z.string().describe('What is wrong and what to change'),
});

export const PreflightEstimate = z
  .object({
    worker_id: Identifier,
    host: z.string(),
    device: z.string().describe('cpu, or cuda:<GPU name>'),
    tokens_per_second: maybe(z.number().positive()).describe('Measured on this host and device for this model, method and trainer (null: not yet)'),
    measured_by: maybe(z.enum(['probe', 'job'])).describe('A timed pre-flight run of a few steps, or the last real job'),
    training_seconds: maybe(z.number().nonnegative()).describe('The steps alone: training_tokens / tokens_per_second'),
    overhead_seconds: maybe(z.number().nonnegative()).describe(
      'What the last job of this model, method and trainer spent on this host around its steps: loading, preparing the data, evaluating, saving and storing (null until one ran)',
    ),
    wall_seconds: maybe(z.number().nonnegative()).describe('From start to completed: training_seconds + overhead_seconds (the steps alone while overhead_seconds is null)'),
    chat_ready_seconds: maybe(z.number().nonnegative()).describe(
      'After completed, on a worker that serves chat (the infer queue): the time its model takes to be prepared in the background for the fast engine (the GGUF files /v1 chat and the playground run), as the last job of this model, method and trainer took on this host; the first chat waits for what is left of it (null: not prepared there yet, or the worker serves no chat)',
    ),
    memory_bytes: count.describe('The device memory (GPU) or RAM of the worker'),
    fits: z.boolean().describe('estimated_peak_bytes fits in memory_bytes'),
  })
  .meta({ id: 'PreflightEstimate' });

export const PreflightReport = z
  .object({
    trainer_type: TrainerType,
    method: TrainingMethod,
    examples: z.object({ train: count, test: maybe(count) }),
    tokens: z
      .object({ min: count, median: z.number(), p95: z.number(), max: count, total: count })
      .describe('Tokens per train example after the chat template, before truncation'),
    max_length: count,
    truncated: z.object({ examples: count, loss_tokens_lost: count.describe('Tokens that would carry loss and are cut off') }),
    loss_token_share: maybe(z.number().min(0).max(1)).describe('Share of the kept tokens that carry loss (null for grpo: loss is on generated tokens)'),
    samples: z
      .array(z.object({ segments: z.array(z.object({ text: z.string(), trained: z.boolean() })) }))
      .describe('The first two train examples as training sees them, trained spans marked'),
    steps: z.object({ per_epoch: count, total: count, effective_batch_size: count }),
    training_tokens: z.number().nonnegative().describe('Tokens the whole run pushes through the model (an estimate: a number, since steps × batch × tokens may pass 2^53)'),
    model: z.object({
      parameters: count,
      trainable_parameters: count,
      dtype: z.string(),
      hidden_size: count,
      num_layers: count,
      vocab_size: count,
    }),
    memory: z
      .object({ estimated_peak_bytes: count, weights_bytes: count, training_state_bytes: count, activations_bytes: count })
      .describe('An estimate: weights, gradients and optimizer state of what is trained, activations of the largest micro-batch'),
    throughput: maybe(z.object({ tokens_per_second: z.number().positive(), device: z.string(), steps: count, steps_seconds: z.number().nonnegative().optional().describe('What all the probe’s steps take at that speed (the rest of its time is loading and preparing)') })).describe('A probe this report measured, if any'),
    estimates: z.array(PreflightEstimate).describe('Per live training worker: wall time and whether it fits'),
    warnings: z.array(PreflightWarning),
  })
  .meta({ id: 'PreflightReport', description: 'What a training run will see and cost, before it runs' });
export type PreflightReport = z.infer<typeof PreflightReport>;

export const PreflightResponse = z.object({ preflight: PreflightReport }).meta({ id: 'PreflightResponse' });
export type PreflightResponse = z.infer<typeof PreflightResponse>;
