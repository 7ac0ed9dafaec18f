// Usage errors, said before any service is asked: a misspelt flag is named with the one it resembles (#54: `ftune
// train --datset x` said only that --dataset was missing), a missing required option is still said, and an evaluation
// names its model one way only. And `--checkpoint <step|name>` as the API gets it: a step is checkpoint_step, a name
// (a Tinker run's sampler weights) checkpoint_name, anything else a usage error; the services are stood in for by
// Api.send in-process (no server), which records each request and answers it.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../src/errors.ts';
import { Api } from '../src/http.ts';
import { main } from '../src/main.ts';

interface Sent {
  method: string;
  path: string;
  json: unknown;
}

/** Runs `ftune args…` in-process. With `answers` (by "METHOD /path", the query left out), Api.send answers those
 *  requests with that JSON (a Response as it is), anything else with a 404; `sent` is what was asked. */
async function ftune(args: string[], answers?: Record<string, unknown>): Promise<{ code: number; stdout: string; stderr: string; sent: Sent[] }> {
  let stdout = '';
  let stderr = '';
  const sent: Sent[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  const send = vi.spyOn(Api.prototype, 'send').mockImplementation(async (_service, method, target, options = {}) => {
    sent.push({ method, path: target, json: options.json });
    const answer = answers?.[`${method} ${target.split('?')[0]}`];
    if (answer === undefined) throw new ApiError(404, { detail: 'not found' }, 'not found');
    return (answer instanceof Response ? answer : new Response(JSON.stringify(answer))) as unknown as Awaited<ReturnType<Api['send']>>;
  });
  const listening = process.stdout.listeners('error');
  const code = await main(['node', 'ftune', ...args]);
  // main's EPIPE handler, one a run: taken off again, so that the runs here do not pile them up on stdout
  for (const listener of process.stdout.listeners('error')) if (!listening.includes(listener)) process.stdout.off('error', listener as (err: Error) => void);
  if (!answers) expect(send).not.toHaveBeenCalled();
  vi.restoreAllMocks();
  return { code, stdout, stderr, sent };
}

afterEach(() => vi.restoreAllMocks());

describe('usage errors', () => {
  it('names an unknown flag and the near one, though a required option is then missing too', async () => {
    const { code, stderr } = await ftune(['train', '--datset', 'pd_1', '--model', 'tiny']);
    expect(code).toBe(2);
    expect(stderr).toContain("error: unknown option '--datset'\n(Did you mean --dataset?)");
    expect(stderr).not.toContain('not specified');
  });

  it('still says which required option is missing', async () => {
    const { code, stderr } = await ftune(['train', '--dataset', 'pd_1']);
    expect(code).toBe(2);
    expect(stderr).toContain("error: required option '--model <model>' not specified");
  });

  it.each([
    [['evaluations', 'create', '--tasks', 'arc_easy'], 'name the model: a job_id, or --base MODEL'],
    [['evaluation', 'create', '--base', 'tiny', '--with-base', '--tasks', 'arc_easy'], '--with-base choose among a job’s models'],
    [['evaluations', 'create', 'job_1', '--humaneval-k', 'x'], "option '--humaneval-k <list>' argument 'x' is invalid"],
    [['comparisons', 'create', 'pd_1', '--a', 'job_1', '--b', 'base:tiny'], "required option '--judge <model>' not specified"],
    [['compare', 'create', 'pd_1', '--a', 'job_1@0', '--b', 'base:tiny', '--judge', 'j'], "option '--a <model>' argument 'job_1@0' is invalid"],
  ])('ftune %j: exit 2, said', async (args, said) => {
    const { code, stderr } = await ftune(args);
    expect(code).toBe(2);
    expect(stderr).toContain(said);
  });
});

describe('--checkpoint <step|name>', () => {
  const evaluation = { id: 'evalrun_1', status: 'queued', model_source: 'adapter', job_id: 'job_x', checkpoint_step: null, checkpoint_name: 'final', base_model_id: 'tiny', created_at: '2025-01-01T00:00:00Z', results: null, base_results: null };
  // Each command that names a job's model with --checkpoint, the request it sends and where the model's fields go.
  const commands = [
    { args: ['export', 'job_x', '--json'], request: 'POST /exports', answer: { export_id: 'exp_1', message: 'started' } },
    { args: ['eval', 'job_x', '--dataset', 'pd_1', '--json'], request: 'POST /evaluation', answer: { metrics: {}, num_samples: 0, dataset_id: 'pd_1', samples: [], warnings: [] } },
    { args: ['evaluations', 'create', 'job_x', '--tasks', 'arc_easy', '--json'], request: 'POST /evaluations', answer: evaluation },
  ];

  it.each(commands.flatMap((c) => [
    { ...c, checkpoint: '3', fields: { checkpoint_step: 3 } },
    { ...c, checkpoint: 'final', fields: { checkpoint_name: 'final' } },
    // what the tinker-cookbook names the weights it saves at step 10; name: makes any name one
    { ...c, checkpoint: '000010', fields: { checkpoint_name: '000010' } },
    { ...c, checkpoint: 'name:10', fields: { checkpoint_name: '10' } },
  ]))('ftune $args.0 --checkpoint $checkpoint sends $fields', async ({ args, request, answer, checkpoint, fields }) => {
    const { code, stderr, sent } = await ftune([...args, '--checkpoint', checkpoint], { [request]: answer });
    expect(code, stderr).toBe(0);
    const body = sent.find((s) => `${s.method} ${s.path}` === request)?.json as Record<string, unknown>;
    expect(body).toMatchObject({ job_id: 'job_x', ...fields });
    expect(body).not.toHaveProperty('checkpoint_step' in fields ? 'checkpoint_name' : 'checkpoint_step');
  });

  it.each([
    ['3', 'type=adapter&checkpoint_step=3'],
    ['final', 'type=adapter&checkpoint_name=final'],
  ])('ftune exports download --checkpoint %s asks for %s', async (checkpoint, query) => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ftune-checkpoint-'));
    try {
      const file = new Response('weights', { headers: { 'content-length': '7', 'content-disposition': 'attachment; filename="adapter.tar.gz"' } });
      const { code, stderr, sent } = await ftune(['exports', 'download', 'job_x', '--type', 'adapter', '--checkpoint', checkpoint, '--dir', dir, '--json'], { 'GET /exports/job_x/download': file });
      expect(code, stderr).toBe(0);
      expect(sent.map((s) => s.path)).toEqual([`/exports/job_x/download?${query}`]);
      expect(await fs.readFile(path.join(dir, 'adapter.tar.gz'), 'utf8')).toBe('weights');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('ftune comparisons create sends job_…@NAME as checkpoint_name and job_…@STEP as checkpoint_step', async () => {
    const { code, stderr, sent } = await ftune(['comparisons', 'create', 'pd_1', '--a', 'job_x@final', '--b', 'job_y/merged@3', '--judge', 'j', '--json'], { 'POST /comparisons': {} });
    expect(code, stderr).toBe(0);
    expect(sent[0]!.json).toMatchObject({ model_a: { job_id: 'job_x', checkpoint_name: 'final' }, model_b: { job_id: 'job_y', model_source: 'merged', checkpoint_step: 3 } });
  });

  it.each(commands.flatMap((c) => ['0', 'a b', '-x', 'x'.repeat(129)].map((checkpoint) => ({ args: c.args, checkpoint }))).concat(
    ['0', 'a b'].map((checkpoint) => ({ args: ['exports', 'download', 'job_x', '--type', 'adapter'], checkpoint })),
  ))('ftune $args.0 $args.1 --checkpoint $checkpoint: exit 2, both forms named', async ({ args, checkpoint }) => {
    const { code, stderr } = await ftune([...args, `--checkpoint=${checkpoint}`]);
    expect(code).toBe(2);
    expect(stderr).toContain(`option '--checkpoint <step|name>' argument '${checkpoint}' is invalid`);
    expect(stderr).toContain('a stored checkpoint’s step (a whole number from 1) or the name of a Tinker run’s sampler weights');
  });

  it('prints the sampler weights a model is', async () => {
    const got = await ftune(['evaluations', 'get', 'evalrun_1'], { 'GET /evaluations/evalrun_1': evaluation });
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(/^model +adapter of job_x \(sampler weights final\)$/m);
    const record = { export_id: 'exp_1', job_id: 'job_x', type: 'adapter', checkpoint_step: null, checkpoint_name: 'final', status: 'completed', started_at: '2025-01-01T00:00:00Z', destination: ['cloud'] };
    const details = { job_id: 'job_x', job_name: 'run', base_model_id: 'tiny', modality: 'text', artifacts: {}, latest_export: record };
    const shown = await ftune(['exports', 'get', 'job_x'], { 'GET /exports/job_x': details });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^checkpoint_name +final$/m);
    expect(shown.stdout).not.toMatch(/^checkpoint_step/m);
  });
});
