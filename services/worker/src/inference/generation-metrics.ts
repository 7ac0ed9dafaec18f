// What a worker's generation feeds its metrics (ftp_generation_duration_seconds, ftp_generated_tokens_total,
// ftp_time_to_first_token_seconds), by kind of work and engine: nothing of the request itself.
import type { Platform } from '@ftp/platform';
import type { InferResult, StreamDelta } from '@ftp/jobs/queues';

export type GenerationKind = 'inference' | 'evaluation';

/** Runs `generate` (its texts streamed through the `onText` it is given, when `onText` is set), timed. */
export async function measuredGeneration(
  platform: Platform,
  kind: GenerationKind,
  engine: string,
  generate: (onText?: (delta: StreamDelta) => void) => Promise<InferResult>,
  onText?: (delta: StreamDelta) => void,
): Promise<InferResult> {
  const { metrics } = platform;
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  let first = true;
  const timedText = onText && ((delta: StreamDelta) => {
    if (first) metrics.timeToFirstToken.observe({ engine }, seconds());
    first = false;
    onText(delta);
  });
  const result = await generate(timedText);
  // A streamed answer whose first token ended it (no text) reached its client with the last chunk: that was its first.
  if (timedText && first) metrics.timeToFirstToken.observe({ engine }, seconds());
  metrics.generationDuration.observe({ kind, engine }, seconds());
  metrics.generatedTokens.inc({ kind, engine }, result.details.reduce((sum, detail) => sum + detail.completion_tokens, 0));
  return result;
}
