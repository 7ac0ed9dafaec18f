// What a generation feeds the metrics: a streamed answer counts one time to first token whether or not it had text
// (an answer that its first token ends is streamed as its last chunk alone), a batch answer none.
import { describe, expect, it } from 'vitest';
import { openTestPlatform } from '@ftp/platform/testing';
import type { InferResult, StreamDelta } from '@ftp/jobs/queues';
import { measuredGeneration } from '../src/inference/generation-metrics.ts';

const answer = (text: string): InferResult => ({ results: [text], details: [{ completion_tokens: text ? 2 : 1, prompt_tokens: 3, finish_reason: 'stop' }] });

async function firstTokens(platform: Awaited<ReturnType<typeof openTestPlatform>>): Promise<number> {
  const text = await platform.metrics.registry.getSingleMetricAsString('ftp_time_to_first_token_seconds');
  return Number(/ftp_time_to_first_token_seconds_count\{[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
}

describe('measuredGeneration', () => {
  it('counts one time to first token per streamed answer, with text or without, and none for a batch', async () => {
    const platform = await openTestPlatform();
    try {
      const seen: string[] = [];
      await measuredGeneration(platform, 'inference', 'transformers', async (onText) => {
        onText?.({ index: 0, text: 'Hel' });
        onText?.({ index: 0, text: 'lo' });
        return answer('Hello');
      }, (delta: StreamDelta) => seen.push(delta.text));
      expect(seen).toEqual(['Hel', 'lo']);
      expect(await firstTokens(platform)).toBe(1);
      await measuredGeneration(platform, 'inference', 'transformers', async () => answer(''), () => {});
      expect(await firstTokens(platform)).toBe(2);
      await measuredGeneration(platform, 'inference', 'transformers', async () => answer('batch'));
      expect(await firstTokens(platform)).toBe(2);
    } finally {
      await platform.close();
    }
  });
});
