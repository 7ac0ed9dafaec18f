// Route contracts of the sweeps resource on the training service (decisions.md "Sweeps and evaluation that decides"):
// start a hyperparameter sweep whose trials are training jobs; read, list, cancel and delete it.
import { ErrorBody } from '../common.ts';
import { Sweep, SweepCreated, SweepCreateRequest, SweepDeleteResult, SweepList, SweepParams } from '../training/sweeps.ts';
import { bearerOptional, conflict, defineRoute, invalidRequest, malformedJson, notFound, serviceErrors } from './contract.ts';

const tags = ['sweeps'] as const;
const sweepNotFound = notFound('sweep');

export const sweepRoutes = {
  createSweep: defineRoute({
    method: 'POST',
    url: '/sweeps',
    schema: {
      operationId: 'createSweep',
      summary: 'Start a hyperparameter sweep',
      description:
        'Optuna proposes trials within the search space (TPE, random or a grid, seeded); each trial is a training job of the base request ' +
        'with its values, carrying sweep_id, queued and run by any worker like any job. At each evaluation a trial’s objective goes to the ' +
        'pruner, which may stop a trial that is clearly behind: its job completes there with pruned true, saying why in its events. ' +
        'budget.parallel trials are queued at once. Checked first, as POST /train checks a job: the base request; every range or choice ' +
        'within what the training request accepts at its path (else a 422 naming the space’s field); an objective the evaluations measure ' +
        '(eval_strategy steps or epoch); and a worker’s pre-flight of the largest trial, which must fit a training worker. A worker holds ' +
        'the sweep on its lane `sweep` (asks, reports and tells the study); when it dies, another goes on from what was recorded.',
      tags,
      security: bearerOptional,
      body: SweepCreateRequest,
      response: {
        200: SweepCreated.describe('The queued sweep'),
        400: malformedJson,
        404: notFound('processed dataset'),
        409: conflict('The processed dataset is still processing or failed; only a ready dataset trains'),
        422: invalidRequest,
        ...serviceErrors,
        504: ErrorBody.describe('The largest trial’s pre-flight did not come within PREFLIGHT_TIMEOUT_MS; detail names the limit'),
      },
    },
  }),

  listSweeps: defineRoute({
    method: 'GET',
    url: '/sweeps',
    schema: {
      operationId: 'listSweeps',
      summary: 'List the caller’s sweeps',
      description: 'Every sweep of the caller, newest first, with its trials.',
      tags,
      security: bearerOptional,
      response: { 200: SweepList.describe('The caller’s sweeps'), ...serviceErrors },
    },
  }),

  getSweep: defineRoute({
    method: 'GET',
    url: '/sweeps/:sweep_id',
    schema: {
      operationId: 'getSweep',
      summary: 'Get a sweep',
      description: 'Its settings, every trial (its values, its job, its objective at each evaluation and at the end, its state) and the best completed trial’s job (best_job_id).',
      tags,
      security: bearerOptional,
      params: SweepParams,
      response: { 200: Sweep.describe('The sweep'), 404: sweepNotFound, 422: invalidRequest, ...serviceErrors },
    },
  }),

  cancelSweep: defineRoute({
    method: 'POST',
    url: '/sweeps/:sweep_id/cancel',
    schema: {
      operationId: 'cancelSweep',
      summary: 'Cancel a sweep',
      description: 'A queued sweep ends at once; a running one’s worker cancels its trials that still run and ends it (cancelled), keeping the trials that completed.',
      tags,
      security: bearerOptional,
      params: SweepParams,
      response: { 200: Sweep.describe('The sweep as it is now (running until its worker has cancelled its trials)'), 404: sweepNotFound, 409: conflict('The sweep has already ended'), 422: invalidRequest, ...serviceErrors },
    },
  }),

  deleteSweep: defineRoute({
    method: 'DELETE',
    url: '/sweeps/:sweep_id',
    schema: {
      operationId: 'deleteSweep',
      summary: 'Delete a sweep',
      description: 'Deletes an ended sweep and its trials’ jobs with everything they stored (models, checkpoints, exports, evaluations).',
      tags,
      security: bearerOptional,
      params: SweepParams,
      response: { 200: SweepDeleteResult.describe('It was deleted'), 404: sweepNotFound, 409: conflict('The sweep is queued or running: cancel it first; or one of its jobs is being exported or evaluated'), 422: invalidRequest, ...serviceErrors },
    },
  }),
};
