// The `ftune` binary as a person or a script runs it (node_modules/.bin/ftune, a child process), against this worker's
// shared embedded stack (JWT auth, a user of its own) with the tiny model: upload → uploads/process → list/get →
// train --follow → jobs list/get/logs (the model prepared for chat in the background) → export --download, exports
// list/get/download → chat (--once, piped; a checkpoint's first use says what it prepares) → eval → failures (unknown
// dataset, job or model, unparsable file, refused connection, bad key, usage) → the key from the config file → rm.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/servers/servers.ts';
import { sharedStack } from '../../../test/support/shared-stack.ts';
import type { StackUrls } from '../../../test/support/stack.ts';
import { TINY_MODEL } from '../../../test/support/tiny-model.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FTUNE = path.join(ROOT, 'node_modules/.bin/ftune');
const PAIRS = [
  ['What color is the sky?', 'Blue.'],
  ['What is two plus two?', 'Four.'],
  ['Name a fruit.', 'Apple.'],
  ['What do cows drink?', 'Water.'],
];

let tmp: string;
let urls: StackUrls;
let apiKey: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `ftune args…` with the stack's URLs and key in FTUNE_*, HOME and XDG_CONFIG_HOME in the temp folder;
 *  `env` entries replace those (undefined removes one). `input` is piped to its stdin (else stdin is empty). */
function ftune(args: string[], env: Record<string, string | undefined> = {}, input?: string): Promise<Run> {
  const base: Record<string, string | undefined> = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FTUNE_')));
  const merged: Record<string, string | undefined> = {
    ...base,
    HOME: path.join(tmp, 'home'),
    XDG_CONFIG_HOME: path.join(tmp, 'xdg'),
    FTUNE_PREPROCESSING_URL: urls.preprocessing,
    FTUNE_TRAINING_URL: urls.training,
    FTUNE_EXPORT_URL: urls.export,
    FTUNE_INFERENCE_URL: urls.inference,
    FTUNE_OPENAI_URL: urls.openai,
    FTUNE_API_KEY: apiKey,
    ...env,
  };
  const child = spawn(FTUNE, args, {
    cwd: tmp,
    env: Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined)),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // A command that exits without reading its input (an error, /exit) closes the pipe: not a failure here.
  child.stdin.on('error', () => {});
  child.stdin.end(input ?? '');
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The run succeeded; its stdout parsed as JSON. */
function json(run: Run): any {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

/** The API's own error sentence for a request, read directly, to compare with what ftune prints (`detail`, or
 *  the OpenAI-compatible service's `error.message`). */
async function apiDetail(url: string, init: RequestInit = {}): Promise<{ status: number; detail: string }> {
  const res = await fetch(url, { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers as Record<string, string>) } });
  const body = (await res.json()) as { detail?: string; error?: { message: string } };
  return { status: res.status, detail: body.detail ?? body.error!.message };
}

/** The size the export service announces for a job's file artifact (Content-Length of its download). */
async function announcedSize(jobId: string, type: string): Promise<number> {
  const res = await fetch(`${urls.export}/exports/${jobId}/download?type=${type}`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(res.status).toBe(200);
  await res.body?.cancel();
  return Number(res.headers.get('content-length'));
}

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-cli-'));
  await fs.mkdir(path.join(tmp, 'home'));
  const stack = await sharedStack();
  urls = stack.urls;
  apiKey = await stack.token('cli-user');
}, 240_000);

afterAll(async () => {
  if (tmp) await fs.rm(tmp, { recursive: true, force: true });
});

describe('ftune against the embedded stack', () => {
  let uploadId: string;
  let datasetId: string;
  let jobId: string;

  it('uploads a CSV (--json gives the upload) and prints the API’s 400 sentence for a file it cannot parse', async () => {
    const csv = ['question,answer', ...Array.from({ length: 24 }, (_, i) => PAIRS[i % 4]!.map((c) => `"${c}"`).join(','))].join('\n');
    await fs.writeFile(path.join(tmp, 'qa.csv'), csv);
    const bad = Buffer.from([0x00, 0xff, 0xfe, 0x01, 0x02, 0x80, 0x00, 0x7f, 0x10, 0x00]);
    await fs.writeFile(path.join(tmp, 'bad.bin'), bad);
    const [upload, failed] = await Promise.all([ftune(['datasets', 'upload', 'qa.csv', '--json']), ftune(['datasets', 'upload', 'bad.bin'])]);
    const result = json(upload);
    expect(result).toMatchObject({ filename: 'qa.csv', num_examples: 24, columns: ['question', 'answer'] });
    uploadId = result.dataset_id;
    expect(typeof uploadId).toBe('string');

    const form = new FormData();
    form.append('file', new Blob([bad]), 'bad.bin');
    const refused = await apiDetail(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
    expect(refused.status).toBe(400);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(refused.detail);
    expect(failed.stdout).toBe('');
  });

  it('processes the upload with a template and a test split, lists and shows it', async () => {
    const processed = await ftune(['datasets', 'process', uploadId, '--name', 'qa-cli', '--user', 'Q: {question}', '--assistant', 'answer', '--test-size', '4']);
    expect(processed.code, processed.stderr).toBe(0);
    datasetId = /^processed_dataset_id\s+(\S+)$/m.exec(processed.stdout)?.[1] ?? '';
    expect(datasetId).not.toBe('');
    expect(processed.stdout).toMatch(/^splits\s+train \(20 rows\), test \(4 rows\)$/m);

    const [uploads, table, listed, shown, shownJson] = await Promise.all([
      ftune(['datasets', 'uploads']),
      ftune(['datasets', 'list']),
      ftune(['datasets', 'list', '--json']),
      ftune(['datasets', 'get', datasetId]),
      ftune(['datasets', 'get', datasetId, '--json']),
    ]);
    // the upload itself is listed too, with the id process takes
    expect(uploads.code, uploads.stderr).toBe(0);
    expect(uploads.stdout).toMatch(new RegExp(`│ ${uploadId} +│ qa\\.csv +│`));
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('qa-cli');
    expect(table.stdout).toContain(datasetId);
    expect(json(listed).datasets.map((d: { processed_dataset_id: string }) => d.processed_dataset_id)).toContain(datasetId);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^dataset_name\s+qa-cli$/m);
    expect(shown.stdout).toMatch(/^status\s+ready$/m);
    expect(table.stdout).toMatch(/│ ready\s+│/);
    expect(shown.stdout).toMatch(/│ train │ 20/);
    // `{question}` made a template, `answer` a column.
    const train = json(shownJson).splits.find((s: { split_name: string }) => s.split_name === 'train');
    const messages = train.samples[0].messages as Array<{ role: string; content: string }>;
    expect(messages.find((m) => m.role === 'user')!.content).toMatch(/^Q: /);
    expect(PAIRS.map(([, a]) => a)).toContain(messages.find((m) => m.role === 'assistant')!.content);
  });

  it('trains the tiny model with --follow: plain progress lines with a loss, exit 0 when it completes', async () => {
    const run = await ftune([
      'train', '--dataset', datasetId, '--model', TINY_MODEL, '--provider', 'local', '--method', 'LoRA', '--name', 'cli-e2e',
      '--set', 'max_steps=4', '--set', 'logging_steps=1', '--set', 'batch_size=4', '--set', 'gradient_accumulation_steps=1',
      '--set', 'max_length=64', '--set', 'save_strategy=steps', '--set', 'save_steps=4', '--set', 'learning_rate=0.01',
      '--set', 'eval_config.eval_strategy=no', '--follow',
    ]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    jobId = /^job_id\s+(\S+)$/m.exec(run.stdout)?.[1] ?? '';
    expect(jobId).not.toBe('');
    expect(run.stdout).toMatch(/^step 4\/4 {2}loss \d+\.\d{4}/m);
    expect(run.stdout).toMatch(/^status\s+completed$/m);
    expect(run.stdout).toMatch(/^metrics\s+.*eval_loss \d/m);
  }, 120_000);

  it('lists, shows and reads the logs of the job', async () => {
    const [table, listed, shown, logs, logsJson] = await Promise.all([
      ftune(['jobs', 'list']),
      ftune(['jobs', 'list', '--json']),
      ftune(['jobs', 'get', jobId]),
      ftune(['jobs', 'logs', jobId]),
      ftune(['jobs', 'logs', jobId, '--json']),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(jobId);
    expect(table.stdout).toContain('completed');
    expect(json(listed).jobs.map((j: { job_id: string }) => j.job_id)).toContain(jobId);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^status\s+completed$/m);
    expect(shown.stdout).toMatch(/^progress\s+step 4\/4 {2}loss \d/m);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/^status: queued$/m);
    expect(logs.stdout).toMatch(/^step 1\/4 {2}loss \d/m);
    expect(logs.stdout).toMatch(/^end: completed$/m);
    const events = json(logsJson) as Array<{ event: string; data: any }>;
    expect(events.filter((e) => e.event === 'progress').map((e) => e.data.step)).toEqual([1, 2, 3, 4]);
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { job_id: jobId, status: 'completed' } });
  });

  it('exports the adapter with --download: the file lands whole, its size the one the API announces; exports list/get/download', async () => {
    const dir = path.join(tmp, 'exported');
    const run = await ftune(['export', jobId, '--type', 'adapter', '--download', dir]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/^export_id\s+exp_\S+$/m);
    expect(run.stdout).toMatch(/^status\s+completed$/m);
    const file = /^downloaded\s+(.+) \(.+\)$/m.exec(run.stdout)?.[1] ?? '';
    expect(path.dirname(file)).toBe(dir);
    expect(file).toMatch(/\.tar\.gz$/);
    const size = await announcedSize(jobId, 'adapter');
    expect(size).toBeGreaterThan(0);
    expect((await fs.stat(file)).size).toBe(size);
    expect(await fs.readdir(dir)).toEqual([path.basename(file)]); // no .part left behind

    const again = path.join(tmp, 'again');
    const [table, shown, downloaded] = await Promise.all([
      ftune(['exports', 'list']),
      ftune(['exports', 'get', jobId, '--json']),
      ftune(['exports', 'download', jobId, '--type', 'adapter', '--dir', again, '--json']),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`│ ${jobId} .*│ adapter`));
    expect(json(shown).latest_export).toMatchObject({ type: 'adapter', status: 'completed' });
    const second = json(downloaded);
    expect(second.size_bytes).toBe(size);
    expect(Buffer.compare(await fs.readFile(second.path), await fs.readFile(file))).toBe(0);

    // --follow --json: the export document once it has ended.
    const followed = json(await ftune(['export', jobId, '--type', 'adapter', '--follow', '--json']));
    expect(followed).toMatchObject({ job_id: jobId, latest_export: { type: 'adapter', status: 'completed' } });
  });

  it('chats with the trained model: --once, and piped turns that keep their history until /reset', async () => {
    // The worker made the model's GGUF for the fast engine after training, in the background, and the job's log says
    // so: the first answer does not wait for a conversion.
    const ready = /^info: the model is ready for chat on the fast engine \(prepared after training in \d+ s\)$/m;
    const deadline = Date.now() + 300_000;
    let logs = await ftune(['jobs', 'logs', jobId]);
    while (!ready.test(logs.stdout) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      logs = await ftune(['jobs', 'logs', jobId]);
    }
    expect(logs.stdout).toMatch(ready);
    expect(logs.stdout).toMatch(new RegExp(`^info: converting the adapter of job ${jobId} to a GGUF LoRA adapter for llama\\.cpp: done in \\d+ s$`, 'm'));
    // What that took is the next dry run's "ready for chat" time on this worker, after completed (#39).
    const dry = await fetch(`${urls.training}/train`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        processed_dataset_id: datasetId, job_name: 'cli-dry', dry_run: true,
        training_config: { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', hyperparameters: { max_steps: 4, max_length: 64 } },
      }),
    });
    const answer = (await dry.json()) as { preflight: { estimates: Array<{ chat_ready_seconds: number | null }> } };
    expect(dry.status, JSON.stringify(answer)).toBe(200);
    expect(answer.preflight.estimates.length).toBeGreaterThan(0);
    for (const estimate of answer.preflight.estimates) expect(estimate.chat_ready_seconds).toBeGreaterThan(0);
    const once = await ftune(['chat', jobId, '--once', 'What color is the sky?', '--temperature', '0', '--max-tokens', '8']);
    expect(once.code, once.stderr).toBe(0);
    expect(once.stdout.trim()).not.toBe('');
    expect(once.stderr).not.toMatch(/converting|GGUF/);
    // A checkpoint's model was not prepared: its first answer says what the worker does meanwhile, on stderr.
    const checkpoint = await ftune(['chat', `ft:${TINY_MODEL}:custom:${jobId}:ckpt-step-4`, '--once', 'Name a fruit.', '--temperature', '0', '--max-tokens', '8']);
    expect(checkpoint.code, checkpoint.stderr).toBe(0);
    expect(checkpoint.stderr).toMatch(new RegExp(`^\\(preparing the model: converting the adapter of checkpoint 4 of job ${jobId} to a GGUF LoRA adapter for llama\\.cpp…\\)$`, 'm'));
    expect(checkpoint.stderr).toMatch(/^\(preparing the model: .*: done in \d+ s\)$/m);
    expect(checkpoint.stdout.trim()).not.toBe('');
    const model = `ft:${TINY_MODEL}:custom:${jobId}`;
    const [piped, turns] = await Promise.all([
      ftune(['chat', model, '--temperature', '0', '--max-tokens', '8'], {}, 'What color is the sky?\nName a fruit.\n'),
      ftune(['chat', jobId, '--json', '--temperature', '0', '--max-tokens', '8', '--system', 'Answer briefly.'], {}, 'What color is the sky?\nName a fruit.\n/reset\nWhat color is the sky?\n/exit\nNot asked.\n'),
    ]);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout.trim()).not.toBe('');
    expect(turns.code, turns.stderr).toBe(0);
    const answers = turns.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(answers).toHaveLength(3); // nothing after /exit
    for (const answer of answers) {
      expect(answer.model).toBe(model);
      expect(answer.choices[0].message.content).not.toBe('');
    }
    // The second question went with the first turn; after /reset the first question goes alone again.
    expect(answers[1].usage.prompt_tokens).toBeGreaterThan(answers[0].usage.total_tokens);
    expect(answers[2].usage.prompt_tokens).toBe(answers[0].usage.prompt_tokens);
    expect(answers[2].choices[0].message.content).toBe(answers[0].choices[0].message.content);
    expect(turns.stderr).toContain('reset');
  }, 480_000);

  it('evaluates the trained model: metrics as a table, --samples rows, --json the API’s result', async () => {
    const [table, result] = await Promise.all([
      ftune(['eval', jobId, '--dataset', datasetId, '--task', 'qa', '--max-new-tokens', '8', '--samples', '2', '--fast']),
      ftune(['eval', jobId, '--dataset', datasetId, '--metrics', 'rouge,bleu', '--max-new-tokens', '8', '--fast', '--json']),
    ]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^num_samples\s+4$/m);
    expect(table.stdout).toMatch(/│ exact_match │ \d/);
    expect(table.stdout).toMatch(/│ f1 +│ \d/);
    expect(table.stdout).toContain('REFERENCE');
    expect(table.stdout).toMatch(/│ Q: .+│ (Blue|Four|Apple|Water)\. /);
    const body = json(result);
    expect(body).toMatchObject({ dataset_id: datasetId, num_samples: 4 });
    expect(Object.keys(body.metrics).sort()).toEqual(['bleu', 'rouge']);
  });

  it('fails with the API’s sentence for an unknown job or model: export, exports, chat, eval; usage errors; no hub token shown', async () => {
    const missingJob = 'job_000000000000000000000000';
    const missingModel = `ft:${TINY_MODEL}:custom:${missingJob}`;
    const [exportRefused, chatRefused, evalRefused] = await Promise.all([
      apiDetail(`${urls.export}/exports`, { method: 'POST', body: JSON.stringify({ job_id: missingJob }), headers: { 'content-type': 'application/json' } }),
      apiDetail(`${urls.openai}/v1/models/${encodeURIComponent(missingModel)}`),
      apiDetail(`${urls.inference}/evaluation`, { method: 'POST', body: JSON.stringify({ job_id: missingJob, dataset_id: datasetId }), headers: { 'content-type': 'application/json' } }),
    ]);
    expect([exportRefused.status, chatRefused.status, evalRefused.status]).toEqual([404, 404, 404]);
    const hubToken = 'hf_never-shown-token';
    const [exported, listed, chatted, evaluated, badRepo, noToken, badQuantization, noModel] = await Promise.all([
      ftune(['export', missingJob, '--type', 'adapter', '--download', path.join(tmp, 'never')]),
      ftune(['exports', 'get', missingJob]),
      ftune(['chat', missingModel, '--once', 'Hello?']),
      ftune(['eval', missingJob, '--dataset', datasetId]),
      ftune(['export', jobId, '--hub', 'not a repo id'], { FTUNE_HUB_TOKEN: hubToken }),
      ftune(['export', jobId, '--hub', 'owner/name']),
      ftune(['export', jobId, '--type', 'adapter', '--quantization', 'q8_0']),
      ftune(['eval', '--dataset', datasetId]),
    ]);
    for (const [run, refused] of [[exported, exportRefused], [listed, exportRefused], [chatted, chatRefused], [evaluated, evalRefused]] as const) {
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`error: ${refused.detail}`);
    }
    expect(await fs.stat(path.join(tmp, 'never')).then(() => true, () => false)).toBe(false);
    expect(badRepo.code).toBe(1);
    expect(badRepo.stderr).toMatch(/^error: body\.hub_repo_id: /m);
    expect(badRepo.stderr + badRepo.stdout).not.toContain(hubToken);
    for (const usage of [noToken, badQuantization, noModel]) expect(usage.code).toBe(2);
    expect(noToken.stderr).toContain('FTUNE_HUB_TOKEN');
    // A model id that is no model here nor a hub id (owner/name): unknown, said at once (the hub is not asked).
    const noSuchBase = await ftune(['chat', 'no-such-model', '--once', 'Hello?']);
    expect(noSuchBase.code).toBe(1);
    expect(noSuchBase.stderr).toMatch(/^error: model "no-such-model" not found; GET \/v1\/models lists/m);
  });

  it('fails with the API’s sentence: an unknown dataset, a refused connection, a bad key, a usage error', async () => {
    const body = { processed_dataset_id: 'no-such-dataset', training_config: { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA' } };
    const refused = await apiDetail(`${urls.training}/train`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    const closed = `http://127.0.0.1:${await freePort()}`;
    const [unknown, unreachable, badKey, usage] = await Promise.all([
      ftune(['train', '--dataset', 'no-such-dataset', '--model', TINY_MODEL, '--provider', 'local', '--method', 'LoRA', '--follow']),
      ftune(['jobs', 'list'], { FTUNE_TRAINING_URL: closed }),
      ftune(['datasets', 'list'], { FTUNE_API_KEY: 'ftp_not-a-real-key' }),
      ftune(['train', '--dataset', datasetId]),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`error: ${refused.detail}`);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(closed);
    expect(unreachable.stderr).toContain('FTUNE_TRAINING_URL');
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^error: .+/);
    expect(badKey.stderr + badKey.stdout).not.toContain('ftp_not-a-real-key');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--model');
  });

  it('reads the URL and the key from $XDG_CONFIG_HOME/ftune/config.json when the environment has none', async () => {
    const configFile = path.join(tmp, 'xdg', 'ftune', 'config.json');
    await fs.mkdir(path.dirname(configFile), { recursive: true });
    const noEnv = { FTUNE_API_KEY: undefined, FTUNE_PREPROCESSING_URL: undefined };
    // The file's key is sent: a wrong one is refused (and never printed) …
    await fs.writeFile(configFile, JSON.stringify({ FTUNE_PREPROCESSING_URL: urls.preprocessing, FTUNE_API_KEY: 'ftp_from-the-file' }));
    const wrongInFile = await ftune(['datasets', 'list'], noEnv);
    expect(wrongInFile.code).toBe(1);
    expect(wrongInFile.stderr).toMatch(/^error: .+/);
    expect(wrongInFile.stderr + wrongInFile.stdout).not.toContain('ftp_from-the-file');
    // … the right one works; the environment beats the file, and a flag beats the environment.
    await fs.writeFile(configFile, JSON.stringify({ FTUNE_PREPROCESSING_URL: urls.preprocessing, FTUNE_API_KEY: apiKey }));
    const [fromFile, envWins, flagWins] = await Promise.all([
      ftune(['datasets', 'list', '--json'], noEnv),
      ftune(['datasets', 'list'], { FTUNE_API_KEY: 'ftp_not-a-real-key' }),
      ftune(['datasets', 'list', '--json', '--api-key', apiKey], { FTUNE_API_KEY: 'ftp_not-a-real-key' }),
    ]);
    expect(json(fromFile).datasets.map((d: { processed_dataset_id: string }) => d.processed_dataset_id)).toContain(datasetId);
    expect(envWins.code).toBe(1);
    expect(json(flagWins).datasets.map((d: { processed_dataset_id: string }) => d.processed_dataset_id)).toContain(datasetId);
  });

  it('pauses and resumes only what can be: a completed job is the API’s 409 sentence for both', async () => {
    const [paused, resumed] = await Promise.all([ftune(['jobs', 'pause', jobId]), ftune(['jobs', 'resume', jobId])]);
    expect(paused.code).toBe(1);
    expect(paused.stderr).toContain(`error: job ${jobId} is completed; only queued, preparing or training jobs can be paused`);
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain(`error: job ${jobId} is completed; only a paused job can be resumed`);
  });

  it('deletes the job and the dataset', async () => {
    const [jobGone, datasetGone] = await Promise.all([ftune(['jobs', 'rm', jobId]), ftune(['datasets', 'rm', datasetId])]);
    expect(jobGone.code, jobGone.stderr).toBe(0);
    expect(jobGone.stdout).toContain(jobId);
    expect(datasetGone.code, datasetGone.stderr).toBe(0);
    expect(datasetGone.stdout.trim()).not.toBe('');
    const again = await ftune(['datasets', 'get', datasetId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: .+/);
  });
});
