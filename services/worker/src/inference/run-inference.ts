// The infer queue's processor (POST /inference/batch): the request's model as local files on this worker, one
// generated text per conversation from the warm engine it asked for; the texts go back to the waiting API.
import type { Platform } from '@ftp/platform';
import type { InferPayload } from '@ftp/jobs';
import type { InferenceEngines } from './engines.ts';
import { resolveModel } from './model-files.ts';

export async function runInference(platform: Platform, engines: InferenceEngines, payload: InferPayload, signal: AbortSignal): Promise<{ results: string[] }> {
  const secrets = payload.secretsId ? await platform.secrets.open(payload.secretsId) : undefined;
  const model = await resolveModel(platform, payload.userId, payload.model, secrets, signal);
  return { results: await engines.generate(model.files, payload.conversations, payload.generation, signal) };
}
