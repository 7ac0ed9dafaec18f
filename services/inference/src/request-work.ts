// Inference and evaluation run on workers: the route queues the work (with the caller's hub_token sealed under a
// request id, never in the payload) and waits for the answer within INFERENCE_TIMEOUT_MS — past it, 504 and the
// work is cancelled wherever it runs. No live worker serving the queue is a 503 that says how to start one.
import { newId, ServiceUnavailable, type Platform, type QueueDefinition } from '@ftp/platform';
import { withTimeLimit } from './time-limit.ts';

export async function requestFromWorker<P extends { secretsId?: string | undefined }, R>(
  platform: Platform,
  queue: QueueDefinition<P, R>,
  payload: P,
  hubToken: string | undefined,
  what: string,
): Promise<R> {
  if (!(await platform.workers.anyLiveServing(queue.name, platform.config.WORKER_TIMEOUT_S))) {
    throw new ServiceUnavailable('worker', `no live worker serves the ${queue.name} queue; start one (pnpm start:worker, with ${queue.name} in WORKER_QUEUES)`);
  }
  const secretsId = hubToken ? newId('req') : undefined;
  if (secretsId) await platform.secrets.put(secretsId, { hubToken });
  try {
    return await withTimeLimit(platform.config.INFERENCE_TIMEOUT_MS, what, (signal) =>
      platform.queue.request(queue, secretsId ? { ...payload, secretsId } : payload, { signal }));
  } finally {
    if (secretsId) await platform.secrets.drop(secretsId);
  }
}
