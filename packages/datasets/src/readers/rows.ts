// What every reader yields: rows as plain objects, handed over in batches so no per-row await sits in the hot path.

export type DatasetRow = Record<string, unknown>;

/** Sets a row field; a column called "__proto__" must become a field, not the object's prototype. */
export function setField(row: DatasetRow, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(row, key, { value, enumerable: true, writable: true, configurable: true });
  else row[key] = value;
}

/** Rows handed over at a time. Small on purpose: a batch lives across awaits, and big batches get promoted
 *  to V8's old generation, which grew the server's peak RSS by ~100 MB on a 200k-row file (4096 → 512). */
export const BATCH_ROWS = 512;

/** One row larger than this is refused: usually an unclosed quote or bracket, and always a memory risk. */
export const MAX_ROW_BYTES = 32 * 1024 * 1024;

// A high surrogate not followed by a low one, or a low one not preceded by a high one (String#isWellFormed is ES2024).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

interface Visit {
  value: unknown;
  key?: string;
  inArray?: boolean;
  parent?: Visit;
}

function pathOf(visit: Visit): string {
  let path = '';
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) {
    path = at.inArray ? `[${at.key}]${path}` : `${at.parent?.key !== undefined ? '.' : ''}${at.key}${path}`;
  }
  return path || 'the top level';
}

/** Where a parsed JSON value holds a string with a lone UTF-16 surrogate (`"\\ud800"` is valid JSON, but no text
 *  encoder downstream, the tokenizer included, can encode it), as a sentence; undefined when it holds none. A walk
 *  with its own stack (a line may nest deeper than the call stack goes) that spells a path only when it finds one. */
export function lonelySurrogateAt(value: unknown): string | undefined {
  const problem = (where: string) =>
    `${where} holds a lone UTF-16 surrogate (an unpaired \\ud800–\\udfff escape), which is no character; remove or fix it`;
  const stack: Visit[] = [{ value }];
  for (let visit = stack.pop(); visit; visit = stack.pop()) {
    if (typeof visit.value === 'string') {
      if (LONE_SURROGATE.test(visit.value)) return problem(`the string at ${pathOf(visit)}`);
    } else if (visit.value !== null && typeof visit.value === 'object') {
      const inArray = Array.isArray(visit.value);
      for (const [key, child] of Object.entries(visit.value)) {
        if (LONE_SURROGATE.test(key)) return problem(`a key at ${pathOf(visit)}`);
        if (child !== null && (typeof child === 'string' || typeof child === 'object')) stack.push({ value: child, key, inArray, parent: visit });
      }
    }
  }
  return undefined;
}
