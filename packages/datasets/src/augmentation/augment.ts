// Augmentation of the train split (decisions.md, "Preprocessing"; never the test split): augmentation_factor f grows
// train to about f × its rows with new rows, the originals kept once, shared equally between the enabled methods other
// than synthesis. A new row is a changed copy of a source row, made before the record is built, so templates, the
// system prompt and images stay as they are; its record says how it was made in `metadata`. Seeded per source row:
// the same request gives the same rows.
import type { AugmentationCounts } from '@ftp/schema';
import { seededRandom, SPLIT_SEED } from '../processing/splits.ts';
import { EDA_OPERATIONS, edaText } from './eda.ts';
import { WordNet } from './wordnet.ts';

/** EDA's alpha: the share of a text's words each operation changes (Wei & Zou's recommended 0.1). */
export const EDA_ALPHA = 0.1;

/** Per method: rows added, and rows it could not make (no word to change, a bad generation): the API's shape. */
export type AugmentationReport = AugmentationCounts;
export type AugmentationMethod = keyof AugmentationCounts;

export interface AugmentedRow {
  row: Record<string, unknown>;
  metadata: { augmented: AugmentationMethod; source_index: number };
}

export interface TrainAugmenter {
  /** The new rows made from a train row: `position` counts train rows from 0, `sourceIndex` is the row's index in its
   *  source split (what `metadata.source_index` says). */
  variants(row: Record<string, unknown>, position: number, sourceIndex: number): AugmentedRow[];
  report(): AugmentationReport;
}

/** How many new rows the row at `position` gets so that `total` spread evenly over `rows` rows: ⌊(p+1)r⌋ − ⌊pr⌋. */
export function shareOf(position: number, total: number, rows: number): number {
  if (rows <= 0) return 0;
  return Math.floor(((position + 1) * total) / rows) - Math.floor((position * total) / rows);
}

let wordnet: WordNet | undefined;

/** EDA over `columns` (RecordBuilder.augmentableColumns) for `newRows` new rows spread over `trainRows`. Variant k of
 *  source row i starts with operation (i + k) mod 4 and tries the others when that one changes nothing; a row no
 *  operation changes is dropped and counted. */
export function edaAugmenter(options: { columns: string[]; trainRows: number; newRows: number }): TrainAugmenter {
  const { columns, trainRows, newRows } = options;
  wordnet ??= WordNet.fromPackage();
  const words = wordnet;
  const counts = { added: 0, dropped: 0 };
  return {
    variants(row, position, sourceIndex) {
      const made: AugmentedRow[] = [];
      for (let k = 0; k < shareOf(position, newRows, trainRows); k += 1) {
        const random = seededRandom((SPLIT_SEED * 0x9e3779b1) ^ (sourceIndex * 0x85ebca6b) ^ (k * 0xc2b2ae35));
        let changed: Record<string, unknown> | undefined;
        for (let attempt = 0; attempt < EDA_OPERATIONS.length && !changed; attempt += 1) {
          const operation = EDA_OPERATIONS[(sourceIndex + k + attempt) % EDA_OPERATIONS.length]!;
          const copy = { ...row };
          let differs = false;
          for (const column of columns) {
            const value = row[column];
            if (typeof value !== 'string') continue;
            copy[column] = edaText(value, operation, EDA_ALPHA, random, words);
            differs ||= copy[column] !== value;
          }
          if (differs) changed = copy;
        }
        if (changed) {
          made.push({ row: changed, metadata: { augmented: 'eda', source_index: sourceIndex } });
          counts.added += 1;
        } else counts.dropped += 1;
      }
      return made;
    },
    report: () => ({ eda: { ...counts } }),
  };
}
