// The web console in a real browser (Debian's Chromium, driven by playwright-core) against this worker's shared embedded
// stack (JWT auth, a user of its own) with the tiny model: sign in → a bad file shows the API's sentence → upload (the
// progress bar reaches 100%) → process with a live chat-bubble preview; a file uploaded elsewhere is listed → launch a
// job after its pre-flight report → watch the loss curve grow over server-sent events (meanwhile, GRPO rewards composed
// in the launch form on a second tab) → playground answer → the model prepared for chat in the job's events →
// evaluation beside the base model → benchmarks (HumanEval) in the background beside the base model → export and
// download through a one-time link → compare two jobs → judge the job against its base model with an LLM judge → a
// webhook endpoint added, sent a sample, then the cancel of a job delivered to it and sent again. Every page is
// photographed (1280 px wide, and the key ones at 390 px) into test/.artifacts/console/, which git ignores. Without
// Chromium the file fails; it does not skip.
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './servers/servers.ts';
import { launchChromium } from './support/browser.ts';
import { apiClient, until } from './support/http.ts';
import { sharedStack } from './support/shared-stack.ts';
import { startNode, waitHealthy, type NodeProcess, type StackUrls } from './support/stack.ts';
import { TINY_MODEL } from './support/tiny-model.ts';

const SHOTS = fileURLToPath(new URL('./.artifacts/console/', import.meta.url));
const PAIRS = [
  ['What color is the sky?', 'Blue.'],
  ['What is two plus two?', 'Four.'],
  ['Name a fruit.', 'Apple.'],
  ['What do cows drink?', 'Water.'],
];
const CSV = ['question,answer', ...Array.from({ length: 24 }, (_, i) => PAIRS[i % 4]!.map((c) => `"${c}"`).join(','))].join('\n');

/** This file's own scratch folder (downloads). */
let scratch: string;
let urls: StackUrls;
let consoleUrl: string;
let key: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every URL the page asked for: all of them must be the console's own (nothing from a CDN). */
const requested: string[] = [];
let jobId: string;
let otherJobId: string;
let datasetId: string;

const { ok } = apiClient(() => ({ authorization: `Bearer ${key}` }));

/** A webhook receiver on loopback: what it was sent, each verified by the official SDK's unwrap with the secret the
 *  console showed. */
const hooks = {
  server: undefined as http.Server | undefined,
  url: '',
  secret: '',
  requests: [] as Array<{ body: string; headers: Record<string, string> }>,
  async events() {
    const client = new OpenAI({ apiKey: 'unused', baseURL: 'http://127.0.0.1:9' });
    return Promise.all(this.requests.map((r) => client.webhooks.unwrap(r.body, r.headers, this.secret)));
  },
};

async function shot(name: string, width = 1280): Promise<void> {
  if (page.viewportSize()?.width !== width) await page.setViewportSize({ width, height: width < 600 ? 844 : 900 });
  // Transitions (the navigation sliding in after a resize) are finished at once, not caught half-way.
  await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true, animations: 'disabled' });
}

/** The launch form starts on the store's first model (the shared stack holds several); the tiny one is typed in. */
async function chooseBaseModel(tab: Page): Promise<void> {
  const input = tab.locator('input').and(tab.getByLabel(/^Base model/));
  await expect.poll(() => input.inputValue()).not.toBe('');
  await input.fill(TINY_MODEL);
  await input.press('Escape');
  await expect.poll(() => input.inputValue()).toBe(TINY_MODEL);
}

/** A LoRA job on the tiny model over the API, on the dataset the console made. */
function submitJob(name: string, hyperparameters: Record<string, unknown>): Promise<{ job_id: string }> {
  return ok(`${urls.training}/train`, {
    method: 'POST',
    json: {
      processed_dataset_id: datasetId, job_name: name,
      training_config: { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', hyperparameters: { logging_steps: 1, batch_size: 4, gradient_accumulation_steps: 1, max_length: 64, save_strategy: 'no', ...hyperparameters } },
    },
  });
}

/** Runs in the page (polled by waitForFunction; a function, as the console's policy forbids eval): the loss chart
 *  holds more than `n` points. */
function lossPointsAbove(n: number): boolean {
  type Page = { document: { querySelector(selector: string): { getAttribute(name: string): string | null } | null } };
  return Number((globalThis as unknown as Page).document.querySelector('[data-testid=loss-chart]')?.getAttribute('data-points')) > n;
}

/** Runs in the page: an element's background colour as the browser computes it (rgb(r, g, b)). */
function backgroundColor(element: unknown): string {
  type Window = { getComputedStyle(element: unknown): { backgroundColor: string } };
  return (globalThis as unknown as Window).getComputedStyle(element).backgroundColor;
}

/** Runs in the page: an element's font family as the browser computes it. */
function fontFamily(element: unknown): string {
  type Window = { getComputedStyle(element: unknown): { fontFamily: string } };
  return (globalThis as unknown as Window).getComputedStyle(element).fontFamily;
}

async function chartPoints(testId: string): Promise<number> {
  return Number((await page.getByTestId(testId).getAttribute('data-points')) ?? 0);
}

/** The launch form's GRPO rewards, on a tab of its own (signed in with the same key): two rewards composed (kinds,
 *  fields, weights), a third added and removed; what is sent is reward_config as the API takes it, and the service's
 *  pre-flight accepts it. Runs while the journey's job trains: the dry run takes the worker's pre-flight lane. */
async function composeGrpoRewards(): Promise<void> {
  const tab = await context.newPage();
  let promptsId: string | undefined;
  try {
    await tab.addInitScript(`sessionStorage.setItem('ftp-console-api-key', ${JSON.stringify(key)})`);
    const { dataset_id: uploadId } = await ok(`${urls.preprocessing}/datasets/${datasetId}`);
    const prompts = await ok(`${urls.preprocessing}/datasets/process`, {
      method: 'POST',
      json: { dataset_name: 'qa-prompts', dataset_id: uploadId, processing_mode: 'prompt_only', config: { field_mappings: { user_field: { type: 'column', value: 'question' } } } },
    });
    promptsId = prompts.processed_dataset_id;
    await tab.goto(`${consoleUrl}/training/new?dataset=${promptsId}`);
    await chooseBaseModel(tab);
    const reward = (n: number) => tab.getByRole('group', { name: `Reward ${n}` });
    await reward(1).getByLabel('weight').fill('0.5');
    await tab.getByRole('button', { name: 'Add a reward' }).click();
    // The dataset's columns are offered for the reference; a new reward is a string check until its type changes.
    await reward(2).getByLabel('reference_field').fill('answer');
    await reward(2).getByLabel('operation').selectOption('ilike');
    await reward(2).getByLabel('weight').fill('2');
    await tab.getByRole('button', { name: 'Add a reward' }).click();
    await reward(3).getByLabel('type').selectOption('text_similarity');
    await tab.getByRole('button', { name: 'Remove reward 3' }).click();
    expect(await reward(3).count()).toBe(0);
    const [sent] = await Promise.all([tab.waitForRequest((r) => r.url().endsWith('/api/training/train')), tab.getByRole('button', { name: 'Review (pre-flight)' }).click()]);
    expect(sent.postDataJSON().training_config).toMatchObject({
      trainer_type: 'grpo',
      reward_config: [
        { type: 'built_in', name: 'format', function_name: 'format_reward', weight: 0.5 },
        { type: 'string_check', name: 'match', reference_field: 'answer', operation: 'ilike', weight: 2 },
      ],
    });
    // The service took them: its pre-flight report, not a 422.
    await tab.getByTestId('preflight').or(tab.getByRole('alert')).first().waitFor({ timeout: 150_000 });
    await tab.screenshot({ path: path.join(SHOTS, 'training-new-grpo-1280.png'), fullPage: true, animations: 'disabled' });
    // No refusal: the only alert is the report's own warnings, and they say that the tiny model's sampled answers all
    // score alike under these graders, so GRPO would learn nothing (#39), before anything is spent.
    const report = tab.getByRole('region', { name: 'Pre-flight report' });
    expect(await tab.getByRole('alert').count()).toBe(await report.getByRole('alert').count());
    expect(await report.getByRole('alert').textContent()).toMatch(/all got the same reward .* learns nothing/);
  } finally {
    await tab.close();
    // Removed however this ended: the last test deletes the journey's dataset and expects the list empty then.
    if (promptsId) await ok(`${urls.preprocessing}/datasets/${promptsId}`, { method: 'DELETE' });
  }
}

beforeAll(async () => {
  await fs.mkdir(SHOTS, { recursive: true });
  // The browser first: a machine without Chromium fails here, before minutes go into the stack.
  browser = await launchChromium();
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-console-'));
  const stack = await sharedStack();
  urls = stack.urls;
  consoleUrl = stack.consoleUrl;
  key = await stack.token('console-user');
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on('request', (request) => requested.push(request.url()));
  hooks.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      hooks.requests.push({ body, headers: req.headers as Record<string, string> });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => hooks.server!.listen(0, '127.0.0.1', resolve));
  hooks.url = `http://127.0.0.1:${(hooks.server.address() as AddressInfo).port}/hooks`;
}, 180_000);

afterAll(async () => {
  hooks.server?.close();
  await browser?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

describe('the web console', () => {
  it('serves its pages and forwards /api/<service>/ to the services, from its own origin', async () => {
    const health = await fetch(`${consoleUrl}/health`);
    expect(await health.json()).toMatchObject({ status: 'ok', service: 'console' });
    expect(await (await fetch(`${consoleUrl}/api/training/health`)).json()).toMatchObject({ service: 'training', status: 'ok' });
    // A page of the app (a client-side route) is the app, with a policy that allows nothing from elsewhere.
    const jobPage = await fetch(`${consoleUrl}/training/some-job`);
    expect(jobPage.headers.get('content-type')).toMatch(/text\/html/);
    expect(jobPage.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(await jobPage.text()).toContain('<div id="root">');
  });

  it('asks for the API key, says why a wrong one is refused, and signs in by keyboard', async () => {
    await page.goto(consoleUrl);
    await expect.poll(() => page.getByLabel('API key').isVisible()).toBe(true);
    await shot('login');
    const refused = await fetch(`${urls.export}/exports`, { headers: { authorization: 'Bearer not-a-key' } });
    const sentence = ((await refused.json()) as { detail: string }).detail;
    await page.keyboard.type('not-a-key');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain(sentence);
    await page.getByLabel('API key').fill(key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Datasets', exact: true }).waitFor();
    // Kept for this tab's session only, never in a URL.
    expect(await page.evaluate("sessionStorage.getItem('ftp-console-api-key')")).toBe(key);
    expect(await page.evaluate('localStorage.length')).toBe(0);
  });

  it('shows the API’s sentence when a file cannot be read', async () => {
    const bad = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x00, 0x01, 0x02, 0x03]);
    const form = new FormData();
    form.append('file', new Blob([bad]), 'bad.csv');
    const direct = await fetch(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form, headers: { authorization: `Bearer ${key}` } });
    expect(direct.status).toBe(400);
    const sentence = ((await direct.json()) as { detail: string }).detail;
    await page.locator('input[type=file]').setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: bad });
    await expect.poll(() => page.getByRole('alert').textContent()).toContain(sentence);
    // the bar that carried the refused file says so in red (#39: it stayed full and blue beside "upload failed")
    const bar = page.getByTestId('upload-progress');
    expect(await bar.getAttribute('data-state')).toBe('failed');
    expect(await bar.getByRole('progressbar').evaluate(backgroundColor)).toMatch(/^rgb\((2[0-5]\d|1[5-9]\d), \d{1,2}, \d{1,2}\)$/);
    await shot('datasets-bad-file');
  });

  it('uploads with a progress bar, previews the records as chat bubbles, and processes the file', async () => {
    await page.locator('input[type=file]').setInputFiles({ name: 'qa.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) });
    await expect.poll(() => page.getByRole('progressbar', { name: 'Upload progress' }).getAttribute('aria-valuenow')).toBe('100');
    const summary = page.getByTestId('upload-summary');
    await expect.poll(() => summary.textContent()).toContain('24 rows');
    // The mappings were guessed from the column names; the preview is the records processing will write.
    const preview = page.getByTestId('preview');
    await expect.poll(() => preview.getByTestId('conversation').count()).toBe(4);
    expect(await preview.getByTestId('conversation').first().textContent()).toMatch(/user\s*What color is the sky\?\s*assistant\s*Blue\./);
    // A template changes the preview before anything is sent.
    await page.getByRole('group', { name: 'User message' }).getByText('Template').click();
    await page.getByRole('textbox', { name: 'User message template' }).fill('Q: {question}');
    await expect.poll(() => preview.getByTestId('conversation').first().textContent()).toContain('Q: What color is the sky?');
    await page.getByLabel('Test size').fill('4');
    await shot('datasets-preview');
    await page.getByRole('button', { name: 'Process dataset' }).click();
    await page.waitForURL(/\/datasets\/[^/]+$/);
    datasetId = page.url().split('/').at(-1)!;
    await page.getByRole('tab', { name: /test \(4\)/ }).waitFor();
    expect(await page.getByTestId('conversation').first().textContent()).toContain('Q: What color is the sky?');
    await shot('dataset');
    await page.getByRole('link', { name: '← Datasets' }).click();
    await expect.poll(() => page.getByRole('table', { name: 'Processed datasets' }).textContent()).toContain('qa');
    // A file uploaded elsewhere (ftune, /v1/files) is listed too, ready to be processed here.
    const form = new FormData();
    form.append('file', new Blob(['question,answer\nWhy?,Because.\n']), 'made-with-ftune.csv');
    const elsewhere = await ok(`${urls.preprocessing}/datasets/upload`, { method: 'POST', body: form });
    const uploads = page.getByRole('table', { name: 'Uploaded files' });
    await expect.poll(() => uploads.textContent()).toContain('qa.csv');
    await page.getByRole('button', { name: 'Refresh' }).first().click();
    await expect.poll(() => uploads.textContent()).toContain('made-with-ftune.csv');
    await page.getByRole('button', { name: `Process made-with-ftune.csv (${elsewhere.dataset_id})` }).click();
    await expect.poll(() => page.getByTestId('upload-summary').textContent()).toContain('made-with-ftune.csv');
    await shot('datasets');
  });

  it('shows the pre-flight report before a job starts, then draws its loss curve live until it completes', async () => {
    await page.goto(`${consoleUrl}/training/new?dataset=${datasetId}`);
    await chooseBaseModel(page);
    await page.getByRole('button', { name: 'Advanced: every hyperparameter' }).click();
    const set = async (name: string, value: string) => page.getByLabel(name, { exact: true }).fill(value);
    await set('max_steps', '40');
    await set('learning_rate', '0.01');
    await set('batch_size', '4');
    await set('gradient_accumulation_steps', '1');
    await set('max_length', '64');
    await page.getByLabel('Job name').fill('console-a');
    await page.getByRole('button', { name: 'Review (pre-flight)' }).click();
    await page.getByTestId('preflight').waitFor({ timeout: 120_000 });
    expect(await page.getByTestId('preflight').textContent()).toMatch(/40 in total/);
    await shot('training-new');
    await page.getByRole('button', { name: 'Start training' }).click();
    await page.waitForURL(/\/training\/job_/);
    jobId = page.url().split('/').at(-1)!;
    // A second, shorter job with another learning rate for the comparison below, over the API (the form is tested
    // here): it waits in the queue behind this one and trains while the later pages are tried.
    // Its learning rate is the default 2e-4: its curve's axis must still read as numbers, not 0 / 0 / 0.
    // It stores checkpoints at steps 5 and 10: the Exports page exports one of them below.
    otherJobId = (await submitJob('console-b', { max_steps: 10, save_strategy: 'steps', save_steps: 5 })).job_id;
    // Meanwhile, on a second tab: the GRPO rewards of the launch form (its failure is reported below, not lost).
    const grpo = composeGrpoRewards().then(() => undefined, (err: unknown) => err);

    // Two looks at the curve while the job trains: the second has more points than the first.
    await page.waitForFunction(lossPointsAbove, 0, { timeout: 150_000, polling: 100 });
    const first = await chartPoints('loss-chart');
    expect(first).toBeLessThan(40);
    await page.waitForFunction(lossPointsAbove, first, { timeout: 60_000, polling: 100 });
    await shot('job-training');
    await expect.poll(() => page.getByTestId('status').first().textContent(), { timeout: 120_000 }).toBe('completed');
    expect(await chartPoints('loss-chart')).toBeGreaterThanOrEqual(40);
    expect(await chartPoints('lr-chart')).toBeGreaterThan(1);
    const grpoFailure = await grpo;
    if (grpoFailure) throw grpoFailure;
    await expect.poll(() => page.getByRole('table', { name: 'Metrics' }).textContent()).toContain('eval_loss');
    await shot('job');
    await shot('job', 390);
    // Readable at 390 px: nothing wider than the screen.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 300_000);

  it('answers in the playground, streaming, next to the base model', async () => {
    await page.goto(`${consoleUrl}/playground?job=${jobId}`);
    const columns = page.getByTestId('playground-column');
    await expect.poll(() => columns.count()).toBe(2);
    expect(await columns.first().getAttribute('data-model')).toBe(`ft:${TINY_MODEL}:custom:${jobId}`);
    await page.getByLabel('Max tokens').fill('16');
    await page.getByLabel('Message').fill(PAIRS[0]![0]!);
    await page.keyboard.press('Control+Enter');
    await expect.poll(async () => (await columns.first().textContent()) ?? '', { timeout: 240_000 }).toMatch(/assistant\s*\S/);
    // Both answers have ended (the send button stops spinning).
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).getAttribute('data-loading'), { timeout: 120_000 }).toBe(null);
    expect(await columns.nth(1).textContent()).toContain('What color is the sky?');
    await shot('playground');
    // The worker prepared the model for chat after training: the job's events say what it did and how long it took.
    await page.goto(`${consoleUrl}/training/${jobId}`);
    const events = page.getByRole('list', { name: 'Job events' });
    await expect.poll(() => events.textContent(), { timeout: 240_000 }).toMatch(/converting the adapter of job \w+ to a GGUF LoRA adapter for llama\.cpp: done in \d+ s/);
    // each event says when it happened (#39)
    expect(await events.locator('li').count()).toBe(await events.locator('li time').count());
    expect(await events.locator('li time').first().textContent()).toMatch(/^\d\d:\d\d:\d\d$/);
  }, 400_000);

  it('runs an evaluation beside the base model and shows both metrics and both predictions per sample', async () => {
    await page.goto(`${consoleUrl}/evaluation?job=${jobId}`);
    await page.getByLabel('Max samples').fill('4');
    await page.getByLabel('Max new tokens').fill('16');
    expect(await page.getByRole('switch', { name: /Beside the base model/ }).isChecked()).toBe(true);
    // A grader beside the task's metrics: its mean is a metric, each prediction shows its grade.
    const grader = { type: 'text_similarity', name: 'close', input: '{{sample.output_text}}', reference: '{{item.reference}}', evaluation_metric: 'fuzzy_match' };
    await page.getByLabel('Graders').fill(JSON.stringify([grader]));
    // the JSON is typed in monospace, its label reads as every other label (#39: the label was monospace too)
    const label = await page.locator('label', { hasText: /^Graders$/ }).evaluate(fontFamily);
    expect(label).toBe(await page.locator('label', { hasText: /^Max samples$/ }).evaluate(fontFamily));
    expect(await page.getByLabel('Graders').evaluate(fontFamily)).not.toBe(label);
    await page.getByRole('button', { name: 'Run evaluation' }).click();
    // While it runs, the page says for how long (and what it waits for, when the worker tells the job's log, #39).
    await page.getByText(/^Evaluating: \d+ s so far/).waitFor({ timeout: 30_000 });
    const result = page.getByRole('region', { name: 'Evaluation result' });
    await result.waitFor({ timeout: 300_000 });
    const metrics = result.getByRole('table', { name: 'Metrics compared' });
    expect(await metrics.locator('thead').textContent()).toMatch(/base.*tuned \(adapter\)/);
    expect(await metrics.locator('tbody').textContent()).toMatch(/rouge/);
    expect(await metrics.locator('tbody').textContent()).toMatch(/close/);
    const table = result.getByRole('table', { name: 'Per-sample results' });
    expect(await table.locator('thead').textContent()).toMatch(/Prediction: base.*Prediction: tuned \(adapter\)/);
    const rows = await table.locator('tbody tr').count();
    expect(rows).toBeGreaterThan(0);
    // Each tuned sample found its base twin (same sample_index): no cell is left with a dash.
    expect(await table.locator('td[data-column=base]').allInnerTexts()).toHaveLength(rows);
    expect(await table.locator('td[data-column=base]', { hasText: /^—$/ }).count()).toBe(0);
    expect(await table.locator('td[data-column=tuned] [data-testid=grades]').allInnerTexts()).toEqual(Array(rows).fill(expect.stringMatching(/^close \d/)));
    await shot('evaluation');
  }, 360_000);

  it('runs HumanEval on the trained job beside its base model in the background, follows it, and shows both figures', async () => {
    await page.goto(`${consoleUrl}/evaluation?job=${jobId}`);
    const form = page.getByRole('form', { name: 'Benchmarks' });
    await expect.poll(() => form.getByLabel('Job').inputValue()).toBe(jobId);
    await form.getByLabel('HumanEval', { exact: true }).check();
    await form.getByLabel('Problems').fill('1');
    await form.getByLabel('Tokens per completion').fill('8');
    await form.getByLabel('With the base model').check();
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/inference/evaluations') && r.request().method() === 'POST'),
      form.getByRole('button', { name: 'Start benchmarks' }).click(),
    ]);
    expect(response.status()).toBe(200);
    const { id } = (await response.json()) as { id: string };
    // Listed at once, and opened; the page follows it (its event stream) until it has ended.
    const row = page.getByRole('table', { name: 'Your benchmark runs' }).locator(`tr[data-id="${id}"]`);
    await expect.poll(() => row.getByTestId('status').textContent()).toMatch(/^(queued|running|completed)$/);
    const run = page.getByRole('region', { name: 'Benchmark run' });
    await expect.poll(() => run.getByTestId('status').textContent(), { timeout: 150_000 }).toBe('completed');
    expect(await row.getByTestId('status').textContent()).toBe('completed');
    const stored = await ok(`${urls.inference}/evaluations/${id}`);
    expect(stored).toMatchObject({ status: 'completed', job_id: jobId, request: { with_base: true, benchmarks: { humaneval: { limit: 1, max_new_tokens: 8 } } } });
    const results = run.getByRole('table', { name: 'Benchmark results' });
    expect(await results.getByRole('columnheader').allTextContents()).toEqual(['Task', 'Metric', 'Value', 'Base']);
    const passAt1 = (await results.locator('tbody tr').filter({ hasText: 'pass@1' }).getByRole('cell').allTextContents());
    expect(passAt1.slice(0, 2)).toEqual(['humaneval', 'pass@1']);
    expect(Number(passAt1[2])).toBeCloseTo(stored.results.humaneval['pass@1'], 3);
    expect(Number(passAt1[3])).toBeCloseTo(stored.base_results.humaneval['pass@1'], 3);
    // Its log, both models' lines.
    const log = run.getByRole('list', { name: 'Benchmark log' });
    expect(await log.textContent()).toContain('humaneval: 1 problems × 1 samples');
    expect(await log.textContent()).toContain('[base] humaneval: 1 problems × 1 samples');
    await run.scrollIntoViewIfNeeded();
    await shot('evaluation-benchmarks');
    await shot('evaluation-benchmarks', 390);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 200_000);

  it('exports the adapter, follows the export, and downloads the file through a one-time link', async () => {
    await page.goto(`${consoleUrl}/exports?job=${jobId}`);
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    await expect.poll(() => page.getByTestId('export-status').textContent(), { timeout: 120_000 }).toMatch(/completed/);
    const button = page.getByRole('button', { name: 'Download adapter' });
    await button.waitFor();
    await shot('exports');
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    // Streamed from a one-time link of the console's (no blob the page held whole, no key in the URL).
    expect(download.url()).toMatch(new RegExp(`^${consoleUrl}/downloads/[\\w-]{20,}$`));
    expect(download.url()).not.toContain(key);
    const saved = path.join(scratch, 'downloaded-adapter');
    await download.saveAs(saved);
    expect(download.suggestedFilename()).not.toBe('');
    expect((await fetch(download.url())).status).toBe(404);
    const direct = Buffer.from(await (await fetch(`${urls.export}/exports/${jobId}/download?type=adapter`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer());
    expect(direct.length).toBeGreaterThan(0);
    expect(Buffer.compare(await fs.readFile(saved), direct)).toBe(0);

    // A checkpoint, not the final model: the second job's at step 5, with a download of its own.
    await until('second job', () => ok(`${urls.training}/jobs/${otherJobId}`), (j) => j.status === 'completed' || j.status === 'failed', 150_000);
    await page.goto(`${consoleUrl}/exports?job=${otherJobId}`);
    const model = page.getByRole('combobox', { name: 'Model', exact: true });
    await expect.poll(() => model.locator('option').allTextContents(), { timeout: 30_000 }).toEqual(['the final model', expect.stringMatching(/^checkpoint at step 5/), expect.stringMatching(/^checkpoint at step 10/)]);
    await model.selectOption('5');
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    await expect.poll(() => page.getByTestId('export-status').textContent(), { timeout: 120_000 }).toMatch(/completed/);
    expect(await page.getByTestId('export-status').textContent()).toMatch(/adapter of step 5/);
    const ofStep = page.getByRole('button', { name: 'Download adapter of step 5' });
    const [fromCheckpoint] = await Promise.all([page.waitForEvent('download'), ofStep.click()]);
    const savedStep = path.join(scratch, 'downloaded-adapter-step-5');
    await fromCheckpoint.saveAs(savedStep);
    const directStep = Buffer.from(await (await fetch(`${urls.export}/exports/${otherJobId}/download?type=adapter&checkpoint_step=5`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer());
    expect(directStep.length).toBeGreaterThan(0);
    expect(Buffer.compare(await fs.readFile(savedStep), directStep)).toBe(0);
  }, 300_000);

  it('compares two jobs: curves overlaid, differences highlighted', async () => {
    await until('second job', () => ok(`${urls.training}/jobs/${otherJobId}`), (j) => j.status === 'completed' || j.status === 'failed', 150_000);
    await page.goto(`${consoleUrl}/compare`);
    await page.getByRole('combobox', { name: 'Jobs' }).click();
    // (its dropdown's: the judge form below lists the jobs too)
    const options = page.getByRole('listbox');
    await options.getByRole('option', { name: /console-a/ }).click();
    await options.getByRole('option', { name: /console-b/ }).click();
    await page.keyboard.press('Escape');
    const table = page.getByRole('table', { name: 'Jobs compared' });
    await expect.poll(() => chartPoints('compare-chart'), { timeout: 30_000 }).toBeGreaterThanOrEqual(40);
    // Both jobs' histories arrived: each has a final train loss.
    const finalLoss = table.locator('tr').filter({ hasText: 'final train loss' });
    await expect.poll(async () => (await finalLoss.locator('td').allInnerTexts()).filter((t) => /^\d/.test(t)).length, { timeout: 30_000 }).toBe(2);
    await expect.poll(() => table.locator('tr[data-differs]').filter({ hasText: 'steps' }).count()).toBeGreaterThan(0);
    expect(await table.locator('tr:not([data-differs])').filter({ hasText: 'base model' }).count()).toBe(1);
    // Every setting of training_config is a row: the hyperparameters by name, as they applied: the epochs that
    // max_steps made (40 and 10 steps of 5 per epoch), no setting of another trainer.
    expect(await table.locator('tr').filter({ hasText: /^learning_rate/ }).count()).toBe(1);
    expect((await table.locator('tr').filter({ hasText: /^epochs/ }).locator('td').allInnerTexts()).sort()).toEqual(['2', '8']);
    expect(await table.locator('tr').filter({ hasText: /^(num_generations|beta|max_prompt_length)/ }).count()).toBe(0);
    await shot('compare');
    // The learning rate of the second job peaks at 2e-4: each tick of its axis has a label of its own.
    await page.goto(`${consoleUrl}/training/${otherJobId}`);
    await expect.poll(() => chartPoints('lr-chart'), { timeout: 30_000 }).toBeGreaterThan(1);
    const ticks = ((await page.getByTestId('lr-chart').getAttribute('data-y-ticks')) ?? '').split('|');
    expect(ticks.length).toBeGreaterThan(1);
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(ticks.some((t) => /^[1-9](\.\d)?e-[45]$/.test(t))).toBe(true);
    await page.goto(`${consoleUrl}/datasets`);
    await page.getByRole('heading', { name: 'Datasets', exact: true }).waitFor();
    await shot('datasets', 390);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  }, 240_000);

  it('judges the trained job against its base model with an LLM judge, shows every pair, lists the comparison and deletes it', async () => {
    await page.goto(`${consoleUrl}/compare`);
    const form = page.getByRole('form', { name: 'Judge two models' });
    const modelA = form.getByRole('group', { name: 'Model A' });
    const modelB = form.getByRole('group', { name: 'Model B' });
    await modelA.getByLabel('Source').selectOption('adapter');
    await modelA.getByLabel('Job').selectOption(jobId);
    await modelB.getByLabel('Source').selectOption('base');
    await modelB.getByLabel('Base model').fill(TINY_MODEL);
    await modelB.getByLabel('Base model').press('Escape');
    await form.getByLabel('Dataset').selectOption(datasetId);
    // The tiny random model judges: it writes no readable verdict, so every pair is a tie (or unreadable).
    await form.getByLabel('Judge model').fill(TINY_MODEL);
    await form.getByLabel('Judge model').press('Escape');
    await form.getByLabel('Max samples').fill('2');
    await form.getByLabel('Max new tokens').fill('16');
    const responded = page.waitForResponse((r) => r.url().endsWith('/api/inference/comparisons') && r.request().method() === 'POST', { timeout: 240_000 });
    await form.getByRole('button', { name: 'Compare' }).click();
    // The request waits for the whole comparison: meanwhile the page says for how long.
    await form.getByText(/^Comparing: \d+ s so far/).waitFor();
    const response = await responded;
    expect(response.status(), await response.text()).toBe(200);
    const { id } = (await response.json()) as { id: string };
    const stored = await ok(`${urls.inference}/comparisons/${id}`);
    expect(stored).toMatchObject({ pairs: 2, counts: { win: 0, tie: 2, loss: 0 }, winner: null, model_a: { job_id: jobId }, model_b: { model_source: 'base', base_model_id: TINY_MODEL } });
    const result = page.getByRole('region', { name: 'Comparison result' });
    await result.waitFor();
    expect(await result.textContent()).toContain('2 pairs');
    expect(await result.getByTestId('comparison-winner').textContent()).toBe('No winner declared: the interval holds 50%');
    expect(await result.locator('[data-stat="ties"]').textContent()).toBe('2 (100%)');
    const verdicts = result.getByRole('table', { name: 'Verdicts' });
    expect(await verdicts.locator('tbody tr').count()).toBe(2);
    expect(await verdicts.locator('td[data-column=answer-a]').allTextContents()).toEqual(stored.verdicts.map((v: { answer_a: string }) => v.answer_a));
    expect(await verdicts.locator('td[data-column=answer-b]').allTextContents()).toEqual(stored.verdicts.map((v: { answer_b: string }) => v.answer_b));
    expect(await verdicts.locator('td[data-column=outcome]').allTextContents()).toEqual(stored.verdicts.map((v: { sample_index: number }) => (stored.flipped.includes(v.sample_index) ? 'tieflipped' : 'tie')));
    await shot('compare-judge');
    await shot('compare-judge', 390);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 900 });
    // Listed; opened again from the list after a reload; deleted after asking.
    await page.reload();
    const row = page.getByRole('table', { name: 'Your comparisons' }).locator(`tr[data-id="${id}"]`);
    await row.getByRole('button', { name: 'Open' }).click();
    expect(await result.getByTestId('comparison-winner').textContent()).toBe('No winner declared: the interval holds 50%');
    expect(await result.getByRole('table', { name: 'Verdicts' }).locator('tbody tr').count()).toBe(2);
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete comparison' }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect(await result.count()).toBe(0);
    const { comparisons } = await ok(`${urls.inference}/comparisons`);
    expect(comparisons.map((c: { id: string }) => c.id)).not.toContain(id);
  }, 300_000);

  it('adds a webhook endpoint (its secret shown once) and sends it a sample that unwrap verifies', async () => {
    await page.goto(`${consoleUrl}/webhooks`);
    const form = page.getByRole('form', { name: 'Add a webhook endpoint' });
    await form.getByLabel('Name').fill('console-hooks');
    await form.getByLabel('URL').fill(hooks.url);
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    hooks.secret = (await page.getByTestId('signing-secret').textContent())!;
    expect(hooks.secret).toMatch(/^whsec_/);
    const card = page.getByLabel('Webhook endpoint console-hooks');
    await card.getByLabel('Event type to send').selectOption('fine_tuning.job.succeeded');
    await card.getByRole('button', { name: 'Send a sample' }).click();
    await expect.poll(() => card.getByTestId('test-result').textContent()).toBe('fine_tuning.job.succeeded: it answered 200');
    const [sample] = await hooks.events();
    expect(sample).toMatchObject({ object: 'event', type: 'fine_tuning.job.succeeded' });
    await shot('webhooks');
  });

  it('pauses a job that has not ended, resumes it, cancels it, then deletes it after asking', async () => {
    const { job_id: doomed } = await submitJob('console-c', { max_steps: 5000 });
    await page.goto(`${consoleUrl}/training/${doomed}`);
    await page.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => page.getByTestId('status').first().textContent(), { timeout: 60_000 }).toBe('paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => page.getByTestId('status').first().textContent(), { timeout: 60_000 }).not.toBe('paused');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.getByTestId('status').first().textContent(), { timeout: 60_000 }).toBe('failed');
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('cancelled by user');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete job' }).click();
    await page.waitForURL(/\/training$/);
    await expect.poll(() => page.getByRole('table', { name: 'Training jobs' }).textContent()).toContain('console-b');
    expect(await page.getByRole('table', { name: 'Training jobs' }).textContent()).not.toContain('console-c');
    await shot('training');
  }, 120_000);

  it('lists the cancel’s delivery to the endpoint, sends it again on request, and removes the endpoint', async () => {
    await page.goto(`${consoleUrl}/webhooks`);
    const card = page.getByLabel('Webhook endpoint console-hooks');
    await card.getByRole('button', { name: 'Deliveries' }).click();
    const table = card.getByRole('table', { name: 'Deliveries to console-hooks' });
    const cancelled = table.getByRole('row').filter({ hasText: 'fine_tuning.job.cancelled' });
    await expect.poll(async () => {
      await card.getByRole('button', { name: 'Refresh' }).click();
      return cancelled.first().textContent();
    }, { timeout: 30_000 }).toMatch(/delivered.*200/);
    await shot('webhook-deliveries');
    const before = (await hooks.events()).filter((e) => e.type === 'fine_tuning.job.cancelled');
    expect(before).toHaveLength(1);
    await cancelled.first().getByRole('button', { name: 'Send again' }).click();
    await expect.poll(async () => (await hooks.events()).filter((e) => e.type === 'fine_tuning.job.cancelled').length, { timeout: 30_000 }).toBe(2);
    const [first, again] = (await hooks.events()).filter((e) => e.type === 'fine_tuning.job.cancelled');
    expect(again!.id).toBe(first!.id); // the same webhook-id: a receiver de-duplicates
    await card.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => page.getByText('No endpoint yet.').isVisible()).toBe(true);
  });

  it('shows the live worker with its devices and every queue lane with who serves it', async () => {
    await page.goto(`${consoleUrl}/workers`);
    const lanes = page.getByRole('table', { name: 'Queues' });
    await expect.poll(() => lanes.getByRole('row').count()).toBe(11); // the header and ten lanes
    const train = lanes.getByRole('row').filter({ hasText: /^train/ });
    expect(await train.getByRole('cell').allTextContents()).toEqual(['train', expect.stringMatching(/^\d+$/), expect.stringMatching(/^\d+$/), expect.any(String), '1']);
    const workers = page.getByRole('table', { name: 'Workers' });
    await expect.poll(() => workers.getByRole('row').count()).toBe(2);
    expect(await workers.textContent()).toMatch(/× \d+ · \d+ GiB/); // the CPU device: its cores and memory
    expect(await workers.textContent()).toContain('train, export, infer, evaluate, preflight, augment, batch, benchmark, session, sweep');
    expect(await workers.getByRole('columnheader').allTextContents()).toContain('Preparing for chat');
    await shot('workers');
  });

  it('shows a sweep: its trials with the best marked, the objective over trials and each setting against it; deletes it after asking', async () => {
    const { sweep_id: sweepId } = await ok(`${urls.training}/sweeps`, {
      method: 'POST',
      json: {
        name: 'console sweep', budget: { trials: 2, parallel: 1 }, sampler: 'random', pruner: 'none', seed: 4,
        space: { 'hyperparameters.learning_rate': { type: 'float', low: 0.001, high: 0.05, log: true } },
        training_request: {
          processed_dataset_id: datasetId, job_name: 'console trial',
          training_config: { base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', hyperparameters: { max_steps: 4, batch_size: 4, max_length: 64, save_strategy: 'no' }, eval_config: { eval_strategy: 'steps', eval_steps: 2 } },
        },
      },
    });
    // Followed from the list while it runs: its row links to its page, which polls until it ends.
    await page.goto(`${consoleUrl}/sweeps`);
    await page.getByRole('table', { name: 'Sweeps' }).getByRole('link', { name: 'console sweep' }).click();
    await page.waitForURL(new RegExp(`/sweeps/${sweepId}$`));
    await expect.poll(() => page.getByTestId('status').first().textContent(), { timeout: 240_000, interval: 1000 }).toBe('completed');
    const sweep = await ok(`${urls.training}/sweeps/${sweepId}`);
    const trials = page.getByRole('table', { name: 'Trials' });
    await expect.poll(() => trials.locator('tbody tr[data-state=completed]').count()).toBe(2);
    const best = trials.locator('tbody tr[data-best=true]');
    expect(await best.count()).toBe(1);
    expect(await best.getByRole('link').textContent()).toBe(sweep.best_job_id);
    expect(await trials.getByRole('columnheader').allTextContents()).toEqual(['#', 'Job', 'State', 'learning_rate', 'eval_loss', 'Why']);
    expect(await page.getByTestId('objective-chart').getAttribute('data-points')).toBe('2');
    const scatter = page.getByTestId('scatter-learning_rate');
    expect(await scatter.locator('circle[data-trial]').count()).toBe(2);
    expect(await scatter.locator('circle[data-trial] title').allTextContents()).toEqual(
      expect.arrayContaining(sweep.trials.map((t: { trial: number }) => expect.stringContaining(`trial ${t.trial}`))),
    );
    await shot('sweep');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete sweep' }).click();
    await page.waitForURL(/\/sweeps$/);
    expect((await fetch(`${urls.training}/sweeps/${sweepId}`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
    for (const t of sweep.trials) expect((await fetch(`${urls.training}/jobs/${t.job_id}`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
  }, 300_000);

  it('deletes a processed dataset after asking', async () => {
    await page.goto(`${consoleUrl}/datasets/${datasetId}`);
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete dataset' }).click();
    await page.waitForURL(/\/datasets$/);
    await expect.poll(() => page.getByText('None yet: upload a file and process it above.').isVisible()).toBe(true);
    expect((await fetch(`${urls.preprocessing}/datasets/${datasetId}`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
  });

  it('loaded nothing from anywhere but its own origin', () => {
    const foreign = requested.filter((url) => !url.startsWith(consoleUrl) && !url.startsWith('data:') && !url.startsWith('blob:'));
    expect(foreign).toEqual([]);
  });
});

describe('the console as its own process (scaled out)', () => {
  let alone: NodeProcess | undefined;
  afterAll(async () => alone?.stop());

  it('serves the same pages and reaches each service at its CONSOLE_<SERVICE>_URL', async () => {
    const port = await freePort();
    alone = startNode('services/console/src/server.ts', {
      CONSOLE_PORT: String(port),
      CONSOLE_PREPROCESSING_URL: urls.preprocessing,
      CONSOLE_TRAINING_URL: urls.training,
      CONSOLE_EXPORT_URL: urls.export,
      CONSOLE_INFERENCE_URL: urls.inference,
      CONSOLE_OPENAI_URL: urls.openai,
      LOG_LEVEL: 'warn',
    });
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy([url], [alone], 60_000);
    const jobs = await fetch(`${url}/api/training/jobs`, { headers: { authorization: `Bearer ${key}` } });
    expect(jobs.status).toBe(200);
    expect(((await jobs.json()) as { jobs: unknown[] }).jobs).toBeInstanceOf(Array);
    expect((await fetch(`${url}/api/openai/v1/models`)).status).toBe(401);
    expect(await (await fetch(`${url}/datasets`)).text()).toContain('<div id="root">');
  });
});
