// A resource's event log (db/event-log.ts: a training job's, an evaluation's) as server-sent events: each event named by
// its kind with its sequence number as id, followed live while the resource runs, a comment when nothing was sent for a
// while, and at the end an `end` event carrying the resource as it finished. The log is rows in the database, so this
// works whichever process or machine does the work.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EventLogRow } from '../db/event-log.ts';

const POLL_MS = 500;
/** A comment this often when nothing else is sent, so proxies and clients with idle timeouts keep the stream. */
const HEARTBEAT_MS = 15_000;

export interface StreamedLog<Current> {
  /** The log's events after sequence number `afterSeq`, in order. */
  events(afterSeq: number): Promise<EventLogRow[]>;
  /** The resource now; undefined once it is deleted. */
  current(): Promise<Current | undefined>;
  /** Whether it still runs (the stream follows it). */
  running(current: Current): boolean;
  /** The `end` event's data: the resource as it finished, or what says it was deleted. */
  end(current: Current | undefined): Promise<unknown> | unknown;
}

function send(res: ServerResponse, event: string, data: unknown, id?: number): void {
  res.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** Streams `log` on `res` until the resource stops running (or is deleted) or the client goes away. */
export async function streamEventLog<Current>(log: StreamedLog<Current>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  let closed = false;
  req.on('close', () => (closed = true));
  // A reconnecting client says where it stopped.
  let lastSeq = Number(req.headers['last-event-id'] ?? 0) || 0;
  let lastWrite = Date.now();
  while (!closed) {
    const current = await log.current();
    for (const event of await log.events(lastSeq)) {
      send(res, event.kind, { ...event.data, created_at: new Date(event.created_at).toISOString() }, event.seq);
      lastSeq = event.seq;
      lastWrite = Date.now();
    }
    if (Date.now() - lastWrite >= HEARTBEAT_MS) {
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
    if (!current || !log.running(current)) {
      send(res, 'end', await log.end(current));
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  res.end();
}
