// Whitespace normalisation, including the fast path that skips clean text.
import { describe, expect, it } from 'vitest';
import { normalizeWhitespace } from '../src/processing/normalize.ts';

describe('normalizeWhitespace', () => {
  it.each([
    ['already clean', 'already clean'],
    ['  padded  ', 'padded'],
    ['a \t b', 'a b'],
    ['line one  \n   line two', 'line one\nline two'],
    ['a\n\n\nb', 'a\nb'],
    ['a\r\nb\rc', 'a\nb\nc'],
    ['non\u00a0breaking', 'non breaking'],
    ['\n', ''],
    ['one\ntwo', 'one\ntwo'],
    ['tail\n', 'tail'],
  ])('%j → %j', (input, expected) => {
    expect(normalizeWhitespace(input)).toBe(expected);
    // Idempotent: normalising twice changes nothing.
    expect(normalizeWhitespace(expected)).toBe(expected);
  });
});
