// llama.cpp runs outside the process that serves requests (#45), checked on this worker's shared embedded stack: after
// a chat on the fast engine, libllama is not mapped into the stack's own process but into a child of it, and a
// SIGKILL of that child leaves the stack answering the next chat, with the same greedy text, from a new engine.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { sharedStack, type SharedStack } from './support/shared-stack.ts';
import { TINY_MODEL } from './support/tiny-model.ts';

let stack: SharedStack;
let client: OpenAI;

beforeAll(async () => {
  stack = await sharedStack();
  client = new OpenAI({ apiKey: await stack.token('engine-isolation'), baseURL: `${stack.urls.openai}/v1`, maxRetries: 0 });
}, 300_000);

const chat = async () => (await client.chat.completions.create({ model: TINY_MODEL, temperature: 0, max_tokens: 12, messages: [{ role: 'user', content: 'Say hi.' }] })).choices[0]!.message.content;

/** The stack's children that run the fast engine (engine-process-main.ts). */
function engineChildren(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(stack.pid)]).toString();
  return out.split('\n').filter((line) => line.includes('engine-process-main.ts') && !line.includes('--probe')).map((line) => Number(line.trim().split(/\s+/)[0]));
}

const mapsLlama = (pid: number) => readFileSync(`/proc/${pid}/maps`, 'utf8').includes('libllama');

describe('the fast engine in a process of its own', () => {
  it('maps llama.cpp outside the stack, and a SIGKILL of it costs the next chat nothing but a restart', async () => {
    const first = await chat();
    const [engine, ...more] = engineChildren();
    expect(engine, 'no engine process under the stack').toBeGreaterThan(0);
    expect(more).toEqual([]);
    expect(mapsLlama(engine!)).toBe(true);
    expect(mapsLlama(stack.pid)).toBe(false);
    process.kill(engine!, 'SIGKILL');
    expect(await chat()).toBe(first);
    const [restarted] = engineChildren();
    expect(restarted).toBeGreaterThan(0);
    expect(restarted).not.toBe(engine);
  });
});
