// The process llama.cpp runs in (engine-process.ts starts it): `engine-process-main.ts OPTIONS` serves generate
// requests over IPC with a FastEngine that keeps models warm; `engine-process-main.ts --probe '{"model","lora"?}'`
// loads a model (and a LoRA adapter over it) and exits 0, or dies as llama.cpp makes it die. Either exits when the
// worker goes (its IPC channel closes). The kernel is asked to kill it before anything else when memory runs out.
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { childOfWorker } from '../child-process.ts';
import { FastEngine, type FastEngineOptions } from './engine.ts';
import type { EngineMessage, EngineRequest } from './engine-process.ts';
import { EngineRefusal } from './refusals.ts';

childOfWorker();

const send = (message: EngineMessage) => process.send?.(message);

async function probe(spec: { model: string; lora?: string; gpu?: 'auto' | false }): Promise<void> {
  const llama = await getLlama({ build: 'never', gpu: spec.gpu ?? 'auto', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: spec.model });
  if (spec.lora) {
    const context = await model.createContext({ contextSize: 64, lora: { adapters: [{ filePath: spec.lora }] } });
    await context.dispose();
  }
  // Tokenizing and detokenizing a line is where a vocabulary llama.cpp misreads aborts it (a byte piece it lacks).
  model.detokenize(model.tokenize('Hello, world!\n'));
  await model.dispose();
  await llama.dispose();
}

async function serve(options: FastEngineOptions): Promise<void> {
  const engine = await FastEngine.create(options);
  const running = new Map<string, AbortController>();
  process.on('message', (message: EngineRequest) => {
    if (message.type === 'cancel') {
      running.get(message.id)?.abort(new Error(message.reason));
      return;
    }
    const controller = new AbortController();
    running.set(message.id, controller);
    const { id } = message;
    engine
      .generate({
        ...message.request,
        signal: controller.signal,
        onCancelled: (decodedTokens) => send({ type: 'cancelled', id, decodedTokens }),
        ...(message.stream ? { onText: (index: number, delta: string) => send({ type: 'text', id, index, delta }) } : {}),
      })
      .then(
        (generations) => send({ type: 'result', id, generations }),
        (err: Error) => send({ type: 'error', id, message: err.message, ...(err instanceof EngineRefusal ? { kind: err.kind } : {}) }),
      )
      .finally(() => running.delete(id));
  });
  send({ type: 'ready' });
}

const [first, second] = process.argv.slice(2);
if (first === '--probe') {
  await probe(JSON.parse(second!) as { model: string; lora?: string; gpu?: 'auto' | false });
  process.exit(0);
} else {
  await serve(JSON.parse(first ?? '{}') as FastEngineOptions);
}
