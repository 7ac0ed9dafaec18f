// Work an API process hands to a worker and waits for (inference, evaluation, a training dry run): the route queues
// it (with the caller's hub_token sealed under a request id, never in the payload) and waits for the answer within
// a time limit — past it, 504 and the work is cancelled wherever it runs; so is work whose caller gives up first (its
// client went away: WorkRequestOptions.signal). No live worker serving the queue is a 503 that says how to start one.
import { GatewayTimeout, newId, ServiceUnavailable, type Platform, type QueueDefinition } from '@ftp/platform';

/** A time limit and what to tell the caller who exceeds it. */
export interface TimeLimit {
  ms: number;
  /** The setting that holds it (named in the 504). */
  setting: string;
  /** How to stay within it. */
  fix: string;
}

export function inferenceTimeLimit(platform: Platform): TimeLimit {
  return { ms: platform.config.INFERENCE_TIMEOUT_MS, setting: 'INFERENCE_TIMEOUT_MS', fix: 'send fewer conversations, samples or max_new_tokens, or raise the limit' };
}

/** Runs `work` with a signal that aborts when the limit passes (the race then rejects with a 504) or when `caller`
 *  aborts (work rejects with its reason, as the queue's request() does). */
export async function withTimeLimit<T>(limit: TimeLimit, what: string, work: (signal: AbortSignal) => Promise<T>, caller?: AbortSignal): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new GatewayTimeout(`${what} did not finish within ${limit.setting} (${limit.ms} ms); ${limit.fix}`);
      controller.abort(error);
      reject(error);
    }, limit.ms);
  });
  try {
    return await Promise.race([work(caller ? AbortSignal.any([controller.signal, caller]) : controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export interface WorkRequestOptions {
  /** Default: the inference time limit (INFERENCE_TIMEOUT_MS). */
  limit?: TimeLimit;
  /** Each report the worker makes while the caller waits (a streamed generation's deltas), in order. */
  onReport?: (data: unknown) => void;
  /** The caller's lifetime (requestLifetime of the HTTP request it answers): aborted, the work is cancelled wherever
   *  it waits or runs, and this rejects with its reason. */
  signal?: AbortSignal;
}

export async function requestFromWorker<P extends { secretsId?: string | undefined }, R>(
  platform: Platform,
  queue: QueueDefinition<P, R>,
  payload: P,
  hubToken: string | undefined,
  what: string,
  options: WorkRequestOptions = {},
): Promise<R> {
  if (!(await platform.workers.anyLiveServing(queue.name, platform.config.WORKER_TIMEOUT_S))) {
    throw new ServiceUnavailable('worker', `no live worker serves the ${queue.name} queue; start one (pnpm start:worker, with ${queue.name} in WORKER_QUEUES)`);
  }
  const secretsId = hubToken ? newId('req') : undefined;
  if (secretsId) await platform.secrets.put(secretsId, { hubToken });
  const onReport = options.onReport ? { onReport: options.onReport } : {};
  try {
    const work = (signal: AbortSignal) => platform.queue.request(queue, secretsId ? { ...payload, secretsId } : payload, { signal, ...onReport });
    return await withTimeLimit(options.limit ?? inferenceTimeLimit(platform), what, work, options.signal);
  } finally {
    if (secretsId) await platform.secrets.drop(secretsId);
  }
}
