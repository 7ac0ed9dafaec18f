// Benchmark (not a test): a generated CSV through the real preprocessing API (upload, then process
// into language_modeling with a template and a manual split), against the `datasets` library doing
// the same work in the same run. Prints rows/s and peak RSS of both, and the ratio.
//   pnpm exec tsx bench/preprocess/run.ts [--rows 200000] [--skip-baseline]
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const args = process.argv.slice(2);
const ROWS = Number(args[args.indexOf('--rows') + 1] ?? 0) || 200_000;
const SKIP_BASELINE = args.includes('--skip-baseline');
const PORT = 18001;
const WORDS = 'account billing refund password login order shipping delivery invoice upgrade cancel plan device network error update'.split(' ');

/** ~300 bytes a row over three text columns, deterministic. */
async function writeCsv(file: string, rows: number): Promise<number> {
  const out = createWriteStream(file);
  let seed = 7;
  const word = () => WORDS[(seed = (seed * 1103515245 + 12345) & 0x7fffffff) % WORDS.length]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  out.write('question,answer,context\n');
  for (let i = 0; i < rows; i++) {
    const line = `"${sentence(9)} ${i}?","${sentence(18)}.","${sentence(9)}, ""ticket"" ${i}"\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return (await fs.stat(file)).size;
}

function peakRssMb(pid: number): number {
  const status = execFileSync('cat', [`/proc/${pid}/status`]).toString();
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function waitForHealth(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

async function runOurs(csvFile: string, work: string) {
  const server = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['services/stack/src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: path.join(work, 'data'), PREPROCESSING_PORT: String(PORT), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    // tsx runs node as a child; the server is the node process whose parent is tsx.
    await waitForHealth(`http://127.0.0.1:${PORT}/health`);
    const nodePid = Number(execFileSync('pgrep', ['-P', String(server.pid)]).toString().trim().split('\n')[0]);
    const base = `http://127.0.0.1:${PORT}`;
    const size = (await fs.stat(csvFile)).size;
    const boundary = 'bench-boundary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.csv"\r\nContent-Type: text/csv\r\n\r\n`;
    const tail = `\r\n--${boundary}--\r\n`;
    async function* body() {
      yield Buffer.from(head);
      for await (const chunk of createReadStream(csvFile)) yield chunk as Buffer;
      yield Buffer.from(tail);
    }
    const t0 = performance.now();
    const upload = await fetch(`${base}/datasets/upload`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(Buffer.byteLength(head) + size + Buffer.byteLength(tail)) },
      body: ReadableStream.from(body()) as unknown as RequestInit['body'],
      duplex: 'half',
    } as RequestInit);
    const uploaded = (await upload.json()) as { dataset_id: string; num_examples: number };
    const t1 = performance.now();
    const processed = await fetch(`${base}/datasets/process`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        dataset_name: 'bench',
        dataset_id: uploaded.dataset_id,
        config: {
          field_mappings: {
            system_field: { type: 'template', value: 'You are a helpful support agent.' },
            user_field: { type: 'template', value: 'Customer asked: {question}\nContext: {context}' },
            assistant_field: { type: 'column', value: 'answer' },
          },
          split_config: { type: 'manual_split', test_size: 0.1 },
        },
      }),
    });
    const result = (await processed.json()) as { num_examples: number; full_splits: Array<{ num_rows: number }> };
    const t2 = performance.now();
    if (!processed.ok) throw new Error(`process failed: ${JSON.stringify(result)}`);
    return { rows: result.num_examples, uploadSeconds: (t1 - t0) / 1000, processSeconds: (t2 - t1) / 1000, peakRssMb: peakRssMb(nodePid) };
  } finally {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
}

function runBaseline(csvFile: string, work: string) {
  const venv = path.join(ROOT, 'bench/out/venv');
  if (!existsSync(path.join(venv, 'bin/python'))) {
    execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    execFileSync(path.join(venv, 'bin/pip'), ['install', '--quiet', 'datasets==5.2.0'], { stdio: 'inherit' });
  }
  const outDir = path.join(work, 'baseline');
  execFileSync('mkdir', ['-p', outDir]);
  const out = execFileSync(path.join(venv, 'bin/python'), [path.join(ROOT, 'bench/preprocess/baseline.py'), csvFile, outDir], {
    env: { ...process.env, HF_DATASETS_CACHE: path.join(work, 'hf-cache'), HF_HUB_OFFLINE: '1' },
  });
  return JSON.parse(out.toString().trim().split('\n').pop()!) as { rows: number; seconds: number; peak_rss_mb: number };
}

const work = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-bench-pre-'));
try {
  const csvFile = path.join(work, 'bench.csv');
  const bytes = await writeCsv(csvFile, ROWS);
  console.log(`input: ${ROWS} rows, ${(bytes / 1e6).toFixed(1)} MB (${(bytes / ROWS).toFixed(0)} bytes/row)`);
  const ours = await runOurs(csvFile, work);
  const oursTotal = ours.uploadSeconds + ours.processSeconds;
  console.log(`ours:     upload ${ours.uploadSeconds.toFixed(2)} s + process ${ours.processSeconds.toFixed(2)} s; ` +
    `${(ROWS / oursTotal).toFixed(0)} rows/s end to end (${(ROWS / ours.processSeconds).toFixed(0)} rows/s processing); server peak RSS ${ours.peakRssMb.toFixed(0)} MB`);
  if (!SKIP_BASELINE) {
    const base = runBaseline(csvFile, work);
    console.log(`datasets: ${base.seconds.toFixed(2)} s; ${(base.rows / base.seconds).toFixed(0)} rows/s; peak RSS ${base.peak_rss_mb.toFixed(0)} MB`);
    console.log(`ratio (ours end-to-end rows/s ÷ datasets rows/s): ${(base.seconds / oursTotal).toFixed(2)}x`);
  }
} finally {
  await fs.rm(work, { recursive: true, force: true });
}
