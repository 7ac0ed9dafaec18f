// The protobuf codec against the real tinker SDK 0.38, not against itself: requests are the bytes the SDK's own
// request conversion makes, and what we encode is read back by the SDK's own response conversion (test/tools/.venv,
// installed by scripts/bootstrap.sh).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  type ForwardBackwardResult,
  type SampleResult,
} from '../src/wire/proto.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PYTHON = path.join(ROOT, 'test/tools/.venv/bin/python');

function python(script: string, stdin = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, ['-c', script], { env: { ...process.env, TINKER_TELEMETRY: '0' }, timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    );
    child.stdin!.end(stdin);
  });
}

// Two requests as TrainingClient sends them: forward_backward with ppo, and forward (forward_only is set after the
// conversion, as AsyncTrainingResource.forward_backward does) with a string config that only loss_fn_config_v2 carries.
const SDK_REQUESTS = `
import json
import numpy as np
from tinker import types
from tinker.proto.request_conv import forward_backward_request_to_proto

text = types.Datum(
    model_input=types.ModelInput.from_ints([101, 7, 70000]),
    loss_fn_inputs={
        "target_tokens": [7, 70000, 2**40],
        "weights": [1.0, 0.5, 0.0],
        "logprobs": [-0.1, -2.5, -0.75],
        "advantages": types.TensorData(data=[0.5, -0.5, 1.0], dtype="float32"),  # no shape
    },
)
with_images = types.Datum(
    model_input=types.ModelInput(chunks=[
        types.ImageChunk(data=b"\\x89PNG\\r\\n", format="png", expected_tokens=4),
        types.EncodedTextChunk(tokens=[5, 6]),
        types.ImageChunk(data=b"\\xff\\xd8\\xff", format="jpeg"),
    ]),
    loss_fn_inputs={
        "target_tokens": np.array([[5, 9], [6, 8]], dtype=np.int64),
        "weights": np.array([[0.75, 0.25], [1.0, 0.0]], dtype=np.float32),
        # What Datum makes of a sparse 2-D torch tensor (torch is not installed here): [[0, 0, 3], [4, 0, 0]].
        "advantages": types.TensorData(data=[3.0, 4.0], dtype="float32", shape=[2, 3],
                                       sparse_crow_indices=[0, 1, 2], sparse_col_indices=[2, 0]),
    },
)

def encode(data, loss_fn, config, seq_id, forward_only):
    request = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(data=data, loss_fn=loss_fn, loss_fn_config=config),
        model_id="sess-1:train:0", seq_id=seq_id)
    message = forward_backward_request_to_proto(request)
    message.forward_only = forward_only
    return message.SerializeToString().hex()

print(json.dumps({
    "ppo": encode([text, with_images], "ppo", {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}, 1, False),
    "forward": encode([text], "custom", {"loss_id": "loss-7", "beta": 0.25}, 2, True),
}))
`;

// What the SDK's future hands back to its caller, via the dispatcher api_future_impl uses.
const SDK_RESPONSES = `
import json, sys
from tinker.proto.response_conv import deserialize_proto_response
from tinker.types import ForwardBackwardOutput, SampleResponse

given = json.load(sys.stdin)
fbo = deserialize_proto_response(bytes.fromhex(given["forward_backward"]), ForwardBackwardOutput)
sample = deserialize_proto_response(bytes.fromhex(given["sample"]), SampleResponse)
print(json.dumps({
    "forward_backward": {
        "loss_fn_output_type": fbo.loss_fn_output_type,
        "loss_fn_outputs": [
            {name: {"values": t.tolist(), "dtype": t.dtype, "shape": t.shape} for name, t in datum.items()}
            for datum in fbo.loss_fn_outputs
        ],
        "metrics": fbo.metrics,
    },
    "sample": {
        "sequences": [{"tokens": s.tokens, "logprobs": s.logprobs, "stop_reason": s.stop_reason} for s in sample.sequences],
        "prompt_logprobs": sample.prompt_logprobs,
    },
}))
`;

const f32 = (values: number[]) => values.map(Math.fround);

describe('tinker protobuf codec against SDK 0.38', () => {
  it('decodes the forward_backward requests the SDK encodes', async () => {
    const hex = JSON.parse(await python(SDK_REQUESTS)) as Record<'ppo' | 'forward', string>;

    expect(decodeForwardBackwardRequest(Buffer.from(hex.ppo, 'hex'))).toEqual({
      model_id: 'sess-1:train:0',
      seq_id: 1,
      loss_fn: 'ppo',
      loss_fn_config: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
      forward_only: false,
      data: [
        {
          model_input: { chunks: [{ type: 'encoded_text', tokens: [101, 7, 70000] }] },
          loss_fn_inputs: {
            target_tokens: { data: [7, 70000, 2 ** 40], dtype: 'int64', shape: [3] },
            weights: { data: [1, 0.5, 0], dtype: 'float32', shape: [3] },
            logprobs: { data: f32([-0.1, -2.5, -0.75]), dtype: 'float32', shape: [3] },
            advantages: { data: [0.5, -0.5, 1], dtype: 'float32', shape: [3] },
          },
        },
        {
          model_input: {
            chunks: [
              { type: 'image', format: 'png', expected_tokens: 4, data: Buffer.from('\x89PNG\r\n', 'latin1').toString('base64') },
              { type: 'encoded_text', tokens: [5, 6] },
              { type: 'image', format: 'jpeg', expected_tokens: null, data: Buffer.from([0xff, 0xd8, 0xff]).toString('base64') },
            ],
          },
          loss_fn_inputs: {
            target_tokens: { data: [5, 9, 6, 8], dtype: 'int64', shape: [2, 2] },
            weights: { data: [0.75, 0.25, 1, 0], dtype: 'float32', shape: [2, 2] },
            advantages: { data: [0, 0, 3, 4, 0, 0], dtype: 'float32', shape: [2, 3] },
          },
        },
      ],
    });

    const forward = decodeForwardBackwardRequest(Buffer.from(hex.forward, 'hex'));
    expect(forward).toMatchObject({ seq_id: 2, loss_fn: 'custom', forward_only: true, loss_fn_config: { loss_id: 'loss-7', beta: 0.25 } });
    expect(forward.data).toHaveLength(1);
  });

  it('encodes a ForwardBackwardOutput and a SampleResponse the SDK reads back', async () => {
    const output: ForwardBackwardResult = {
      loss_fn_outputs: [
        { logprobs: [-0.5, -1.25, -0.1], topk_logprobs: [[-0.5, -3], [-1.25, -2]] },
        { logprobs: [-2], topk_logprobs: [[-2, -4]] },
        { logprobs: [], topk_logprobs: [] },
      ],
      metrics: { 'loss:sum': 3.85, 'ppo_clip_fraction:mean': 0.25 },
    };
    const sample: SampleResult = {
      sequences: [
        { tokens: [10, 70000, 2], logprobs: [-0.5, -0.1, -1.5], stop_reason: 'stop' },
        { tokens: [11], logprobs: null, stop_reason: 'length' },
      ],
      prompt_logprobs: [null, -2.5, -0.3],
    };
    const stdin = JSON.stringify({
      forward_backward: Buffer.from(encodeForwardBackwardOutput(output)).toString('hex'),
      sample: Buffer.from(encodeSampleResponse(sample)).toString('hex'),
    });

    const read = JSON.parse(await python(SDK_RESPONSES, stdin));

    expect(read.forward_backward).toEqual({
      loss_fn_output_type: 'ArrayRecord',
      loss_fn_outputs: [
        {
          logprobs: { values: f32([-0.5, -1.25, -0.1]), dtype: 'float32', shape: [3] },
          topk_logprobs: { values: [[-0.5, -3], [-1.25, -2]], dtype: 'float32', shape: [2, 2] },
        },
        { logprobs: { values: [-2], dtype: 'float32', shape: [1] }, topk_logprobs: { values: [[-2, -4]], dtype: 'float32', shape: [1, 2] } },
        { logprobs: { values: [], dtype: 'float32', shape: [0] }, topk_logprobs: { values: [], dtype: 'float32', shape: [0, 2] } },
      ],
      metrics: { 'loss:sum': 3.85, 'ppo_clip_fraction:mean': 0.25 },
    });
    expect(read.sample).toEqual({
      sequences: [
        { tokens: [10, 70000, 2], logprobs: f32([-0.5, -0.1, -1.5]), stop_reason: 'stop' },
        { tokens: [11], logprobs: null, stop_reason: 'length' },
      ],
      prompt_logprobs: [null, -2.5, Math.fround(-0.3)],
    });
  });

  it('rejects malformed input with the place that is wrong', () => {
    expect(() => decodeForwardBackwardRequest(Uint8Array.from([0x0a, 0xff]))).toThrow(/not a protobuf ForwardBackwardRequest/);
    // data[0].model_input[0].encoded_text.tokens = 3 bytes, not a whole int32.
    expect(() => decodeForwardBackwardRequest(Buffer.from('1a090a070a050a03010203', 'hex'))).toThrow(
      'data[0].model_input[0].tokens: 3 bytes is not a whole number of int32 values',
    );
    expect(() => encodeForwardBackwardOutput({ loss_fn_outputs: [{ logprobs: [-1] }, { logprobs: [[-1, -2]] }], metrics: {} })).toThrow(
      /trailing shape \[2\], an earlier datum \[\]/,
    );
  });
});
