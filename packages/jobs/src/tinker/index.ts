// The Tinker-compatible API's names, shared by its service and the workers that hold its runs: tinker:// paths (a
// run's saved states and sampler weights; docs/tinker-wire.md §3.6), where they are stored, and the errors a call's
// future fails with.
import { userKeySegment, type TinkerCallError, type TinkerRunRow } from '@ftp/platform';

export type TinkerCheckpointKind = 'weights' | 'sampler_weights';

export interface TinkerPath {
  runId: string;
  kind: TinkerCheckpointKind;
  name: string;
}

/** `tinker://<run id>/<kind>/<name>`, the SDK's format (exactly three parts). */
export const tinkerPath = (runId: string, kind: TinkerCheckpointKind, name: string): string => `tinker://${runId}/${kind}/${name}`;

/** A tinker:// path's parts; undefined for anything else. */
export function parseTinkerPath(value: string): TinkerPath | undefined {
  const match = /^tinker:\/\/([^/]+)\/(weights|sampler_weights)\/([^/]+)$/.exec(value);
  return match ? { runId: match[1]!, kind: match[2] as TinkerCheckpointKind, name: match[3]! } : undefined;
}

/** Where a run keeps its files in the blob store. */
export const tinkerRunPrefix = (userId: string, runId: string): string => `tinker/${userKeySegment(userId)}/${runId}/`;

/** Where one of a run's checkpoints is stored. */
export const tinkerCheckpointPrefix = (run: Pick<TinkerRunRow, 'blob_prefix'>, kind: TinkerCheckpointKind, name: string): string => `${run.blob_prefix}${kind}/${name}/`;

/** The SDK's model id of a session's n-th training client. */
export const tinkerModelId = (sessionId: string, seq: number): string => `${sessionId}:train:${seq}`;
/** The SDK's sampler id of a session's n-th sampling client. */
export const tinkerSamplerId = (sessionId: string, seq: number): string => `${sessionId}:sample:${seq}`;

/** A call's failure the user can act on (RequestFailedError with category user). */
export const userError = (error: string): TinkerCallError => ({ error, category: 'user' });
export const serverError = (error: string): TinkerCallError => ({ error, category: 'server' });

/** The losses the core computes (core/src/ftcore/tinker/losses.py). */
export const TINKER_LOSSES = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'] as const;

/** A run's name for the state it saves when it goes idle, which its next holder loads. */
export const IDLE_STATE = 'idle-state';

export { cancelTinkerRun, deleteTinkerRun, presentTinkerCheckpoint, presentTinkerExports, presentTinkerRun, requeueIdleRun } from './runs.ts';
