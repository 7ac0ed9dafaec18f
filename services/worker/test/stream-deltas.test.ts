// Streamed text is reported at once, then at most once an interval, each conversation's pieces joined.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import type { StreamDelta } from '@ftp/jobs/queues';
import { DeltaBatcher } from '../src/inference/stream-deltas.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('sends the first piece at once, then what came in each interval as one delta per conversation', () => {
  const sent: StreamDelta[] = [];
  const batcher = new DeltaBatcher((delta) => sent.push(delta), 75);
  batcher.add({ index: 0, text: 'He' });
  expect(sent).toEqual([{ index: 0, text: 'He' }]);
  for (const [index, text] of [[0, 'l'], [1, 'Bon'], [0, 'lo'], [1, 'jour'], [2, '']] as const) batcher.add({ index, text });
  vi.advanceTimersByTime(74);
  expect(sent).toHaveLength(1);
  vi.advanceTimersByTime(1);
  expect(sent.slice(1)).toEqual([{ index: 0, text: 'llo' }, { index: 1, text: 'Bonjour' }]);
  batcher.add({ index: 1, text: '!' });
  batcher.flush(); // the generation ended: no waiting for the interval
  expect(sent.slice(3)).toEqual([{ index: 1, text: '!' }]);
  vi.advanceTimersByTime(1000);
  expect(sent).toHaveLength(4);
});
