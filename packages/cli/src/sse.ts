// Server-sent events over fetch: a text/event-stream body as its messages, parsed by eventsource-parser. Used by
// a job's event stream (events.ts) and by streamed chat completions (chat.ts).
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';

export type { EventSourceMessage };

/** `onComment` gets the stream's comment lines (`: …`), which carry no event: a streamed chat's preparation news. */
export function parseSse(body: ReadableStream<Uint8Array>, onComment?: (comment: string) => void): AsyncIterable<EventSourceMessage> {
  const parser = new EventSourceParserStream(onComment ? { onComment: (comment) => onComment(comment.trim()) } : {});
  return body.pipeThrough(new TextDecoderStream()).pipeThrough(parser) as unknown as AsyncIterable<EventSourceMessage>;
}
