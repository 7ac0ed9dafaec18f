// The supervised child itself, over both transports, with children that take a moment to start: answers routed by id
// whatever their order, a killed child's requests failed with how it ended and its stderr's last line, the next
// request answered by a new child, and dispose.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ending, forkTypeScript, jsonLines, SupervisedChild, why, type ChildLink } from '../src/supervised-child.ts';

type Ask = { id: string; text: string; delay: number };
type Said = { ready: true } | { id: string; text: string };

const FIXTURE = fileURLToPath(new URL('./supervised-child-fixture.ts', import.meta.url));
// The same child as the fixture, over stdin and stdout.
const STDIO_CHILD = `process.stderr.write('fixture child started\\n');
const lines = require('node:readline').createInterface({ input: process.stdin });
lines.on('line', (l) => { const m = JSON.parse(l); setTimeout(() => console.log(JSON.stringify({ id: m.id, text: m.text.toUpperCase() })), m.delay); });
lines.on('close', () => process.exit(0));
console.log(JSON.stringify({ ready: true }));`;

const TRANSPORTS: Array<[string, () => ChildLink<Ask, Said>]> = [
  ['Node IPC', () => forkTypeScript<Ask, Said>(FIXTURE, [])],
  ['JSON lines over stdio', () => {
    const child = spawn(process.execPath, ['-e', STDIO_CHILD], { stdio: ['pipe', 'pipe', 'pipe'] });
    const stderr: string[] = [];
    child.stderr.on('data', (chunk: Buffer) => stderr.push(...chunk.toString().split('\n')));
    return jsonLines<Ask, Said>(child, stderr, (line) => JSON.parse(line) as Said);
  }],
];

let child: SupervisedChild<Ask, Said, { text: string; delay: number }, string> | undefined;
afterEach(() => child?.dispose());

describe.each(TRANSPORTS)('over %s', (_name, start) => {
  const supervised = () => new SupervisedChild<Ask, Said, { text: string; delay: number }, string>({
    start,
    isReady: (message) => 'ready' in message,
    receive: (message, held) => 'text' in message && held?.resolve(message.text),
    onEnd: (end, stderr) => () => new Error(`the child ${ending(end)}${why(stderr)}`),
    closed: () => new Error('closed'),
    stop: { killAfterMs: 1_000 },
  });
  const ask = (text: string, delay = 0) => child!.request({ text, delay }, ({ id, state }) => ({ id, ...state })).answer;

  it('routes each answer to its request by id, and restarts after a kill with the reason', async () => {
    child = supervised();
    expect(await Promise.all([ask('slow', 300), ask('fast')])).toEqual(['SLOW', 'FAST']);
    const pid = child.pid!;
    const pending = ask('never', 60_000).catch((err: Error) => err.message);
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.kill(pid, 'SIGKILL');
    expect(await pending).toBe('the child was killed by SIGKILL: fixture child started');
    expect(await ask('again')).toBe('AGAIN');
    expect(child.pid).not.toBe(pid);
  });

  it('dispose fails what is held and every later request', async () => {
    child = supervised();
    const pending = ask('never', 60_000).catch((err: Error) => err.message);
    await child.dispose();
    expect(await pending).toBe('closed');
    await expect(ask('late')).rejects.toThrow('closed');
  });
});
