// Models the services can run: base models in the model store and the caller's fine-tuned ones (GET /v1/models).
import { api } from './client.ts';

export interface ModelEntry {
  id: string;
  owned_by: string;
}

export async function listModels(signal?: AbortSignal): Promise<{ bases: string[]; tuned: string[] }> {
  const { data } = await api<{ data: ModelEntry[] }>('openai', '/v1/models', signal ? { signal } : {});
  return { bases: data.filter((m) => m.owned_by === 'system').map((m) => m.id), tuned: data.filter((m) => m.owned_by !== 'system').map((m) => m.id) };
}

/** The job id at the end of a fine-tuned model's name (ft:<base>:<suffix>:<job id>). */
export const jobIdOf = (model: string): string | undefined => (model.startsWith('ft:') ? model.split(':').at(-1) : undefined);
