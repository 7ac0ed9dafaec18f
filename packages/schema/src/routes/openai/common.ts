// What the /v1 route contracts share: every error is OpenAI's body (OpenAiError), described per status; `common` holds the
// statuses any route may answer.
import { OpenAiError } from '../../openai/common.ts';

export const error = (why: string) => OpenAiError.describe(why);
export const common = {
  401: error('The bearer token is missing or invalid'),
  500: error('Internal error; the message carries the request id'),
  503: error('A dependency (database, storage, queue, or a worker for the queue) is unavailable; the message names it'),
} as const;
export const invalid = error('The request is invalid; param names the field');
export const notFound = (what: string) => error(`No ${what} with this id belongs to the caller`);
