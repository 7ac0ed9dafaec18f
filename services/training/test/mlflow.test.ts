// MLflow as the experiment tracker: a real `mlflow server` on loopback (from the core's dev dependencies),
// MLFLOW_TRACKING_URI set, a real job; tracker_url must open the job's run, which holds its loss and params.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

const MLFLOW = fileURLToPath(new URL('../../../core/.venv/bin/mlflow', import.meta.url));
let server: ChildProcess;
let uri: string;
let dir: string;
let h: TrainingHarness;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftp-mlflow-'));
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as net.AddressInfo;
  probe.close();
  uri = `http://127.0.0.1:${port}`;
  server = spawn(MLFLOW, ['server', '--host', '127.0.0.1', '--port', String(port), '--workers', '1',
    '--backend-store-uri', `sqlite:///${path.join(dir, 'mlflow.db')}`, '--artifacts-destination', path.join(dir, 'artifacts')], { stdio: 'ignore' });
  for (let i = 0; i < 240 && !(await fetch(`${uri}/health`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 250));
  h = await startTrainingHarness({ MLFLOW_TRACKING_URI: uri });
}, 240_000);

afterAll(async () => {
  await h?.close();
  server?.kill('SIGTERM');
  await fs.rm(dir, { recursive: true, force: true });
});

describe('MLflow tracking', () => {
  it('a job logs to its own MLflow run and tracker_url points at it', async () => {
    const dataset = await h.dataset(qaCsv());
    const request = loraRequest(dataset, { max_steps: 6, logging_steps: 2 }, { tracker_config: { project: 'ftp-test', log_model: 'false' } });
    const id = (await h.train({ method: 'POST', url: '/train', payload: request })).json().job_id;
    const job = await h.waitFor(id, (j) => j.status === 'completed' || j.status === 'failed', 240_000);
    expect(job.status, JSON.stringify(job)).toBe('completed');
    const match = new RegExp(`^${uri}/#/experiments/(\\d+)/runs/([0-9a-f]{32})$`).exec(String(job.tracker_url));
    expect(match, String(job.tracker_url)).not.toBeNull();

    const run = (await (await fetch(`${uri}/api/2.0/mlflow/runs/get?run_id=${match![2]}`)).json()) as {
      run: { info: { experiment_id: string; status: string }; data: { metrics?: Array<{ key: string }>; params?: Array<{ key: string; value: string }> } };
    };
    expect(run.run.info.experiment_id).toBe(match![1]);
    expect(run.run.data.metrics?.map((m) => m.key)).toContain('loss');
    expect(run.run.data.params?.find((p) => p.key === 'learning_rate')?.value).toBe('0.01');
    const experiment = (await (await fetch(`${uri}/api/2.0/mlflow/experiments/get?experiment_id=${match![1]}`)).json()) as { experiment: { name: string } };
    expect(experiment.experiment.name).toBe('ftp-test');
  }, 300_000);

  it('asking for mlflow without a server configured is a 422', async () => {
    const plain = await startTrainingHarness({}, { worker: false });
    try {
      const dataset = await plain.dataset(qaCsv(8));
      const res = await plain.train({ method: 'POST', url: '/train', payload: loraRequest(dataset, {}, { tracker_config: { provider: 'mlflow' } }) });
      expect(res.statusCode).toBe(422);
      expect(res.json().detail[0].msg).toMatch(/MLFLOW_TRACKING_URI/);
    } finally {
      await plain.close();
    }
  }, 120_000);
});
