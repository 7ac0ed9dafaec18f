// Reading a job's server-sent events (GET /jobs/{id}/events) the way a client does, for tests that follow a job
// across restarts and workers.

export interface JobEvent {
  kind: string;
  data: { status?: string; step?: number; error?: string; message?: string };
}

/** Follows the stream and returns the first progress step after the job was queued for the `times`-th time (a
 *  resume, on whichever worker took it). */
export async function firstStepAfterQueued(trainingUrl: string, jobId: string, times: number, headers: Record<string, string> = {}): Promise<number> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 240_000);
  const res = await fetch(`${trainingUrl}/jobs/${jobId}/events`, { signal: controller.signal, headers });
  const decoder = new TextDecoder();
  let buffer = '';
  let queuedSeen = 0;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const kind = /event: (.*)/.exec(block)?.[1];
        const data = JSON.parse(/data: (.*)/.exec(block)?.[1] ?? '{}') as JobEvent['data'];
        if (kind === 'status' && data.status === 'queued') queuedSeen += 1;
        if (kind === 'progress' && queuedSeen >= times) return data.step!;
        if (kind === 'end') throw new Error(`the job ended before it was queued ${times} times and progressed: ${JSON.stringify(data)}`);
      }
    }
    throw new Error('the event stream ended before the job resumed');
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** The whole event log of a job that has ended (the stream then ends by itself), in order. */
export async function jobHistory(trainingUrl: string, jobId: string, headers: Record<string, string> = {}): Promise<JobEvent[]> {
  const text = await (await fetch(`${trainingUrl}/jobs/${jobId}/events`, { headers })).text();
  return text
    .split('\n\n')
    .filter((block) => block.includes('event: '))
    .map((block) => ({ kind: /event: (.*)/.exec(block)![1]!, data: JSON.parse(/data: (.*)/.exec(block)?.[1] ?? '{}') as JobEvent['data'] }));
}

/** The messages of a job's `log` events, in order. */
export const historyMessages = (events: readonly JobEvent[]): string[] => events.filter((e) => e.kind === 'log').map((e) => String(e.data.message));
