// Every queue's name, payload and (for work that answers) result, defined once: API processes produce, workers
// consume, both import this. Payloads carry ids or bounded request bodies; a secret travels as the id of its
// sealed row (`secretsId`), never in clear. Each queue is its own lane: a long training job never holds up a
// batch inference call on the same worker.
import { z } from 'zod';
import { defineQueue, type WorkerLane } from '@ftp/platform';
import { EvaluationFields, EvaluationResult, ModelSource, PlainMessage, PreflightReport, StoredComparisonRequest } from '@ftp/schema';

const Id = z.string().min(1);

export const trainingQueue = defineQueue('train', z.object({ jobId: Id }));
export const exportQueue = defineQueue('export', z.object({ exportId: Id }));
/** A processed dataset augmented with a language model (its llm_api_key sealed under the dataset's id). Each waits on
 *  the service, not the machine: a few at once. */
export const augmentQueue = defineQueue('augment', z.object({ processedDatasetId: Id }), { concurrency: 2 });

/** A batch of /v1 requests (/v1/batches): its lines answered through the warm engines, one batch at a time per worker
 *  (its lines are batched inside it). */
export const batchQueue = defineQueue('batch', z.object({ batchId: Id }), { concurrency: 1 });

/** An evaluation with benchmarks (POST /evaluations; its hub_token sealed under its id). One at a time per worker: a
 *  benchmark keeps the model busy for minutes to hours, and its own batches use the device. */
export const benchmarkQueue = defineQueue('benchmark', z.object({ evaluationId: Id }), { concurrency: 1 });

/** A Tinker training run (services/tinker): held in the worker's memory, its model and optimizer in a core process,
 *  until it goes idle (TINKER_IDLE_S) or its session ends. A few at once per worker: a loop that loads a saved state
 *  into a second training client while the first lives needs both held. */
export const sessionQueue = defineQueue('session', z.object({ runId: Id }), { concurrency: 4 });

/** A sweep (POST /sweeps): its holder asks the study for trials, submits them as training jobs, reports their
 *  evaluations to the pruner and tells the study how each ended. It mostly waits on its trials: several per worker. */
export const sweepQueue = defineQueue('sweep', z.object({ sweepId: Id }), { concurrency: 4 });

/** The model a request runs: a job's (or a Tinker run's) adapter or merged model, or a base model alone. */
export const ModelChoice = z.object({
  model_source: ModelSource,
  job_id: Id.optional(),
  /** A stored checkpoint of the job instead of its final model. */
  checkpoint_step: z.number().int().positive().optional(),
  base_model_id: z.string().min(1).optional(),
  /** Sampler weights a Tinker run saved (model `tinker:<run id>:<name>`; job_id is then the run's id): an adapter over
   *  the run's base. */
  checkpoint_name: z.string().min(1).optional(),
  use_fast_engine: z.boolean(),
});
export type ModelChoice = z.infer<typeof ModelChoice>;

/** What a generation must be: free text, any JSON object, or JSON that matches a schema (constrained decoding on
 *  the fast engine; the transformers engine cannot constrain and refuses json). */
export const ResponseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }),
]);
export type ResponseFormat = z.infer<typeof ResponseFormat>;

/** Below this a temperature picks the most likely token anyway, and dividing the logits by it overflows (1e-300 made
 *  the sampler's probabilities inf/nan, a 503): both engines decode greedily there. The OpenAPI documents say so. */
export const MIN_SAMPLING_TEMPERATURE = 1e-4;

/** The temperature an engine is given: 0 (greedy) below MIN_SAMPLING_TEMPERATURE. */
export function samplingTemperature(temperature: number): number {
  return temperature < MIN_SAMPLING_TEMPERATURE ? 0 : temperature;
}

export const GenerationSettings = z.object({
  max_new_tokens: z.number().int().min(1),
  temperature: z.number().min(0),
  top_p: z.number().gt(0).max(1).optional(),
  /** Sampling seed of the first conversation; the i-th uses seed + i (so n copies of one prompt differ). */
  seed: z.number().int().optional(),
  /** Generation ends before the first of these strings; the text returned does not contain it. */
  stop: z.array(z.string().min(1)).max(4).optional(),
  response_format: ResponseFormat.optional(),
  /** OpenAI tool definitions the conversations are rendered with (the model's chat template writes them). */
  tools: z.array(z.record(z.string(), z.unknown())).optional(),
  /** tool_choice required or a named function: every answer is `prefix`, JSON of `schema` (the call), `suffix`, in the
   *  family's call format; constrained on both engines (llama.cpp grammar, lm-format-enforcer on transformers). */
  forced_call: z.object({ schema: z.record(z.string(), z.unknown()), prefix: z.string(), suffix: z.string() }).optional(),
  /** Report text as it is generated (StreamDelta through the queue's report channel) as well as the result. */
  stream: z.boolean().optional(),
});
export type GenerationSettings = z.infer<typeof GenerationSettings>;

/** How one generation ended and what it cost: `stop` = end of turn or a stop string, `length` = max_new_tokens or
 *  the context ran out. Tokens are counted by the engine's own tokenizer. */
export const GenerationDetail = z.object({
  finish_reason: z.enum(['stop', 'length']),
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
});
export type GenerationDetail = z.infer<typeof GenerationDetail>;

/** A piece of conversation `index`'s text, reported while it is generated (settings.stream). */
export const StreamDelta = z.object({ index: z.number().int().min(0), text: z.string() });
export type StreamDelta = z.infer<typeof StreamDelta>;

/** What the worker does before it can answer (the model downloaded, converted to GGUF, loaded), reported while a
 *  first use waits for it: a streamed chat shows it before its first token. */
export const PreparingReport = z.object({ preparing: z.string() });
export type PreparingReport = z.infer<typeof PreparingReport>;


/** The infer queue's answer: one text per conversation, in order, and how each ended. */
export const InferResult = z.object({ results: z.array(z.string()), details: z.array(GenerationDetail) });
export type InferResult = z.infer<typeof InferResult>;

const Requester = {
  userId: Id,
  /** Owner id of the request's sealed secrets (hub_token), when it sent any. */
  secretsId: Id.optional(),
};

export const inferQueue = defineQueue(
  'infer',
  z.object({
    ...Requester,
    model: ModelChoice,
    conversations: z.array(z.array(PlainMessage).min(1)).min(1),
    generation: GenerationSettings,
  }),
  // Several calls pipeline into the warm engines; more would only queue inside them.
  { result: InferResult, concurrency: 4 },
);
export type InferPayload = z.infer<typeof inferQueue.payload>;

/** One answer graded (POST /v1/fine_tuning/alpha/graders/run and /validate, which grades nothing): on the evaluate
 *  lane, since grading is what evaluation does too. */
export const GradeWork = z.object({
  grader: z.record(z.string(), z.unknown()),
  outputs: z.array(z.string()),
  items: z.array(z.record(z.string(), z.unknown())),
});
export const GradeResult = z.object({
  rewards: z.array(z.number()),
  sub_rewards: z.array(z.record(z.string(), z.number())),
  errors: z.array(z.string().nullable()),
  error_kinds: z.array(z.string().nullable()),
  elapsed_seconds: z.number(),
});
export type GradeResult = z.infer<typeof GradeResult>;

const EvaluationWork = z.object({ ...Requester, request: EvaluationFields.omit({ hub_token: true }) });
/** POST /comparisons: two models' answers and the judge's verdicts, on the evaluate lane (it is an evaluation). */
const ComparisonWork = z.object({ ...Requester, compare: StoredComparisonRequest });
export const evaluateQueue = defineQueue(
  'evaluate',
  z.union([EvaluationWork, z.object({ ...Requester, grade: GradeWork }), ComparisonWork]),
  // A comparison's answer is the id of the row its worker wrote (its verdicts can be long; the API reads them there).
  { result: z.union([EvaluationResult, GradeResult, z.object({ comparison_id: Id })]), concurrency: 2 },
);
export type EvaluatePayload = z.infer<typeof EvaluationWork>;
export type ComparisonPayload = z.infer<typeof ComparisonWork>;
export type GradePayload = z.infer<typeof GradeWork>;

/** POST /train with dry_run: the request as it would be stored (secrets cut out), checked and measured on a worker;
 *  with `check`, a submit's check (#56): the warm core's report only (no throughput probe, no sampled warnings). */
export const preflightQueue = defineQueue(
  'preflight',
  z.object({
    ...Requester,
    processed_dataset_id: Id,
    training_config: z.record(z.string(), z.unknown()),
    check: z.boolean().optional(),
  }),
  // Tokenizing is quick but a throughput probe trains a few steps: one at a time, so probes do not slow each other.
  { result: PreflightReport, concurrency: 1 },
);
export type PreflightPayload = z.infer<typeof preflightQueue.payload>;

/** The lanes a worker serves by default (WORKER_QUEUES unset), by name. */
/** Its keys are WORKER_LANES (@ftp/platform's config reads WORKER_QUEUES against that list): the compiler holds the two
 *  together, a lane missing from either is an error. */
export const QUEUES = { train: trainingQueue, export: exportQueue, infer: inferQueue, evaluate: evaluateQueue, preflight: preflightQueue, augment: augmentQueue, batch: batchQueue, benchmark: benchmarkQueue, session: sessionQueue, sweep: sweepQueue } as const satisfies Record<WorkerLane, unknown>;
export type QueueName = keyof typeof QUEUES;
export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];
