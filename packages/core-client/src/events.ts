// The core's stdout protocol: one JSON event per line. Mirrors core/src/ftcore/events.py (dataclasses);
// core/tests/fixtures/events.jsonl is parsed by both test suites.
import { z } from 'zod';

const num = z.number();
const extra = z.record(z.string(), z.number());

export const ProgressEvent = z.strictObject({
  event: z.literal('progress'),
  step: z.number().int(),
  total_steps: z.number().int(),
  epoch: num,
  loss: num.nullable(),
  learning_rate: num.nullable(),
  tokens_per_second: num.nullable(),
  eta_seconds: num.nullable(),
  extra,
});

export const LogEvent = z.strictObject({
  event: z.literal('log'),
  level: z.enum(['debug', 'info', 'warning', 'error']),
  message: z.string(),
});

export const MetricsEvent = z.strictObject({
  event: z.literal('metrics'),
  step: z.number().int(),
  eval_loss: num.nullable(),
  perplexity: num.nullable(),
  accuracy: num.nullable(),
  eval_runtime: num.nullable(),
  extra,
});

export const CheckpointEvent = z.strictObject({
  event: z.literal('checkpoint'),
  step: z.number().int(),
  path: z.string(),
});

export const ArtifactEvent = z.strictObject({
  event: z.literal('artifact'),
  kind: z.enum(['model', 'adapter', 'merged', 'tokenizer', 'generations', 'gguf']),
  path: z.string(),
});

export const ErrorEvent = z.strictObject({
  event: z.literal('error'),
  code: z.enum(['validation', 'cancelled', 'runtime']),
  message: z.string(),
});

export const TrackerEvent = z.strictObject({
  event: z.literal('tracker'),
  provider: z.enum(['mlflow', 'wandb']),
  run_id: z.string(),
  url: z.string(),
});

export const DoneEvent = z.strictObject({
  event: z.literal('done'),
  command: z.string(),
  elapsed_seconds: num,
});

export const CoreEvent = z.discriminatedUnion('event', [
  ProgressEvent,
  LogEvent,
  MetricsEvent,
  CheckpointEvent,
  ArtifactEvent,
  ErrorEvent,
  TrackerEvent,
  DoneEvent,
]);
export type CoreEvent = z.infer<typeof CoreEvent>;

/** Parses one stdout line of the core; throws on anything that is not exactly one known event. */
export function parseCoreEventLine(line: string): CoreEvent {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch (error) {
    throw new Error(`core event line is not JSON: ${(error as Error).message}`);
  }
  return CoreEvent.parse(data);
}
