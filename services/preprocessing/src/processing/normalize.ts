// Whitespace normalisation (decisions.md): trim, collapse runs of spaces/tabs to one space, keep line
// breaks but never more than one in a row, and drop spaces around them.
const SPACES = /[ \t\f\v\u00a0]+/g;
const SPACE_AROUND_NEWLINE = / ?\n ?/g;
const NEWLINE_RUNS = /\n{2,}/g;

export function normalizeWhitespace(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(SPACES, ' ')
    .replace(SPACE_AROUND_NEWLINE, '\n')
    .replace(NEWLINE_RUNS, '\n')
    .trim();
}
