// The evaluate lane's comparisons (POST /comparisons): the prompts of a processed dataset's test split (train when
// there is none, with a warning), both models' answers from this worker's engines, the judge's verdicts in both orders
// (judgePairs: a judge of this stack on the infer queue, another at LLM_API_BASE), and the row that records it; the
// API process reads that row once told its id.
import { newId, NotFound, type Platform } from '@ftp/platform';
import { judgePairs, plainConversation } from '@ftp/jobs/training';
import type { ComparisonPayload } from '@ftp/jobs/queues';
import type { ComparedModel } from '@ftp/schema';
import type { InferenceEngines } from './engines.ts';
import { engineNews, resolveModel } from './model-files.ts';
import { measuredGeneration } from './generation-metrics.ts';
import { readEvaluationData } from './run-evaluation.ts';

export async function runComparison(platform: Platform, engines: InferenceEngines, payload: ComparisonPayload, signal: AbortSignal): Promise<{ comparison_id: string }> {
  const { userId, compare: request } = payload;
  const started = Date.now();
  const dataset = await platform.datasets.getProcessed(userId, request.dataset_id);
  if (!dataset) throw new NotFound('processed dataset', request.dataset_id);
  const data = await readEvaluationData(platform, dataset, request.max_samples);
  const secrets = payload.secretsId ? await platform.secrets.open(payload.secretsId) : undefined;
  const prompts = data.rows.map((row) => plainConversation(row.prompt));
  const answersOf = async (choice: ComparedModel) => {
    const model = await resolveModel(platform, userId, choice, secrets, signal);
    const settings = { max_new_tokens: request.max_new_tokens, temperature: request.temperature };
    const generated = await measuredGeneration(platform, 'evaluation', model.files.engine, () =>
      engines.generate(model.files, prompts, settings, signal, undefined, engineNews(platform, model, 'a comparison')));
    return { answers: generated.results, job: model.job?.job_id ?? model.tinker?.run.run_id ?? null };
  };
  const a = await answersOf(request.model_a);
  const b = await answersOf(request.model_b);
  const judged = await judgePairs(platform, userId, request.judge, data.rows, { a: a.answers, b: b.answers }, signal);
  const comparisonId = newId('cmp');
  await platform.comparisons.insert({
    comparison_id: comparisonId,
    user_id: userId,
    processed_dataset_id: dataset.processed_dataset_id,
    job_a: a.job,
    job_b: b.job,
    request,
    result: { split: data.split, ...judged, warnings: data.warnings },
    elapsed_seconds: (Date.now() - started) / 1000,
  });
  return { comparison_id: comparisonId };
}
