// The protobuf bodies of the tinker API (docs/tinker-wire.md §3.4, §4.2, §5): the SDK's ForwardBackwardRequest in,
// ForwardBackwardOutput and SampleResponse out, as plain JSON shapes so nothing past this file sees bytes or protobufjs.
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

export interface TensorJson {
  data: number[];
  dtype: 'int64' | 'float32';
  shape: number[];
}

export type ModelInputChunk =
  | { type: 'encoded_text'; tokens: number[] }
  | { type: 'image'; format: string; expected_tokens: number | null; data: string /* base64 */ };

export interface ForwardBackwardCall {
  model_id: string;
  seq_id: number;
  loss_fn: string;
  loss_fn_config: Record<string, number | string> | null;
  forward_only: boolean;
  data: Array<{ model_input: { chunks: ModelInputChunk[] }; loss_fn_inputs: Record<string, TensorJson> }>;
}

export interface ForwardBackwardResult {
  loss_fn_outputs: Array<Record<string, number[] | number[][]>>;
  metrics: Record<string, number>;
}

export interface SampleResult {
  sequences: Array<{ tokens: number[]; logprobs: number[] | null; stop_reason: 'stop' | 'length' }>;
  prompt_logprobs: Array<number | null> | null;
}

// keepCase: the messages keep the schema's snake_case names, the same as the JSON the rest of the API speaks.
const schema = new protobuf.Root().loadSync(fileURLToPath(new URL('./tinker.proto', import.meta.url)), { keepCase: true });
const ForwardBackwardRequest = schema.lookupType('tinker_public.ForwardBackwardRequest');
const ForwardBackwardOutput = schema.lookupType('tinker_public.ForwardBackwardOutput');
const SampleResponse = schema.lookupType('tinker_public.SampleResponse');

/** A decoded ForwardBackwardRequest as protobufjs's toObject gives it with the options below. */
interface WireRequest {
  model_id: string;
  seq_id: number;
  loss_fn: string;
  forward_only: boolean;
  loss_fn_config: Record<string, number>;
  loss_fn_config_v2: Record<string, { number?: number; text?: string }>;
  data: Array<{ model_input: WireChunk[]; loss_fn_inputs: Record<string, WireTensor> }>;
}
interface WireChunk {
  encoded_text?: { tokens: Uint8Array };
  image?: { data: Uint8Array; format: string; expected_tokens?: number };
  dmel?: object;
}
interface WireTensor {
  dense?: Uint8Array;
  sparse_csr?: { values: Uint8Array; crow_indices: Uint8Array; col_indices: Uint8Array };
  dtype: string;
  shape: number[];
}

export function decodeForwardBackwardRequest(body: Uint8Array): ForwardBackwardCall {
  let message: protobuf.Message;
  try {
    message = ForwardBackwardRequest.decode(body);
  } catch (err) {
    throw new Error(`the body is not a protobuf ForwardBackwardRequest: ${(err as Error).message}`);
  }
  const wire = ForwardBackwardRequest.toObject(message, { longs: Number, enums: String, defaults: true }) as WireRequest;
  return {
    model_id: wire.model_id,
    seq_id: wire.seq_id,
    loss_fn: wire.loss_fn,
    loss_fn_config: lossFnConfig(wire),
    forward_only: wire.forward_only,
    data: wire.data.map((datum, i) => ({
      model_input: { chunks: datum.model_input.map((chunk, j) => chunkFromWire(chunk, `data[${i}].model_input[${j}]`)) },
      loss_fn_inputs: Object.fromEntries(
        Object.entries(datum.loss_fn_inputs).map(([name, tensor]) => [name, tensorFromWire(tensor, `data[${i}].loss_fn_inputs.${name}`)]),
      ),
    })),
  };
}

/** The SDK's side of decodeForwardBackwardRequest, for tests that speak its wire: encoded_text chunks and dense tensors
 *  only; a config goes out as the SDK writes it (numbers in both maps, strings in v2 alone). */
export function encodeForwardBackwardRequest(call: ForwardBackwardCall): Uint8Array {
  const config = Object.entries(call.loss_fn_config ?? {});
  return encode(ForwardBackwardRequest, {
    model_id: call.model_id, seq_id: call.seq_id, loss_fn: call.loss_fn, forward_only: call.forward_only,
    loss_fn_config: Object.fromEntries(config.filter(([, value]) => typeof value === 'number')),
    loss_fn_config_v2: Object.fromEntries(config.map(([key, value]) => [key, typeof value === 'number' ? { number: value } : { text: value }])),
    data: call.data.map((datum, i) => ({
      model_input: datum.model_input.chunks.map((chunk, j) => {
        if (chunk.type !== 'encoded_text') throw new Error(`data[${i}].model_input[${j}]: only encoded_text chunks are encoded here`);
        return { encoded_text: { tokens: pack(chunk.tokens, 'int32') } };
      }),
      loss_fn_inputs: Object.fromEntries(Object.entries(datum.loss_fn_inputs).map(([name, t]) => [name, { dense: pack(t.data, t.dtype), dtype: t.dtype === 'int64' ? 'DTYPE_INT64' : 'DTYPE_FLOAT32', shape: t.shape }])),
    })),
  });
}

/** One ArrayRecord for the whole batch, each field a float32 BatchedTensor, as the SDK's own server writes it. */
export function encodeForwardBackwardOutput(out: ForwardBackwardResult): Uint8Array {
  const names = Object.keys(out.loss_fn_outputs[0] ?? {});
  out.loss_fn_outputs.forEach((datum, i) => {
    const keys = Object.keys(datum);
    if (keys.length !== names.length || keys.some((key) => !names.includes(key))) {
      throw new Error(`loss_fn_outputs[${i}] has fields [${keys}], datum 0 has [${names}]: every datum needs the same fields`);
    }
  });
  const fields = Object.fromEntries(names.map((name) => [name, batchedTensor(name, out.loss_fn_outputs.map((datum) => datum[name]!))]));
  return encode(ForwardBackwardOutput, {
    loss_fn_output_type: 'ArrayRecord',
    loss_fn_outputs: [{ type_tag: 'ArrayRecord', fields, num_datums: out.loss_fn_outputs.length }],
    metrics: out.metrics,
  });
}

export function encodeSampleResponse(result: SampleResult): Uint8Array {
  return encode(SampleResponse, {
    sequences: result.sequences.map((sequence) => ({
      stop_reason: sequence.stop_reason === 'length' ? 'STOP_REASON_LENGTH' : 'STOP_REASON_STOP',
      tokens: pack(sequence.tokens, 'int32'),
      ...(sequence.logprobs && { logprobs: pack(sequence.logprobs, 'float32') }),
    })),
    // The SDK reads NaN back as None (the first prompt token has no logprob).
    ...(result.prompt_logprobs && { prompt_logprobs: pack(result.prompt_logprobs.map((lp) => lp ?? NaN), 'float32') }),
  });
}

function encode(type: protobuf.Type, value: object): Uint8Array {
  return type.encode(type.fromObject(value)).finish();
}

function lossFnConfig(wire: WireRequest): Record<string, number | string> | null {
  const config: Record<string, number | string> = { ...wire.loss_fn_config };
  // v2 repeats every number of the legacy map and alone carries strings; the SDK says servers prefer it.
  for (const [key, value] of Object.entries(wire.loss_fn_config_v2)) {
    const setting = value.number ?? value.text;
    if (setting === undefined) throw new Error(`loss_fn_config_v2.${key} holds neither a number nor a text`);
    config[key] = setting;
  }
  return Object.keys(config).length > 0 ? config : null;
}

function chunkFromWire(chunk: WireChunk, where: string): ModelInputChunk {
  if (chunk.encoded_text) return { type: 'encoded_text', tokens: unpack(chunk.encoded_text.tokens, 'int32', `${where}.tokens`) };
  if (chunk.image) {
    const { data, format, expected_tokens } = chunk.image;
    return { type: 'image', format, expected_tokens: expected_tokens ?? null, data: Buffer.from(data).toString('base64') };
  }
  throw new Error(`${where}: ${chunk.dmel ? 'dmel (audio) chunks are not supported' : 'the chunk holds nothing'}`);
}

const TENSOR_DTYPES: Record<string, TensorJson['dtype']> = { DTYPE_FLOAT32: 'float32', DTYPE_INT64: 'int64' };

function tensorFromWire(tensor: WireTensor, where: string): TensorJson {
  const dtype = TENSOR_DTYPES[tensor.dtype];
  if (!dtype) throw new Error(`${where}: dtype ${tensor.dtype} is not DTYPE_FLOAT32 or DTYPE_INT64`);
  let data: number[];
  if (tensor.sparse_csr) data = denseFromCsr(tensor.sparse_csr, dtype, tensor.shape, where);
  else if (tensor.dense) data = unpack(tensor.dense, dtype, where);
  else throw new Error(`${where}: the tensor has neither dense nor sparse_csr data`);
  // A TensorData made without a shape goes out with none; the SDK means 1-D by it.
  const shape = tensor.shape.length > 0 ? tensor.shape : [data.length];
  if (shape.reduce((a, b) => a * b, 1) !== data.length) throw new Error(`${where}: shape [${shape}] does not hold ${data.length} values`);
  return { data, dtype, shape };
}

/** The SDK sends a 2-D target_tokens or weights as CSR when that is smaller; entries left out are 0 (its pad value). */
function denseFromCsr(csr: NonNullable<WireTensor['sparse_csr']>, dtype: TensorJson['dtype'], shape: number[], where: string): number[] {
  const values = unpack(csr.values, dtype, `${where}.values`);
  const rowStarts = unpack(csr.crow_indices, 'int64', `${where}.crow_indices`);
  const columns = unpack(csr.col_indices, 'int64', `${where}.col_indices`);
  const [rows = 0, width = 0] = shape;
  const valid =
    shape.length === 2 &&
    rowStarts.length === rows + 1 &&
    rowStarts[0] === 0 &&
    rowStarts[rows] === values.length &&
    columns.length === values.length &&
    rowStarts.every((start, r) => r === 0 || start >= rowStarts[r - 1]!) &&
    columns.every((column) => column >= 0 && column < width);
  if (!valid) throw new Error(`${where}: the sparse CSR indices do not describe shape [${shape}] with ${values.length} values`);
  const dense = new Array<number>(rows * width).fill(0);
  for (let r = 0; r < rows; r++) {
    for (let j = rowStarts[r]!; j < rowStarts[r + 1]!; j++) dense[r * width + columns[j]!] = values[j]!;
  }
  return dense;
}

/** Datum i's values sit at byte offsets [offsets[i], offsets[i + 1]) of data; trailing_shape gives the inner dims. */
function batchedTensor(name: string, arrays: Array<number[] | number[][]>): object {
  const flat: number[][] = [];
  const offsets = [0];
  let trailing: number[] | undefined;
  arrays.forEach((array, i) => {
    const rows = array.filter(Array.isArray);
    if (rows.length > 0 && rows.length !== array.length) throw new Error(`loss_fn_outputs[${i}].${name} mixes numbers and rows`);
    const width = rows[0]?.length;
    if (rows.some((row) => row.length !== width)) throw new Error(`loss_fn_outputs[${i}].${name} has rows of different lengths`);
    const shape = width === undefined ? [] : [width];
    // An empty array fits any trailing shape; the rest of one record must share one.
    if (array.length > 0) {
      trailing ??= shape;
      if (shape.join() !== trailing.join()) {
        throw new Error(`loss_fn_outputs[${i}].${name} has trailing shape [${shape}], an earlier datum [${trailing}]`);
      }
    }
    const values = array.flat();
    flat.push(values);
    offsets.push(offsets[i]! + values.length * ELEMENT.float32.size);
  });
  return { data: pack(flat.flat(), 'float32'), offsets: pack(offsets, 'int64'), dtype: 'DTYPE_FLOAT32', trailing_shape: trailing ?? [] };
}

type ElementType = 'int32' | 'int64' | 'float32';

// Every bytes field of this schema is little-endian, whatever the machine.
const ELEMENT: Record<ElementType, { size: number; read(view: DataView, at: number): number; write(view: DataView, at: number, value: number): void }> = {
  int32: { size: 4, read: (view, at) => view.getInt32(at, true), write: (view, at, value) => view.setInt32(at, value, true) },
  int64: { size: 8, read: (view, at) => Number(view.getBigInt64(at, true)), write: (view, at, value) => view.setBigInt64(at, BigInt(value), true) },
  float32: { size: 4, read: (view, at) => view.getFloat32(at, true), write: (view, at, value) => view.setFloat32(at, value, true) },
};

function unpack(bytes: Uint8Array, type: ElementType, where: string): number[] {
  const { size, read } = ELEMENT[type];
  if (bytes.byteLength % size !== 0) throw new Error(`${where}: ${bytes.byteLength} bytes is not a whole number of ${type} values`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values = Array.from({ length: bytes.byteLength / size }, (_, i) => read(view, i * size));
  if (type === 'int64' && !values.every(Number.isSafeInteger)) throw new Error(`${where}: an int64 is beyond a JS number's exact range`);
  return values;
}

function pack(values: readonly number[], type: ElementType): Uint8Array {
  const { size, write } = ELEMENT[type];
  const bytes = new Uint8Array(values.length * size);
  const view = new DataView(bytes.buffer);
  values.forEach((value, i) => write(view, i * size, value));
  return bytes;
}
