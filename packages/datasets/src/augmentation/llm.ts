// The language-model service the LLM augmentation methods call: any OpenAI-compatible chat API at LLM_API_BASE (model
// LLM_MODEL), through the official `openai` client, which retries 429 and 5xx answers with backoff (honouring
// Retry-After) and limits each request's time. On top: at most `concurrency` requests at once, and one deadline for
// the whole run. Answers are asked for as JSON through `response_format` (a JSON schema made from a zod schema) and
// validated with the same schema: an answer that does not parse or validate is a bad generation (dropped and counted
// by the caller); a service that keeps failing is LlmUnavailable (the caller fails the dataset).
import OpenAI from 'openai';
import pLimit from 'p-limit';
import { z } from 'zod';

export class LlmUnavailable extends Error {
  override readonly name = 'LlmUnavailable';
}

export interface LlmSettings {
  /** LLM_API_BASE: the API root the OpenAI SDK takes as baseURL (…/v1). */
  apiBase: string;
  /** LLM_MODEL */
  model: string;
  /** augmentation_config.llm_api_key; used for the requests only, never stored or logged. */
  apiKey: string;
  concurrency?: number;
  /** Retries of one request on 429, 5xx, timeouts and lost connections (the SDK's backoff: 0.5 s doubling to 8 s). */
  maxRetries?: number;
  requestTimeoutMs?: number;
  /** The whole run; past it every request fails with LlmUnavailable. */
  deadlineMs?: number;
  /** Aborts the requests in flight and refuses new ones (the worker stops, the dataset was deleted). */
  signal?: AbortSignal;
}

export type LlmMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export class LlmClient {
  private readonly client: OpenAI;
  private readonly limit: ReturnType<typeof pLimit>;
  private readonly deadline: number;

  constructor(private readonly settings: LlmSettings) {
    this.client = new OpenAI({
      baseURL: settings.apiBase,
      apiKey: settings.apiKey,
      maxRetries: settings.maxRetries ?? 4,
      timeout: settings.requestTimeoutMs ?? 120_000,
    });
    this.limit = pLimit(settings.concurrency ?? 4);
    this.deadline = Date.now() + (settings.deadlineMs ?? 3_600_000);
  }

  /** One answer of `schema`'s shape, or undefined when the model's text is not JSON of that shape. `seed` asks the
   *  service for a repeatable sample. With `{ ask, accept }` the service is asked for `ask` (e.g. with length bounds
   *  that only steer decoding) and the answer is checked against `accept`. */
  json<T>(name: string, schema: z.ZodType<T> | { ask: z.ZodType; accept: z.ZodType<T> }, messages: LlmMessage[], temperature = 0.7, seed?: number): Promise<T | undefined> {
    const { ask, accept } = schema instanceof z.ZodType ? { ask: schema, accept: schema } : schema;
    return this.limit(async () => {
      this.settings.signal?.throwIfAborted();
      const left = this.deadline - Date.now();
      if (left <= 0) throw new LlmUnavailable(`the language-model service at ${this.settings.apiBase} did not finish within the time limit`);
      let content: string | null | undefined;
      try {
        const completion = await this.client.chat.completions.create(
          {
            model: this.settings.model,
            messages,
            temperature,
            ...(seed === undefined ? {} : { seed }),
            response_format: { type: 'json_schema', json_schema: { name, schema: jsonSchemaOf(ask), strict: true } },
          },
          { timeout: Math.min(left, this.settings.requestTimeoutMs ?? 120_000), ...(this.settings.signal ? { signal: this.settings.signal } : {}) },
        );
        content = completion.choices[0]?.message.content;
      } catch (err) {
        if (this.settings.signal?.aborted) throw this.settings.signal.reason;
        throw new LlmUnavailable(describeFailure(this.settings.apiBase, err), { cause: err });
      }
      if (!content) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(content);
      } catch {
        return undefined;
      }
      const result = accept.safeParse(parsed);
      return result.success ? result.data : undefined;
    });
  }
}

/** The JSON schema `response_format` carries: draft 2020-12 without the $schema key some servers refuse. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return rest;
}

/** What went wrong, for the dataset's error: the status and the service's own message, never the key. */
function describeFailure(apiBase: string, err: unknown): string {
  if (err instanceof OpenAI.APIError && err.status !== undefined) {
    const hint = err.status === 401 || err.status === 403 ? '; check llm_api_key' : err.status === 404 ? '; check LLM_MODEL and LLM_API_BASE' : '';
    return `the language-model service at ${apiBase} answered HTTP ${err.status} (${err.message})${hint}`;
  }
  return `the language-model service at ${apiBase} is unreachable (${(err as Error).message}); check LLM_API_BASE`;
}
