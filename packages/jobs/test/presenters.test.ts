// A training job as GET /jobs/{id} answers it: the times of its run, which an export of it leaves as they were.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { TrainingJob } from '@ftp/schema';
import { presentJob } from '../src/presenters.ts';

let platform: TestPlatform;
beforeEach(async () => {
  platform = await openTestPlatform();
});
afterEach(() => platform.close());

describe('a training job', () => {
  it('says when its run started and finished, and an export moves neither those nor updated_at (#54)', async () => {
    const jobId = newId('job');
    const inserted = await platform.jobs.insert({
      job_id: jobId, user_id: 'alice', job_name: 'j', processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text',
      training_config: { trainer_type: 'sft' }, blob_prefix: `jobs/alice/${jobId}/`, tracker_url: null,
    });
    expect(presentJob(inserted)).toMatchObject({ started_at: null, finished_at: null });
    const startedAt = new Date('2026-11-28T10:00:00.000Z');
    const finishedAt = new Date('2026-11-28T10:01:23.000Z');
    await platform.jobs.update(jobId, { status: 'preparing', started_at: startedAt }, ['queued']);
    const completed = (await platform.jobs.update(jobId, { status: 'completed', finished_at: finishedAt }, ['preparing']))!;
    await new Promise((r) => setTimeout(r, 20));

    const gguf = 'blob://jobs/alice/model.gguf';
    const exported = (await platform.jobs.recordExported(jobId, { artifacts: { file: { gguf }, raw: {}, hub: {} }, gguf_path: gguf }))!;
    expect(exported).toMatchObject({ gguf_path: gguf, artifacts: { file: { gguf } } });
    const shown = TrainingJob.parse(presentJob(exported));
    expect(shown).toMatchObject({ started_at: startedAt.toISOString(), finished_at: finishedAt.toISOString(), updated_at: completed.updated_at.toISOString() });
    // only a completed job records an export
    const queued = newId('job');
    await platform.jobs.insert({ job_id: queued, user_id: 'alice', job_name: 'q', processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text', training_config: {}, blob_prefix: 'x/', tracker_url: null });
    expect(await platform.jobs.recordExported(queued, { artifacts: { file: { gguf }, raw: {}, hub: {} } })).toBeUndefined();
  });
});
