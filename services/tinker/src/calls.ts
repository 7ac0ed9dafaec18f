// What the Tinker service does with a call: record it for the worker that holds its run (a run that went idle is
// queued again first), and read its future. A call the server cannot run (an unsupported loss, optimizer or input)
// is recorded too, with its refusal: the worker fails it in its turn, so the run's seq_id order goes on past it and
// the SDK gets a failed future with category user naming what to change. A training call that arrives after its run
// went on without it (its later calls waited TINKER_SEQ_GAP_S for it) is recorded failed at once: nothing runs it.
import { setTimeout as sleep } from 'node:timers/promises';
import { NotFound, type Platform, type TinkerCallRow, type TinkerRunRow } from '@ftp/platform';
import { requeueIdleRun, userError } from '@ftp/jobs/tinker';

/** How long retrieve_future holds a request before answering try_again (the SDK waits 45 s and polls at once again). */
export const LONG_POLL_MS = 25_000;
/** The row is read again after 5 ms, then less and less often, up to every 100 ms: a quick call is answered at once,
 *  and a long one (a forward_backward of seconds) does not keep the database and the CPU busy while it runs. On the
 *  embedded database the worker that ends a call is in this process and says so (TinkerRepository.untilCallEnded):
 *  the row is read when a call ends, and once a second besides. Read every 100 ms, the embedded database (PGlite, in
 *  this process) took ~1 CPU-second per 14-second SmolLM2 step from the CPUs the worker's core trains on
 *  (bench/tinker/README.md). */
const POLL_MS = { first: 5, most: 100, told: 1_000 } as const;

/** The caller's run named by the SDK's model id (404 for anyone else's). */
export async function runOfModel(platform: Platform, userId: string, modelId: string): Promise<TinkerRunRow> {
  const run = await platform.tinker.getRunByModel(userId, modelId);
  if (!run) throw new NotFound('training run (model_id)', modelId);
  return run;
}

/** Records a call on a run (`refusal`: the reason it will fail instead of running) and makes sure a worker holds the
 *  run when it has something to run: one that went idle is queued again, to continue from the state it saved. */
export async function submitRunCall(
  platform: Platform,
  run: TinkerRunRow,
  call: { targetId?: string; seqId: number | null; op: string; request: Record<string, unknown>; refusal?: string | undefined },
): Promise<TinkerCallRow> {
  const gap = platform.config.TINKER_SEQ_GAP_S;
  const late = userError(`seq_id ${call.seqId} arrived after the training run went on without it: its later calls had waited ${gap} s for it (TINKER_SEQ_GAP_S), so the run skipped it`);
  const made = await platform.tinker.submit({
    user_id: run.user_id, run_id: run.run_id, target_id: call.targetId ?? run.model_id, seq_id: call.seqId, op: call.op,
    request: call.refusal ? { ...call.request, refusal: call.refusal } : call.request,
    ...(run.status === 'failed' ? { status: 'failed' as const, error: userError(run.error ?? 'the training run failed') } : {}),
  }, late);
  // Read again after the call is recorded: a worker letting the run go meanwhile either saw this call (and queued the
  // run again itself) or had made it idle before this read.
  if (made.status === 'queued' && (run.status === 'idle' || (await platform.tinker.getRunForWorker(run.run_id))?.status === 'idle')) {
    await requeueIdleRun(platform, run.run_id);
  }
  return made;
}

/** The answer retrieve_future gives: the call's row once it is done or failed, undefined while it waits or runs (after
 *  up to `waitMs`). A call of a run that failed meanwhile fails with the run's error. */
export async function awaitCall(platform: Platform, userId: string, requestId: string, waitMs: number, signal: AbortSignal): Promise<TinkerCallRow | undefined> {
  const until = Date.now() + waitMs;
  const told = platform.tinker.endsSeenHere;
  for (let pause: number = POLL_MS.first; ; pause = Math.min(told ? POLL_MS.told : POLL_MS.most, pause * 1.5)) {
    const seen = platform.tinker.callsEndedSoFar();
    const call = await platform.tinker.getCall(userId, requestId);
    if (!call) throw new NotFound('future', requestId);
    if (call.status === 'done' || call.status === 'failed') return call;
    if (Date.now() >= until || signal.aborted) return undefined;
    await (told ? platform.tinker.untilCallEnded(seen, Math.min(pause, until - Date.now())) : sleep(pause));
  }
}
