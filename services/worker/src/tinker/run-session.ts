// One Tinker training run held by this worker (lane `session`): its core (`ftcore tinker-session`) keeps the base model,
// the LoRA adapter and the optimizer state in memory while the run's calls, rows the Tinker service records, run one
// after another: training calls in the SDK's seq_id order, samples as they come. The next call is usually recorded
// before the last one ends (the SDK does not wait), so the core goes from one to the next without a gap.
// The run lets the worker go, its state saved, when it has had no call for TINKER_IDLE_S, its session has ended or
// the worker stops: its next call queues it again and whichever worker takes it continues from that state. A core
// that dies takes the state since the last save with it: the run fails, saying which saved state to load.
// A seq_id that never arrives (the SDK gave up submitting it) would hold back every later call: once the oldest of
// those has waited TINKER_SEQ_GAP_S, the run skips the missing seq_ids, and one sent after all fails (calls.ts).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreServerError, TinkerCore } from '@ftp/core-client';
import type { Platform, TinkerCallRow, TinkerRunRow } from '@ftp/platform';
import { IDLE_STATE, requeueIdleRun, serverError, tinkerCheckpointPrefix, tinkerPath, userError, type TinkerCheckpointKind } from '@ftp/jobs/tinker';
import { ensureBaseModel } from '../models/base-models.ts';
import { downloadPrefix, folderBytes, uploadFolder } from '../models/blob-folders.ts';

export interface SessionContext {
  platform: Platform;
  workerId: string;
  device: 'cpu' | 'cuda';
  /** Aborted when the worker stops: the run saves its state and goes idle. */
  signal: AbortSignal;
}

/** How often a run without a call looks for the next: at once after a call (the SDK has usually sent the next
 *  already), then less and less often, up to every 50 ms, so that a run waiting on its user costs next to nothing. */
const POLL_MS = { first: 2, most: 50 } as const;
/** A session whose SDK has not beaten for this long has ended without saying so (its process exited). */
const SESSION_SILENT_MS = 60_000;
/** How often a run without a call it may run looks for later calls held back by a missing seq_id. */
const GAP_CHECK_MS = 1_000;

export async function runTinkerSession(ctx: SessionContext, runId: string): Promise<void> {
  const { platform, workerId } = ctx;
  const run = await platform.tinker.updateRun(runId, { status: 'running', worker_id: workerId }, ['queued']);
  if (!run) return; // taken by another worker, or failed meanwhile
  const log = platform.logger.child({ runId, workerId });
  // One folder per hold: a run let go can be taken again on this worker while this hold still closes its core.
  const workDir = path.join(platform.config.dataDir, 'work', 'tinker', `${runId}-${randomBytes(4).toString('hex')}`);
  const held = new HeldRun(ctx, run, workDir);
  try {
    await held.start();
    await held.serve();
    await held.letGo();
  } catch (err) {
    const message = err instanceof CoreServerError && err.code === 'exited'
      ? `${err.message}; the weights since its last save are lost: load a saved state (create_training_client_from_state) to go on`
      : `the training run failed on ${workerId}: ${(err as Error).message}`;
    log.warn({ err }, 'tinker run failed');
    await platform.tinker.updateRun(runId, { status: 'failed', error: message }, ['running'], workerId);
    await platform.tinker.failUnfinished(runId, serverError(message));
  } finally {
    await held.close();
    await fs.rm(workDir, { recursive: true, force: true });
  }
}

class HeldRun {
  private core: TinkerCore | undefined;
  private nextSeq: number;
  private step: number;

  constructor(private readonly ctx: SessionContext, private run: TinkerRunRow, private readonly workDir: string) {
    this.nextSeq = run.next_seq_id;
    this.step = run.step;
  }

  /** Loads the base model (fetched into this machine's cache first) with a new adapter, or the saved state it starts
   *  from; then its create_model or load_weights call (seq 0) is answered. */
  async start(): Promise<void> {
    const { platform } = this.ctx;
    const baseModel = await ensureBaseModel(platform, 'hub', this.run.base_model);
    const from = this.run.config.from_state;
    const fromState = from ? { folder: await this.fetchCheckpoint(from.run_id, 'weights', from.name), optimizer: from.optimizer } : undefined;
    const c = this.run.config;
    this.core = new TinkerCore({
      baseModel, rank: c.rank, trainMlp: c.train_mlp, trainAttn: c.train_attn, trainUnembed: c.train_unembed, seed: c.seed, device: this.ctx.device,
      ...(fromState ? { fromState } : {}),
      python: platform.config.CORE_PYTHON,
      onStderr: (line) => platform.logger.debug({ runId: this.run.run_id, core: line }),
    });
    await this.core.start();
    // Only that one: a run taken again after it went idle has none, and a sample waiting for it is serve()'s.
    const created = await platform.tinker.takeOrdered(this.run.run_id, 0);
    if (created) {
      const refusal = created.request.refusal;
      await platform.tinker.finishCall(created.request_id, typeof refusal === 'string' ? { error: userError(refusal) } : { result: created.op === 'create_model' ? { model_id: this.run.model_id } : { model_id: this.run.model_id, path: null } });
    }
  }

  /** Runs calls until the run has been idle for TINKER_IDLE_S, its session ended, or the worker stops. */
  async serve(): Promise<void> {
    const { platform, signal } = this.ctx;
    const idleMs = platform.config.TINKER_IDLE_S * 1000;
    let lastCall = Date.now();
    let checkedSession = 0;
    let checkedGap = 0;
    let pause: number = POLL_MS.first;
    while (!signal.aborted) {
      const call = await platform.tinker.takeNext({ run_id: this.run.run_id, next_seq_id: this.nextSeq });
      if (call) {
        await this.execute(call);
        lastCall = Date.now();
        pause = POLL_MS.first;
        continue;
      }
      const idle = Date.now() - lastCall > idleMs;
      // Looked at once a second, and before the run goes idle: a later call waiting for a missing seq_id is a call,
      // so the run stays (nothing would queue it again), and it runs once the gap is skipped.
      if (idle || Date.now() - checkedGap > GAP_CHECK_MS) {
        checkedGap = Date.now();
        const waiting = await this.skipGap();
        if (waiting) {
          lastCall = Date.now();
          if (waiting === 'skipped') {
            pause = POLL_MS.first;
            continue;
          }
        } else if (idle) return;
      }
      if (Date.now() - checkedSession > 1_000) {
        checkedSession = Date.now();
        const session = await platform.tinker.sessionForWorker(this.run.session_id);
        if (!session || session.finished_at) return;
        if (Date.now() - session.heartbeat_at.getTime() > SESSION_SILENT_MS && Date.now() - lastCall > SESSION_SILENT_MS) return;
      }
      await sleep(pause);
      pause = Math.min(POLL_MS.most, pause * 1.5);
    }
  }

  /** Saves the state (weights and optimizer) and leaves the run idle: its next call queues it again. */
  async letGo(): Promise<void> {
    const { platform, workerId } = this.ctx;
    // Cancelled, or taken from this worker: nothing of it is this worker's to write any more.
    const now = await platform.tinker.getRunForWorker(this.run.run_id);
    if (!now || now.status !== 'running' || now.worker_id !== workerId) return;
    await this.save('weights', IDLE_STATE);
    const idle = await platform.tinker.updateRun(this.run.run_id, {
      status: 'idle', worker_id: null, step: this.step, next_seq_id: this.nextSeq,
      config: { ...this.run.config, from_state: { run_id: this.run.run_id, name: IDLE_STATE, optimizer: true } },
    }, ['running'], workerId);
    // A call recorded while it was let go (the service read it running, so did not queue it): queued again here, or by
    // the service's second read once it sees the run idle (calls.ts), whichever comes first.
    if (idle && (await platform.tinker.hasQueuedCalls(this.run.run_id))) await requeueIdleRun(platform, this.run.run_id);
  }

  async close(): Promise<void> {
    await this.core?.close();
  }

  /** Whether training calls wait behind a missing seq_id ('waiting'), or did until this skipped it ('skipped'): once
   *  the oldest of them has waited TINKER_SEQ_GAP_S, the SDK has given up submitting it, and the run goes on from the
   *  lowest one. The database decides (skipSeqGap): a call that arrived meanwhile is not skipped. */
  private async skipGap(): Promise<'waiting' | 'skipped' | undefined> {
    const { platform, workerId } = this.ctx;
    const gap = await platform.tinker.seqGap(this.run.run_id, this.nextSeq);
    if (!gap) return undefined;
    const gapS = platform.config.TINKER_SEQ_GAP_S;
    if (gap.waitedMs <= gapS * 1000) return 'waiting';
    const from = this.nextSeq;
    const skip = await platform.tinker.skipSeqGap(this.run.run_id, workerId, from, gap.lowest);
    if (skip === 'arrived') return 'waiting'; // taken next
    if (skip === 'not held') return undefined; // nothing of it is this worker's to run: it may let go
    this.nextSeq = gap.lowest;
    const skipped = gap.lowest - from > 1 ? `${from}-${gap.lowest - 1}` : String(from);
    platform.logger.warn({ runId: this.run.run_id, workerId, skipped: { from, to: gap.lowest - 1 }, waitedS: Math.round(gap.waitedMs / 1000) },
      `tinker run ${this.run.run_id} skipped seq_id ${skipped}, which never arrived: seq_id ${gap.lowest} had waited for it longer than TINKER_SEQ_GAP_S (${gapS} s)`);
    return 'skipped';
  }

  private async execute(call: TinkerCallRow): Promise<void> {
    const { platform } = this.ctx;
    const ordered = call.op !== 'sample';
    const taken = Date.now();
    platform.metrics.tinkerCallWait.observe({ op: call.op }, Math.max(0, taken - new Date(call.created_at).getTime()) / 1000);
    let outcome = 'ok';
    try {
      const refusal = call.request.refusal;
      if (typeof refusal === 'string') {
        outcome = 'user_error';
        await platform.tinker.finishCall(call.request_id, { error: userError(refusal) });
      } else {
        await platform.tinker.finishCall(call.request_id, { result: await this.run1(call) });
      }
    } catch (err) {
      outcome = 'server_error';
      if (err instanceof CoreServerError && (err.code === 'exited' || err.code === 'closed')) throw err;
      // The core refused the request (its validation, a non-finite loss) or failed on it: the run goes on.
      const category = err instanceof CoreServerError && err.code === 'validation' ? userError : serverError;
      if (category === userError) outcome = 'user_error';
      await platform.tinker.finishCall(call.request_id, { error: category((err as Error).message) });
    } finally {
      platform.metrics.tinkerCallDuration.observe({ op: call.op, outcome }, (Date.now() - taken) / 1000);
      if (ordered && call.seq_id !== null) {
        this.nextSeq = call.seq_id + 1;
        await platform.tinker.updateRun(this.run.run_id, { next_seq_id: this.nextSeq, step: this.step }, undefined, this.ctx.workerId);
      }
    }
  }

  private async run1(call: TinkerCallRow): Promise<Record<string, unknown>> {
    const core = this.core!;
    const r = call.request;
    switch (call.op) {
      case 'forward_backward': {
        const result = await core.request('forward_backward', r);
        const loss = (result.metrics as Record<string, number> | undefined)?.['loss:sum'];
        if (typeof loss === 'number' && Number.isFinite(loss)) await this.ctx.platform.tinker.updateRun(this.run.run_id, { last_loss: loss }, undefined, this.ctx.workerId);
        return result;
      }
      case 'optim_step': {
        const result = await core.request('optim_step', r);
        this.step += 1;
        return result;
      }
      case 'save_state':
        return { path: await this.save('weights', String(r.name)) };
      case 'save_weights_for_sampler': {
        const saved = await this.save('sampler_weights', String(r.name));
        if (typeof r.sampler_id !== 'string') return { path: saved };
        await this.ctx.platform.tinker.createSampler({ sampler_id: r.sampler_id, session_id: this.run.session_id, user_id: this.run.user_id, run_id: this.run.run_id, base_model: this.run.base_model, model_path: saved });
        return { path: saved, sampling_session_id: r.sampler_id };
      }
      case 'load_state': {
        const folder = await this.fetchCheckpoint(String(r.run_id), 'weights', String(r.name));
        await core.request('load_state', { path: folder, optimizer: r.optimizer === true });
        return { path: tinkerPath(String(r.run_id), 'weights', String(r.name)) };
      }
      case 'sample': {
        const weights = typeof r.weights === 'string' ? await this.samplerWeights(r.weights) : null;
        const { weights: _name, prompt_logprobs_last_n: lastN, ...rest } = r;
        const result = await core.request('sample', { ...rest, weights });
        return lastN === null || lastN === undefined ? result : { ...result, prompt_logprobs: lastOnly(result.prompt_logprobs as Array<number | null> | null, Number(lastN)) };
      }
      default:
        throw new CoreServerError('validation', `${call.op} is not a call this server runs`);
    }
  }

  /** Saves into this run's folder, stores it under the run and records the checkpoint; answers its tinker:// path. */
  private async save(kind: TinkerCheckpointKind, name: string): Promise<string> {
    const { platform } = this.ctx;
    const folder = path.join(this.workDir, kind, name);
    await fs.rm(folder, { recursive: true, force: true });
    await this.core!.request(kind === 'weights' ? 'save_state' : 'save_weights_for_sampler', { path: folder });
    const prefix = tinkerCheckpointPrefix(this.run, kind, name);
    await platform.blobs.deletePrefix(prefix);
    await uploadFolder(platform, folder, prefix.slice(0, -1));
    await platform.tinker.recordCheckpoint({ run_id: this.run.run_id, kind, name, user_id: this.run.user_id, step: this.step, size_bytes: await folderBytes(folder) });
    return tinkerPath(this.run.run_id, kind, name);
  }

  /** The folder of this run's sampler weights: written here, or (the run moved from another worker) fetched. */
  private async samplerWeights(name: string): Promise<string> {
    const folder = path.join(this.workDir, 'sampler_weights', name);
    if (await fs.stat(folder).then(() => true, () => false)) return folder;
    await downloadPrefix(this.ctx.platform, tinkerCheckpointPrefix(this.run, 'sampler_weights', name), folder);
    return folder;
  }

  /** A stored checkpoint (this run's or another of its user's) in a local folder. */
  private async fetchCheckpoint(runId: string, kind: TinkerCheckpointKind, name: string): Promise<string> {
    const { platform } = this.ctx;
    const source = runId === this.run.run_id ? this.run : await platform.tinker.getRun(this.run.user_id, runId);
    if (!source) throw new CoreServerError('validation', `no training run ${runId} of this user holds ${tinkerPath(runId, kind, name)}`);
    const folder = path.join(this.workDir, 'fetched', runId, kind, name);
    await fs.rm(folder, { recursive: true, force: true });
    await downloadPrefix(platform, tinkerCheckpointPrefix(source, kind, name), folder);
    return folder;
  }
}

/** prompt_logprobs_last_n: the SDK wants NaN (null) before the last n positions. */
function lastOnly(logprobs: Array<number | null> | null, n: number): Array<number | null> | null {
  if (!logprobs) return logprobs;
  return logprobs.map((v, i) => (i >= logprobs.length - n ? v : null));
}
