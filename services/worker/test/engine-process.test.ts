// llama.cpp in a process of its own (#45), for real: a GGUF that makes the real llama.cpp abort (its vocabulary says
// SentencePiece over byte-level pieces: std::out_of_range, SIGABRT), and a SIGKILL of the engine process while it
// decodes. Each fails only what it must; this process (the worker's; in the embedded default, the whole stack's) goes
// on, and the next request is answered.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineCrashed, EngineProcess } from '../src/fast-engine/engine-process.ts';
import type { GenerateRequest } from '../src/fast-engine/index.ts';

const CORE = fileURLToPath(new URL('../../../core/', import.meta.url));
let root: string;
let engine: EngineProcess;
let good: GenerateRequest;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'engine-process-'));
  execFileSync('uv', ['run', '--frozen', 'python', fileURLToPath(new URL('./engine-process-fixtures.py', import.meta.url)), root], { cwd: CORE, stdio: ['ignore', 'ignore', 'pipe'] });
  good = { modelPath: join(root, 'good.gguf'), conversations: [[{ role: 'user', content: 'Say something.' }]], options: { maxNewTokens: 16 } };
  engine = new EngineProcess({ gpu: false, threads: 1 });
}, 180_000);

afterAll(async () => {
  await engine?.dispose();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('llama.cpp in a process of its own', () => {
  it('a model llama.cpp aborts on fails its request with the reason, and nothing else', async () => {
    const before = await engine.generate(good);
    const pid = engine.pid;
    expect(pid).toBeGreaterThan(0);
    expect(pid).not.toBe(process.pid);
    const refused = await engine.generate({ ...good, modelPath: join(root, 'aborts.gguf') }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(EngineCrashed);
    expect((refused as Error).message).toMatch(/cannot load .*aborts\.gguf \(its probe process (was killed by SIGABRT|exited with code 134).*out_of_range/);
    // The engine process was never touched: the same one answers, with the same greedy text.
    expect(await engine.generate(good)).toEqual(before);
    expect(engine.pid).toBe(pid);
    // Asked again, the file is not probed again: refused at once, the same way.
    await expect(engine.generate({ ...good, modelPath: join(root, 'aborts.gguf') })).rejects.toThrow(/cannot load/);
  });

  it('a SIGKILL mid-request fails what had streamed, tries again what had not, and the next request gets a new engine', async () => {
    const long: GenerateRequest = { ...good, conversations: Array.from({ length: 8 }, (_, i) => [{ role: 'user' as const, content: `Tell a long story, number ${i}.` }]), options: { maxNewTokens: 400 } };
    const alone = await engine.generate(long);
    const killed = engine.pid!;
    const quiet = engine.generate(long); // in flight at the kill, nothing streamed: tried again on a new engine
    let streamedText = '';
    const streamed = engine.generate({
      ...long,
      onText: (_index, delta) => {
        if (streamedText === '') process.kill(killed, 'SIGKILL');
        streamedText += delta;
      },
    }).catch((err: unknown) => err);
    const failure = await streamed;
    expect(failure).toBeInstanceOf(EngineCrashed);
    expect((failure as Error).message).toMatch(/^the engine restarted: llama\.cpp's process was killed by SIGKILL.* while it ran .*good\.gguf$/);
    expect(await quiet).toEqual(alone);
    expect(engine.pid).toBeGreaterThan(0);
    expect(engine.pid).not.toBe(killed);
    expect(await engine.generate(long)).toEqual(alone);
  });
});
