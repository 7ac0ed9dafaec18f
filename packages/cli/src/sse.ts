// Server-sent events over fetch: a text/event-stream body as its messages, parsed by eventsource-parser. Used by
// a job's event stream (events.ts) and by streamed chat completions (chat.ts).
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';

export type { EventSourceMessage };

export function parseSse(body: ReadableStream<Uint8Array>): AsyncIterable<EventSourceMessage> {
  return body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()) as unknown as AsyncIterable<EventSourceMessage>;
}
