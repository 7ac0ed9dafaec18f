// A training job as GET /jobs/{id} answers it: the times of its run, which an export of it leaves as they were; and
// as GET /exports answers it: the ONNX files it offers, each marked usable or not as its export measured it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '@ftp/platform';
import { openTestPlatform, type TestPlatform } from '@ftp/platform/testing';
import { ExportSummary, TrainingJob } from '@ftp/schema';
import { presentExportSummary, presentJob } from '../src/training/presenters.ts';

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

describe('a job with an ONNX export', () => {
  const parity = (variant: 'fp32' | 'q4', agreement: number) => ({
    variant, agreement, first_divergence: agreement === 1 ? null : { prompt: 0, token: 3 }, prompts: 4, tokens_per_prompt: 16, execution_provider: 'cpu', usable: agreement >= 0.5,
  });

  it('offers the variants of the folder it names, an unusable one marked (#54)', async () => {
    const jobId = newId('job');
    await platform.jobs.insert({
      job_id: jobId, user_id: 'alice', job_name: 'j', processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text',
      training_config: {}, blob_prefix: `jobs/alice/${jobId}/`, tracker_url: null,
    });
    await platform.jobs.update(jobId, { status: 'completed', finished_at: new Date() });
    const folder = `blob://jobs/alice/${jobId}/exports/onnx`;
    const exported = async (measured: ReturnType<typeof parity>[]) => {
      const row = await platform.exports.insert({ export_id: newId('exp'), job_id: jobId, user_id: 'alice', type: 'onnx', destination: ['cloud'], hub_repo_id: null, gguf_quantization: null, message: null });
      await platform.exports.update(row.export_id, { status: 'completed', artifacts: [{ type: 'onnx', variant: 'raw', path: folder }], parity: measured, finished_at: new Date() });
      await new Promise((r) => setTimeout(r, 5));
    };
    await exported([parity('fp32', 1), parity('q4', 0.9)]);
    await exported([parity('fp32', 1), parity('q4', 0.41)]); // the later export wrote the folder again
    const job = (await platform.jobs.recordExported(jobId, { artifacts: { file: {}, raw: { onnx: folder }, hub: {} } }))!;

    const summary = ExportSummary.parse(presentExportSummary(job, await platform.exports.completedOnnxOfJobs('alice', [jobId])));
    expect(summary.onnx_variants?.map((p) => [p.variant, p.usable])).toEqual([['fp32', true], ['q4', false]]);
    expect(await platform.exports.completedOnnxOfJobs('bob', [jobId])).toEqual([]);
    expect(presentExportSummary({ ...job, artifacts: { file: {}, raw: {}, hub: {} } }, []).onnx_variants).toBeNull();
  });
});

describe('a queued job', () => {
  it('says how many queued jobs of its lane, any user’s, go before it (#54)', async () => {
    const submit = async (user: string, trainer = 'sft') => {
      const jobId = newId('job');
      await platform.jobs.insert({
        job_id: jobId, user_id: user, job_name: 'j', processed_dataset_id: 'pd_1', base_model_id: 'tiny', modality: 'text',
        training_config: { trainer_type: trainer }, blob_prefix: `jobs/${user}/${jobId}/`, tracker_url: null,
      });
      await new Promise((r) => setTimeout(r, 5));
      return jobId;
    };
    const first = await submit('bob');
    const running = await submit('bob');
    const session = await submit('bob', 'tinker'); // a Tinker run waits in its own lane
    const second = await submit('alice', 'dpo');
    const third = await submit('alice');
    await platform.jobs.update(running, { status: 'training' }, ['queued']);

    const ahead = await platform.jobs.queuedAhead([first, running, session, second, third]);
    expect(Object.fromEntries(ahead)).toEqual({ [first]: 0, [session]: 0, [second]: 1, [third]: 2 });
    const job = (await platform.jobs.getOwnWithLatestExport('alice', third)).job;
    expect(TrainingJob.parse(presentJob(job, undefined, ahead.get(third))).jobs_ahead).toBe(2);
    await platform.jobs.update(third, { status: 'training' }, ['queued']);
    const started = (await platform.jobs.getOwnWithLatestExport('alice', third)).job;
    expect(presentJob(started, undefined, 2).jobs_ahead).toBeNull();
  });
});
