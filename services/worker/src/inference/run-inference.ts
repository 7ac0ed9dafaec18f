// The infer queue's processor (POST /inference/batch, POST /v1/chat/completions): the request's model as local files
// on this worker, one generated text per conversation from the warm engine it asked for, with how each ended; the
// answer goes back to the waiting API, and with settings.stream the text goes there as it is generated too; so does
// what the worker prepares first on a model's first use (PreparingReport), which a streamed chat shows.
import type { Platform } from '@ftp/platform';
import type { InferPayload, InferResult, PreparingReport, StreamDelta } from '@ftp/jobs/queues';
import type { InferenceEngines } from './engines.ts';
import { engineNews, resolveModel } from './model-files.ts';
import { DeltaBatcher } from './stream-deltas.ts';
import { measuredGeneration } from './generation-metrics.ts';

export async function runInference(
  platform: Platform,
  engines: InferenceEngines,
  payload: InferPayload,
  signal: AbortSignal,
  report?: (data: StreamDelta | PreparingReport) => void,
): Promise<InferResult> {
  const secrets = payload.secretsId ? await platform.secrets.open(payload.secretsId) : undefined;
  const preparing = report ? (message: string) => report({ preparing: message }) : undefined;
  const model = await resolveModel(platform, payload.userId, payload.model, secrets, signal, preparing);
  const stream = payload.generation.stream && report ? new DeltaBatcher(report) : undefined;
  try {
    return await measuredGeneration(platform, 'inference', model.files.engine, (onText) =>
      engines.generate(model.files, payload.conversations, payload.generation, signal, onText, engineNews(platform, model, 'a chat or batch inference', preparing)), stream?.add);
  } finally {
    stream?.flush(); // before the answer: the queue delivers no report after it
  }
}
