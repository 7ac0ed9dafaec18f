// The committed OpenAPI documents match the contracts, document every endpoint of the interface,
// and no response anywhere can carry a credential.
import { readFile } from 'node:fs/promises';
import type { OpenAPIV3_1 } from 'openapi-types';
import { describe, expect, it } from 'vitest';
import { apiDocsPath, buildCoreContract, buildOpenApiDocument, coreContractPath, serializeCoreContract, openApiDocumentPath, renderApiDocs, SECRET_FIELD_NAMES, SERVICE_NAMES, services, type ServiceName } from '../src/index.ts';

const committedPath = (service: ServiceName) => openApiDocumentPath(service);

const documents = new Map<ServiceName, OpenAPIV3_1.Document>();
async function documentOf(service: ServiceName): Promise<OpenAPIV3_1.Document> {
  if (!documents.has(service)) documents.set(service, await buildOpenApiDocument(service));
  return documents.get(service)!;
}

const BEARER_REQUIRED = ['POST /evaluation', 'POST /inference/batch', 'POST /exports', 'GET /exports', 'GET /exports/{job_id}', 'GET /exports/{job_id}/download'];

const ENDPOINTS: Record<ServiceName, string[]> = {
  preprocessing: ['GET /health', 'GET /metrics', 'POST /datasets/upload', 'GET /datasets/uploads', 'POST /datasets/process', 'GET /datasets', 'GET /datasets/{processed_dataset_id}', 'DELETE /datasets/{processed_dataset_id}'],
  training: ['GET /health', 'GET /metrics', 'POST /train', 'GET /jobs', 'GET /jobs/{job_id}', 'DELETE /jobs/{job_id}', 'POST /jobs/{job_id}/cancel', 'POST /jobs/{job_id}/pause', 'POST /jobs/{job_id}/resume', 'GET /jobs/{job_id}/events', 'GET /jobs/{job_id}/dashboard', 'GET /jobs/{job_id}/checkpoints', 'GET /workers', 'POST /sweeps', 'GET /sweeps', 'GET /sweeps/{sweep_id}', 'POST /sweeps/{sweep_id}/cancel', 'DELETE /sweeps/{sweep_id}'],
  export: ['GET /health', 'GET /metrics', 'POST /exports', 'GET /exports', 'GET /exports/{job_id}', 'GET /exports/{job_id}/download'],
  inference: [
    'GET /health', 'GET /metrics', 'POST /evaluation', 'POST /inference/batch',
    // Evaluations with benchmarks (#59), a resource like a job
    'POST /evaluations', 'GET /evaluations', 'GET /evaluations/{evaluation_id}', 'GET /evaluations/{evaluation_id}/events',
    'POST /evaluations/{evaluation_id}/cancel', 'DELETE /evaluations/{evaluation_id}',
    // Pairwise comparisons by a judge (#61), results kept
    'POST /comparisons', 'GET /comparisons', 'GET /comparisons/{comparison_id}', 'DELETE /comparisons/{comparison_id}',
  ],
  openai: [
    'GET /health', 'GET /metrics', 'POST /v1/files', 'GET /v1/files', 'GET /v1/files/{file_id}', 'GET /v1/files/{file_id}/content', 'DELETE /v1/files/{file_id}',
    'POST /v1/fine_tuning/jobs', 'GET /v1/fine_tuning/jobs', 'GET /v1/fine_tuning/jobs/{fine_tuning_job_id}', 'POST /v1/fine_tuning/jobs/{fine_tuning_job_id}/cancel', 'POST /v1/fine_tuning/jobs/{fine_tuning_job_id}/pause', 'POST /v1/fine_tuning/jobs/{fine_tuning_job_id}/resume',
    'POST /v1/fine_tuning/alpha/graders/run', 'POST /v1/fine_tuning/alpha/graders/validate',
    'GET /v1/fine_tuning/jobs/{fine_tuning_job_id}/events', 'GET /v1/fine_tuning/jobs/{fine_tuning_job_id}/checkpoints',
    'GET /v1/models', 'GET /v1/models/{model}', 'DELETE /v1/models/{model}', 'POST /v1/chat/completions', 'POST /v1/responses',
    'POST /v1/uploads', 'POST /v1/uploads/{upload_id}/parts', 'POST /v1/uploads/{upload_id}/complete', 'POST /v1/uploads/{upload_id}/cancel',
    'POST /v1/batches', 'GET /v1/batches', 'GET /v1/batches/{batch_id}', 'POST /v1/batches/{batch_id}/cancel',
    'POST /v1/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions', 'GET /v1/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions',
    'DELETE /v1/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions/{permission_id}',
    // Webhooks (#42): OpenAI's endpoint management, and ours beside it (deliveries, redelivery, the event types)
    'POST /v1/webhook_endpoints', 'GET /v1/webhook_endpoints', 'GET /v1/webhook_endpoints/{webhook_endpoint_id}',
    'POST /v1/webhook_endpoints/{webhook_endpoint_id}', 'DELETE /v1/webhook_endpoints/{webhook_endpoint_id}',
    'POST /v1/webhook_endpoints/{webhook_endpoint_id}/rotate_secret', 'POST /v1/webhook_endpoints/{webhook_endpoint_id}/test',
    'GET /v1/webhook_endpoints/{webhook_endpoint_id}/deliveries', 'POST /v1/webhook_endpoints/{webhook_endpoint_id}/deliveries/{delivery_id}/redeliver',
    'GET /v1/webhook_event_types',
  ],
  tinker: [
    'GET /health', 'GET /metrics',
    // What the tinker SDK 0.38 calls (docs/tinker-wire.md), #60
    'POST /api/v1/client/config', 'POST /api/v1/client/dynamic_config', 'POST /api/v1/create_session', 'POST /api/v1/session_heartbeat',
    'POST /api/v1/sessions/{session_id}/finish', 'POST /api/v1/create_model', 'POST /api/v1/get_info', 'POST /api/v1/forward_backward',
    'POST /api/v1/optim_step', 'POST /api/v1/save_weights', 'POST /api/v1/save_weights_for_sampler', 'POST /api/v1/load_weights',
    'POST /api/v1/create_sampling_session', 'GET /api/v1/samplers/{sampler_id}', 'POST /api/v1/asample', 'POST /api/v1/retrieve_future',
    'POST /api/v1/telemetry', 'GET /api/v1/healthz', 'GET /api/v1/get_server_capabilities', 'GET /api/v1/training_runs',
    'GET /api/v1/training_runs/{run_id}', 'GET /api/v1/training_runs/{run_id}/checkpoints', 'GET /api/v1/checkpoints', 'POST /api/v1/weights_info',
  ],
};

function operations(document: OpenAPIV3_1.Document): Array<[string, OpenAPIV3_1.OperationObject]> {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item ?? {}).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation as OpenAPIV3_1.OperationObject] as [string, OpenAPIV3_1.OperationObject]),
  );
}

/** Every property name reachable from `schema`, following component references. */
function propertyNames(schema: unknown, components: Record<string, unknown>, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const name = value.replace('#/components/schemas/', '');
        if (!seen.has(name)) {
          seen.add(name);
          visit(components[name]);
        }
      } else if (key === 'properties' && value !== null && typeof value === 'object') {
        for (const [property, child] of Object.entries(value)) {
          names.add(property);
          visit(child);
        }
      } else visit(value);
    }
  };
  visit(schema);
  return names;
}

describe.each(SERVICE_NAMES)('%s OpenAPI document', (service) => {
  it('matches the committed openapi/<service>.json', async () => {
    const committed = JSON.parse(await readFile(committedPath(service), 'utf8').catch(() => 'null')) as unknown;
    expect(committed, `openapi/${service}.json is stale or missing: run \`pnpm openapi\` and commit the result`).toEqual(await documentOf(service));
  });

  it('is OpenAPI 3.1 with the service title, version and bearer scheme', async () => {
    const document = await documentOf(service);
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: services[service].title, version: services[service].version });
    expect(document.components?.securitySchemes?.['bearerAuth']).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('documents exactly the endpoints of interface.md and decisions.md', async () => {
    const documented = operations(await documentOf(service)).map(([name]) => name);
    expect(documented.sort()).toEqual([...ENDPOINTS[service]].sort());
  });

  it('marks bearer authentication, and documents the validation error wherever there is input', async () => {
    // The /v1 surface answers invalid input as OpenAI does: 400 invalid_request_error, never 422; and always needs a bearer
    // (but /metrics, which takes the operator's METRICS_TOKEN where auth is on, as on every service).
    const validationStatus = service === 'openai' ? '400' : '422';
    for (const [name, operation] of operations(await documentOf(service))) {
      if (BEARER_REQUIRED.includes(name) || (service === 'openai' && name !== 'GET /health' && name !== 'GET /metrics')) expect(operation.security, name).toEqual([{ bearerAuth: [] }]);
      // The tinker SDK sends its key as X-API-Key (and checks health at /api/v1/healthz with none).
      else if (service === 'tinker' && name.includes(' /api/v1/')) expect(operation.security, name).toEqual(name === 'GET /api/v1/healthz' ? [] : [{}, { apiKeyAuth: [] }]);
      else if (name !== 'GET /health') expect(operation.security, name).toEqual([{}, { bearerAuth: [] }]);
      // A protobuf body (the tinker SDK's forward_backward) is bytes no schema checks: a 400 when they are not a request.
      const bodyTypes = Object.keys((operation.requestBody as OpenAPIV3_1.RequestBodyObject | undefined)?.content ?? {});
      const hasInput = bodyTypes.some((type) => type !== 'application/x-protobuf') || (operation.parameters ?? []).length > 0;
      expect(Object.keys(operation.responses ?? {}).includes(validationStatus), name).toBe(hasInput);
      if (service === 'openai') expect(Object.keys(operation.responses ?? {}).includes('422'), name).toBe(false);
      if (name !== 'GET /api/v1/healthz') expect(operation.responses?.['500'], name).toBeDefined();
    }
  });

  it('never names a credential in a response, while requests do take them', async () => {
    const document = await documentOf(service);
    const components = (document.components?.schemas ?? {}) as Record<string, unknown>;
    for (const [name, operation] of operations(document)) {
      const responseNames = propertyNames(operation.responses, components);
      for (const secret of SECRET_FIELD_NAMES) expect(responseNames.has(secret), `${name} response names ${secret}`).toBe(false);
    }
    {
      const requestNames = new Set(operations(document).flatMap(([, operation]) => [...propertyNames(operation.requestBody, components)]));
      const expected = { preprocessing: ['llm_api_key'], training: ['hub_token', 'api_key'], export: ['hub_token'], inference: ['hub_token'], openai: [], tinker: [] }[service];
      for (const secret of expected) expect(requestNames.has(secret), `${service} requests take ${secret}`).toBe(true);
    }
  });
});

it('the upload is documented as multipart/form-data with a binary file part', async () => {
  const upload = (await documentOf('preprocessing')).paths?.['/datasets/upload']?.post;
  const form = upload?.requestBody as OpenAPIV3_1.RequestBodyObject;
  expect(Object.keys(form.content)).toEqual(['multipart/form-data']);
  expect(form.content['multipart/form-data']?.schema).toMatchObject({ required: ['file'], properties: { file: { type: 'string', format: 'binary' } } });
});

describe('docs/api.md', () => {
  it('is the page the committed documents render (pnpm openapi writes both), so the API reference cannot drift', async () => {
    const documents = await Promise.all(SERVICE_NAMES.map(async (service) => [service, await documentOf(service)] as [string, OpenAPIV3_1.Document]));
    const committed = await readFile(apiDocsPath(), 'utf8').catch(() => 'missing');
    expect(committed, 'docs/api.md is stale or missing: run `pnpm openapi` and commit the result').toBe(renderApiDocs(documents));
    for (const service of SERVICE_NAMES) {
      for (const [name] of operations(await documentOf(service))) expect(committed, name).toContain(`### \`${name}\``);
    }
  });
});

describe('core/src/ftcore/train/contract.json', () => {
  it('is the training document’s contract (pnpm openapi writes it), so the core cannot drift from the API', async () => {
    const committed = await readFile(coreContractPath(), 'utf8').catch(() => 'missing');
    expect(committed, 'the core contract is stale or missing: run `pnpm openapi` and commit the result').toBe(serializeCoreContract(buildCoreContract(await documentOf('training'))));
  });
});
