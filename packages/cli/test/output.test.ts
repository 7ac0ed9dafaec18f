// How ftune writes counts: a noun agrees with its number (#39: `ftune datasets process` printed "test (1 rows)").
import { describe, expect, it } from 'vitest';
import { plural } from '../src/output.ts';

describe('plural', () => {
  it('says 1 row, 0 rows, 2 rows and 1,204 rows', () => {
    expect([1, 0, 2, 1204].map((n) => plural(n, 'row'))).toEqual(['1 row', '0 rows', '2 rows', '1,204 rows']);
  });
});
