// Parses the fixture lines the Python suite also parses (core/tests/fixtures), so both sides agree.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCoreEventLine } from '../src/events.ts';

const fixtures = fileURLToPath(new URL('../../../core/tests/fixtures/', import.meta.url));
const lines = (name: string) =>
  readFileSync(fixtures + name, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');

describe('core event protocol', () => {
  it('parses every valid fixture line and covers every event kind', () => {
    const kinds = new Set(lines('events.jsonl').map((line) => parseCoreEventLine(line).event));
    expect([...kinds].sort()).toEqual(['artifact', 'checkpoint', 'done', 'error', 'generated', 'graded', 'log', 'metrics', 'preflight', 'progress', 'ready', 'scored', 'tinker_result', 'tracker']);
  });

  it('rejects every invalid fixture line', () => {
    const invalid = lines('events.invalid.jsonl');
    expect(invalid.length).toBeGreaterThan(0);
    for (const line of invalid) expect(() => parseCoreEventLine(line), line).toThrow();
  });
});
