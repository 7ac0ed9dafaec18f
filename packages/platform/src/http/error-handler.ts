// The one place where thrown errors become HTTP error bodies (spec/decisions.md, Errors):
// 422 → {detail:[{loc,msg,type}]}, other client errors → {detail:"…"}, 500 → {detail:"internal error",request_id}.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { validationDetail } from '@ftp/schema';
import { AppError, UnprocessableEntity } from '../errors.ts';
import { BlobNotFound, InvalidBlobKey } from '../blobs/blob-store.ts';
import { locationOf, RequestValidationError } from './validation.ts';

/** Fastify's own client-error codes, with the sentence a client can act on. */
const FASTIFY_CLIENT_ERRORS: Record<string, (err: FastifyError) => [number, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: (err) => [400, `the request body is not valid JSON: ${err.message.replace(/^.*?JSON[^:]*: /, '')}`],
  FST_ERR_CTP_EMPTY_JSON_BODY: () => [400, 'the request body is empty; send a JSON object'],
  FST_ERR_CTP_BODY_TOO_LARGE: () => [413, 'the request body is larger than this endpoint accepts'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (err) => [415, `${err.message}; send application/json (or multipart/form-data for uploads)`],
  FST_REQ_FILE_TOO_LARGE: () => [413, 'the uploaded file is larger than MAX_UPLOAD_BYTES'],
  FST_INVALID_MULTIPART_CONTENT_TYPE: () => [400, 'the request is not multipart/form-data; send the file as a `file` part'],
};

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof RequestValidationError) {
      return reply.code(422).send({ detail: validationDetail(locationOf(err.validationContext), err.issues, err.input) });
    }
    if (err instanceof UnprocessableEntity) {
      return reply.code(422).send({ detail: err.issues });
    }
    if (err instanceof AppError) {
      if (err.statusCode >= 500) request.log.warn({ err }, 'dependency failure');
      return reply.code(err.statusCode).send({ detail: err.message });
    }
    if (err instanceof BlobNotFound) {
      return reply.code(404).send({ detail: 'the stored file behind this resource is missing' });
    }
    if (err instanceof InvalidBlobKey) {
      return reply.code(400).send({ detail: err.message });
    }
    const known = err.code ? FASTIFY_CLIENT_ERRORS[err.code] : undefined;
    if (known) {
      const [status, detail] = known(err);
      return reply.code(status).send({ detail });
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ detail: err.message });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ detail: 'internal error', request_id: request.id });
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ detail: `no endpoint ${request.method} ${request.url.split('?')[0]}` }),
  );
}
