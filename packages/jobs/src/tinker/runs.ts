// A Tinker training run on the jobs surface (decisions.md "Own training loops": GET /jobs and the console show it):
// read as a training job (trainer tinker, its optim_steps its progress, the loss of its last forward_backward), and
// cancelled or deleted through the same routes. Its own rows stay its truth (tinker_runs: the worker that holds it,
// its calls' order); pause and resume do not apply (a run lets its worker go by itself when idle).
import { Conflict, type ExportRow, type Platform, type TinkerCheckpointRow, type TinkerRunRow } from '@ftp/platform';
import type { Checkpoint, ExportDetails, TrainingJob } from '@ftp/schema';
import { CANCELLED_BY_USER, sessionQueue } from '../queues/index.ts';
import { tinkerPath } from './index.ts';
import { deleteModelResults, presentExportRecord, refuseWhileModelsInUse } from '../training/index.ts';

const STATUS = { queued: 'queued', running: 'training', idle: 'paused', failed: 'failed' } as const satisfies Record<TinkerRunRow['status'], TrainingJob['status']>;

export function presentTinkerRun(run: TinkerRunRow): TrainingJob {
  const from = run.config.from_state;
  return {
    job_id: run.run_id,
    job_name: `tinker ${run.model_id}`,
    status: STATUS[run.status],
    modality: 'text',
    tracker_url: null,
    processed_dataset_id: null,
    adapter_path: null,
    base_model_id: run.base_model,
    gguf_path: null,
    metrics: null,
    error: run.error,
    created_at: run.created_at.toISOString(),
    updated_at: run.updated_at.toISOString(),
    started_at: null,
    finished_at: null,
    jobs_ahead: null,
    progress: { step: run.step, total_steps: null, epoch: null, loss: run.last_loss, eta_seconds: null, reward: null },
    artifacts: { file: {}, raw: {}, hub: {} },
    latest_export: null,
    parent: from && from.run_id !== run.run_id ? { job_id: from.run_id, checkpoint_step: null } : null,
    best_step: null,
    preflight: null,
    training_config: {
      trainer_type: 'tinker', method: 'LoRA', base_model_id: run.base_model, model_id: run.model_id, session_id: run.session_id,
      lora: { rank: run.config.rank, train_mlp: run.config.train_mlp, train_attn: run.config.train_attn, train_unembed: run.config.train_unembed, seed: run.config.seed },
    },
    sweep_id: null,
    pruned: false,
  };
}

/** A run's saved weights as GET /jobs/{id}/checkpoints lists a job's checkpoints (its losses are its calls'). */
export function presentTinkerCheckpoint(row: TinkerCheckpointRow): Checkpoint {
  return {
    step: row.step, name: row.name, kind: row.kind, tinker_path: tinkerPath(row.run_id, row.kind, row.name),
    epoch: null, train_loss: null, eval_loss: null, created_at: row.created_at.toISOString(), size_bytes: row.size_bytes,
  };
}

/** GET /exports/{id} of a run: its exports are of its sampler weights (checkpoint_name), so no artifact groups. */
export function presentTinkerExports(run: TinkerRunRow, latest: ExportRow | undefined): ExportDetails {
  return {
    job_id: run.run_id, job_name: `tinker ${run.model_id}`, user_id: run.user_id, adapter_path: null, base_model_id: run.base_model, modality: 'text',
    artifacts: { file: {}, raw: {}, hub: {} }, onnx_variants: null, latest_export: latest ? presentExportRecord(latest) : null,
  };
}

/** Queues an idle run again (a call for it waits): once, whoever asks first, since only an idle run moves to queued. */
export async function requeueIdleRun(platform: Platform, runId: string): Promise<void> {
  if (await platform.tinker.updateRun(runId, { status: 'queued', worker_id: null }, ['idle'])) await platform.queue.add(sessionQueue, { runId });
}

/** Ends a run: its calls not run fail, and the worker holding it lets it go at its next heartbeat. */
export async function cancelTinkerRun(platform: Platform, run: TinkerRunRow): Promise<void> {
  if (run.status === 'failed') throw new Conflict(`training run ${run.run_id} is already failed; only a queued, training or paused (idle) one can be cancelled`);
  if (await platform.tinker.updateRun(run.run_id, { status: 'failed', error: CANCELLED_BY_USER }, ['queued', 'running', 'idle'])) {
    await platform.tinker.failUnfinished(run.run_id, { error: CANCELLED_BY_USER, category: 'user' });
  }
}

/** Deletes a run that no worker holds, its calls, samplers, checkpoints, exports, evaluations and stored files; returns
 *  what went (blob keys, evaluation and comparison ids). */
export async function deleteTinkerRun(platform: Platform, run: TinkerRunRow): Promise<{ blobs: string[]; evaluations: string[]; comparisons: string[] }> {
  if (run.status === 'queued' || run.status === 'running') {
    throw new Conflict(`training run ${run.run_id} is ${run.status === 'queued' ? 'queued' : 'held by a worker'}; cancel it first (POST /jobs/${run.run_id}/cancel)`);
  }
  await refuseWhileModelsInUse(platform, run.user_id, run.run_id, `training run ${run.run_id}`);
  const results = await deleteModelResults(platform, run.user_id, run.run_id, () => platform.tinker.deleteRun(run.user_id, run.run_id));
  return { blobs: await platform.blobs.deletePrefix(run.blob_prefix), ...results };
}
