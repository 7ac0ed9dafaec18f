// Route contracts of the Tinker-compatible service (decisions.md "Own training loops"): what the official tinker SDK
// (0.38) calls under /api/v1, keyed by the SDK's names. Every call that does work answers a future at once; the SDK
// polls it with retrieve_future. The key travels as `X-API-Key: tml-<our API key>` (or a JWT).
import { z } from 'zod';
import { ErrorBody } from '../common.ts';
import {
  TinkerCapabilities, TinkerCheckpoints, TinkerClientConfig, TinkerCreateModelRequest, TinkerCreateSamplingSessionRequest, TinkerCreateSamplingSessionResponse,
  TinkerCreateSessionRequest, TinkerCreateSessionResponse, TinkerDynamicConfig, TinkerEmpty, TinkerFinishRequest, TinkerFuture, TinkerFutureAnswer, TinkerGetInfoResponse,
  TinkerHealth, TinkerLoadWeightsRequest, TinkerModelRef, TinkerOptimStepRequest, TinkerRetrieveFutureRequest, TinkerRunParams, TinkerRunsQuery, TinkerSampleRequest,
  TinkerSampler, TinkerSamplerParams, TinkerSaveWeightsForSamplerRequest, TinkerSaveWeightsRequest, TinkerSdkVersion, TinkerSessionParams, TinkerSessionRef,
  TinkerTelemetryResponse, TinkerTrainingRun, TinkerTrainingRuns, TinkerWeightsInfo, TinkerWeightsInfoRequest,
} from '../tinker.ts';
import { defineRoute, healthRoute, invalidRequest, malformedJson, mediaResponse, metricsRoute, notFound, serviceErrors } from './contract.ts';

/** The SDK's key: `X-API-Key: tml-<API key>` in token mode, the JWT in jwt mode, anything with AUTH_MODE none. */
export const apiKeyOptional = [{}, { apiKeyAuth: [] }] as const;
const tags = ['tinker'] as const;
const runNotFound = notFound('training run (model_id)');

/** A POST of the SDK's that answers JSON. */
function post<const Op extends string, B extends z.ZodType, R extends z.ZodType>(operationId: Op, url: string, summary: string, description: string, body: B, ok: R, missing?: string) {
  return defineRoute({
    method: 'POST',
    url,
    schema: {
      operationId, summary, description, tags, security: apiKeyOptional, body,
      response: { 200: ok, 400: malformedJson, ...(missing ? { 404: notFound(missing) } : {}), 422: invalidRequest, ...serviceErrors },
    },
  });
}

export const tinkerRoutes = {
  getHealth: healthRoute('tinker'),
  getMetrics: metricsRoute(),
  clientConfig: post('tinkerClientConfig', '/api/v1/client/config', 'Client feature flags', 'The first call of every SDK client: plain JSON bodies, httpx-style polling, client-side custom losses.', TinkerSdkVersion, TinkerClientConfig),
  dynamicConfig: post('tinkerDynamicConfig', '/api/v1/client/dynamic_config', 'Client settings refreshed while it runs', 'Sampling futures are not cancelled server-side.', TinkerSdkVersion, TinkerDynamicConfig),
  createSession: post('tinkerCreateSession', '/api/v1/create_session', 'Start a client session', 'A session holds the training runs and samplers a client makes; its heartbeats keep their workers.', TinkerCreateSessionRequest, TinkerCreateSessionResponse),
  sessionHeartbeat: defineRoute({
    method: 'POST',
    url: '/api/v1/session_heartbeat',
    schema: {
      operationId: 'tinkerSessionHeartbeat', summary: 'Keep a session alive', description: 'Sent by the SDK every 10 s. 410 once the session has finished (the SDK stops beating).', tags, security: apiKeyOptional,
      body: TinkerSessionRef,
      response: { 200: TinkerEmpty, 400: malformedJson, 404: notFound('session'), 410: ErrorBody.describe('The session has finished'), 422: invalidRequest, ...serviceErrors },
    },
  }),
  finishSession: defineRoute({
    method: 'POST',
    url: '/api/v1/sessions/:session_id/finish',
    schema: {
      operationId: 'tinkerFinishSession', summary: 'End a session', description: 'Its runs save their state and let their workers go once their calls are done.', tags, security: apiKeyOptional,
      params: TinkerSessionParams, body: TinkerFinishRequest,
      response: { 200: TinkerEmpty, 400: malformedJson, 404: notFound('session'), 422: invalidRequest, ...serviceErrors },
    },
  }),
  createModel: post('tinkerCreateModel', '/api/v1/create_model', 'Create a LoRA training run', 'A training run (its model id `<session>:train:<n>`) queued for a worker on the session lane; the future completes once the base model and adapter are loaded there.', TinkerCreateModelRequest, TinkerFuture, 'session'),
  getInfo: post('tinkerGetInfo', '/api/v1/get_info', 'A training run’s model and tokenizer', 'tokenizer_id is a model folder the SDK can load offline when this machine holds the model.', TinkerModelRef, TinkerGetInfoResponse, 'training run (model_id)'),
  forwardBackward: defineRoute({
    method: 'POST',
    url: '/api/v1/forward_backward',
    schema: {
      operationId: 'tinkerForwardBackward', summary: 'Forward and backward pass (protobuf)',
      description:
        'A ForwardBackwardRequest of the SDK’s protobuf schema (application/x-protobuf): data, loss_fn (cross_entropy, importance_sampling, ppo, cispo, dro), its config, forward_only. ' +
        'Gradients add up until optim_step. Runs in seq_id order with the run’s other training calls. The future’s result is a protobuf ForwardBackwardOutput.',
      tags, security: apiKeyOptional,
      consumes: ['application/x-protobuf'],
      response: { 200: TinkerFuture, 400: ErrorBody.describe('The body is not a ForwardBackwardRequest'), 404: runNotFound, 415: ErrorBody.describe('Not application/x-protobuf, or compressed'), ...serviceErrors },
    },
  }),
  optimStep: post('tinkerOptimStep', '/api/v1/optim_step', 'Apply the accumulated gradients (Adam)', 'AdamW with the given parameters; gradients are then zeroed.', TinkerOptimStepRequest, TinkerFuture, 'training run (model_id)'),
  saveWeights: post('tinkerSaveWeights', '/api/v1/save_weights', 'Save a run’s state (weights and optimizer)', 'Stored under the run; the future answers its tinker://<run>/weights/<name> path.', TinkerSaveWeightsRequest, TinkerFuture, 'training run (model_id)'),
  saveWeightsForSampler: post('tinkerSaveWeightsForSampler', '/api/v1/save_weights_for_sampler', 'Save a run’s weights for sampling', 'The future answers tinker://<run>/sampler_weights/<name>, or without a name a sampler of these weights.', TinkerSaveWeightsForSamplerRequest, TinkerFuture, 'training run (model_id)'),
  loadWeights: post('tinkerLoadWeights', '/api/v1/load_weights', 'Start a run from a saved state', 'A new training run (model id `<session>:train:<model_seq_id>`) from a tinker://…/weights/<name> state, with or without its optimizer state; any worker takes it.', TinkerLoadWeightsRequest, TinkerFuture, 'session or saved state'),
  createSamplingSession: post('tinkerCreateSamplingSession', '/api/v1/create_sampling_session', 'Create a sampler', 'For sampler weights a run saved (model_path tinker://<run>/sampler_weights/<name>; the run’s worker samples), or for a base model (a worker holds it as a run of its own that never trains).', TinkerCreateSamplingSessionRequest, TinkerCreateSamplingSessionResponse, 'session or sampler weights'),
  getSampler: defineRoute({
    method: 'GET',
    url: '/api/v1/samplers/:sampler_id',
    schema: { operationId: 'tinkerGetSampler', summary: 'A sampler', description: 'Its base model and weights.', tags, security: apiKeyOptional, params: TinkerSamplerParams, response: { 200: TinkerSampler, 404: notFound('sampler'), 422: invalidRequest, ...serviceErrors } },
  }),
  asample: post('tinkerSample', '/api/v1/asample', 'Sample', 'Token prompts in, sampled tokens with their logprobs out (and the prompt’s logprobs when asked). The future’s result is a protobuf SampleResponse.', TinkerSampleRequest, TinkerFuture, 'sampler'),
  retrieveFuture: defineRoute({
    method: 'POST',
    url: '/api/v1/retrieve_future',
    schema: {
      operationId: 'tinkerRetrieveFuture', summary: 'A call’s result (long poll)',
      description: 'Waits up to 25 s for the call, then answers try_again. forward_backward and sample results are protobuf (application/x-protobuf), the rest JSON; a failed call is {error, category}.',
      tags, security: apiKeyOptional, body: TinkerRetrieveFutureRequest,
      response: {
        200: mediaResponse('application/json', 'The result, try_again, or the error; protobuf for forward_backward and sample results', TinkerFutureAnswer),
        400: malformedJson, 404: notFound('future'), 422: invalidRequest, ...serviceErrors,
      },
    },
  }),
  telemetry: defineRoute({
    method: 'POST',
    url: '/api/v1/telemetry',
    schema: { operationId: 'tinkerTelemetry', summary: 'SDK telemetry (accepted, not kept)', description: 'Answered so the SDK stays quiet; nothing is stored or forwarded. TINKER_TELEMETRY=0 stops the SDK sending it.', tags, security: apiKeyOptional, body: z.record(z.string(), z.unknown()), response: { 200: TinkerTelemetryResponse, 400: malformedJson, 422: invalidRequest, ...serviceErrors } },
  }),
  healthz: defineRoute({
    method: 'GET',
    url: '/api/v1/healthz',
    schema: { operationId: 'tinkerHealthz', summary: 'The SDK’s health check', description: 'ok while the service answers (GET /health checks its dependencies).', tags, security: [], response: { 200: TinkerHealth } },
  }),
  capabilities: defineRoute({
    method: 'GET',
    url: '/api/v1/get_server_capabilities',
    schema: { operationId: 'tinkerCapabilities', summary: 'Models a run can start from', description: 'The model store’s models; each can be trained and sampled.', tags, security: apiKeyOptional, response: { 200: TinkerCapabilities, ...serviceErrors } },
  }),
  listRuns: defineRoute({
    method: 'GET',
    url: '/api/v1/training_runs',
    schema: { operationId: 'tinkerListRuns', summary: 'The caller’s training runs', description: 'Newest first, limit/offset.', tags, security: apiKeyOptional, querystring: TinkerRunsQuery, response: { 200: TinkerTrainingRuns, 422: invalidRequest, ...serviceErrors } },
  }),
  getRun: defineRoute({
    method: 'GET',
    url: '/api/v1/training_runs/:run_id',
    schema: { operationId: 'tinkerGetRun', summary: 'A training run', description: 'Its base model, state, steps and last checkpoints.', tags, security: apiKeyOptional, params: TinkerRunParams, querystring: TinkerRunsQuery.pick({ access_scope: true }), response: { 200: TinkerTrainingRun, 404: notFound('training run'), 422: invalidRequest, ...serviceErrors } },
  }),
  listRunCheckpoints: defineRoute({
    method: 'GET',
    url: '/api/v1/training_runs/:run_id/checkpoints',
    schema: { operationId: 'tinkerListRunCheckpoints', summary: 'A run’s saved states and sampler weights', description: 'Newest first.', tags, security: apiKeyOptional, params: TinkerRunParams, response: { 200: TinkerCheckpoints, 404: notFound('training run'), 422: invalidRequest, ...serviceErrors } },
  }),
  listCheckpoints: defineRoute({
    method: 'GET',
    url: '/api/v1/checkpoints',
    schema: { operationId: 'tinkerListCheckpoints', summary: 'Every checkpoint of the caller’s runs', description: 'Newest first.', tags, security: apiKeyOptional, querystring: TinkerRunsQuery.pick({ limit: true, offset: true }), response: { 200: TinkerCheckpoints, 422: invalidRequest, ...serviceErrors } },
  }),
  weightsInfo: post('tinkerWeightsInfo', '/api/v1/weights_info', 'What a tinker:// path holds', 'Its base model and LoRA rank.', TinkerWeightsInfoRequest, TinkerWeightsInfo, 'checkpoint'),
};
