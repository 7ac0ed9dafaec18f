// GET /metrics on a service: the request histogram by route template, the process series, the gauges read at each
// scrape, and who may read them in each auth mode (the operator's METRICS_TOKEN, never a user's key).
import { afterEach, describe, expect, it } from 'vitest';
import { createServiceApp, mergeExpositions, registerMetricsRoute } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import type { FastifyInstance } from 'fastify';

const METRICS_TOKEN = 'operator-metrics-token-0123456789';
let platform: TestPlatform | undefined;
afterEach(async () => {
  await platform?.close();
  platform = undefined;
});

async function trainingApp(env: Record<string, string> = {}): Promise<FastifyInstance> {
  platform = await openTestPlatform(env);
  const app = createServiceApp({ platform, service: 'training' });
  registerMetricsRoute(app, 'training');
  app.get('/jobs/:job_id', async () => ({ ok: true }));
  return app;
}

/** The value of one series in Prometheus text, or undefined when it is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  it('counts requests by route template, never by id, with the process series beside them', async () => {
    const app = await trainingApp();
    for (const id of ['job_a', 'job_b', 'job_c']) expect((await app.inject(`/jobs/${id}`)).statusCode).toBe(200);
    expect((await app.inject('/nowhere')).statusCode).toBe(404);
    const res = await app.inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    const text = res.body;
    expect(sample(text, 'ftp_http_request_duration_seconds_count{service="training",route="/jobs/:job_id",method="GET",status="200"}')).toBe(3);
    expect(sample(text, 'ftp_http_request_duration_seconds_count{service="training",route="unmatched",method="GET",status="404"}')).toBe(1);
    expect(text).not.toContain('job_a');
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it('reads its gauges at each scrape, and leaves a gauge whose store fails out rather than report 0', async () => {
    const app = await trainingApp();
    let value = 2;
    let fail = false;
    platform!.metrics.gaugeAtScrape({ name: 'ftp_test_things', help: 'things', labelNames: ['kind'] }, async (gauge) => {
      if (fail) throw new Error('store down');
      gauge.set({ kind: 'a' }, value);
    });
    expect(sample((await app.inject('/metrics')).body, 'ftp_test_things{kind="a"}')).toBe(2);
    value = 5;
    expect(sample((await app.inject('/metrics')).body, 'ftp_test_things{kind="a"}')).toBe(5);
    fail = true;
    expect(sample((await app.inject('/metrics')).body, 'ftp_test_things{kind="a"}')).toBeUndefined();
  });

  it('token mode: off (403, naming METRICS_TOKEN) until the operator sets it; then only with it, never a user key', async () => {
    let app = await trainingApp({ AUTH_MODE: 'token' });
    const off = await app.inject('/metrics');
    expect(off.statusCode).toBe(403);
    expect(off.json().detail).toContain('METRICS_TOKEN');
    await platform!.close();

    app = await trainingApp({ AUTH_MODE: 'token', METRICS_TOKEN });
    const { key } = await platform!.apiKeys.create('alice', 'k');
    expect((await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${key}` } })).statusCode).toBe(401);
    expect((await app.inject('/metrics')).statusCode).toBe(401);
    expect((await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).statusCode).toBe(200);
    // the operator's token opens nothing else
    expect((await app.inject({ url: '/jobs/job_a', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).statusCode).toBe(401);
  });

  it("serves another library's text after its own: BullMQ's exporter, one text per queue, merged into one group per metric", async () => {
    const lane = (queue: string, waiting: number) => [
      '# HELP bullmq_job_count Number of jobs in the queue by state',
      '# TYPE bullmq_job_count gauge',
      `bullmq_job_count{queue="${queue}", state="waiting"} ${waiting}`,
      '# HELP bullmq_job_completed_total Total number of completed jobs',
      '# TYPE bullmq_job_completed_total counter',
      `bullmq_job_completed_total{queue="${queue}"} 3`,
    ].join('\n');
    const merged = mergeExpositions([lane('train', 2), lane('infer', 0)]);
    expect(merged.split('\n').filter((l) => l.startsWith('# TYPE bullmq_job_count '))).toHaveLength(1);
    expect(merged).toContain('bullmq_job_count{queue="train", state="waiting"} 2\nbullmq_job_count{queue="infer", state="waiting"} 0\n# HELP bullmq_job_completed_total');
    const app = await trainingApp();
    platform!.metrics.textAtScrape(async () => merged);
    platform!.metrics.textAtScrape(async () => {
      throw new Error('Redis down');
    });
    const text = (await app.inject('/metrics')).body;
    expect(text).toContain(merged.trimEnd());
    expect(text.indexOf('ftp_http_request_duration_seconds')).toBeLessThan(text.indexOf('bullmq_job_count'));
  });
});
