// A request's lifetime as an AbortSignal, for the work done on its behalf (a generation on a worker): aborted when the
// client goes away (its connection closed) before the answer was sent in full, so that work stops instead of running
// on for nobody while other requests queue behind it. The response's 'close' is the one to watch: the request's own
// 'close' comes as soon as its body has been read.
import type { FastifyReply } from 'fastify';
import { ClientClosedRequest } from '../errors.ts';

export function requestLifetime(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  const gone = () => {
    if (!response.writableFinished) controller.abort(new ClientClosedRequest('the client closed the connection before the answer was sent'));
  };
  // A client that left while the route was still checking the request (before this was asked) is already gone.
  if (response.destroyed || reply.request.raw.socket?.destroyed) gone();
  else response.once('close', gone);
  return controller.signal;
}
