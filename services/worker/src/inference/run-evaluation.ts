// The evaluate queue's processor (POST /evaluation): rows of a processed dataset's test split (train when there
// is none, with a warning), the model's predictions for their prompts, scores and grades from the warm ML core, and the
// evaluation row that records it; the result goes back to the API process that waits for it.
import { invalidField, newId, NotFound, type Platform, type ProcessedDatasetRow } from '@ftp/platform';
import { numberedLines } from '@ftp/datasets';
import { plainConversation, promptAndReference } from '@ftp/jobs/training';
import type { EvaluatePayload } from '@ftp/jobs/queues';
import { namedGraders, type ChatMessage, type EvaluationResult, type Grader } from '@ftp/schema';
import type { InferenceEngines } from './engines.ts';
import { engineNews, resolveModel } from './model-files.ts';
import { measuredGeneration } from './generation-metrics.ts';

interface EvaluationRow {
  /** Line of the split file (0-based). */
  index: number;
  prompt: ChatMessage[];
  reference: string;
  /** What graders read as item: the row's other fields, and its reference. */
  item: Record<string, unknown>;
}

interface EvaluationData {
  split: string;
  rows: EvaluationRow[];
  warnings: string[];
}

/** A record's conversation: `messages` (language_modeling), or prompt + chosen answer (preference). */
function conversationOf(record: Record<string, unknown>): ChatMessage[] {
  if (Array.isArray(record.messages)) return record.messages as ChatMessage[];
  return [...((record.prompt as ChatMessage[] | undefined) ?? []), ...((record.chosen as ChatMessage[] | undefined) ?? [])];
}

/** The record's fields besides its conversation: a grader's {{item.<field>}}. */
function fieldsOf(record: Record<string, unknown>): Record<string, unknown> {
  const { messages: _m, prompt: _p, chosen: _c, rejected: _r, ...fields } = record;
  return fields;
}

export async function readEvaluationData(platform: Platform, dataset: ProcessedDatasetRow, maxSamples: number | undefined): Promise<EvaluationData> {
  const id = dataset.processed_dataset_id;
  const test = dataset.splits.find((s) => s.split_name === 'test');
  const split = test ?? dataset.splits.find((s) => s.split_name === 'train') ?? dataset.splits[0];
  if (!split) throw invalidField(['body', 'dataset_id'], `processed dataset ${id} has no splits`);
  const warnings: string[] = [];
  if (!test) warnings.push(`processed dataset ${id} has no test split; evaluated on ${split.split_name}, which the model may have trained on`);
  const limit = maxSamples ?? platform.config.MAX_EVAL_SAMPLES;

  const rows: EvaluationRow[] = [];
  let skipped = 0;
  let index = 0;
  for await (const { text } of numberedLines(await platform.blobs.get(split.blob_key))) {
    if (rows.length >= limit) break;
    if (text.trim() === '') continue;
    const record = JSON.parse(text) as Record<string, unknown>;
    const found = promptAndReference(conversationOf(record));
    if (found) rows.push({ index, ...found, item: { ...fieldsOf(record), reference: found.reference } });
    else skipped += 1;
    index += 1;
  }

  if (rows.length === 0) {
    throw invalidField(['body', 'dataset_id'], `processed dataset ${id} (${dataset.processing_mode}) has no rows with an assistant message to use as the reference`);
  }
  if (skipped > 0) warnings.push(`${skipped} rows of ${split.split_name} have no assistant message and were skipped`);
  if (maxSamples === undefined && split.num_rows - skipped > rows.length) {
    warnings.push(`evaluated the first ${rows.length} of ${split.num_rows} rows of ${split.split_name} (MAX_EVAL_SAMPLES); send max_samples to choose fewer`);
  }
  return { split: split.split_name, rows, warnings };
}

/** `scores` is flat (rouge1, bertscore_f1, bleu, …); the result groups them under the metric asked for. */
export function groupScores(metrics: readonly string[], scores: Record<string, number>): EvaluationResult['metrics'] {
  const grouped: EvaluationResult['metrics'] = {};
  for (const name of metrics) {
    if (name in scores) {
      grouped[name] = scores[name]!;
      continue;
    }
    const parts = Object.entries(scores).filter(([key]) => key.startsWith(name));
    if (parts.length > 0) grouped[name] = Object.fromEntries(parts.map(([key, value]) => [key.startsWith(`${name}_`) ? key.slice(name.length + 1) : key, value]));
  }
  return grouped;
}

export async function runEvaluation(platform: Platform, engines: InferenceEngines, payload: EvaluatePayload, signal: AbortSignal): Promise<EvaluationResult> {
  const { userId, request } = payload;
  const started = Date.now();
  const dataset = await platform.datasets.getProcessed(userId, request.dataset_id);
  if (!dataset) throw new NotFound('processed dataset', request.dataset_id);
  const data = await readEvaluationData(platform, dataset, request.max_samples);
  const secrets = payload.secretsId ? await platform.secrets.open(payload.secretsId) : undefined;
  const model = await resolveModel(platform, userId, request, secrets, signal);
  const { results: predictions } = await measuredGeneration(platform, 'evaluation', model.files.engine, () => engines.generate(
    model.files,
    data.rows.map((row) => plainConversation(row.prompt)),
    { max_new_tokens: request.max_new_tokens, temperature: request.temperature, top_p: request.top_p },
    signal,
    undefined,
    engineNews(platform, model, 'an evaluation'),
  ));
  // Metrics unless only graders were asked for (neither metrics, task_type nor graders: the general suite).
  const wantsMetrics = request.metrics !== undefined || request.task_type !== undefined || request.graders === undefined;
  const scored = wantsMetrics
    ? await engines.score(
        {
          predictions,
          references: data.rows.map((row) => row.reference),
          ...(request.metrics ? { metrics: request.metrics } : {}),
          ...(request.task_type ? { task_type: request.task_type } : {}),
        },
        signal,
      )
    : { metrics: [], scores: {}, warnings: [], notes: [] };
  const graded = await gradeAll(engines, userId, request.graders ?? [], predictions, data.rows, signal);
  const result: EvaluationResult = {
    metrics: { ...groupScores(scored.metrics, scored.scores), ...graded.means },
    num_samples: data.rows.length,
    dataset_id: dataset.processed_dataset_id,
    samples: data.rows.slice(0, request.num_sample_results).map((row, i) => ({
      input: row.prompt,
      prediction: predictions[i]!,
      reference: row.reference,
      sample_index: row.index,
      ...(graded.perSample[i] ? { grades: graded.perSample[i] } : {}),
    })),
    warnings: [...data.warnings, ...scored.warnings.map((w) => ({ metric: w.metric ?? 'unknown', error: w.error ?? 'failed' })), ...graded.warnings],
    notes: scored.notes.map((n) => ({ metric: n.metric ?? 'unknown', note: n.note ?? '' })),
  };
  await platform.evaluations.insert({
    evaluation_id: newId('eval'),
    user_id: userId,
    processed_dataset_id: dataset.processed_dataset_id,
    split: data.split,
    job_id: model.job?.job_id ?? null,
    model_source: request.model_source,
    base_model_id: model.baseModelId,
    use_fast_engine: request.use_fast_engine,
    request,
    metrics: result.metrics,
    num_samples: result.num_samples,
    samples: result.samples,
    warnings: result.warnings,
    elapsed_seconds: (Date.now() - started) / 1000,
  });
  return result;
}

/** Each grader's mean over the predictions, each prediction's scores, and a warning per grader that could not grade
 *  some of them (those score 0, as in training). */
async function gradeAll(engines: InferenceEngines, userId: string, graders: readonly Grader[], predictions: string[], rows: EvaluationRow[], signal: AbortSignal) {
  const means: Record<string, number> = {};
  const perSample: Array<Record<string, number>> = predictions.map(() => ({}));
  const warnings: Array<{ metric: string; error: string }> = [];
  for (const grader of graders) {
    const graded = await engines.grade({ grader: namedGraders(grader), outputs: predictions, items: rows.map((r) => r.item) }, userId, signal);
    means[grader.name] = graded.rewards.reduce((sum, r) => sum + r, 0) / Math.max(1, graded.rewards.length);
    graded.rewards.forEach((reward, i) => (perSample[i]![grader.name] = reward));
    const failed = graded.errors.filter((e): e is string => e !== null);
    if (failed.length > 0) warnings.push({ metric: grader.name, error: `${failed.length} of ${predictions.length} predictions could not be graded and scored 0, e.g. ${failed[0]}` });
  }
  return { means, perSample: graders.length > 0 ? perSample : [], warnings };
}
