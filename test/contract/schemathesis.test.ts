// schemathesis, a property-based client no one here wrote, over every OpenAPI document (openapi/*.json) against the
// running embedded stack in token mode. The stack is its own: its own data folder and API key (a user of its own), an
// empty model store and a hub stand-in that holds nothing, so the requests it generates can neither disturb other tests
// nor start real work (no model to train or load). Settings and every exception: schemathesis.toml next to this file.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_NAMES } from '@ftp/schema';
import { startHubStandin, type HubStandin } from '../hub-standin/server.ts';
import { firstApiKey, stackPorts, startStack, type StackProcess, type StackUrls } from '../support/stack.ts';

const HERE = fileURLToPath(new URL('./', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// From test/tools (uv.lock), installed by scripts/bootstrap.sh.
const ST = path.join(ROOT, 'test/tools/.venv/bin/st');

let dataDir: string;
let modelsDir: string;
let workDir: string;
let hub: HubStandin;
let stack: StackProcess;
let urls: StackUrls;
let key: string;

beforeAll(async () => {
  await fs.access(ST).catch(() => {
    throw new Error(`schemathesis is not installed at ${ST}; run bash scripts/bootstrap.sh`);
  });
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-schemathesis-'));
  modelsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-schemathesis-models-'));
  // schemathesis writes its cache and reports into the folder it runs in.
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-schemathesis-run-'));
  hub = await startHubStandin({});
  const ports = await stackPorts();
  urls = ports.urls;
  stack = await startStack({ ...ports.env, DATA_DIR: dataDir, MODELS_DIR: modelsDir, AUTH_MODE: 'token', HF_ENDPOINT: hub.url, LOG_LEVEL: 'warn' }, urls);
  key = firstApiKey(stack);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await hub?.close();
  for (const dir of [dataDir, modelsDir, workDir]) if (dir) await fs.rm(dir, { recursive: true, force: true });
});

function schemathesis(service: (typeof SERVICE_NAMES)[number]): Promise<{ code: number; output: string }> {
  const args = ['--config-file', path.join(HERE, 'schemathesis.toml'), 'run', path.join(ROOT, 'openapi', `${service}.json`), '--url', urls[service]];
  // To explore beyond CI's fixed seed and bound: FTP_SCHEMATHESIS_SEED=n FTP_SCHEMATHESIS_EXAMPLES=m npx vitest run test/contract/schemathesis.test.ts
  if (process.env.FTP_SCHEMATHESIS_SEED) args.push('--seed', process.env.FTP_SCHEMATHESIS_SEED);
  if (process.env.FTP_SCHEMATHESIS_EXAMPLES) args.push('--max-examples', process.env.FTP_SCHEMATHESIS_EXAMPLES);
  const env = { ...process.env, FTP_SCHEMATHESIS_KEY: key, SCHEMATHESIS_HOOKS: path.join(HERE, 'schemathesis_hooks.py'), NO_COLOR: '1' };
  return new Promise((resolve) => {
    execFile(ST, args, { cwd: workDir, env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe('schemathesis over every OpenAPI document', () => {
  for (const service of SERVICE_NAMES) {
    it(`finds nothing wrong with the ${service} service`, async () => {
      const { code, output } = await schemathesis(service);
      // The summary names the phases and checks that ran; a run that tested nothing is a failure too, and a document
      // with examples (interface.md's samples) has them sent.
      expect(output).toMatch(/Test cases:\s+\d+ generated/);
      const document = await fs.readFile(path.join(ROOT, 'openapi', `${service}.json`), 'utf8');
      if (document.includes('"examples"')) expect(output).toMatch(/Examples \(in [^)]*\)\s+✅\s+\d+ passed/);
      expect(code, output.slice(-20_000)).toBe(0);
    }, 600_000);
  }
});
