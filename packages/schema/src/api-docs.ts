// docs/api.md, rendered from the OpenAPI documents (`pnpm openapi` writes both; a test fails when either is stale):
// every endpoint of every service with what it does, its parameters, body and answers, then every schema with its
// fields. The words are the route contracts' own (packages/schema), so the page cannot say what the code does not.
type Schema = Record<string, any>;
type Document = Record<string, any>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const anchor = (name: string) => `schema-${name.toLowerCase()}`;
const cell = (text: unknown) => String(text ?? '').replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/** A schema's type as one short phrase: a link for a named schema, the values of an enum, `T[]` for arrays. */
export function typeOf(schema: Schema | undefined): string {
  if (!schema) return 'any';
  if (schema.$ref) return `[${refName(schema.$ref)}](#${anchor(refName(schema.$ref))})`;
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((v: unknown) => `\`${JSON.stringify(v)}\``).join(' \\| ');
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map((v: Schema) => typeOf(v)).join(' or ');
  if (schema.type === 'array') return `${typeOf(schema.items)}[]`;
  if (schema.type === 'object' && schema.additionalProperties && !schema.properties) return `map of ${typeOf(schema.additionalProperties === true ? undefined : schema.additionalProperties)}`;
  return Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type ?? 'any');
}

/** What a field accepts beyond its type: default and bounds. */
function limits(schema: Schema): string {
  const parts: string[] = [];
  if (schema.default !== undefined) parts.push(`default \`${JSON.stringify(schema.default)}\``);
  for (const [key, word] of [['minimum', '≥'], ['exclusiveMinimum', '>'], ['maximum', '≤'], ['exclusiveMaximum', '<']] as const) {
    if (typeof schema[key] === 'number' && Math.abs(schema[key]) < Number.MAX_SAFE_INTEGER) parts.push(`${word} ${schema[key]}`);
  }
  if (schema.minLength !== undefined) parts.push(`at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined) parts.push(`at most ${schema.maxLength} characters`);
  if (schema.maxItems !== undefined) parts.push(`at most ${schema.maxItems} items`);
  return parts.join(', ');
}

function fieldsTable(schema: Schema): string[] {
  const properties: Record<string, Schema> = schema.properties ?? {};
  const required = new Set<string>(schema.required ?? []);
  if (Object.keys(properties).length === 0) return [];
  return [
    '| field | type | | description |',
    '|---|---|---|---|',
    ...Object.entries(properties).map(([name, field]) => {
      const notes = [required.has(name) ? 'required' : '', limits(field)].filter(Boolean).join('; ');
      return `| \`${name}\` | ${cell(typeOf(field))} | ${cell(notes)} | ${cell(field.description)} |`;
    }),
  ];
}

function auth(operation: Schema, document: Document): string {
  const security: Schema[] = operation.security ?? document.security ?? [];
  if (security.length === 0) return 'none';
  return security.some((s) => Object.keys(s).length === 0) ? 'a bearer token when AUTH_MODE is token or jwt' : 'bearer token';
}

function endpoint(method: string, path: string, operation: Schema, document: Document): string[] {
  const lines = [`### \`${method.toUpperCase()} ${path}\``, '', `**${operation.summary ?? ''}**`, ''];
  if (operation.description) lines.push(operation.description, '');
  lines.push(`Credential: ${auth(operation, document)}.`, '');
  const parameters: Schema[] = operation.parameters ?? [];
  if (parameters.length > 0) {
    lines.push('| parameter | in | type | | description |', '|---|---|---|---|---|');
    for (const p of parameters) lines.push(`| \`${p.name}\` | ${p.in} | ${cell(typeOf(p.schema))} | ${p.required ? 'required' : ''} | ${cell(p.description ?? p.schema?.description)} |`);
    lines.push('');
  }
  for (const [type, content] of Object.entries<Schema>(operation.requestBody?.content ?? {})) {
    lines.push(`Body (${type}): ${typeOf(content.schema)}.`, '');
  }
  lines.push('| answer | meaning | body |', '|---|---|---|');
  for (const [status, response] of Object.entries<Schema>(operation.responses ?? {})) {
    const body = Object.values<Schema>(response.content ?? {})[0]?.schema;
    lines.push(`| ${status} | ${cell(response.description)} | ${body ? cell(typeOf(body)) : ''} |`);
  }
  return [...lines, ''];
}

/** The whole page for `documents` (service name → its OpenAPI document, in the order given). */
export function renderApiDocs(documents: ReadonlyArray<[string, Document]>): string {
  const lines = [
    '# The API',
    '',
    'Every endpoint of the five services and every schema they read and answer, rendered from the OpenAPI documents in',
    '[`openapi/`](../openapi/) by `pnpm openapi` (which writes both; a test fails when this page or a document is stale,',
    'so it cannot drift from the code). Each running service serves its own document at `/docs`. Errors are',
    '`{"detail": "…"}` (422: `{"detail": [{"loc", "msg", "type"}]}`; on `/v1`, OpenAI\'s `{"error": {…}}`).',
    '',
  ];
  const schemas = new Map<string, Schema>();
  for (const [service, document] of documents) {
    lines.push(`## ${document.info.title} (\`${service}\`, version ${document.info.version})`, '', document.info.description ?? '', '');
    for (const [path, item] of Object.entries<Schema>(document.paths ?? {})) {
      for (const method of METHODS) if (item[method]) lines.push(...endpoint(method, path, item[method], document));
    }
    for (const [name, schema] of Object.entries<Schema>(document.components?.schemas ?? {})) if (!schemas.has(name)) schemas.set(name, schema);
  }
  lines.push('## Schemas', '');
  for (const [name, schema] of [...schemas].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`### ${name}`, '', `<a id="${anchor(name)}"></a>`, '');
    if (schema.description) lines.push(cell(schema.description), '');
    const table = fieldsTable(schema);
    lines.push(...(table.length > 0 ? table : [`${typeOf({ ...schema, description: undefined })}`]), '');
  }
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
