// The tinker-cookbook (0.6.1, locked in the core's dev group, where its torch and transformers are the core's) runs its
// own loops unchanged against this service and a real worker holding the run in the real core, on the tests' tiny
// model, through bench/tinker/cookbook.py (the bench runs the same on the README's model). Only configuration is ours: the
// tokenizer registered under the base model's name from the model store's folder, and the cookbook's `qwen3_instruct`
// renderer, whose tokens are the served ChatML template's (checked here first).
import fs from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';
import { PRETRAINED_TOOL_MODEL, pretrainedToolModelDir, TINY_MODEL, tinyModelsDir } from '../../../test/support/tiny-model.ts';
import { buildTinkerApp } from '../src/app.ts';
import { CORE_PYTHON, runPython } from './sdk/run.ts';

let h: TrainingHarness;
let app: FastifyInstance;
let baseUrl: string;
let key: string;
let tokenizerDir: string;
let logDir: string;
const hits: Array<{ path: string; status: number }> = [];

const COOKBOOK = 'bench/tinker/cookbook.py';
const cookbook = (command: string, args: string[], env: Record<string, string> = {}, model = { name: TINY_MODEL, dir: tokenizerDir }) =>
  runPython(CORE_PYTHON, [COOKBOOK, command, '--model', model.name, '--tokenizer-dir', model.dir, ...args], env);

beforeAll(async () => {
  h = await startTrainingHarness({ AUTH_MODE: 'token', HF_ENDPOINT: 'http://127.0.0.1:9' });
  key = `tml-${(await h.platform.apiKeys.create('alice', 'a')).key}`;
  app = await buildTinkerApp(h.platform);
  app.addHook('onResponse', async (request, reply) => {
    hits.push({ path: request.routeOptions.url ?? request.url, status: reply.statusCode });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  tokenizerDir = path.join(await tinyModelsDir(), TINY_MODEL);
  logDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-cookbook-'));
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
  if (logDir) await fs.rm(logDir, { recursive: true, force: true });
});

const RL_STEPS = 12;
const RL_LEARNING_RATE = '5e-3';
type Metrics = Array<Record<string, number>>;
const metricsOf = async (dir: string): Promise<Metrics> =>
  (await fs.readFile(path.join(dir, 'metrics.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('the cookbook’s renderer and the served chat template', () => {
  // The tiny model's ChatML against the cookbook's qwen3_instruct; the README's model, served with Qwen2.5's template
  // (a default system message when there is none), against qwen2_5, registered by bench/tinker/cookbook.py.
  it.each([
    ['the tiny model', 'qwen3_instruct', false],
    ['SmolLM2-135M', 'qwen2_5', true],
  ])('%s and %s render the cookbook’s 128 conversations to the same tokens: every generation prompt, and the whole conversation up to its last end of turn', async (_, renderer, pretrained) => {
    const model = pretrained
      ? { name: PRETRAINED_TOOL_MODEL, dir: path.join(await pretrainedToolModelDir(), PRETRAINED_TOOL_MODEL) }
      : { name: TINY_MODEL, dir: tokenizerDir };
    const { code, stdout, stderr } = await cookbook('render', ['--renderer', renderer, '--count', '128'], {}, model);
    expect(code, stderr.slice(-3000)).toBe(0);
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(seen.conversations).toHaveLength(128);
    for (const c of seen.conversations) {
      // the template writes a newline after the last <|im_end|>; the renderer ends where the model stops
      expect(c.template).toEqual([...c.renderer, ...seen.newline]);
      for (const p of c.prompts) expect(p.renderer).toEqual(p.template);
      // the loss falls on the last reply and its end of turn (and the earlier replies')
      expect(c.weighted.slice(-c.last_reply.length - 1)).toEqual([...c.last_reply, seen.end_of_turn]);
    }
  }, 300_000);
});

describe('the cookbook’s supervised loop, unchanged', () => {
  let metrics: Metrics;
  it('trains over example_data/conversations.jsonl with FromConversationFileBuilder', async () => {
    const { code, stderr } = await cookbook(
      'sl', ['--base-url', baseUrl, '--log-path', logDir, '--epochs', '3', '--batch-size', '16', '--eval-every', '2', '--learning-rate', '3e-3'],
      { TINKER_API_KEY: key },
    );
    expect(code, stderr.slice(-4000)).toBe(0);
    metrics = await metricsOf(logDir);
  }, 600_000);

  it('its training loss falls: the last epoch’s mean NLL under the first’s', () => {
    const train = metrics.filter((m) => typeof m.train_mean_nll === 'number');
    // 112 training conversations in batches of 16: 7 steps an epoch, 3 epochs
    expect(train).toHaveLength(21);
    const [first, last] = [mean(train.slice(0, 7).map((m) => m.train_mean_nll!)), mean(train.slice(-7).map((m) => m.train_mean_nll!))];
    expect(last).toBeLessThan(first * 0.8);
  });

  it('its evaluation of the 16 held-out conversations runs every second step, through sampler weights, and falls too', () => {
    const evals = metrics.filter((m) => typeof m['test/nll'] === 'number').map((m) => m['test/nll']!);
    expect(evals).toHaveLength(11); // steps 0, 2, …, 20
    expect(evals.at(-1)!).toBeLessThan(evals[0]! * 0.8);
  });
});

describe('the cookbook’s RL loop, unchanged', () => {
  let rewards: number[];
  it('trains on a small environment of ProblemEnv’s: a reply whose first letter is a vowel earns 1', async () => {
    const dir = path.join(logDir, 'rl');
    const { code, stderr } = await cookbook(
      'rl', ['--base-url', baseUrl, '--log-path', dir, '--steps', String(RL_STEPS), '--groups', '4', '--group-size', '8', '--learning-rate', RL_LEARNING_RATE],
      { TINKER_API_KEY: key },
    );
    expect(code, stderr.slice(-4000)).toBe(0);
    rewards = (await metricsOf(dir)).filter((m) => typeof m['env/all/reward/total'] === 'number').map((m) => m['env/all/reward/total']!);
  }, 600_000);

  it('starts where the base model succeeds about a quarter of the time, and its last 5 steps’ mean reward is the first 5’s + 0.2 or more', () => {
    expect(rewards).toHaveLength(RL_STEPS);
    // the first step samples the base model (a new LoRA adds nothing): 24% of 400 replies from generate at temperature
    // 1; here 32 replies, so a wider band (below 0.05 has a chance of 0.2%)
    expect(rewards[0]).toBeGreaterThanOrEqual(0.05);
    expect(rewards[0]).toBeLessThanOrEqual(0.5);
    const [first, last] = [mean(rewards.slice(0, 5)), mean(rewards.slice(-5))];
    expect(last).toBeGreaterThanOrEqual(first + 0.2);
  });
});

describe('the paths the cookbook’s loops hit', () => {
  it('are all served', () => {
    expect(hits.filter((x) => x.status === 404 || x.status === 501)).toEqual([]);
    for (const p of ['/api/v1/create_model', '/api/v1/forward_backward', '/api/v1/optim_step', '/api/v1/save_weights_for_sampler', '/api/v1/asample']) {
      expect(hits.map((x) => x.path)).toContain(p);
    }
  });
});
