// One Tinker training run's core: a long-lived `ftcore tinker-session` holding the base model, its LoRA adapter and
// the optimizer state in memory. Requests (Tinker's ops and field names) go to its stdin as JSON lines with an id and
// run one at a time in order; answers are its tinker_result events. Unlike the warm serve core it is never started
// again behind its user's back: its state would be gone, so its end fails what it held and every later request.
import type { CoreEvent } from './events.ts';
import { coreEventOf, spawnCore } from './run-core.ts';
import { ending, jsonLines, SupervisedChild, why, type Held } from './supervised-child.ts';
import { CoreServerError } from './core-server.ts';

export interface TinkerCoreOptions {
  baseModel: string;
  rank: number;
  trainMlp: boolean;
  trainAttn: boolean;
  trainUnembed: boolean;
  seed: number | null;
  /** A save_state folder to start from, and whether its optimizer state comes too. */
  fromState?: { folder: string; optimizer: boolean };
  device?: 'auto' | 'cpu' | 'cuda';
  python?: string;
  env?: Record<string, string | undefined>;
  onStderr?: (line: string) => void;
  /** Stages the core reports while it loads (a progress line). */
  onLog?: (message: string) => void;
}

export type TinkerOp = 'forward_backward' | 'optim_step' | 'sample' | 'save_state' | 'save_weights_for_sampler' | 'load_state' | 'info';

export class TinkerCore {
  private readonly core: SupervisedChild<Record<string, unknown>, CoreEvent, undefined, Record<string, unknown>>;
  private ended: Error | undefined;

  constructor(private readonly options: TinkerCoreOptions) {
    this.core = new SupervisedChild({
      start: () => this.spawn(),
      isReady: (event) => event.event === 'ready',
      receive: (event, held) => this.receive(event, held),
      onEnd: (end, stderr) => {
        const how = end.startError ? `could not be started (${end.startError.message})` : ending(end);
        this.ended = new CoreServerError('exited', `the training run's ML core ${how}${why(stderr)}`);
        return () => this.ended!;
      },
      closed: () => new CoreServerError('closed', 'the training run was let go'),
      stop: { termAfterMs: 5_000, killAfterMs: 15_000 },
    });
  }

  get pid(): number | undefined {
    return this.core.pid;
  }

  /** Loads the model (the first request would too): resolves once the core is ready, with what `info` says. */
  start(): Promise<Record<string, unknown>> {
    return this.request('info', {});
  }

  request(op: TinkerOp, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (this.ended) return Promise.reject(this.ended);
    return this.core.request(undefined, ({ id }) => ({ ...params, op, id })).answer;
  }

  /** Stops the core (stdin closes: it exits) and fails what is pending. */
  close(): Promise<void> {
    return this.core.dispose();
  }

  private spawn() {
    const o = this.options;
    const flags = [
      '--base_model', o.baseModel, '--rank', String(o.rank),
      '--train_mlp', String(o.trainMlp), '--train_attn', String(o.trainAttn), '--train_unembed', String(o.trainUnembed),
      ...(o.seed !== null ? ['--seed', String(o.seed)] : []),
      ...(o.fromState ? ['--from_state', o.fromState.folder, '--with_optimizer', String(o.fromState.optimizer)] : []),
      ...(o.device ? ['--device', o.device] : []),
    ];
    const { child, stderrTail } = spawnCore(['tinker-session', ...flags], {
      ...(o.python ? { python: o.python } : {}),
      ...(o.env ? { env: o.env } : {}),
      ...(o.onStderr ? { onStderr: o.onStderr } : {}),
    });
    return jsonLines<Record<string, unknown>, CoreEvent>(child, stderrTail, (line) => coreEventOf(line, stderrTail));
  }

  private receive(event: CoreEvent, held: Held<undefined, Record<string, unknown>> | undefined): void {
    if (event.event === 'log') return this.options.onLog?.(event.message);
    if (!held) return;
    if (event.event === 'error') held.reject(new CoreServerError(event.code, event.message, event.field ?? undefined));
    else if (event.event === 'tinker_result') held.resolve(event.result);
  }
}
