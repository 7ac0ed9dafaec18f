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

/** What a command is doing, by a name programs read (a stage's words are for people and may change). */
export const CoreStage = z.enum(['loading_libraries', 'reading_data', 'loading_model', 'training', 'saving', 'evaluating', 'merging', 'writing_gguf', 'exporting_onnx', 'importing', 'loading_for_serving']);
export type CoreStage = z.infer<typeof CoreStage>;

export const LogEvent = z.strictObject({
  event: z.literal('log'),
  level: z.enum(['debug', 'info', 'warning', 'error']),
  message: z.string(),
  /** The stage this log announces or reports the time of; null for any other log. */
  stage: CoreStage.nullable().optional(),
});

export const MetricsEvent = z.strictObject({
  event: z.literal('metrics'),
  step: z.number().int(),
  eval_loss: num.nullable(),
  perplexity: num.nullable(),
  accuracy: num.nullable(),
  eval_runtime: num.nullable(),
  extra,
  /** The evaluation after training (per assistant token), not the trainer's evaluation of the same step. */
  final: z.boolean().optional(),
});

export const CheckpointEvent = z.strictObject({
  event: z.literal('checkpoint'),
  step: z.number().int(),
  path: z.string(),
});

export const ArtifactEvent = z.strictObject({
  event: z.literal('artifact'),
  kind: z.enum(['model', 'adapter', 'merged', 'tokenizer', 'generations', 'gguf', 'onnx', 'benchmark', 'sweep']),
  path: z.string(),
});

export const ErrorEvent = z.strictObject({
  event: z.literal('error'),
  code: z.enum(['validation', 'cancelled', 'runtime']),
  message: z.string(),
  /** serve: the request this error answers (null: the server itself, or a line that named no id). */
  id: z.string().nullable().optional(),
  /** serve, a cancelled generation: the tokens it had generated when it stopped. */
  generated_tokens: z.number().int().nonnegative().nullable().optional(),
  /** validation: the dotted path of the field at fault in the spec or request ("grader.source"), when one is. */
  field: z.string().nullable().optional(),
});

export const TrackerEvent = z.strictObject({
  event: z.literal('tracker'),
  provider: z.enum(['mlflow', 'wandb']),
  run_id: z.string(),
  url: z.string(),
});

/** What the training run will do, told before it runs (core/src/ftcore/train/preflight/ documents the report). */
export const PreflightEvent = z.strictObject({
  event: z.literal('preflight'),
  report: z.record(z.string(), z.unknown()),
  /** serve: the request this report answers (null from the preflight and train commands). */
  id: z.string().nullable().optional(),
});

export const DoneEvent = z.strictObject({
  event: z.literal('done'),
  command: z.string(),
  elapsed_seconds: num,
});

// serve: answers to requests, tagged with the request's id (core-server.ts).

export const ReadyEvent = z.strictObject({
  event: z.literal('ready'),
  pid: z.number().int(),
});

export const GeneratedEvent = z.strictObject({
  event: z.literal('generated'),
  id: z.string(),
  texts: z.array(z.string()),
  token_ids: z.array(z.array(z.number().int())),
  /** Seconds spent loading the model for this request: 0 when it was already loaded. */
  load_seconds: num,
  elapsed_seconds: num,
  /** Per conversation: `stop` (end of turn or a stop string) or `length` (max_new_tokens). Absent from older cores. */
  finish_reasons: z.array(z.enum(['stop', 'length'])).nullable().optional(),
  /** Per conversation: tokens of the prompt, chat template included. Absent from older cores. */
  prompt_tokens: z.array(z.number().int()).nullable().optional(),
});

const MetricNote = z.record(z.string(), z.string());

export const ScoredEvent = z.strictObject({
  event: z.literal('scored'),
  id: z.string(),
  /** The metrics asked for (the explicit list, or the task's suite); `scores` holds their sub-scores. */
  metrics: z.array(z.string()),
  scores: extra,
  /** {metric, error} per metric that could not be computed. */
  warnings: z.array(MetricNote),
  /** {metric, note} per score that needs explaining (METEOR's matching, BERTScore's encoder). */
  notes: z.array(MetricNote),
  elapsed_seconds: num,
});

export const GradedEvent = z.strictObject({
  event: z.literal('graded'),
  id: z.string(),
  /** Per output: its reward, its sub-graders' rewards (multi), and why it scored 0 when it could not be graded. */
  rewards: z.array(num),
  sub_rewards: z.array(extra),
  errors: z.array(z.string().nullable()),
  /** OpenAI's error flag of each error (invalid_variable_error, python_grader_runtime_error, …). */
  error_kinds: z.array(z.string().nullable()),
  elapsed_seconds: num,
});

/** tinker-session: the answer to one request (its id and op), what the op returned (Tinker's field names). */
export const TinkerResultEvent = z.strictObject({
  event: z.literal('tinker_result'),
  id: z.string(),
  op: z.string(),
  result: z.record(z.string(), z.unknown()),
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
  PreflightEvent,
  DoneEvent,
  ReadyEvent,
  GeneratedEvent,
  ScoredEvent,
  GradedEvent,
  TinkerResultEvent,
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
