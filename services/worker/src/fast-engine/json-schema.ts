// A request's JSON Schema as node-llama-cpp's grammar takes it, or a clear refusal. Its converter
// (utils/gbnfJson/utils/getGbnfJsonTerminalForGbnfJsonSchema.js) silently generates `null` for what it does not know
// (no type, `anyOf`, `type: ['object', …]`) and ignores the keywords it cannot enforce (`pattern`, `minimum`, …),
// so an answer "constrained" by such a schema would not match it. Here every keyword is either enforced by the
// grammar, an annotation, or refused with its place in the schema. `anyOf` becomes `oneOf` (both are a plain
// alternative in the grammar). Every listed property is always generated, so `required` may only name listed ones.
import type { GbnfJsonSchema } from 'node-llama-cpp';
import { UnsupportedSchemaError } from './refusals.ts';

/** The schema asks for what llama.cpp's JSON grammar cannot guarantee (refusals.ts). */
export { UnsupportedSchemaError };

type Schema = Record<string, unknown>;

const ANNOTATIONS = ['title', 'description', 'default', 'examples', '$schema', '$id', '$comment'];
const BASIC_TYPES = ['string', 'number', 'integer', 'boolean', 'null'];
const KEYWORDS_OF_TYPE: Record<string, string[]> = {
  object: ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties'],
  array: ['items', 'prefixItems', 'minItems', 'maxItems'],
  string: ['minLength', 'maxLength', 'format'],
};
const STRING_FORMATS = ['date-time', 'time', 'date'];

/** The schema to build the grammar from; throws UnsupportedSchemaError naming the first keyword it cannot honour
 *  (its place from `where`, the request field the schema came from). */
export function grammarSchema(schema: Schema, where = 'response_format schema'): GbnfJsonSchema {
  return convert(schema, where, new Set()) as GbnfJsonSchema;
}

function convert(value: unknown, at: string, defsInScope: ReadonlySet<string>): Schema {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse(at, 'must be a JSON Schema object');
  const schema = value as Schema;
  const defs = isObject(schema.$defs) ? new Set([...defsInScope, ...Object.keys(schema.$defs)]) : defsInScope;
  const out: Schema = {};
  const keywords = ['$defs', ...ANNOTATIONS, ...allowedKeywords(schema, at)];
  for (const [key, child] of Object.entries(schema)) {
    if (!keywords.includes(key)) refuse(`${at}.${key}`, "is a keyword llama.cpp's JSON grammar cannot enforce; remove it");
    if (key === '$defs') out.$defs = mapValues(child, `${at}.$defs`, (def, path) => convert(def, path, defs));
    else if (key === 'anyOf' || key === 'oneOf') out.oneOf = listOf(child, `${at}.${key}`).map((s, i) => convert(s, `${at}.${key}[${i}]`, defs));
    else if (key === 'properties') out.properties = mapValues(child, `${at}.properties`, (s, path) => convert(s, path, defs));
    else if (key === 'prefixItems') out.prefixItems = listOf(child, `${at}.prefixItems`).map((s, i) => convert(s, `${at}.prefixItems[${i}]`, defs));
    else if (key === 'items' || (key === 'additionalProperties' && typeof child !== 'boolean')) out[key] = convert(child, `${at}.${key}`, defs);
    else out[key] = child;
  }
  checkReference(schema, at, defs);
  checkRequired(schema, at);
  if (schema.format !== undefined && !STRING_FORMATS.includes(schema.format as string)) {
    refuse(`${at}.format`, `must be one of ${STRING_FORMATS.join(', ')}`);
  }
  return out;
}

/** The keywords `schema` may use besides annotations: those of its kind (type, or one of the kinds without one). */
function allowedKeywords(schema: Schema, at: string): string[] {
  if (schema.$ref !== undefined) return ['$ref'];
  if (schema.const !== undefined) return ['const', 'type']; // the value is generated; its type says nothing more
  if (schema.enum !== undefined) return ['enum', 'type'];
  if (schema.oneOf !== undefined) return ['oneOf'];
  if (schema.anyOf !== undefined) return ['anyOf'];
  const type = schema.type;
  if (typeof type === 'string' && KEYWORDS_OF_TYPE[type]) return ['type', ...KEYWORDS_OF_TYPE[type]];
  const types = Array.isArray(type) ? type : [type];
  if (type === undefined) refuse(at, 'needs a type (or const, enum, oneOf, anyOf, $ref): the grammar cannot generate "any value"');
  if (!types.every((t) => BASIC_TYPES.includes(t as string))) {
    refuse(`${at}.type`, `must be object, array, or some of ${BASIC_TYPES.join(', ')} (a list may not hold object or array)`);
  }
  return ['type'];
}

function checkReference(schema: Schema, at: string, defs: ReadonlySet<string>): void {
  if (schema.$ref === undefined) return;
  const ref = String(schema.$ref);
  if (!ref.startsWith('#/$defs/') || !defs.has(ref.slice('#/$defs/'.length))) refuse(`${at}.$ref`, `must name one of the schema's own $defs (#/$defs/<name>), not ${ref}`);
}

function checkRequired(schema: Schema, at: string): void {
  if (schema.required === undefined) return;
  const listed = Object.keys(isObject(schema.properties) ? schema.properties : {});
  const unlisted = listOf(schema.required, `${at}.required`).filter((name) => !listed.includes(name as string));
  if (unlisted.length > 0) refuse(`${at}.required`, `names ${unlisted.join(', ')}, which properties does not list`);
}

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function listOf(value: unknown, at: string): unknown[] {
  if (!Array.isArray(value)) refuse(at, 'must be a list');
  return value;
}

/** The object at `at` with each value mapped (given its own place in the schema). */
function mapValues(object: unknown, at: string, map: (value: unknown, at: string) => Schema): Schema {
  if (!isObject(object)) refuse(at, 'must be an object');
  return Object.fromEntries(Object.entries(object).map(([key, value]) => [key, map(value, `${at}.${key}`)]));
}

function refuse(at: string, why: string): never {
  throw new UnsupportedSchemaError(`${at} ${why}`);
}
