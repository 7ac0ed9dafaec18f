// The judge relay: a loopback OpenAI-compatible chat completions endpoint that a core asks when a score_model grader
// names its judge (core/src/ftcore/evaluation/graders.py, Judge). One relay serves one user's work (a training job, a grader run,
// an evaluation) with a one-time bearer token: a judge that is one of this stack's models (a base model, the user's
// fine-tuned model or checkpoint) runs on the infer queue with that user's rights, as a /v1 chat would; any other
// model is passed on to LLM_API_BASE; a model the user may not use is OpenAI's 404. Nothing of it is reachable from
// outside the machine, and no key of the user's travels.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ModelNotFound, type Platform } from '@ftp/platform';
import { inferQueue, requestFromWorker, type GenerationSettings } from '@ftp/jobs/queues';
import type { PlainMessage } from '@ftp/schema';
import { forwardToJudge, judgeModels, routeJudge, type JudgeRequest } from '@ftp/jobs/training';

export interface JudgeRelay {
  /** The OpenAI-compatible API root the core posts /chat/completions to. */
  url: string;
  token: string;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 4 * 2 ** 20;

/** `work` with a relay for `userId` when `graders` ask a judge (its url and token, and the relay closed after). */
export async function withJudgeRelay<T>(platform: Platform, userId: string, graders: unknown[], work: (relay: JudgeRelay | undefined) => Promise<T>): Promise<T> {
  if (graders.flatMap(judgeModels).length === 0) return work(undefined);
  const relay = await startJudgeRelay(platform, userId);
  try {
    return await work(relay);
  } finally {
    await relay.close();
  }
}

export async function startJudgeRelay(platform: Platform, userId: string): Promise<JudgeRelay> {
  const token = randomBytes(24).toString('base64url');
  const server = http.createServer((req, res) => {
    void answer(platform, userId, token, req).then(
      ({ status, body }) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      },
      (err: unknown) => {
        platform.logger.warn({ err, userId }, 'judge relay failed');
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `the judge could not answer: ${(err as Error).message}`, type: 'server_error' } }));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function answer(platform: Platform, userId: string, token: string, req: http.IncomingMessage): Promise<{ status: number; body: unknown }> {
  const refuse = (status: number, message: string) => ({ status, body: { error: { message, type: 'invalid_request_error' } } });
  if (req.headers.authorization !== `Bearer ${token}`) return refuse(401, 'this relay answers its own core only');
  if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) return refuse(404, 'only POST /v1/chat/completions is served here');
  const request = JSON.parse(await bodyOf(req)) as JudgeRequest;
  if (typeof request.model !== 'string' || !Array.isArray(request.messages)) return refuse(400, 'send model and messages');
  const messages = (request.messages as Array<{ role?: unknown; content?: unknown }>).map(
    (m): PlainMessage => ({ role: m.role === 'developer' ? 'system' : (m.role as PlainMessage['role']), content: String(m.content ?? '') }),
  );
  let route;
  try {
    route = await routeJudge(platform, userId, request.model);
  } catch (err) {
    if (!(err instanceof ModelNotFound)) throw err;
    return refuse(404, `model ${JSON.stringify(request.model)} is not one of yours here${platform.config.LLM_API_BASE ? '' : ', and LLM_API_BASE is not set for other judges'}`);
  }
  if ('forward' in route) return forwardToJudge(route.forward, request);
  const schema = request.response_format?.type === 'json_schema' ? request.response_format.json_schema?.schema : undefined;
  const generation: GenerationSettings = {
    max_new_tokens: request.max_tokens ?? 64,
    temperature: request.temperature ?? 0,
    ...(request.top_p !== undefined ? { top_p: request.top_p } : {}),
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    // A judge of this stack answers its score in the shape asked for (a grammar on the fast engine).
    ...(schema && route.choice.use_fast_engine ? { response_format: { type: 'json_schema' as const, schema } } : {}),
  };
  const result = await requestFromWorker(platform, inferQueue, { userId, model: route.choice, conversations: [messages], generation }, undefined, 'the judge');
  return { status: 200, body: { object: 'chat.completion', model: request.model, choices: [{ index: 0, message: { role: 'assistant', content: result.results[0] ?? '' }, finish_reason: result.details[0]?.finish_reason ?? 'stop' }] } };
}

function bodyOf(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy(new Error('the judge request is too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
