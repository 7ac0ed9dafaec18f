// README.md as a newcomer runs it: every shell and Python block, in order, against this worker's shared embedded stack
// (test/support/shared-stack.ts) on the tiny model, from a folder laid out like a fresh clone. Commands run as written
// but for what the README leaves to the reader: the ports are the stack's (`localhost:8001` …), an id placeholder
// (`ds_…`, `pd_…`, `job_…`, `exp_…`) is the id an earlier answer gave, and the stack's credential comes from where
// a user would keep one (curl's config file, FTUNE_API_KEY, the client's api_key placeholder), as it runs with
// AUTH_MODE=jwt. A block marked `<!-- readme-test: skip: reason -->` is left out, and said so. An answer the README
// shows (`# → …`) must match what the command printed: its shape, and every value written out.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CORE_PYTHON } from '@ftp/core-client';
import { answerDifference, readmeBlocks, shellSteps, type Block, type Step } from './support/readme-blocks.ts';
import { sharedStack, type SharedStack } from './support/shared-stack.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BLOCKS = readmeBlocks(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
const DEFAULT_PORTS = { preprocessing: 8001, training: 8002, export: 8003, inference: 8004, openai: 8000, tinker: 8005 } as const;
const ID = /\b(ds|pd|job|exp|evalrun|cmp|sweep)_[0-9a-f]{24}\b/g;
const TOOLS_PYTHON = path.join(ROOT, 'test', 'tools', '.venv', 'bin', 'python');

let stack: SharedStack;
let token: string;
/** The fresh clone: the repository's files, linked, and nothing the README makes. */
let clone: string;
let shell: Shell;
/** The latest id each answer gave, by prefix: what `pd_…` in a later command stands for. */
const ids = new Map<string, string>();

/** One bash process for every shell block, so what a block sets (PATH, a function) holds for the next ones. */
class Shell {
  private readonly child: ChildProcessWithoutNullStreams;
  private stdout = '';
  private stderr = '';
  private waiting: (() => void) | undefined;

  constructor(cwd: string, env: Record<string, string>) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env: { ...process.env, ...env } });
    this.child.stdout.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      this.waiting?.();
    });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }

  /** Runs one command (its stdin empty, so nothing reads the script) and returns its status and output. */
  async run(command: string): Promise<{ status: number; stdout: string; stderr: string }> {
    this.stdout = '';
    this.stderr = '';
    this.child.stdin.write(`{\n${command}\n} </dev/null\nprintf '\\n@@readme-step %s@@\\n' "$?"\n`);
    for (;;) {
      const done = /\n@@readme-step (\d+)@@\n$/.exec(this.stdout);
      if (done) return { status: Number(done[1]), stdout: this.stdout.slice(0, done.index), stderr: this.stderr };
      if (this.child.exitCode !== null) throw new Error(`the shell exited (${this.child.exitCode}):\n${this.stderr}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  close(): void {
    this.child.stdin.end();
  }
}

/** The command as it runs here: the stack's ports, and ids from earlier answers in place of the placeholders. */
function filled(text: string): string {
  let out = text;
  for (const [service, port] of Object.entries(DEFAULT_PORTS)) {
    const actual = new URL(stack.urls[service as keyof typeof DEFAULT_PORTS]).port;
    out = out.replace(new RegExp(`(localhost|127\\.0\\.0\\.1):${port}\\b`, 'g'), `$1:${actual}`);
  }
  out = out.replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `$1:${new URL(stack.consoleUrl).port}`);
  return out.replace(/\b(ds|pd|job|exp|evalrun|cmp|sweep)_…/g, (placeholder, prefix: string) => {
    const id = ids.get(prefix);
    if (!id) throw new Error(`${placeholder}: no earlier answer gave an id of that kind`);
    return id;
  });
}

function remember(output: string): void {
  const first = new Map<string, string>();
  for (const [id, prefix] of output.matchAll(ID)) if (!first.has(prefix!)) first.set(prefix!, id);
  for (const [prefix, id] of first) ids.set(prefix, id);
}

async function runStep(step: Step): Promise<void> {
  const where = `README.md line ${step.line}: ${step.command.split('\n')[0]}`;
  const started = performance.now();
  const { status, stdout, stderr } = await shell.run(filled(step.command));
  console.log(`[readme] line ${step.line}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  expect(status, `${where}\nexit ${status}\n${stdout}\n${stderr}`).toBe(0);
  if (step.expected !== undefined) {
    const differs = answerDifference(step.expected, stdout.trim());
    expect(differs, `${where}: the answer is not the README's\n${stdout}`).toBeUndefined();
  }
  for (const claim of CLAIMS) if (claim.when.test(step.command)) claim.check(stdout, where);
  // GET /workers names the work of every user: not an answer this reader's ids come from.
  if (!/\/workers\b/.test(step.command)) remember(stdout);
}

/** What the README says beside an answer that its `# →` pattern cannot state, checked where it says it (#38). */
const CLAIMS: { when: RegExp; check: (stdout: string, where: string) => void }[] = [
  {
    // "… which the base model alone could not know: it makes someone up" — and it answers in sentences, not bytes.
    when: /\/inference\/batch[\s\S]*"model_source": "base"/,
    check(stdout, where) {
      const results = JSON.parse(stdout).results as string[];
      expect(results[0], `${where}: the base model knew what only training taught`).not.toContain('Mara Voss');
      for (const answer of results) expect(answer, `${where}: not a sentence`).toMatch(/^[A-Z][a-z]*( [A-Za-z',.-]+){3,}/);
    },
  },
];

async function runPython(block: Block): Promise<void> {
  const code = filled(block.code).replace('<an API key, or anything with AUTH_MODE=none>', token);
  const file = path.join(clone, `readme-line-${block.line}.py`);
  await fsp.writeFile(file, code);
  // The core's interpreter has the `openai` package a user would install with pip; test/tools' has the `tinker` SDK
  // (whose transformers 5 the core's pins cannot share).
  const python = /^import tinker\b/m.test(code) ? TOOLS_PYTHON : (process.env.CORE_PYTHON ?? DEFAULT_CORE_PYTHON);
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(python, [file], { cwd: clone });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  expect(run.code, `README.md line ${block.line} (python)\n${run.stdout}\n${run.stderr}`).toBe(0);
  if (python === TOOLS_PYTHON) await expectTinkerPathsServed(block);
  // Each `# → …` is a line the script prints, in order.
  const printed = run.stdout.trim().split('\n');
  let from = 0;
  for (const expected of block.code.split('\n').flatMap((l) => /^#\s*→\s?(.*)$/.exec(l.trim())?.[1] ?? [])) {
    const at = printed.findIndex((line, i) => i >= from && answerDifference(expected, line) === undefined);
    expect(at, `README.md line ${block.line}: no printed line shows ${JSON.stringify(expected)}\n${run.stdout}`).toBeGreaterThanOrEqual(0);
    from = at + 1;
  }
  remember(run.stdout);
}

/** Every path the tinker SDK hit while the block ran is served: no 404 or 501 in the stack's request log (Fastify's
 *  "incoming request" and "request completed" lines, paired by request id), as sdk.test.ts checks for its loops (#60). */
async function expectTinkerPathsServed(block: Block): Promise<void> {
  const asked = new Map<string, string>();
  const unserved: string[] = [];
  let hits = 0;
  for (const line of (await stack.output()).split('\n')) {
    if (!line.startsWith('{') || !line.includes('/api/v1/') && !line.includes('request completed')) continue;
    const entry = JSON.parse(line) as { reqId?: string; msg?: string; req?: { method: string; url: string }; res?: { statusCode: number } };
    if (!entry.reqId) continue;
    if (entry.msg === 'incoming request' && entry.req?.url.startsWith('/api/v1/')) asked.set(entry.reqId, `${entry.req.method} ${entry.req.url}`);
    const request = asked.get(entry.reqId);
    if (entry.msg === 'request completed' && request) {
      hits++;
      if (entry.res?.statusCode === 404 || entry.res?.statusCode === 501) unserved.push(`${request} → ${entry.res.statusCode}`);
    }
  }
  expect(hits, `README.md line ${block.line}: no Tinker request in the stack's log`).toBeGreaterThan(0);
  expect(unserved, `README.md line ${block.line}: paths the tinker SDK hit that the service does not serve`).toEqual([]);
}

beforeAll(async () => {
  stack = await sharedStack();
  token = await stack.token('readme-user');
  clone = await fsp.mkdtemp(path.join(os.tmpdir(), 'ftp-readme-'));
  for (const entry of await fsp.readdir(ROOT)) {
    if (!['.git', 'data'].includes(entry)) await fsp.symlink(path.join(ROOT, entry), path.join(clone, entry));
  }
  const curlHome = path.join(clone, '.curl');
  await fsp.mkdir(curlHome);
  await fsp.writeFile(path.join(curlHome, '.curlrc'), `header = "Authorization: Bearer ${token}"\n`);
  shell = new Shell(clone, {
    CURL_HOME: curlHome,
    XDG_CONFIG_HOME: path.join(clone, '.config'),
    FTUNE_API_KEY: token,
    FTUNE_PREPROCESSING_URL: stack.urls.preprocessing,
    FTUNE_TRAINING_URL: stack.urls.training,
    FTUNE_EXPORT_URL: stack.urls.export,
    FTUNE_INFERENCE_URL: stack.urls.inference,
    FTUNE_OPENAI_URL: stack.urls.openai,
  });
}, 240_000);

afterAll(async () => {
  shell?.close();
  if (clone) await fsp.rm(clone, { recursive: true, force: true });
});

describe.sequential('every command in README.md', () => {
  it('has blocks to run, and says which it leaves out and why', () => {
    expect(BLOCKS.filter((b) => !b.skip).length).toBeGreaterThan(4);
    for (const block of BLOCKS.filter((b) => b.skip)) console.log(`README.md line ${block.line} (${block.lang}): skipped: ${block.skip}`);
  });

  for (const block of BLOCKS) {
    const name = `README.md line ${block.line} (${block.lang})`;
    if (block.skip) {
      it.skip(`${name}: ${block.skip}`, () => {});
      continue;
    }
    it(name, async () => {
      if (block.lang === 'python') return runPython(block);
      for (const step of shellSteps(block)) await runStep(step);
    }, 1_200_000);
  }
});
