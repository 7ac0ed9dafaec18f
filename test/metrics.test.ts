// A real Prometheus scrapes every service of the shared embedded stack (its /metrics with the operator's
// METRICS_TOKEN); while a job runs and after it, and after a batch inference, the series that work feeds are asked
// of Prometheus and must have moved: the job gauge, the phase histograms, jobs finished, tokens trained, generation,
// requests by route template. No series holds an id. Every panel of the Grafana dashboard (deploy/grafana) returns a
// series from it.
import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, until } from './support/http.ts';
import { startPrometheus, type Prometheus } from './support/prometheus.ts';
import { uploadQaDataset } from './support/qa-job.ts';
import { sharedStack, type SharedStack } from './support/shared-stack.ts';
import { TINY_MODEL } from './support/tiny-model.ts';

let stack: SharedStack;
let prometheus: Prometheus;
let bearer: string;
const { ok } = apiClient(() => ({ authorization: `Bearer ${bearer}` }));

/** Waits until Prometheus has scraped a value of `expr` that `done` accepts; the value. */
const scraped = (what: string, expr: string, done: (value: number) => boolean) => until(what, () => prometheus.sum(expr), done, 120_000);

beforeAll(async () => {
  stack = await sharedStack();
  bearer = await stack.token('metrics-user');
  prometheus = await startPrometheus(Object.entries(stack.urls).map(([service, url]) => ({ job: service, address: new URL(url).host, bearer: stack.metricsToken })));
  await until('every service scraped', () => prometheus.query('up'), (up) => up.length === Object.keys(stack.urls).length && up.every((target) => target.value === 1), 60_000);
}, 240_000);

afterAll(async () => {
  await prometheus?.stop();
});

describe('Prometheus scraping the embedded stack', () => {
  it('a job moves the job gauge while it runs, then the phase histograms, jobs finished and tokens trained', async () => {
    // Every service's /metrics carries the process's series in the embedded stack: they are read from one of them.
    const before = {
      training: await prometheus.sum(`ftp_job_phase_duration_seconds_count{job="training",phase="training",trainer="sft"}`),
      queued: await prometheus.sum(`ftp_job_phase_duration_seconds_count{job="training",phase="queued",trainer="sft"}`),
      finished: await prometheus.sum(`ftp_jobs_finished_total{job="training",status="completed",trainer="sft"}`),
      tokens: await prometheus.sum(`ftp_trained_tokens_total{job="training",trainer="sft"}`),
    };
    const { processed } = await uploadQaDataset(stack.urls, ok);
    const { job_id: jobId } = await ok(`${stack.urls.training}/train`, {
      method: 'POST',
      json: {
        processed_dataset_id: processed.processed_dataset_id, job_name: 'metrics',
        training_config: {
          base_model_id: TINY_MODEL, provider: 'local', method: 'LoRA', trainer_type: 'sft',
          hyperparameters: { max_steps: 10, logging_steps: 5, learning_rate: 0.01, batch_size: 4, gradient_accumulation_steps: 1, max_length: 64, save_strategy: 'no' },
        },
      },
    });
    await scraped('a running sft job in ftp_jobs', 'ftp_jobs{job="training",status=~"preparing|training",trainer="sft"}', (n) => n >= 1);
    const job = await until('the job', () => ok(`${stack.urls.training}/jobs/${jobId}`), (j) => j.status === 'completed' || j.status === 'failed');
    expect(job.status).toBe('completed');

    await scraped('the training phase observed', `ftp_job_phase_duration_seconds_count{job="training",phase="training",trainer="sft"}`, (n) => n >= before.training + 1);
    expect(await prometheus.sum(`ftp_job_phase_duration_seconds_count{job="training",phase="queued",trainer="sft"}`)).toBeGreaterThanOrEqual(before.queued + 1);
    expect(await prometheus.sum(`ftp_job_phase_duration_seconds_sum{job="training",phase="training",trainer="sft"}`)).toBeGreaterThan(0);
    expect(await prometheus.sum(`ftp_jobs_finished_total{job="training",status="completed",trainer="sft"}`)).toBeGreaterThanOrEqual(before.finished + 1);
    expect(await prometheus.sum(`ftp_trained_tokens_total{job="training",trainer="sft"}`)).toBeGreaterThan(before.tokens);
    expect(await prometheus.sum(`ftp_training_tokens_per_second{job="training",trainer="sft"}`)).toBeGreaterThan(0);
    await scraped('the completed job in ftp_jobs', `ftp_jobs{job="training",status="completed",trainer="sft"}`, (n) => n >= 1);
    // the requests that polled the job, by route template
    expect(await prometheus.sum(`ftp_http_request_duration_seconds_count{job="training",service="training",route="/jobs/:job_id",method="GET",status="200"}`)).toBeGreaterThan(0);

    // the deployment as the services read it: a live worker on every lane, the in-process queue under BullMQ's names
    expect(await prometheus.sum(`ftp_workers_alive{job="training",queue="train"}`)).toBe(1);
    expect(await prometheus.sum(`ftp_worker_devices{job="training",kind="cpu"}`)).toBe(1);
    expect((await prometheus.query(`bullmq_job_count{job="training",queue="train"}`)).map((s) => s.metric.state).sort()).toEqual(['active', 'waiting']);
    expect((await prometheus.query('ftp_queue_oldest_waiting_seconds{job="training"}')).length).toBe(10); // one per lane
    // without a GPU the GPU series are absent, not 0
    expect(await prometheus.query('ftp_gpu_memory_total_bytes')).toEqual([]);

    // no label anywhere holds an id of a job, a dataset or a user
    const labels = (await prometheus.query('{job="training"}')).flatMap((s) => Object.values(s.metric)).join(' ');
    expect(labels).not.toContain(jobId);
    expect(labels).not.toContain(processed.processed_dataset_id);
    expect(labels).not.toContain('metrics-user');

    // a batch inference feeds the generation series
    const generated = await prometheus.sum('ftp_generated_tokens_total{job="training",kind="inference",engine="transformers"}');
    const answered = await ok(`${stack.urls.inference}/inference/batch`, {
      method: 'POST',
      json: { model_source: 'adapter', job_id: jobId, use_fast_engine: false, max_new_tokens: 8, messages: [[{ role: 'user', content: 'What color is the sky?' }]] },
    });
    expect(answered.results).toHaveLength(1);
    await scraped('generated tokens counted', 'ftp_generated_tokens_total{job="training",kind="inference",engine="transformers"}', (n) => n > generated);
    expect(await prometheus.sum('ftp_generation_duration_seconds_count{job="training",kind="inference",engine="transformers"}')).toBeGreaterThan(0);

    // a streamed chat of the fine-tuned model feeds the time to its first token
    const firstTokens = await prometheus.sum('ftp_time_to_first_token_seconds_count{job="training"}');
    const streamed = await fetch(`${stack.urls.openai}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: `ft:${TINY_MODEL}:custom:${jobId}`, stream: true, max_tokens: 8, messages: [{ role: 'user', content: 'What color is the sky?' }] }),
    });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('data: [DONE]');
    await scraped('time to first token observed', 'ftp_time_to_first_token_seconds_count{job="training"}', (n) => n > firstTokens);
  }, 600_000);

  it('every panel of the Grafana dashboard returns a series from this Prometheus (the GPU panels aside, on a CPU)', async () => {
    const dashboard = JSON.parse(await fs.readFile(new URL('../deploy/grafana/dashboard.json', import.meta.url), 'utf8')) as { panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }> };
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(panels.length).toBeGreaterThan(15);
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        // Grafana's interval variables, as it would fill them in for the last half hour
        const expr = target.expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '30m');
        if (/GPU/.test(panel.title)) expect(await prometheus.query(expr), panel.title).toEqual([]);
        // a rate needs two scrapes of a series: one that appeared just now gets a few seconds
        else await until(`${panel.title}: ${expr}`, () => prometheus.query(expr), (series) => series.length > 0, 30_000);
      }
    }
  });

  it('every service serves the same process-wide series, each scraped with the operator token only', async () => {
    for (const service of Object.keys(stack.urls)) {
      expect(await prometheus.sum(`up{job="${service}"}`)).toBe(1);
      expect(await prometheus.sum(`process_resident_memory_bytes{job="${service}"}`)).toBeGreaterThan(0);
    }
    // a user's token does not open /metrics
    const res = await fetch(`${stack.urls.training}/metrics`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(res.status).toBe(401);
  });
});
