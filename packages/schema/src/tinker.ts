// The Tinker-compatible API's JSON bodies (services/tinker; docs/tinker-wire.md has what the tinker SDK 0.38 sends and
// reads). Requests accept fields they do not name (a newer SDK may add some; the SDK itself refuses unknown ones only on
// its own side), answers carry what the SDK reads. forward_backward's request and the results of forward_backward and
// sample are protobuf (services/tinker/src/wire), not described here.
import { z } from 'zod';

const Id = z.string().min(1).max(256);
const SeqId = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const TinkerSdkVersion = z.object({ sdk_version: z.string().max(64).optional() }).meta({ id: 'TinkerClientConfigRequest' });

export const TinkerClientConfig = z
  .object({
    pjwt_auth_enabled: z.boolean(),
    proto_compress_fwdbwd: z.boolean(),
    use_pyqwest_transport: z.boolean(),
    sample_use_retrieve_futures: z.boolean(),
    custom_loss_server_side: z.boolean(),
  })
  .meta({ id: 'TinkerClientConfig', description: 'Feature flags the SDK reads before anything else; every flag it does not find keeps its default' });

export const TinkerDynamicConfig = z.object({ refresh_interval_sec: z.number().int(), sample_cancel_enabled: z.boolean() }).meta({ id: 'TinkerDynamicConfig' });

export const TinkerCreateSessionRequest = z
  .object({
    tags: z.array(z.string().max(256)).max(64).default([]),
    user_metadata: z.record(z.string(), z.unknown()).default({}),
    sdk_version: z.string().max(64).optional(),
    project_id: z.string().max(256).optional(),
    display_name: z.string().max(256).optional(),
  })
  .meta({ id: 'TinkerCreateSessionRequest' });
export const TinkerCreateSessionResponse = z.object({ session_id: Id, type: z.literal('create_session') }).meta({ id: 'TinkerCreateSessionResponse' });

export const TinkerSessionRef = z.object({ session_id: Id }).meta({ id: 'TinkerSessionRef' });
export const TinkerSessionParams = z.object({ session_id: Id });
export const TinkerFinishRequest = z
  .object({ reason: z.object({ type: z.enum(['success', 'errored', 'interrupted']) }).optional(), detail: z.string().max(10_000).nullable().optional() })
  .meta({ id: 'TinkerFinishRequest' });
export const TinkerEmpty = z.object({}).meta({ id: 'TinkerEmpty' });

export const TinkerLoraConfig = z
  .object({
    rank: z.number().int().min(1).max(512).default(32),
    seed: z.number().int().min(0).max(2 ** 31 - 1).nullable().optional(),
    train_unembed: z.boolean().default(true),
    train_mlp: z.boolean().default(true),
    train_attn: z.boolean().default(true),
  })
  .meta({ id: 'TinkerLoraConfig' });

export const TinkerCreateModelRequest = z
  .object({
    session_id: Id,
    model_seq_id: SeqId,
    base_model: z.string().min(1).max(256).describe('A model of the model store (as base_model_id of a training job), or an absolute model folder'),
    lora_config: TinkerLoraConfig.default({ rank: 32, train_unembed: true, train_mlp: true, train_attn: true }),
    optimizer_config: z.object({ type: z.string().max(64) }).loose().optional(),
    user_metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'TinkerCreateModelRequest' });

/** What a call answers at once: the id of its future (retrieve_future), and the model or samples it names. */
export const TinkerFuture = z
  .object({ request_id: Id, model_id: Id.optional(), sample_sequence_ids: z.array(z.string()).optional() })
  .meta({ id: 'TinkerFuture' });

export const TinkerModelRef = z.object({ model_id: Id }).meta({ id: 'TinkerModelRef' });
export const TinkerGetInfoResponse = z
  .object({
    type: z.literal('get_info'),
    model_id: Id,
    model_data: z.object({ arch: z.string().nullable(), model_name: z.string(), tokenizer_id: z.string() }),
    is_lora: z.boolean(),
    lora_rank: z.number().int(),
    model_name: z.string(),
  })
  .meta({ id: 'TinkerGetInfoResponse', description: 'tokenizer_id is a model folder when this machine has the model (the SDK loads the tokenizer from it, offline), else its hub id' });

export const TinkerAdamParams = z
  .object({
    learning_rate: z.number().min(0).max(10).default(1e-4),
    beta1: z.number().min(0).lt(1).default(0.9),
    beta2: z.number().min(0).lt(1).default(0.95),
    eps: z.number().positive().max(1).default(1e-12),
    weight_decay: z.number().min(0).max(10).default(0),
    grad_clip_norm: z.number().min(0).default(0),
  })
  .meta({ id: 'TinkerAdamParams' });

export const TinkerOptimStepRequest = z
  .object({ model_id: Id, seq_id: SeqId, adam_params: TinkerAdamParams.optional(), optimizer_params: z.record(z.string(), z.unknown()).optional() })
  .meta({ id: 'TinkerOptimStepRequest' });

export const TinkerSaveWeightsRequest = z
  .object({
    model_id: Id,
    seq_id: SeqId,
    path: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a name of letters, digits, dot, underscore and dash, up to 128').optional(),
    overwrite: z.boolean().optional(),
    ttl_seconds: z.number().int().positive().nullable().optional(),
    user_metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'TinkerSaveWeightsRequest' });

export const TinkerSaveWeightsForSamplerRequest = TinkerSaveWeightsRequest.extend({
  kind: z.enum(['snapshot', 'inflight']).optional(),
  sampling_session_seq_id: SeqId.optional(),
}).meta({ id: 'TinkerSaveWeightsForSamplerRequest' });

export const TinkerLoadWeightsRequest = z
  .object({
    session_id: Id.optional(),
    model_seq_id: SeqId.optional(),
    model_id: Id.optional(),
    seq_id: SeqId.optional(),
    path: z.string().min(1).max(1024).describe('A tinker:// path of a saved state (save_state)'),
    optimizer: z.boolean().default(false),
    base_model: z.string().max(256).optional(),
  })
  .meta({ id: 'TinkerLoadWeightsRequest' });

export const TinkerCreateSamplingSessionRequest = z
  .object({
    session_id: Id,
    sampling_session_seq_id: SeqId,
    model_path: z.string().max(1024).optional(),
    base_model: z.string().max(256).optional(),
  })
  .meta({ id: 'TinkerCreateSamplingSessionRequest' });
export const TinkerCreateSamplingSessionResponse = z.object({ sampling_session_id: Id, type: z.literal('create_sampling_session') }).meta({ id: 'TinkerCreateSamplingSessionResponse' });
export const TinkerSamplerParams = z.object({ sampler_id: Id });
export const TinkerSampler = z.object({ sampler_id: Id, base_model: z.string(), model_path: z.string().nullable() }).meta({ id: 'TinkerSampler' });

const Chunk = z.discriminatedUnion('type', [
  z.object({ type: z.literal('encoded_text'), tokens: z.array(z.number().int().min(0).max(2 ** 31 - 1)).max(1_000_000) }),
  z.object({ type: z.enum(['image', 'image_asset_pointer', 'dmel']) }).loose(),
]);
export const TinkerSamplingParams = z
  .object({
    max_tokens: z.number().int().min(1).max(1_000_000).nullable().optional(),
    seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
    stop: z.union([z.string().max(1024), z.array(z.string().max(1024)).max(64), z.array(z.number().int().min(0)).max(64)]).nullable().optional(),
    temperature: z.number().min(0).max(100).default(1),
    top_k: z.number().int().min(-1).default(-1),
    top_p: z.number().gt(0).max(1).default(1),
  })
  .meta({ id: 'TinkerSamplingParams' });

export const TinkerSampleRequest = z
  .object({
    sampling_session_id: Id.optional(),
    seq_id: SeqId.optional(),
    base_model: z.string().max(256).optional(),
    model_path: z.string().max(1024).optional(),
    num_samples: z.number().int().min(1).max(1024).default(1),
    prompt: z.object({ chunks: z.array(Chunk).min(1).max(1024) }),
    sampling_params: TinkerSamplingParams,
    prompt_logprobs: z.boolean().default(false),
    topk_prompt_logprobs: z.number().int().min(0).default(0),
    topk_sample_logprobs: z.number().int().min(0).default(0),
    prompt_alt_tokens_k: z.number().int().min(0).default(0),
    prompt_logprobs_last_n: z.number().int().min(0).nullable().optional(),
  })
  .meta({ id: 'TinkerSampleRequest' });

export const TinkerRetrieveFutureRequest = z.object({ request_id: Id, allow_metadata_only: z.boolean().default(false) }).meta({ id: 'TinkerRetrieveFutureRequest' });
/** A future's answer when it is JSON: still running, failed, or the result of a call answered in JSON. */
export const TinkerFutureAnswer = z
  .union([
    z.object({ type: z.literal('try_again'), request_id: Id, queue_state: z.enum(['active', 'paused_capacity', 'paused_rate_limit']) }),
    z.object({ error: z.string(), category: z.enum(['user', 'server', 'unknown']) }),
    z.record(z.string(), z.unknown()),
  ])
  .meta({ id: 'TinkerFutureAnswer', description: 'try_again while the call waits or runs (after a long poll of up to 25 s); {error, category} when it failed; else the call’s result' });

export const TinkerTelemetryResponse = z.object({ status: z.literal('accepted') }).meta({ id: 'TinkerTelemetryResponse' });
export const TinkerHealth = z.object({ status: z.literal('ok') }).meta({ id: 'TinkerHealth' });

export const TinkerCapabilities = z
  .object({ supported_models: z.array(z.object({ model_name: z.string(), trainable: z.boolean(), sampleable: z.boolean() })) })
  .meta({ id: 'TinkerCapabilities' });

export const TinkerCheckpoint = z
  .object({ checkpoint_id: z.string(), checkpoint_type: z.enum(['training', 'sampler']), time: z.string(), tinker_path: z.string(), size_bytes: z.number().int() })
  .meta({ id: 'TinkerCheckpoint' });

export const TinkerTrainingRun = z
  .object({
    training_run_id: Id,
    base_model: z.string(),
    model_owner: z.string(),
    is_lora: z.literal(true),
    lora_rank: z.number().int(),
    last_request_time: z.string(),
    corrupted: z.boolean(),
    status: z.enum(['queued', 'running', 'idle', 'failed']).describe('Ours: queued for a worker, held by one, let go with its state saved after TINKER_IDLE_S, or failed (error says why)'),
    step: z.number().int().describe('Ours: optim_steps taken'),
    last_loss: z.number().nullable().describe('Ours: loss:sum of its last forward_backward'),
    error: z.string().nullable(),
    last_checkpoint: TinkerCheckpoint.nullable(),
    last_sampler_checkpoint: TinkerCheckpoint.nullable(),
  })
  .meta({ id: 'TinkerTrainingRun' });
export const TinkerRunParams = z.object({ run_id: Id });
export const TinkerRunsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  offset: z.coerce.number().int().min(0).default(0),
  access_scope: z.string().max(32).optional(),
});
export const TinkerTrainingRuns = z
  .object({ training_runs: z.array(TinkerTrainingRun), cursor: z.object({ offset: z.number().int(), limit: z.number().int(), total_count: z.number().int() }) })
  .meta({ id: 'TinkerTrainingRuns' });
export const TinkerCheckpoints = z.object({ checkpoints: z.array(TinkerCheckpoint) }).meta({ id: 'TinkerCheckpoints' });
export const TinkerWeightsInfoRequest = z.object({ tinker_path: z.string().min(1).max(1024) });
export const TinkerWeightsInfo = z.object({ base_model: z.string(), is_lora: z.literal(true), lora_rank: z.number().int() }).meta({ id: 'TinkerWeightsInfo' });
