// Split planning: decides, before rows stream, which row index of the source split goes to `train`,
// `test` or nowhere. One byte per row keeps a 1 GB file's plan in a few MB. Seeded (42) so a re-run
// assigns the same rows; rows keep their file order inside each split.
import { invalidField } from '@ftp/platform';

export const SPLIT_SEED = 42;
export const DROP = 0;
export const TRAIN = 1;
export const TEST = 2;

export interface SplitPlan {
  /** One entry per source row: DROP, TRAIN or TEST. */
  assignment: Uint8Array;
  trainRows: number;
  testRows: number;
}

/** mulberry32: a small, well-distributed 32-bit PRNG; only reproducibility matters here. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Marks `k` of the rows currently marked `from` as `to`, each subset equally likely: selection sampling
 *  (Knuth's Algorithm S), one sequential pass and no index arrays, so a 3.3M-row plan costs its 3.3 MB. */
function selectRows(assignment: Uint8Array, from: number, to: number, pool: number, k: number, random: () => number): void {
  let seen = 0;
  let chosen = 0;
  for (let i = 0; i < assignment.length && chosen < k; i++) {
    if (assignment[i] !== from) continue;
    if ((pool - seen) * random() < k - chosen) {
      assignment[i] = to;
      chosen += 1;
    }
    seen += 1;
  }
}

export interface PlanOptions {
  numRows: number;
  sampleSize?: number | null;
  /** Fraction (0 < x < 1) or row count (≥ 1) for the test split; undefined for no test split. */
  testSize?: number | null;
  /** loc prefix for errors, e.g. ['body','config','split_config']. */
  loc: string[];
}

export function planSplit({ numRows, sampleSize, testSize, loc }: PlanOptions): SplitPlan {
  const random = seededRandom(SPLIT_SEED);
  const assignment = new Uint8Array(numRows);
  let pool = numRows;
  if (sampleSize !== undefined && sampleSize !== null) {
    if (sampleSize > numRows) {
      throw invalidField([...loc, 'sample_size'], `sample_size ${sampleSize} is larger than the ${numRows} rows of the split; lower it or leave it out`);
    }
    selectRows(assignment, DROP, TRAIN, numRows, sampleSize, random);
    pool = sampleSize;
  } else {
    assignment.fill(TRAIN);
  }

  let testRows = 0;
  if (testSize !== undefined && testSize !== null) {
    testRows = testSize < 1 ? Math.round(pool * testSize) : testSize;
    if (!Number.isInteger(testRows) || testRows <= 0 || testRows >= pool) {
      throw invalidField(
        [...loc, 'test_size'],
        testSize < 1
          ? `test_size ${testSize} of ${pool} rows gives ${testRows} test rows; both splits need at least one row`
          : `test_size ${testSize} must be a whole number of rows below the ${pool} rows available (or a fraction between 0 and 1)`,
      );
    }
    selectRows(assignment, TRAIN, TEST, pool, testRows, random);
  }
  return { assignment, trainRows: pool - testRows, testRows };
}
