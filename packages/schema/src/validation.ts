// Turns zod issues into the 422 body of decisions.md: `{detail: [{loc, msg, type}]}`, with loc starting
// at body/path/query/header and one entry per problem at the most specific path zod can name.
import type { FastifySchemaValidationError } from 'fastify';
import type { z } from 'zod';
import type { ValidationIssue } from './common.ts';

export type RequestLocation = 'body' | 'path' | 'query' | 'header';
type Issue = z.core.$ZodIssue;
type PathKey = PropertyKey;
type SchemaErrorDataVar = 'body' | 'headers' | 'params' | 'querystring';
type UnionIssue = Extract<Issue, { code: 'invalid_union' }> & { options?: readonly unknown[] };

/** Absent is told from wrong by looking at the input; the message is the fallback when it is not given. */
const NO_INPUT = Symbol('no input');

const FASTIFY_LOCATIONS: { readonly [Context in SchemaErrorDataVar]: RequestLocation } = {
  body: 'body',
  params: 'path',
  querystring: 'query',
  headers: 'header',
};

/**
 * The 422 `detail` entries for zod issues found in one part of a request. Pass `input` (the
 * request part as received) so that a required value that is absent reports type `missing`
 * even where zod's message does not say so (enum values and discriminators).
 */
export function validationDetail(
  location: RequestLocation,
  issues: readonly Issue[],
  input: unknown = NO_INPUT,
): ValidationIssue[] {
  return issues.flatMap((issue) => describeIssue(issue, [], input)).map((entry) => ({
    ...entry,
    loc: [location, ...entry.loc],
  }));
}

/**
 * The 422 `detail` for a validation error raised by fastify-type-provider-zod's validatorCompiler
 * (`error.validation`, `error.validationContext`); `request` supplies the raw input.
 */
export function fastifyValidationDetail(
  error: { validation?: FastifySchemaValidationError[]; validationContext?: SchemaErrorDataVar },
  request?: { body?: unknown; params?: unknown; query?: unknown; headers?: unknown },
): ValidationIssue[] {
  const context = error.validationContext ?? 'body';
  const input = request === undefined ? NO_INPUT : requestPart(request, context);
  return validationDetail(FASTIFY_LOCATIONS[context], issuesFromFastifyValidation(error.validation ?? []), input);
}

/** fastify-type-provider-zod flattens each issue into `{keyword, instancePath, message, params}`; undo that. */
export function issuesFromFastifyValidation(validation: readonly FastifySchemaValidationError[]): Issue[] {
  return validation.map((error) => {
    const path = error.instancePath.replace(/^\//, '');
    return {
      ...error.params,
      code: error.keyword,
      path: path === '' ? [] : path.split('/'),
      message: error.message ?? 'Invalid input',
    } as unknown as Issue;
  });
}

function requestPart(request: { body?: unknown; params?: unknown; query?: unknown; headers?: unknown }, context: SchemaErrorDataVar): unknown {
  if (context === 'params') return request.params;
  if (context === 'querystring') return request.query;
  if (context === 'headers') return request.headers;
  return request.body;
}

interface Entry {
  loc: string[];
  msg: string;
  type: string;
}

function describeIssue(issue: Issue, prefix: readonly PathKey[], input: unknown): Entry[] {
  const path = [...prefix, ...issue.path];
  const entry = (type: string, msg: string, at: readonly PathKey[] = path): Entry => ({ loc: at.map(String), msg, type });

  switch (issue.code) {
    case 'invalid_type':
      if (isAbsent(input, path) ?? /received undefined$/.test(issue.message)) return [entry('missing', 'Field required.')];
      // A JSON number beyond a double's range (1e400) parses to Infinity: a number, but not one zod takes.
      if (issue.expected === 'number' && received(input, path, issue.message) === 'number') {
        return [entry('invalid_type', 'Expected a finite number; this one is beyond the range of a double (about ±1.8e308).')];
      }
      return [entry('invalid_type', `Expected ${issue.expected}, received ${received(input, path, issue.message)}.`)];
    case 'too_small':
      return [entry('too_small', boundMessage('at least', 'greater than', issue.origin, issue.minimum, issue.inclusive))];
    case 'too_big':
      return [entry('too_big', boundMessage('at most', 'less than', issue.origin, issue.maximum, issue.inclusive))];
    case 'invalid_value':
      // zod reports an absent enum value as a wrong one; only the input tells them apart.
      if (isAbsent(input, path) === true) return [entry('missing', 'Field required.')];
      return [entry('invalid_value', `Must be one of ${issue.values.map(quote).join(', ')}.`)];
    case 'unrecognized_keys':
      return issue.keys.map((key) => entry('unrecognized_keys', `Unknown field "${key}"; remove it or check its spelling.`, [...path, key]));
    case 'invalid_union':
      return describeUnion(issue, path, input);
    case 'invalid_key':
      return issue.issues.flatMap((inner) => describeIssue(inner, path, NO_INPUT));
    case 'invalid_element':
      return issue.issues.flatMap((inner) => describeIssue(inner, [...path, issue.key as PathKey], input));
    case 'invalid_format':
      return [entry('invalid_format', issue.message)];
    case 'not_multiple_of':
      return [entry('not_multiple_of', `Must be a multiple of ${issue.divisor}.`)];
    case 'custom': {
      const type = issue.params?.['type'];
      return [entry(typeof type === 'string' ? type : 'custom', issue.message)];
    }
    default:
      return [entry((issue as { code?: string }).code ?? 'invalid', (issue as { message: string }).message)];
  }
}

function describeUnion(issue: UnionIssue, path: PathKey[], input: unknown): Entry[] {
  const loc = path.map(String);
  if (issue.errors.length === 0) {
    if (issue.discriminator === undefined || issue.options === undefined) {
      return [{ loc, msg: 'Matches more than one of the allowed shapes.', type: 'invalid_union' }];
    }
    // zod already points the path at the discriminator field itself.
    if (isAbsent(input, path) === true) return [{ loc, msg: 'Field required.', type: 'missing' }];
    return [{ loc, msg: `Must be one of ${issue.options.map(quote).join(', ')}.`, type: 'invalid_value' }];
  }
  // When no alternative got past the value's own type, one "expected A or B" says it best.
  const typeMismatches = issue.errors.every((branch) => branch.length === 1 && branch[0]?.code === 'invalid_type' && branch[0].path.length === 0);
  if (typeMismatches) {
    const first = issue.errors[0]?.[0];
    if (first !== undefined && (isAbsent(input, path) ?? /received undefined$/.test(first.message))) {
      return [{ loc, msg: 'Field required.', type: 'missing' }];
    }
    const expected = issue.errors.map((branch) => (branch[0] as { expected: string }).expected);
    return [{ loc, msg: `Expected ${[...new Set(expected)].join(' or ')}, received ${received(input, path, first?.message ?? '')}.`, type: 'invalid_type' }];
  }
  // Otherwise report the alternative that got furthest into the value: the deepest issue path wins,
  // then the one with fewer problems.
  const best = [...issue.errors].sort((a, b) => depth(b) - depth(a) || a.length - b.length)[0] ?? [];
  return best.flatMap((inner) => describeIssue(inner, path, input));
}

function depth(branch: readonly Issue[]): number {
  return Math.max(...branch.map((issue) => issue.path.length + (issue.code === 'invalid_union' && issue.errors.length === 0 ? 1 : 0)));
}

/** true / false when the input says whether the value at `path` exists; undefined when unknown. */
function isAbsent(input: unknown, path: readonly PathKey[]): boolean | undefined {
  if (input === NO_INPUT) return undefined;
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return true;
    value = (value as Record<PropertyKey, unknown>)[key as string];
  }
  return value === undefined;
}

function received(input: unknown, path: readonly PathKey[], message: string): string {
  if (input !== NO_INPUT) {
    let value: unknown = input;
    for (const key of path) value = value === null || typeof value !== 'object' ? undefined : (value as Record<PropertyKey, unknown>)[key as string];
    if (value === null) return 'null';
    if (Array.isArray(value)) return 'array';
    return typeof value;
  }
  return /received (\w+)/.exec(message)?.[1] ?? 'another type';
}

function boundMessage(inclusiveWord: string, exclusiveWord: string, origin: string, bound: number | bigint, inclusive: boolean | undefined): string {
  const word = inclusive === false ? exclusiveWord : inclusiveWord;
  if (origin === 'string') return `Must be ${word} ${bound} character${bound === 1 ? '' : 's'} long.`;
  if (origin === 'array' || origin === 'set') return `Must have ${word} ${bound} item${bound === 1 ? '' : 's'}.`;
  return `Must be ${word} ${bound}.`;
}

function quote(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}
