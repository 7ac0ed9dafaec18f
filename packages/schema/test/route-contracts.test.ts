// Contracts spread into fastify's route() with ZodTypeProvider: handlers get typed, defaulted input,
// and replies are shaped by the response schemas (unknown fields, credentials included, are dropped).
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { exportRoutes, preprocessingRoutes, trainingRoutes, type SplitConfig, type TrainingJob } from '../src/index.ts';
import { exportRequest, responses, trainRequest } from './fixtures.ts';

async function appWith(register: (app: ReturnType<typeof typedApp>) => void) {
  const app = typedApp();
  register(app);
  await app.ready();
  return app;
}

function typedApp() {
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  return app.withTypeProvider<ZodTypeProvider>();
}

describe('route contracts in fastify', () => {
  it('hand the handler parsed input with the defaults applied', async () => {
    let seen: unknown;
    const app = await appWith((routes) =>
      routes.route({
        ...preprocessingRoutes.processDataset,
        handler: async (request, reply) => {
          expectTypeOf(request.body.config.split_config).toEqualTypeOf<SplitConfig>();
          expectTypeOf(request.body.dataset_source).toEqualTypeOf<'upload' | 'hub'>();
          seen = request.body;
          return reply.code(200).send(responses.processingResult as never);
        },
      }),
    );
    const response = await app.inject({
      method: 'POST',
      url: '/datasets/process',
      payload: { dataset_name: 'd', dataset_id: 'ds_01', config: { field_mappings: { user_field: { type: 'column', value: 'q' }, assistant_field: { type: 'column', value: 'a' } } } },
    });
    expect(response.statusCode).toBe(200);
    expect(seen).toMatchObject({ dataset_source: 'upload', processing_mode: 'language_modeling', config: { split_config: { type: 'no_split' } } });
    await app.close();
  });

  it('types path parameters and drops fields the response schema does not name', async () => {
    const app = await appWith((routes) =>
      routes.route({
        ...trainingRoutes.getJob,
        handler: async (request) => {
          expectTypeOf(request.params.job_id).toEqualTypeOf<string>();
          const job: TrainingJob = { ...(responses.trainingJob as TrainingJob), job_id: request.params.job_id };
          // A careless handler passing a database row straight through must not leak its credential.
          return { ...job, hub_token: 'hf_secret', user_id: 'local' } as TrainingJob;
        },
      }),
    );
    const response = await app.inject({ method: 'GET', url: '/jobs/job_42' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ job_id: 'job_42', status: 'completed' });
    expect(response.body).not.toContain('hf_secret');
    expect(response.json()).not.toHaveProperty('user_id');
    await app.close();
  });

  it('sends HTML and binary bodies as they are', async () => {
    const app = await appWith((routes) => {
      routes.route({
        ...trainingRoutes.getJobDashboard,
        handler: (_request, reply) => {
          reply.type('text/html').send('<h1>job</h1>');
        },
      });
      routes.route({
        ...exportRoutes.downloadExport,
        handler: (request, reply) => {
          expectTypeOf(request.query.type).toEqualTypeOf<'adapter' | 'merged' | 'gguf' | 'onnx'>();
          reply.type('application/octet-stream').send(Buffer.from('GGUF'));
        },
      });
    });
    const page = await app.inject({ method: 'GET', url: '/jobs/job_01/dashboard' });
    expect(page.body).toBe('<h1>job</h1>');
    const file = await app.inject({ method: 'GET', url: '/exports/job_01/download?type=gguf' });
    expect(file.body).toBe('GGUF');
    await app.close();
  });

  it('accepts the export and training samples through HTTP', async () => {
    const app = await appWith((routes) => {
      routes.route({ ...exportRoutes.createExport, handler: () => responses.exportCreate });
      routes.route({ ...trainingRoutes.startTraining, handler: () => ({ job_id: 'job_01' }) });
    });
    expect((await app.inject({ method: 'POST', url: '/exports', payload: exportRequest })).statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: '/train', payload: trainRequest })).json()).toEqual({ job_id: 'job_01' });
    await app.close();
  });
});
