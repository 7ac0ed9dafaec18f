// Builds each service's OpenAPI 3.1 document from its route contracts, through the same
// @fastify/swagger + fastify-type-provider-zod path a running service would use.
import fastifySwagger, { type FastifyDynamicSwaggerOptions, type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import Fastify from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { OpenAPIV3_1 } from 'openapi-types';
import { DELIMITERS } from './preprocessing.ts';
import { MULTIPART_LIMITS } from './routes/contract.ts';
import { services, type ServiceInfo, type ServiceName } from './services.ts';

/**
 * Request bodies that the service parses from the stream itself, so no zod schema validates them;
 * they are documented here instead, keyed by `METHOD url`. Other fields are ignored, up to MULTIPART_LIMITS (413 past).
 */
export const multipartForms: Readonly<Record<string, object>> = {
  'POST /datasets/upload': {
    type: 'object',
    required: ['file'],
    maxProperties: MULTIPART_LIMITS.fields + MULTIPART_LIMITS.files,
    properties: {
      file: {
        type: 'string',
        format: 'binary',
        description:
          'The dataset file: CSV, TSV, JSON, JSONL or Parquet; text in UTF-8 (a BOM is dropped) or UTF-16 with a BOM, CSV and TSV also in Windows-1252; ' +
          'no line (row) over 32 MiB, and a file name without the NUL character',
      },
      delimiter: {
        type: 'string',
        enum: [...DELIMITERS],
        description: 'The delimiter of a CSV or TSV file, when detection from the content should not decide: comma, semicolon, tab (the character itself) or pipe',
      },
    },
  },
  'POST /v1/files': {
    type: 'object',
    required: ['file', 'purpose'],
    maxProperties: MULTIPART_LIMITS.fields + MULTIPART_LIMITS.files,
    properties: {
      file: {
        type: 'string',
        format: 'binary',
        description: 'Chat JSONL ({"messages": […]}) or preference JSONL ({"input", "preferred_output", "non_preferred_output"}); no line over 32 MiB, and a file name without the NUL character',
      },
      purpose: { type: 'string', enum: ['fine-tune', 'batch'], description: 'fine-tune (training data) or batch (a batch’s input: one request per line)' },
    },
  },
  'POST /v1/uploads/:upload_id/parts': {
    type: 'object',
    required: ['data'],
    maxProperties: MULTIPART_LIMITS.fields + MULTIPART_LIMITS.files,
    properties: {
      data: { type: 'string', format: 'binary', description: 'The part’s bytes: at most 64 MiB (less where MAX_UPLOAD_BYTES is lower)' },
    },
  },
};

/**
 * Binary request bodies, read whole by a content-type parser of the service's and decoded there (no zod schema sees
 * them); documented here, keyed by `METHOD url`, under the route's `consumes` media type.
 */
export const binaryBodies: Readonly<Record<string, object>> = {
  'POST /api/v1/forward_backward': {
    type: 'string',
    format: 'binary',
    description:
      'The tinker SDK’s protobuf ForwardBackwardRequest (package tinker_public, services/tinker/src/wire/tinker.proto; docs/tinker-wire.md §3.4), ' +
      'uncompressed: model_id, seq_id, data, loss_fn, loss_fn_config, forward_only. Bytes that are not one are a 400',
  },
};

/** jsonSchemaTransform, plus the multipart bodies of `multipartForms` and the binary ones of `binaryBodies`. */
export const openApiTransform: SwaggerTransform = (input) => {
  const transformed = jsonSchemaTransform(input);
  const methods = ([] as string[]).concat(input.route.method);
  const body = methods.map((method) => multipartForms[`${method} ${input.url}`] ?? binaryBodies[`${method} ${input.url}`]).find((b) => b !== undefined);
  if (body === undefined) return transformed;
  return { ...transformed, schema: { ...transformed.schema, body } };
};

/** jsonSchemaTransformObject, then only the components this document uses, under plain names. */
export const openApiTransformObject: SwaggerTransformObject = (documentObject) => {
  const document = jsonSchemaTransformObject(documentObject) as OpenAPIV3_1.Document;
  return tidy(document);
};

export function openApiOptions(service: ServiceInfo): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: { title: service.title, description: service.description, version: service.version },
      servers: [{ url: `http://127.0.0.1:${service.defaultPort}`, description: 'Embedded default' }],
      tags: service.tags.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (AUTH_MODE=token) or a JWT whose sub is the user id (AUTH_MODE=jwt)' },
          // The tinker SDK's own header (the Tinker-compatible service; its /metrics takes the bearer token as everywhere).
          ...(service.name === 'tinker' ? { apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'tml- then an API key (AUTH_MODE=token), or a JWT whose sub is the user id (AUTH_MODE=jwt): what the tinker SDK sends' } } : {}),
        },
      },
    },
    transform: openApiTransform,
    transformObject: openApiTransformObject,
  };
}

/** The OpenAPI document of one service, as plain JSON data. */
export async function buildOpenApiDocument(name: ServiceName): Promise<OpenAPIV3_1.Document> {
  const service = services[name];
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(fastifySwagger, openApiOptions(service));
  const routes = app.withTypeProvider<ZodTypeProvider>();
  for (const contract of service.routes) {
    routes.route({
      ...contract,
      handler: () => {
        throw new Error(`${contract.method} ${contract.url} is documented here, not served`);
      },
    });
  }
  await app.ready();
  const document = JSON.parse(JSON.stringify(app.swagger())) as OpenAPIV3_1.Document;
  await app.close();
  markOptionalBodies(document, service.routes);
  return document;
}

/** @fastify/swagger states every body required; a route whose body schema accepts none (the validator then gives the
 *  route none: platform's validation.ts) says requestBody.required false. */
function markOptionalBodies(document: OpenAPIV3_1.Document, routes: ReadonlyArray<{ method: string | string[]; url: string; schema?: { body?: unknown } }>): void {
  for (const route of routes) {
    const body = route.schema?.body as { safeParse?: (value: unknown) => { success: boolean } } | undefined;
    if (!body?.safeParse?.(undefined).success) continue;
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of ([] as string[]).concat(route.method)) {
      const operation = document.paths?.[path]?.[method.toLowerCase() as OpenAPIV3_1.HttpMethods];
      if (operation?.requestBody && 'content' in operation.requestBody) operation.requestBody.required = false;
    }
  }
}

/** Where the committed document of a service lives (openapi/<service>.json at the repository root). */
export function openApiDocumentPath(name: ServiceName): string {
  return fileURLToPath(new URL(`../../../openapi/${name}.json`, import.meta.url));
}

/** The API reference page rendered from the documents (docs/api.md at the repository root). */
export function apiDocsPath(): string {
  return fileURLToPath(new URL('../../../docs/api.md', import.meta.url));
}

/** The committed document, as served by a running service: a test keeps it equal to what
 *  buildOpenApiDocument produces, and reading it costs nothing at start-up. */
export async function readOpenApiDocument(name: ServiceName): Promise<OpenAPIV3_1.Document> {
  return JSON.parse(await readFile(openApiDocumentPath(name), 'utf8')) as OpenAPIV3_1.Document;
}

/** The committed file's text: 2-space JSON and a final newline. */
export function serializeOpenApiDocument(document: OpenAPIV3_1.Document): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------
// Tidying: zod's registry holds the schemas of all four services in input and output forms.

const COMPONENT_REF = '#/components/schemas/';

function tidy(document: OpenAPIV3_1.Document): OpenAPIV3_1.Document {
  const all = document.components?.schemas ?? {};
  const used = referencedComponents(document.paths, all);
  const rename = plainNames(used, all);
  const schemas = Object.fromEntries(
    Object.keys(all)
      .filter((name) => used.has(name) && !(rename.has(name) && used.has(rename.get(name) as string)))
      .map((name) => [rename.get(name) ?? name, all[name]]),
  );
  const text = JSON.stringify({ ...document, components: { ...document.components, schemas } });
  const renamed = text.replace(/"#\/components\/schemas\/([^"]+)"/g, (_ref, name: string) => `"${COMPONENT_REF}${rename.get(name) ?? name}"`);
  return JSON.parse(renamed, dropNoise) as OpenAPIV3_1.Document;
}

/**
 * A schema read from requests is emitted as `<id>Input`. It takes the plain name when that is free,
 * or merges into the plain one when both forms are the same (enums, objects without defaults) and
 * so is everything it refers to.
 */
function plainNames(used: Set<string>, all: Record<string, unknown>): Map<string, string> {
  const plainOf = (name: string) => name.replace(/Input$/, '');
  const inputRefs = (name: string) =>
    [...JSON.stringify(all[name]).matchAll(/"#\/components\/schemas\/([^"]+Input)"/g)].map((match) => match[1] as string);
  const sameModuloRefs = (a: unknown, b: unknown) =>
    JSON.stringify(a).replace(/Input"/g, '"') === JSON.stringify(b).replace(/Input"/g, '"');

  const inputs = [...used].filter((name) => plainOf(name) !== name);
  const merged = new Set(inputs.filter((name) => used.has(plainOf(name)) && sameModuloRefs(all[name], all[plainOf(name)])));
  for (let changed = true; changed; ) {
    changed = false;
    for (const name of merged) {
      if (inputRefs(name).some((ref) => used.has(plainOf(ref)) && !merged.has(ref))) {
        merged.delete(name);
        changed = true;
      }
    }
  }
  return new Map(inputs.filter((name) => merged.has(name) || !used.has(plainOf(name))).map((name) => [name, plainOf(name)]));
}

function referencedComponents(root: unknown, schemas: Record<string, unknown>): Set<string> {
  const used = new Set<string>();
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) pending.push(...node);
    else if (node !== null && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string' && value.startsWith(COMPONENT_REF)) {
          const name = value.slice(COMPONENT_REF.length);
          if (!used.has(name)) {
            used.add(name);
            pending.push(schemas[name]);
          }
        } else pending.push(value);
      }
    }
  }
  return used;
}

/** No request string may hold U+0000 (PostgreSQL cannot store it; the validator refuses it with the field's loc). */
const NO_NUL = '^[^\\u0000]*$';

/** A string schema nothing else restricts the characters of (no pattern, enum, const or binary format). */
function isFreeString(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const schema = value as Record<string, unknown>;
  const types = ([] as unknown[]).concat(schema['type']);
  return types.includes('string') && !('pattern' in schema) && !('enum' in schema) && !('const' in schema) && schema['format'] !== 'binary' && schema['format'] !== 'date-time';
}

/** zod writes its full regex on every date-time. (The safe-integer range it writes on every integer stays: the server
 *  refuses integers past it, and a client generating values from the document must know.) */
function dropNoise(this: Record<string, unknown>, key: string, value: unknown): unknown {
  if (key === 'pattern' && this['format'] === 'date-time') return undefined;
  if (isFreeString(value)) return { ...value, pattern: NO_NUL };
  return value;
}
