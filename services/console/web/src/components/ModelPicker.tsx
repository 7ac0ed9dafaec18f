// Which model runs (a comparison's A or B, a benchmark's model): a completed job's adapter or merged model, at its end
// or at one of its stored checkpoints, or a base model typed by name.
import { Autocomplete, Fieldset, NativeSelect, SimpleGrid } from '@mantine/core';
import { api } from '../api/client.ts';
import type { CheckpointList, ModelSource, TrainingJob } from '../api/types.ts';
import { useLoad } from '../api/use-load.ts';
import { formatNumber } from './format.ts';

export interface ModelChoice {
  source: ModelSource;
  /** Empty: the first completed job. */
  jobId: string;
  /** A checkpoint's step, empty for the job's final model. */
  checkpoint: string;
  baseModel: string;
}

/** The model fields of a request (model_source, job_id, checkpoint_step, base_model_id); undefined while incomplete. */
export function modelRequest(choice: ModelChoice, jobs: TrainingJob[]): Record<string, unknown> | undefined {
  if (choice.source === 'base') return choice.baseModel.trim() ? { model_source: 'base', base_model_id: choice.baseModel.trim() } : undefined;
  const job = chosenJob(choice, jobs);
  if (!job) return undefined;
  return { model_source: choice.source, job_id: job.job_id, ...(choice.checkpoint ? { checkpoint_step: Number(choice.checkpoint) } : {}) };
}

const chosenJob = (choice: ModelChoice, jobs: TrainingJob[]) => jobs.find((j) => j.job_id === choice.jobId) ?? jobs[0];

/** A model as a request named it: the job by its name (its id when it is not among `jobs`), or the base model. */
export function modelLabel(model: { model_source: ModelSource; job_id?: string | null | undefined; checkpoint_step?: number | null | undefined; base_model_id?: string | null | undefined }, jobs: TrainingJob[]): string {
  if (model.model_source === 'base' || !model.job_id) return model.base_model_id ?? '—';
  const name = jobs.find((j) => j.job_id === model.job_id)?.job_name ?? model.job_id;
  return `${name} · ${model.model_source}${model.checkpoint_step ? ` at step ${model.checkpoint_step}` : ''}`;
}

const SOURCES: Array<{ value: ModelSource; label: string }> = [
  { value: 'adapter', label: 'a job’s adapter' },
  { value: 'merged', label: 'a job’s merged model' },
  { value: 'base', label: 'a base model' },
];

interface ModelPickerProps {
  legend: string;
  value: ModelChoice;
  onChange: (choice: ModelChoice) => void;
  /** The caller's completed jobs. */
  jobs: TrainingJob[];
  /** Base models of the store, offered as the name is typed. */
  bases: string[];
}

export function ModelPicker({ legend, value, onChange, jobs, bases }: ModelPickerProps) {
  const job = value.source === 'base' ? undefined : chosenJob(value, jobs);
  const checkpoints = useLoad((signal) => (job ? api<CheckpointList>('training', `/jobs/${encodeURIComponent(job.job_id)}/checkpoints`, { signal }) : Promise.resolve({ checkpoints: [] })), [job?.job_id]);
  const set = (change: Partial<ModelChoice>) => onChange({ ...value, ...change });
  return (
    <Fieldset legend={legend} variant="filled">
      <SimpleGrid cols={{ base: 1, xs: value.source === 'base' ? 2 : 3 }}>
        <NativeSelect label="Source" value={value.source} data={SOURCES} onChange={(e) => set({ source: e.currentTarget.value as ModelSource })} />
        {value.source === 'base' ? (
          <Autocomplete label="Base model" placeholder="a model of the store, or a hub id" value={value.baseModel} data={bases} onChange={(baseModel) => set({ baseModel })} />
        ) : (
          <>
            <NativeSelect
              label="Job"
              value={job?.job_id ?? ''}
              data={jobs.length ? jobs.map((j) => ({ value: j.job_id, label: `${j.job_name} (${j.base_model_id})` })) : [{ value: '', label: 'no completed job yet' }]}
              // Another job has other checkpoints: back to its final model.
              onChange={(e) => set({ jobId: e.currentTarget.value, checkpoint: '' })}
            />
            <NativeSelect
              label="Checkpoint"
              value={value.checkpoint}
              error={checkpoints.error}
              data={[
                { value: '', label: 'the final model' },
                ...(checkpoints.data?.checkpoints ?? []).map((c) => ({ value: String(c.step), label: `step ${c.step}${c.train_loss == null ? '' : ` (loss ${formatNumber(c.train_loss)})`}` })),
              ]}
              onChange={(e) => set({ checkpoint: e.currentTarget.value })}
            />
          </>
        )}
      </SimpleGrid>
    </Fieldset>
  );
}
