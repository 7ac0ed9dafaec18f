// INFERENCE_TIMEOUT_MS: a request that waits on a model longer than this answers 504, and the work it started
// (a model build, a generation in either engine) is told to stop through the signal.
import { GatewayTimeout } from '@ftp/platform';

export async function withTimeLimit<T>(limitMs: number, what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new GatewayTimeout(
        `${what} did not finish within INFERENCE_TIMEOUT_MS (${limitMs} ms); send fewer conversations, samples or max_new_tokens, or raise the limit`,
      );
      controller.abort(error);
      reject(error);
    }, limitMs);
  });
  try {
    return await Promise.race([work(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}
