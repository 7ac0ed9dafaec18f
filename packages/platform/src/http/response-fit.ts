// A stored row that no longer fits its response schema (written by an older version, or by a worker killed at the
// wrong moment) must not turn a whole list into a 500 (#56): each presented item is fitted to its schema before it is
// served. A field at fault becomes null where the schema allows null, or is left out where it is optional; an item
// that still does not fit is left out of its list, or answers the 500 of its own GET, with the row named in the log.
import { z } from 'zod';
import type { FastifyBaseLogger } from 'fastify';

type Path = readonly PropertyKey[];

export type Fitted<T> = { ok: true; value: T; repaired: string[] } | { ok: false; issues: z.core.$ZodIssue[] };

/** Enough for every field of a response to be repaired once; a value needing more is not served. */
const MAX_REPAIRS = 64;

/** Checks `value` as the route's serializer does (fastify-type-provider-zod encodes with the schema) and repairs what
 *  does not fit: for each issue, from the field at fault up through its parents, the first that may be null becomes
 *  null, or the first that may be absent is dropped (array items are never dropped: their indexes are data).
 *  `repaired` names the fields changed (dotted paths). */
export function fitToSchema<T>(schema: z.ZodType<T>, value: unknown): Fitted<T> {
  let current = value;
  const repaired: string[] = [];
  for (let attempt = 0; attempt <= MAX_REPAIRS; attempt++) {
    const result = z.safeEncode(schema, current as T);
    if (result.success) return { ok: true, value: current as T, repaired };
    const fix = attempt < MAX_REPAIRS ? repairAt(schema, current, result.error.issues[0]!.path) : undefined;
    if (!fix) return { ok: false, issues: result.error.issues };
    current = fix.value;
    repaired.push(fix.path.map(String).join('.'));
  }
  throw new Error('unreachable');
}

/** The value with the field at `path`, or its nearest parent that can be, made null or left out: the first change
 *  after which no issue remains at or under it. Undefined when none can. */
function repairAt(schema: z.ZodType, value: unknown, path: Path): { value: unknown; path: Path } | undefined {
  for (let length = path.length; length >= 1; length--) {
    const field = path.slice(0, length);
    for (const change of ['null', 'absent'] as const) {
      const candidate = structuredClone(value);
      const parent = at(candidate, field.slice(0, -1));
      const key = field.at(-1)!;
      if (parent === null || typeof parent !== 'object') continue;
      if (change === 'absent' && (Array.isArray(parent) || !(key in parent))) continue;
      if (change === 'null') (parent as Record<PropertyKey, unknown>)[key] = null;
      else delete (parent as Record<PropertyKey, unknown>)[key];
      const result = z.safeEncode(schema, candidate);
      if (result.success || !result.error.issues.some((issue) => startsWith(issue.path, field))) return { value: candidate, path: field };
    }
  }
  return undefined;
}

function at(value: unknown, path: Path): unknown {
  let node = value;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

const startsWith = (path: Path, prefix: Path): boolean => prefix.every((key, i) => path[i] === key);

const describe = (issues: z.core.$ZodIssue[]): string => issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');

/** A list's item, as `present` makes it, fitted to its schema; undefined (the item is left out, logged as an error naming
 *  `row`) when it cannot be presented or fitted. A repaired item is logged as a warning: the row behind it wants fixing. */
export function fitListItem<T>(schema: z.ZodType<T>, present: () => unknown, log: FastifyBaseLogger, row: Record<string, string>): T | undefined {
  let value: unknown;
  try {
    value = present();
  } catch (err) {
    log.error({ ...row, err }, 'a stored row cannot be presented: left out of the list');
    return undefined;
  }
  const fitted = fitToSchema(schema, value);
  if (!fitted.ok) {
    log.error({ ...row, issues: describe(fitted.issues) }, 'a stored row does not fit the response schema: left out of the list');
    return undefined;
  }
  if (fitted.repaired.length > 0) log.warn({ ...row, repaired: fitted.repaired }, 'a stored row did not fit the response schema: fields served as null or left out');
  return fitted.value;
}

/** A row that cannot be served as its schema says: its own GET answers 500 (with the request id), the row named in the log. */
export class UnservableRow extends Error {
  constructor(row: Record<string, string>, issues: z.core.$ZodIssue[]) {
    super(`${Object.entries(row).map(([k, v]) => `${k} ${v}`).join(', ')} does not fit the response schema: ${describe(issues)}`);
    this.name = 'UnservableRow';
  }
}

/** A single response fitted to its schema; throws UnservableRow (a 500) when it cannot be. */
export function fitResponse<T>(schema: z.ZodType<T>, value: unknown, log: FastifyBaseLogger, row: Record<string, string>): T {
  const fitted = fitToSchema(schema, value);
  if (!fitted.ok) throw new UnservableRow(row, fitted.issues);
  if (fitted.repaired.length > 0) log.warn({ ...row, repaired: fitted.repaired }, 'a stored row did not fit the response schema: fields served as null or left out');
  return fitted.value;
}
