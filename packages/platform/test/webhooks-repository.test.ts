// Webhook events are written by the repositories' status updates, in the same transaction, so every path that ends a
// job, an export or a batch tells it (#42): a /v1 job refused at submit, the worker's finish, a cancel, the watchdog
// failing a dead worker's job, an export's end, a batch's end, an evaluation. Each event gets one delivery per endpoint
// of its user subscribed to its type (and one to the operator's WEBHOOK_URL); a change that rolls back writes none;
// deliveries are claimed once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, OPERATOR_ENDPOINT, type Queryable } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await openTestPlatform({ WEBHOOK_URL: 'https://hooks.example.com/all', WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}` });
});
afterAll(() => platform?.close());

const ALL = ['fine_tuning.job.succeeded', 'fine_tuning.job.failed', 'fine_tuning.job.cancelled', 'fine_tuning.job.started', 'export.completed', 'export.failed', 'batch.completed', 'evaluation.completed'];

async function endpointFor(userId: string, eventTypes = ALL): Promise<string> {
  const id = newId('whe');
  await platform.webhooks.insertEndpoint({ endpoint_id: id, user_id: userId, name: 'e', url: 'https://hooks.example.com/x', event_types: eventTypes, secret: 's', secret_hint: 'h' });
  return id;
}

/** The events of `userId` with the endpoints each is delivered to. */
async function eventsOf(userId: string): Promise<Array<{ type: string; id: unknown; to: string[] }>> {
  const rows = await platform.db.query<{ type: string; data: { id: unknown }; endpoints: string[] | null }>(
    `SELECT e.type, e.data, (SELECT json_agg(d.endpoint_id ORDER BY d.endpoint_id) FROM webhook_deliveries d WHERE d.event_id = e.event_id) AS endpoints
     FROM webhook_events e WHERE e.user_id = $1 ORDER BY e.created_at, e.event_id`,
    [userId],
  );
  return rows.map((r) => ({ type: r.type, id: r.data.id, to: r.endpoints ?? [] }));
}

const newJob = (userId: string, extra: Record<string, unknown> = {}) => ({
  job_id: newId('job'), user_id: userId, job_name: 'j', processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text' as const,
  training_config: {}, blob_prefix: `jobs/${userId}/`, tracker_url: null, ...extra,
});

describe('webhook events from every path that ends something', () => {
  it('a job: started, then succeeded; a cancel; a refusal at submit; the watchdog failing a dead worker’s job', async () => {
    const user = `u-${newId('key')}`;
    const endpoint = await endpointFor(user);
    const to = [OPERATOR_ENDPOINT, endpoint].sort();
    // The worker's path: queued → preparing → training → completed.
    const done = await platform.jobs.insert(newJob(user));
    await platform.jobs.update(done.job_id, { status: 'preparing', worker_id: 'wrk_1' }, ['queued']);
    await platform.jobs.update(done.job_id, { status: 'training' }, ['preparing']);
    await platform.jobs.update(done.job_id, { status: 'completed', finished_at: new Date() }, ['training']);
    // A guard that does not hold writes nothing: completed twice is one event.
    expect(await platform.jobs.update(done.job_id, { status: 'completed' }, ['training'])).toBeUndefined();
    // A user's cancel of a queued job.
    const cancelled = await platform.jobs.insert(newJob(user));
    await platform.jobs.update(cancelled.job_id, { status: 'failed', error: 'cancelled by user', cancelled_at: new Date(), finished_at: new Date() }, ['queued']);
    // A /v1 job whose file failed validation is failed at insert.
    const refused = await platform.jobs.insert({ ...newJob(user), failed: { error: 'line 3 is not JSON' } });
    // The watchdog: a running job whose worker is gone is failed (releaseOrphan).
    const orphan = await platform.jobs.insert(newJob(user));
    await platform.jobs.update(orphan.job_id, { status: 'training', worker_id: 'wrk_gone' }, ['queued']);
    const [row] = await platform.jobs.listOrphaned({ kind: 'silent', timeoutS: 60 }).then((rows) => rows.filter((r) => r.job_id === orphan.job_id));
    expect(row, 'the orphan is listed').toBeDefined();
    expect(await platform.jobs.releaseOrphan(row!, { status: 'failed', error: 'its worker stopped' }, { kind: 'silent', timeoutS: 60 })).toBeDefined();

    expect(await eventsOf(user)).toEqual([
      { type: 'fine_tuning.job.started', id: done.job_id, to },
      { type: 'fine_tuning.job.succeeded', id: done.job_id, to },
      { type: 'fine_tuning.job.cancelled', id: cancelled.job_id, to },
      { type: 'fine_tuning.job.failed', id: refused.job_id, to },
      { type: 'fine_tuning.job.failed', id: orphan.job_id, to },
    ]);
  });

  it('an export’s end, a batch’s end, an evaluation; each endpoint gets only the types it asked for', async () => {
    const user = `u-${newId('key')}`;
    const all = await endpointFor(user);
    const exportsOnly = await endpointFor(user, ['export.completed']);
    const job = await platform.jobs.insert(newJob(user));
    const exp = await platform.exports.insert({ export_id: newId('exp'), job_id: job.job_id, user_id: user, type: 'adapter', destination: ['cloud'], hub_repo_id: null, gguf_quantization: null, message: 'queued' });
    await platform.exports.update(exp.export_id, { status: 'completed', finished_at: new Date() });
    const failedExport = await platform.exports.insert({ export_id: newId('exp'), job_id: job.job_id, user_id: user, type: 'gguf', destination: ['cloud'], hub_repo_id: null, gguf_quantization: 'q8_0', message: 'queued' });
    await platform.exports.update(failedExport.export_id, { status: 'failed', message: 'no space', finished_at: new Date() });
    const batch = await platform.batches.insert({ batch_id: newId('batch'), user_id: user, endpoint: '/v1/chat/completions', input_file_id: 'ds_1', completion_window: '24h', metadata: null, expires_at: new Date(Date.now() + 86_400_000) });
    await platform.batches.update(batch.batch_id, { status: 'in_progress' });
    await platform.batches.update(batch.batch_id, { status: 'completed', completed_at: new Date() });
    const evaluationId = newId('eval');
    await platform.evaluations.insert({
      evaluation_id: evaluationId, user_id: user, processed_dataset_id: 'pd_1', split: 'test', job_id: job.job_id, model_source: 'adapter', base_model_id: 'tiny',
      use_fast_engine: false, request: {}, metrics: {}, num_samples: 0, samples: [], warnings: [], elapsed_seconds: 1,
    });
    const both = [OPERATOR_ENDPOINT, all].sort();
    expect(await eventsOf(user)).toEqual([
      { type: 'export.completed', id: exp.export_id, to: [OPERATOR_ENDPOINT, all, exportsOnly].sort() },
      { type: 'export.failed', id: failedExport.export_id, to: both },
      { type: 'batch.completed', id: batch.batch_id, to: both },
      { type: 'evaluation.completed', id: evaluationId, to: both },
    ]);
  });

  it('a change that rolls back writes no event', async () => {
    const user = `u-${newId('key')}`;
    await expect(
      platform.db.transaction(async (tx: Queryable) => {
        await platform.webhooks.recordEvent(tx, user, 'fine_tuning.job.failed', { id: 'job_x' });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await eventsOf(user)).toEqual([]);
  });

  it('claims a due delivery once, and again only after its lease or a recorded retry', async () => {
    const user = `u-${newId('key')}`;
    await endpointFor(user, ['fine_tuning.job.failed']);
    await platform.db.transaction((tx) => platform.webhooks.recordEvent(tx, user, 'fine_tuning.job.failed', { id: 'job_y' }));
    const mine = async () => (await platform.webhooks.claimDue(100, 60)).filter((d) => d.user_id === user);
    const first = await mine();
    expect(first.map((d) => [d.type, d.attempts])).toEqual([['fine_tuning.job.failed', 1], ['fine_tuning.job.failed', 1]]);
    expect(await mine()).toEqual([]);
    await platform.webhooks.recordAttempt(first[0]!.delivery_id, { delivered: false, statusCode: 500, error: 'answered 500', retryAt: new Date(Date.now() - 1000) });
    await platform.webhooks.recordAttempt(first[1]!.delivery_id, { delivered: true, statusCode: 200, error: null, retryAt: null });
    expect((await mine()).map((d) => [d.delivery_id, d.attempts])).toEqual([[first[0]!.delivery_id, 2]]);
  });

  it('prunes deliveries that ended over 30 days ago and their events; a pending one stays whatever its age', async () => {
    const user = `u-${newId('key')}`;
    await endpointFor(user, ['fine_tuning.job.failed']);
    for (const id of ['old_done', 'old_pending', 'new_done']) await platform.db.transaction((tx) => platform.webhooks.recordEvent(tx, user, 'fine_tuning.job.failed', { id }));
    const claimed = (await platform.webhooks.claimDue(100, 60)).filter((d) => d.user_id === user);
    for (const d of claimed.filter((d) => d.data.id !== 'old_pending')) await platform.webhooks.recordAttempt(d.delivery_id, { delivered: true, statusCode: 200, error: null, retryAt: null });
    await platform.db.query(
      `UPDATE webhook_deliveries SET updated_at = now() - interval '31 days' WHERE event_id IN (SELECT event_id FROM webhook_events WHERE user_id = $1 AND data->>'id' LIKE 'old%')`,
      [user],
    );
    await platform.db.query(`UPDATE webhook_events SET created_at = now() - interval '31 days' WHERE user_id = $1 AND data->>'id' LIKE 'old%'`, [user]);
    expect(await platform.webhooks.prune(30)).toBeGreaterThanOrEqual(2); // old_done's two deliveries (the operator's and the endpoint's)
    expect((await eventsOf(user)).map((e) => e.id)).toEqual(['old_pending', 'new_done']);
  });
});
