// Server-sent events for /v1 answers that stream (chat completions, responses): the stream opens (headers sent) on its
// first event or comment, so a failure before any is an ordinary error answer and one after it an event in the stream.
import type { FastifyReply } from 'fastify';

export class EventStream {
  private opened = false;
  constructor(private readonly reply: FastifyReply) {}

  get started(): boolean {
    return this.opened;
  }

  /** An SSE comment: a line for people, which event-stream parsers (the SDKs') skip. */
  comment(text: string): void {
    this.open();
    this.reply.raw.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
  }

  /** One event: `data` as one line of JSON (or a literal such as [DONE]), named by `event` when given. */
  write(data: unknown, event?: string): void {
    this.open();
    const name = event ? `event: ${event}\n` : '';
    this.reply.raw.write(`${name}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.reply.raw.end();
  }

  private open(): void {
    if (!this.opened) {
      this.opened = true;
      this.reply.hijack();
      this.reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': String(this.reply.request.id) });
    }
  }
}
