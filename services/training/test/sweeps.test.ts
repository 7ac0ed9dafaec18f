// Sweeps on the embedded pieces: real uploads and processing, a real worker holding the sweep on its lane `sweep`,
// the core's Optuna study in a journal file, and trials that are real training jobs of the tiny model.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loraRequest, qaCsv, startTrainingHarness, type TrainingHarness } from '../../../test/support/training.ts';

let h: TrainingHarness;
let alice: Record<string, string>;
let dataset: string;

beforeAll(async () => {
  // With the preparation after training on (as deployed), which a sweep's trials skip.
  h = await startTrainingHarness({ AUTH_MODE: 'token', PROGRESS_INTERVAL_S: '1', PREPARE_GGUF_AFTER_TRAINING: 'true' });
  alice = { authorization: `Bearer ${(await h.platform.apiKeys.create('alice', 'a')).key}` };
  dataset = await h.dataset(qaCsv(), {}, alice);
}, 240_000);
afterAll(() => h.close());

/** A base request whose trials evaluate every 15 of their 240 steps: what the pruner sees. A pruned trial's stop
 *  reaches its core a few seconds after the evaluation that decided it (the holder's poll, the study's process, the
 *  trial worker's heartbeat): 225 steps of the tiny model (~7 s here, more on a loaded machine) leave room for that,
 *  where 75 did not (a CI run trained the pruned trial to its end). */
const STEPS = 240;
const base = () => loraRequest(dataset, { max_steps: STEPS, logging_steps: 15 }, { eval_config: { eval_strategy: 'steps', eval_steps: 15 } });
const create = (body: Record<string, unknown>) => h.train({ method: 'POST', url: '/sweeps', payload: body, headers: alice });
const get = async (id: string) => (await h.train({ url: `/sweeps/${id}`, headers: alice })).json() as Record<string, any>;

async function waitForSweep(id: string, done: (s: Record<string, any>) => boolean, timeoutMs = 420_000): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sweep = await get(id);
    if (done(sweep)) return sweep;
    if (Date.now() > deadline) throw new Error(`sweep ${id} did not get there in time: ${JSON.stringify(sweep)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('a grid sweep over the learning rate', () => {
  let sweep: Record<string, any>;

  it('runs each trial as a job, prunes the one that is behind, and names the best', async () => {
    // Seed 5 orders the grid 0.02, 1e-7, 0.05: the second trial barely learns and is behind the first at its evaluations.
    const res = await create({
      name: 'lr', training_request: base(), space: { 'hyperparameters.learning_rate': { type: 'choice', choices: [0.02, 1e-7, 0.05] } },
      sampler: 'grid', pruner: 'median', startup_trials: 1, seed: 5, budget: { trials: 3, parallel: 1 },
    });
    expect(res.statusCode, res.body).toBe(200);
    sweep = await waitForSweep(res.json().sweep_id, (s) => !['queued', 'running'].includes(s.status));
    expect(sweep, JSON.stringify(sweep)).toMatchObject({ status: 'completed', objective: { metric: 'eval_loss', direction: 'minimize' }, error: null });
    expect(sweep.trials.map((t: any) => t.params['hyperparameters.learning_rate'])).toEqual([0.02, 1e-7, 0.05]);

    const jobs = new Map<string, Record<string, any>>();
    for (const t of sweep.trials) jobs.set(t.job_id, (await h.train({ url: `/jobs/${t.job_id}`, headers: alice })).json());
    for (const t of sweep.trials) {
      const job = jobs.get(t.job_id)!;
      expect(job).toMatchObject({ status: 'completed', sweep_id: sweep.sweep_id, pruned: t.state === 'pruned' });
      expect(job.training_config.hyperparameters.learning_rate).toBe(t.params['hyperparameters.learning_rate']);
      expect(Object.keys(t.steps).length, JSON.stringify(t)).toBeGreaterThan(0);
    }
    const slow = sweep.trials[1];
    expect(slow.state, JSON.stringify(sweep.trials)).toBe('pruned');
    expect(slow.error).toMatch(/eval_loss .* at step \d+ is behind the other trials' at that step \(median pruner\)/);
    // Pruned, it stopped early with fewer steps than the trials that ran whole, and its log says why.
    expect(jobs.get(slow.job_id)!.progress.step).toBeLessThan(STEPS);
    expect(jobs.get(sweep.trials[0].job_id)!.progress.step).toBe(STEPS);
    const log = await h.platform.jobs.events(slow.job_id);
    expect(log.some((e) => e.kind === 'log' && /^pruned: /.test(String(e.data.message)))).toBe(true);
    expect(log.some((e) => e.kind === 'log' && /stopping early at step \d+/.test(String(e.data.message)))).toBe(true);

    const completed = sweep.trials.filter((t: any) => t.state === 'completed');
    const best = completed.reduce((a: any, b: any) => (b.value < a.value ? b : a));
    expect(sweep).toMatchObject({ best_job_id: best.job_id, best_value: best.value });
    expect(best.value).toBe(jobs.get(best.job_id)!.metrics.eval_loss);
    // Its study (embedded: a journal file under DATA_DIR) is deleted once it ended.
    const journal = path.join(h.platform.config.dataDir, 'sweeps', `${sweep.sweep_id}.journal`);
    await expect.poll(() => fs.stat(journal).then(() => true, () => false), { timeout: 30_000 }).toBe(false);
    // No trial's model was converted for chat after training: that would take the CPUs from the next trial.
    expect(h.worker!.preparation).toBeDefined();
    await h.worker!.preparation!.idle();
    for (const t of sweep.trials) {
      const events = await h.platform.jobs.events(t.job_id);
      expect(events.filter((e) => e.kind === 'log' && e.data.about === 'model').map((e) => e.data.message)).toEqual([]);
    }
  }, 480_000);

  it('is deleted with its trials’ jobs once it has ended', async () => {
    const res = await h.train({ method: 'DELETE', url: `/sweeps/${sweep.sweep_id}`, headers: alice });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().jobs.sort()).toEqual(sweep.trials.map((t: any) => t.job_id).sort());
    for (const t of sweep.trials) expect((await h.train({ url: `/jobs/${t.job_id}`, headers: alice })).statusCode).toBe(404);
    expect((await h.train({ url: `/sweeps/${sweep.sweep_id}`, headers: alice })).statusCode).toBe(404);
  });
});

describe('two sweeps with the same seed', () => {
  it('propose the same first trials, and cancelling one cancels its trials', async () => {
    const body = {
      training_request: base(), space: { 'hyperparameters.learning_rate': { type: 'float', low: 1e-4, high: 1e-1, log: true }, 'hyperparameters.lora_rank': { type: 'int', low: 2, high: 8 } },
      sampler: 'random', seed: 7, budget: { trials: 4, parallel: 2 },
    };
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await create(body);
      expect(res.statusCode, res.body).toBe(200);
      ids.push(res.json().sweep_id);
    }
    const [a, b] = await Promise.all(ids.map((id) => waitForSweep(id, (s) => s.trials.length >= 2, 120_000)));
    expect(b!.trials.slice(0, 2).map((t: any) => t.params)).toEqual(a!.trials.slice(0, 2).map((t: any) => t.params));
    for (const id of ids) {
      const cancelled = await h.train({ method: 'POST', url: `/sweeps/${id}/cancel`, headers: alice });
      expect(cancelled.statusCode, cancelled.body).toBe(200);
    }
    for (const id of ids) {
      const ended = await waitForSweep(id, (s) => s.status === 'cancelled', 120_000);
      for (const t of ended.trials.filter((x: any) => x.state !== 'completed' && x.state !== 'pruned')) {
        expect(t).toMatchObject({ state: 'failed', error: 'cancelled with its sweep' });
        // A trial's worker stops its job at its next heartbeat: cancelled by user.
        expect(await h.waitFor(t.job_id, (j) => j.status === 'failed', 60_000, alice)).toMatchObject({ error: 'cancelled by user' });
      }
      expect((await h.train({ method: 'POST', url: `/sweeps/${id}/cancel`, headers: alice })).statusCode).toBe(409);
    }
  }, 300_000);
});

describe('a study its sweep’s holder left behind', () => {
  it('is deleted by a worker serving the sweep lane once the sweep has ended a while', async () => {
    const res = await create({ training_request: base(), space: { 'hyperparameters.learning_rate': { type: 'float', low: 1e-3, high: 1e-2 } }, sampler: 'random', seed: 3, budget: { trials: 1, parallel: 1 } });
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().sweep_id as string;
    const running = await waitForSweep(id, (s) => s.trials.length === 1, 120_000);
    const journal = path.join(h.platform.config.dataDir, 'sweeps', `${id}.journal`);
    await fs.access(journal);
    // As a holder killed between ending the row and deleting the study leaves it: the row ended (a minute and more
    // ago), the study kept. The holder sees the sweep is no longer its own and lets go without deleting anything.
    await h.platform.db.query("UPDATE sweeps SET status = 'failed', error = 'test: its holder died', finished_at = now() - interval '2 minutes' WHERE sweep_id = $1", [id]);
    expect((await h.train({ method: 'POST', url: `/jobs/${running.trials[0].job_id}/cancel`, headers: alice })).statusCode).toBe(200);
    await expect.poll(() => fs.access(journal).then(() => true, () => false), { timeout: 30_000 }).toBe(false);
    await expect.poll(async () => (await h.platform.sweeps.getForWorker(id))?.study_deleted).toBe(true);
  }, 180_000);
});

describe('a sweep refused before anything runs', () => {
  const refused = async (body: Record<string, unknown>, loc: string[], msg: RegExp) => {
    const res = await create({ training_request: base(), space: { 'hyperparameters.learning_rate': { type: 'float', low: 1e-4, high: 1e-2 } }, ...body });
    expect(res.statusCode, res.body).toBe(422);
    const detail = res.json().detail as Array<{ loc: string[]; msg: string }>;
    expect(detail[0]!.loc).toEqual(loc);
    expect(detail[0]!.msg).toMatch(msg);
  };

  it('names the space’s field whose range leaves what the training request accepts', async () => {
    await refused({ space: { 'hyperparameters.lora_dropout': { type: 'float', low: 0, high: 1.5 } } }, ['body', 'space', 'hyperparameters.lora_dropout', 'high'], /1\.5 at hyperparameters\.lora_dropout: .*(less than|<)/i);
    await refused({ space: { 'hyperparameters.batch_size': { type: 'choice', choices: [2, 'big'] } } }, ['body', 'space', 'hyperparameters.batch_size', 'choices', '1'], /"big" at hyperparameters\.batch_size/);
    await refused({ space: { 'hyperparameters.not_a_setting': { type: 'int', low: 1, high: 2 } } }, ['body', 'space', 'hyperparameters.not_a_setting', 'low'], /training_config has no field hyperparameters\.not_a_setting/);
    await refused({ space: { 'hyperparameters.lora_rank': { type: 'int', low: 8, high: 2 } } }, ['body', 'space', 'hyperparameters.lora_rank', 'high'], /high 2 is below low 8/);
  });

  it('needs evaluations to measure the objective, and choices for a grid', async () => {
    await refused({ training_request: loraRequest(dataset) }, ['body', 'training_request', 'training_config', 'eval_config', 'eval_strategy'], /set eval_strategy to steps or epoch/);
    await refused({ sampler: 'grid' }, ['body', 'space', 'hyperparameters.learning_rate'], /a grid tries every value: give hyperparameters\.learning_rate choices/);
    const unknown = await h.train({ url: '/sweeps/sweep_0', headers: alice });
    expect(unknown.statusCode).toBe(404);
  });
});
