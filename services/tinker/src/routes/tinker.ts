// /api/v1: what the tinker SDK calls (docs/tinker-wire.md). Thin: check the request, record the call for the worker
// that holds its run (calls.ts), answer its future; retrieve_future long-polls the call's row.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError, newId, NotFound, UnprocessableEntity, requestLifetime, type Platform, type TinkerCallRow, type TinkerCheckpointRow, type TinkerRunRow } from '@ftp/platform';
import { tinkerRoutes } from '@ftp/schema';
import { listStoredModels, locateBaseModel } from '@ftp/jobs/models';
import { sessionQueue } from '@ftp/jobs/queues';
import { parseTinkerPath, TINKER_LOSSES, tinkerModelId, tinkerPath, tinkerRunPrefix, tinkerSamplerId } from '@ftp/jobs/tinker';
import { decodeForwardBackwardRequest, encodeForwardBackwardOutput, encodeSampleResponse, type ForwardBackwardResult, type SampleResult, type TensorJson } from '../wire/proto.ts';
import { awaitCall, LONG_POLL_MS, runOfModel, submitRunCall } from '../calls.ts';

class BadProtobuf extends AppError {
  readonly statusCode = 400;
}

const future = (call: TinkerCallRow, extra: Record<string, unknown> = {}) => ({ request_id: call.request_id, ...extra });
const iso = (d: Date) => d.toISOString();

/** A tensor as the core reads it: nested lists of its shape. */
function nested(t: TensorJson): number[] | number[][] {
  if (t.shape.length < 2) return t.data;
  const width = t.shape.slice(1).reduce((a, b) => a * b, 1);
  return Array.from({ length: t.shape[0]! }, (_, i) => t.data.slice(i * width, (i + 1) * width));
}

function presentCheckpoint(row: TinkerCheckpointRow) {
  return {
    checkpoint_id: `${row.kind}/${row.name}`,
    checkpoint_type: row.kind === 'weights' ? ('training' as const) : ('sampler' as const),
    time: iso(row.created_at),
    tinker_path: tinkerPath(row.run_id, row.kind, row.name),
    size_bytes: row.size_bytes,
  };
}

/** A run as the SDK reads it, with its newest saved state and sampler weights among `checkpoints` (newest first). */
function presentRun(run: TinkerRunRow, checkpoints: readonly TinkerCheckpointRow[]) {
  const last = (kind: string) => checkpoints.find((c) => c.run_id === run.run_id && c.kind === kind);
  const training = last('weights');
  const sampler = last('sampler_weights');
  return {
    training_run_id: run.run_id, base_model: run.base_model, model_owner: run.user_id, is_lora: true as const, lora_rank: run.config.rank,
    last_request_time: iso(run.updated_at), corrupted: false, status: run.status, step: run.step, last_loss: run.last_loss, error: run.error,
    last_checkpoint: training ? presentCheckpoint(training) : null, last_sampler_checkpoint: sampler ? presentCheckpoint(sampler) : null,
  };
}

/** The saved checkpoint a tinker:// path names, the caller's (404 otherwise). */
async function checkpointOf(platform: Platform, userId: string, value: string, kind: 'weights' | 'sampler_weights'): Promise<{ run: TinkerRunRow; name: string }> {
  const parsed = parseTinkerPath(value);
  if (!parsed || parsed.kind !== kind) throw new NotFound(kind === 'weights' ? 'saved state' : 'sampler weights', value, `a path of the form tinker://<run>/${kind}/<name>, as save_${kind === 'weights' ? 'state' : 'weights_for_sampler'} answers it`);
  const run = await platform.tinker.getRun(userId, parsed.runId);
  if (!run || !(await platform.tinker.getCheckpoint(userId, parsed.runId, kind, parsed.name))) throw new NotFound(kind === 'weights' ? 'saved state' : 'sampler weights', value);
  return { run, name: parsed.name };
}

export function registerTinkerRoutes(app: FastifyInstance): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { platform } = app;
  // forward_backward's body is the SDK's protobuf, read whole (compressed bodies are not asked for: client/config).
  app.addContentTypeParser('application/x-protobuf', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  routes.route({
    ...tinkerRoutes.clientConfig,
    // Plain bodies and httpx (pyqwest speaks HTTP/1.1 here just as well, but one transport is one less to go wrong);
    // server-side custom losses and the sampling futures poller are not served.
    handler: async () => ({ pjwt_auth_enabled: false, proto_compress_fwdbwd: false, use_pyqwest_transport: false, sample_use_retrieve_futures: false, custom_loss_server_side: false }),
  });
  routes.route({ ...tinkerRoutes.dynamicConfig, handler: async () => ({ refresh_interval_sec: 300, sample_cancel_enabled: false }) });

  routes.route({
    ...tinkerRoutes.createSession,
    handler: async (request) => ({ session_id: (await platform.tinker.createSession(request.userId, request.body)).session_id, type: 'create_session' as const }),
  });

  routes.route({
    ...tinkerRoutes.sessionHeartbeat,
    handler: async (request, reply) => {
      const session = await platform.tinker.beat(request.userId, request.body.session_id);
      if (!session) throw new NotFound('session', request.body.session_id);
      if (session.finished_at) return reply.code(410).send({ detail: `session ${session.session_id} has finished` });
      return {};
    },
  });

  routes.route({
    ...tinkerRoutes.finishSession,
    handler: async (request) => {
      if (!(await platform.tinker.finishSession(request.userId, request.params.session_id))) throw new NotFound('session', request.params.session_id);
      return {};
    },
  });

  routes.route({
    ...tinkerRoutes.createModel,
    handler: async (request) => {
      const { userId, body } = request;
      const session = await platform.tinker.getSession(userId, body.session_id);
      if (!session) throw new NotFound('session', body.session_id);
      await locateBaseModel(platform, 'hub', body.base_model, { loc: ['body', 'base_model'] });
      const runId = newId('job');
      const lora = body.lora_config;
      const optimizer = body.optimizer_config?.type;
      const { run, call } = await platform.tinker.createRun(
        {
          run_id: runId, model_id: tinkerModelId(session.session_id, body.model_seq_id), session_id: session.session_id, user_id: userId, base_model: body.base_model,
          config: { rank: lora.rank, train_mlp: lora.train_mlp, train_attn: lora.train_attn, train_unembed: lora.train_unembed, seed: lora.seed ?? null },
          blob_prefix: tinkerRunPrefix(userId, runId),
        },
        { op: 'create_model', request: optimizer && optimizer !== 'adamw' ? { refusal: `optimizer_config type ${optimizer} is not supported here; use adamw (the default)` } : {} },
      );
      await platform.queue.add(sessionQueue, { runId: run.run_id });
      return future(call, { model_id: run.model_id });
    },
  });

  routes.route({
    ...tinkerRoutes.getInfo,
    handler: async (request) => {
      const run = await runOfModel(platform, request.userId, request.body.model_id);
      const location = await locateBaseModel(platform, 'hub', run.base_model, { loc: ['body', 'model_id'] }).catch(() => undefined);
      // A folder the SDK loads the tokenizer from without the hub, when this machine holds the model.
      // (a stored model is on this machine once a worker here copied it into MODELS_DIR)
      const local = location && location.kind !== 'hub' && (location.kind !== 'store' || existsSync(path.join(location.folder, 'config.json')));
      const tokenizer = local ? location.folder : run.base_model;
      return {
        type: 'get_info' as const, model_id: run.model_id, model_data: { arch: null, model_name: run.base_model, tokenizer_id: tokenizer },
        is_lora: true, lora_rank: run.config.rank, model_name: run.base_model,
      };
    },
  });

  routes.route({
    ...tinkerRoutes.forwardBackward,
    handler: async (request) => {
      if (request.headers['content-encoding'] && request.headers['content-encoding'] !== 'identity') {
        throw new BadProtobuf(`Content-Encoding ${request.headers['content-encoding']} is not read here; this server's client/config leaves proto_compress_fwdbwd off`);
      }
      let decoded;
      try {
        decoded = decodeForwardBackwardRequest(request.body as Buffer);
      } catch (err) {
        throw new BadProtobuf(`the body is not a ForwardBackwardRequest: ${(err as Error).message}`);
      }
      const run = await runOfModel(platform, request.userId, decoded.model_id);
      let refusal: string | undefined;
      if (!(TINKER_LOSSES as readonly string[]).includes(decoded.loss_fn)) refusal = `loss_fn ${decoded.loss_fn} is not supported here; use one of ${TINKER_LOSSES.join(', ')} (or forward_backward_custom, which runs on the client)`;
      const data = decoded.data.map((datum, i) => {
        const chunks = datum.model_input.chunks;
        const other = chunks.find((c) => c.type !== 'encoded_text');
        if (other) refusal ??= `data[${i}].model_input has a ${other.type} chunk; only encoded_text is supported here`;
        return {
          model_input: chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])),
          loss_fn_inputs: Object.fromEntries(Object.entries(datum.loss_fn_inputs).map(([k, t]) => [k, nested(t)])),
        };
      });
      const call = await submitRunCall(platform, run, {
        seqId: decoded.seq_id, op: 'forward_backward', refusal,
        request: refusal ? {} : { data, loss_fn: decoded.loss_fn, loss_fn_config: decoded.loss_fn_config, forward_only: decoded.forward_only },
      });
      return future(call, { model_id: run.model_id });
    },
  });

  routes.route({
    ...tinkerRoutes.optimStep,
    handler: async (request) => {
      const { body } = request;
      const run = await runOfModel(platform, request.userId, body.model_id);
      const refusal = body.optimizer_params ? 'only Adam (AdamParams) is supported here; optim_step with other optimizer params is refused' : undefined;
      const call = await submitRunCall(platform, run, { seqId: body.seq_id, op: 'optim_step', refusal, request: { adam_params: body.adam_params ?? {} } });
      return future(call, { model_id: run.model_id });
    },
  });

  routes.route({
    ...tinkerRoutes.saveWeights,
    handler: async (request) => {
      const { body } = request;
      const run = await runOfModel(platform, request.userId, body.model_id);
      const call = await submitRunCall(platform, run, { seqId: body.seq_id, op: 'save_state', request: { name: body.path ?? `state-${body.seq_id}` } });
      return future(call, { model_id: run.model_id });
    },
  });

  routes.route({
    ...tinkerRoutes.saveWeightsForSampler,
    handler: async (request) => {
      const { body } = request;
      const run = await runOfModel(platform, request.userId, body.model_id);
      // Without a name (save_weights_and_get_sampling_client) the result is a sampler of these weights.
      const sampler = body.path === undefined ? tinkerSamplerId(run.session_id, body.sampling_session_seq_id ?? body.seq_id) : undefined;
      const call = await submitRunCall(platform, run, {
        seqId: body.seq_id, op: 'save_weights_for_sampler',
        request: { name: body.path ?? `sampler-${body.seq_id}`, ...(sampler ? { sampler_id: sampler } : {}) },
      });
      return future(call, { model_id: run.model_id });
    },
  });

  routes.route({
    ...tinkerRoutes.loadWeights,
    handler: async (request) => {
      const { userId, body } = request;
      const { run: source, name } = await checkpointOf(platform, userId, body.path, 'weights');
      if (body.model_id !== undefined) {
        // The older form: load into a live run, in its seq_id order.
        const run = await runOfModel(platform, userId, body.model_id);
        const call = await submitRunCall(platform, run, { seqId: body.seq_id ?? null, op: 'load_state', request: { run_id: source.run_id, name, optimizer: body.optimizer } });
        return future(call, { model_id: run.model_id });
      }
      const session = body.session_id ? await platform.tinker.getSession(userId, body.session_id) : undefined;
      if (!session) throw new NotFound('session', body.session_id ?? '');
      const runId = newId('job');
      const { run, call } = await platform.tinker.createRun(
        {
          run_id: runId, model_id: tinkerModelId(session.session_id, body.model_seq_id ?? 0), session_id: session.session_id, user_id: userId, base_model: source.base_model,
          config: { ...source.config, from_state: { run_id: source.run_id, name, optimizer: body.optimizer } }, blob_prefix: tinkerRunPrefix(userId, runId),
        },
        { op: 'load_weights', request: {} },
      );
      await platform.queue.add(sessionQueue, { runId: run.run_id });
      return future(call, { model_id: run.model_id });
    },
  });

  routes.route({
    ...tinkerRoutes.createSamplingSession,
    handler: async (request) => {
      const { userId, body } = request;
      const session = await platform.tinker.getSession(userId, body.session_id);
      if (!session) throw new NotFound('session', body.session_id);
      const samplerId = tinkerSamplerId(session.session_id, body.sampling_session_seq_id);
      if (body.model_path !== undefined) {
        const { run } = await checkpointOf(platform, userId, body.model_path, 'sampler_weights');
        await platform.tinker.createSampler({ sampler_id: samplerId, session_id: session.session_id, user_id: userId, run_id: run.run_id, base_model: run.base_model, model_path: body.model_path });
      } else {
        if (body.base_model === undefined) throw new UnprocessableEntity([{ loc: ['body', 'base_model'], msg: 'a sampler needs model_path (sampler weights) or base_model', type: 'missing' }]);
        await locateBaseModel(platform, 'hub', body.base_model, { loc: ['body', 'base_model'] });
        // A worker holds the base model for it: a run of its own that never trains (a fresh LoRA adds exactly zero:
        // its B matrices start at zero), sampled with its current weights.
        const runId = newId('job');
        const { run } = await platform.tinker.createRun(
          {
            run_id: runId, model_id: `${samplerId}:base`, session_id: session.session_id, user_id: userId, base_model: body.base_model,
            config: { rank: 1, train_mlp: false, train_attn: true, train_unembed: false, seed: 0 }, blob_prefix: tinkerRunPrefix(userId, runId),
          },
          { op: 'create_model', request: {} },
        );
        await platform.queue.add(sessionQueue, { runId });
        await platform.tinker.createSampler({ sampler_id: samplerId, session_id: session.session_id, user_id: userId, run_id: run.run_id, base_model: body.base_model, model_path: null });
      }
      return { sampling_session_id: samplerId, type: 'create_sampling_session' as const };
    },
  });

  routes.route({
    ...tinkerRoutes.getSampler,
    handler: async (request) => {
      const sampler = await platform.tinker.getSampler(request.userId, request.params.sampler_id);
      if (!sampler) throw new NotFound('sampler', request.params.sampler_id);
      return { sampler_id: sampler.sampler_id, base_model: sampler.base_model, model_path: sampler.model_path };
    },
  });

  routes.route({
    ...tinkerRoutes.asample,
    handler: async (request) => {
      const { userId, body } = request;
      const sampler = body.sampling_session_id ? await platform.tinker.getSampler(userId, body.sampling_session_id) : undefined;
      if (!sampler) throw new NotFound('sampler', body.sampling_session_id ?? '');
      const run = sampler.run_id ? await platform.tinker.getRun(userId, sampler.run_id) : undefined;
      const ids = (call: TinkerCallRow) => Array.from({ length: body.num_samples }, (_, i) => `${call.request_id}:seq:${i}`);
      if (!run) throw new NotFound('sampler', sampler.sampler_id, 'its training run was deleted');
      const other = body.prompt.chunks.find((c) => c.type !== 'encoded_text');
      const unsupported = other ? `the prompt has a ${other.type} chunk; only encoded_text is supported here`
        : body.topk_prompt_logprobs > 0 || body.topk_sample_logprobs > 0 || body.prompt_alt_tokens_k > 0 ? 'top-k logprobs and alternative prompt tokens are not supported here' : undefined;
      const params = body.sampling_params;
      const call = await submitRunCall(platform, run, {
        targetId: sampler.sampler_id, seqId: body.seq_id ?? null, op: 'sample', refusal: unsupported,
        request: {
          prompt: body.prompt.chunks.flatMap((c) => ('tokens' in c ? (c.tokens as number[]) : [])), num_samples: body.num_samples, prompt_logprobs: body.prompt_logprobs,
          sampling_params: { max_tokens: params.max_tokens ?? null, seed: params.seed ?? null, stop: params.stop ?? null, temperature: params.temperature, top_k: params.top_k, top_p: params.top_p },
          weights: parseTinkerPath(sampler.model_path ?? '')?.name ?? null,
          prompt_logprobs_last_n: body.prompt_logprobs_last_n ?? null,
        },
      });
      return future(call, { sample_sequence_ids: ids(call) });
    },
  });

  routes.route({
    ...tinkerRoutes.retrieveFuture,
    handler: async (request, reply) => {
      const call = await awaitCall(platform, request.userId, request.body.request_id, LONG_POLL_MS, requestLifetime(reply));
      if (!call) return { type: 'try_again' as const, request_id: request.body.request_id, queue_state: 'active' as const };
      if (call.status === 'failed') return call.error!;
      const result = call.result!;
      if (call.op === 'forward_backward') return reply.type('application/x-protobuf').send(Buffer.from(encodeForwardBackwardOutput(result as unknown as ForwardBackwardResult)) as never);
      if (call.op === 'sample') return reply.type('application/x-protobuf').send(Buffer.from(encodeSampleResponse(result as unknown as SampleResult)) as never);
      return result;
    },
  });

  routes.route({ ...tinkerRoutes.telemetry, handler: async () => ({ status: 'accepted' as const }) });
  routes.route({ ...tinkerRoutes.healthz, handler: async () => ({ status: 'ok' as const }) });
  routes.route({
    ...tinkerRoutes.capabilities,
    handler: async () => ({ supported_models: (await listStoredModels(platform)).map((model_name) => ({ model_name, trainable: true, sampleable: true })) }),
  });

  routes.route({
    ...tinkerRoutes.listRuns,
    handler: async (request) => {
      const { limit, offset } = request.query;
      const { rows, total } = await platform.tinker.listRuns(request.userId, { limit, offset });
      const checkpoints = await platform.tinker.checkpointsOfRuns(request.userId, rows.map((run) => run.run_id));
      return { training_runs: rows.map((run) => presentRun(run, checkpoints)), cursor: { offset, limit, total_count: total } };
    },
  });
  routes.route({
    ...tinkerRoutes.getRun,
    handler: async (request) => {
      const run = await platform.tinker.getRun(request.userId, request.params.run_id);
      if (!run) throw new NotFound('training run', request.params.run_id);
      return presentRun(run, await platform.tinker.listCheckpoints(run.user_id, run.run_id));
    },
  });
  routes.route({
    ...tinkerRoutes.listRunCheckpoints,
    handler: async (request) => {
      const run = await platform.tinker.getRun(request.userId, request.params.run_id);
      if (!run) throw new NotFound('training run', request.params.run_id);
      return { checkpoints: (await platform.tinker.listCheckpoints(request.userId, run.run_id)).map(presentCheckpoint) };
    },
  });
  routes.route({
    ...tinkerRoutes.listCheckpoints,
    handler: async (request) => {
      const all = await platform.tinker.listCheckpoints(request.userId);
      return { checkpoints: all.slice(request.query.offset, request.query.offset + request.query.limit).map(presentCheckpoint) };
    },
  });
  routes.route({
    ...tinkerRoutes.weightsInfo,
    handler: async (request) => {
      const parsed = parseTinkerPath(request.body.tinker_path);
      const { run } = await checkpointOf(platform, request.userId, request.body.tinker_path, parsed?.kind ?? 'weights');
      return { base_model: run.base_model, is_lora: true as const, lora_rank: run.config.rank };
    },
  });
}
