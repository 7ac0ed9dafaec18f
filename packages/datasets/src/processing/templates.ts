// Template strings of field mappings: `{column}` inserts a column's value; `{{` and `}}` are literal
// braces. Parsed once per request into pieces, so rendering a row is a join, not a regex per row.

export type TemplatePiece = { text: string } | { column: string };

export class TemplateSyntaxError extends Error {}

export function parseTemplate(template: string): TemplatePiece[] {
  const pieces: TemplatePiece[] = [];
  let text = '';
  for (let i = 0; i < template.length; i++) {
    const ch = template[i];
    if (ch === '{') {
      if (template[i + 1] === '{') {
        text += '{';
        i++;
        continue;
      }
      const close = template.indexOf('}', i + 1);
      const nextOpen = template.indexOf('{', i + 1);
      if (close === -1 || (nextOpen !== -1 && nextOpen < close)) {
        throw new TemplateSyntaxError(
          `unbalanced "{" at position ${i}; close it with "}" or write "{{" for a literal brace`,
        );
      }
      const column = template.slice(i + 1, close).trim();
      if (column === '') throw new TemplateSyntaxError(`empty column reference "{}" at position ${i}`);
      if (text) pieces.push({ text });
      text = '';
      pieces.push({ column });
      i = close;
    } else if (ch === '}') {
      if (template[i + 1] === '}') {
        text += '}';
        i++;
        continue;
      }
      throw new TemplateSyntaxError(`unbalanced "}" at position ${i}; write "}}" for a literal brace`);
    } else {
      text += ch;
    }
  }
  if (text) pieces.push({ text });
  return pieces;
}

export function templateColumns(pieces: TemplatePiece[]): string[] {
  return pieces.flatMap((p) => ('column' in p ? [p.column] : []));
}

/** Text of one cell: strings as they are, null/undefined as empty, anything else as JSON. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

export function renderTemplate(pieces: TemplatePiece[], row: Record<string, unknown>): string {
  let out = '';
  for (const piece of pieces) out += 'text' in piece ? piece.text : cellText(row[piece.column]);
  return out;
}
