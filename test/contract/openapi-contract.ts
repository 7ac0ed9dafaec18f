// Checks HTTP responses against the committed OpenAPI documents (openapi/<service>.json): the operation
// must exist for the method and path, the status must be documented, and a JSON body must match its
// schema. Service tests route every inject() through `checkedInject`, so every response they see is checked.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

type Json = Record<string, unknown>;
const OPENAPI_DIR = fileURLToPath(new URL('../../openapi/', import.meta.url));

interface LoadedDocument {
  document: Json;
  ajv: Ajv2020;
  operations: Array<{ method: string; pattern: RegExp; template: string; operation: Json }>;
  validators: Map<string, ValidateFunction>;
}

const loaded = new Map<string, LoadedDocument>();

function load(service: string): LoadedDocument {
  const cached = loaded.get(service);
  if (cached) return cached;
  const document = JSON.parse(fs.readFileSync(path.join(OPENAPI_DIR, `${service}.json`), 'utf8')) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  // Components are addressed as '#/components/schemas/X' inside one document: register it whole.
  ajv.addSchema({ $id: 'doc', components: document.components ?? {} });
  const operations: LoadedDocument['operations'] = [];
  for (const [template, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, operation] of Object.entries(item)) operations.push({ method: method.toUpperCase(), pattern, template, operation: operation as Json });
  }
  const result = { document, ajv, operations, validators: new Map() };
  loaded.set(service, result);
  return result;
}

/** Rewrites local refs so a response schema compiles against the registered document. */
function withDocRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withDocRefs);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(
      Object.entries(schema).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `doc${v}` : withDocRefs(v)]),
    );
  }
  return schema;
}

export class ContractViolation extends Error {}

export function checkResponse(service: string, method: string, url: string, response: LightMyRequestResponse): void {
  const doc = load(service);
  const pathname = url.split('?')[0]!;
  const match = doc.operations.find((o) => o.method === method.toUpperCase() && o.pattern.test(pathname));
  if (!match) throw new ContractViolation(`${method} ${pathname} is not in openapi/${service}.json`);
  const responses = (match.operation.responses ?? {}) as Record<string, Json>;
  const documented = responses[String(response.statusCode)] ?? responses.default;
  if (!documented) {
    throw new ContractViolation(`${method} ${match.template} answered ${response.statusCode}, which openapi/${service}.json does not document (body: ${response.body.slice(0, 300)})`);
  }
  const content = (documented.content ?? {}) as Record<string, { schema?: unknown }>;
  const contentType = String(response.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (contentType !== 'application/json') return;
  const schema = content['application/json']?.schema;
  if (!schema) throw new ContractViolation(`${method} ${match.template} ${response.statusCode} returned JSON but documents none`);
  const cacheKey = `${method} ${match.template} ${response.statusCode}`;
  let validate = doc.validators.get(cacheKey);
  if (!validate) {
    validate = doc.ajv.compile(withDocRefs(schema) as object);
    doc.validators.set(cacheKey, validate);
  }
  if (!validate(response.json())) {
    throw new ContractViolation(
      `${method} ${match.template} ${response.statusCode} does not match openapi/${service}.json: ${doc.ajv.errorsText(validate.errors)}\nbody: ${response.body.slice(0, 500)}`,
    );
  }
}

/** app.inject, then the contract check; use it for every request a service test makes. */
export async function checkedInject(service: string, app: FastifyInstance, options: InjectOptions): Promise<LightMyRequestResponse> {
  const response = await app.inject(options);
  checkResponse(service, String(options.method ?? 'GET'), String(options.url ?? '/'), response);
  return response;
}
