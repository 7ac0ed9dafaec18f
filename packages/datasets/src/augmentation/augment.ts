// Augmentation of the train split (decisions.md, "Preprocessing"; never the test split): augmentation_factor f grows
// train to about f × its rows with new rows, the originals kept once, shared equally between the enabled methods other
// than synthesis; synthesis adds its own synthesis_ratio × rows after the last train row. A new row is a changed copy
// of a source row, made before the record is built, so templates, the system prompt and images stay as they are; its
// record says how it was made in `metadata`. Seeded per source row: the same request gives the same rows (the LLM
// methods ask the service for the same seed too; whether it honours it is the service's business).
import type { AugmentationConfig, AugmentationCounts } from '@ftp/schema';
import { seededRandom, SPLIT_SEED } from '../processing/splits.ts';
import { EDA_OPERATIONS, edaText } from './eda.ts';
import { backTranslate, paraphrase, synthesizeRow } from './llm-methods.ts';
import type { LlmClient } from './llm.ts';
import { WordNet } from './wordnet.ts';

/** EDA's alpha: the share of a text's words each operation changes (Wei & Zou's recommended 0.1). */
export const EDA_ALPHA = 0.1;
/** Rows shown to the synthesiser as examples of the dataset's style, and how many of the first train rows they
 *  are drawn from. */
const SYNTHESIS_EXAMPLES = 3;
const SYNTHESIS_POOL = 64;

/** Per method: rows added, and rows it could not make (no word to change, a bad generation): the API's shape. */
export type AugmentationReport = AugmentationCounts;
export type AugmentationMethod = keyof AugmentationCounts;
/** The methods that ask a language-model service. */
export const LLM_METHODS = ['back_translation', 'paraphrasing', 'synthesis'] as const satisfies readonly AugmentationMethod[];
export type LlmMethod = (typeof LLM_METHODS)[number];
const SWITCHES = {
  eda: 'use_eda',
  back_translation: 'use_back_translation',
  paraphrasing: 'use_paraphrasing',
  synthesis: 'use_synthesis',
} as const satisfies Record<AugmentationMethod, keyof AugmentationConfig>;

/** The methods a request switches on, in a fixed order. */
export function enabledMethods(config: AugmentationConfig | undefined): AugmentationMethod[] {
  if (!config) return [];
  return (Object.keys(SWITCHES) as AugmentationMethod[]).filter((method) => config[SWITCHES[method]] === true);
}

/** The methods a request switches on that ask a language-model service. */
export function llmMethodsOf(config: AugmentationConfig | undefined): LlmMethod[] {
  return enabledMethods(config).filter((m): m is LlmMethod => (LLM_METHODS as readonly string[]).includes(m));
}

/** The switch (augmentation_config field) of a method. */
export const switchOf = (method: AugmentationMethod): keyof AugmentationConfig => SWITCHES[method];

export interface AugmentedRow {
  row: Record<string, unknown>;
  metadata: { augmented: AugmentationMethod; source_index: number };
}

export interface TrainAugmenter {
  /** The new rows made from a train row: `position` counts train rows from 0, `sourceIndex` is the row's index in its
   *  source split (what `metadata.source_index` says). Call in train order; the calls may overlap. */
  variants(row: Record<string, unknown>, position: number, sourceIndex: number): Promise<AugmentedRow[]>;
  /** Rows that follow the whole train split (synthesis), once every train row has been seen. */
  closing(): Promise<AugmentedRow[]>;
  /** New rows made so far, per method. */
  made(): Record<string, number>;
  report(): AugmentationReport;
}

/** How many new rows the row at `position` gets so that `total` spread evenly over `rows` rows: ⌊(p+1)r⌋ − ⌊pr⌋. */
export function shareOf(position: number, total: number, rows: number): number {
  if (rows <= 0) return 0;
  return Math.floor(((position + 1) * total) / rows) - Math.floor((position * total) / rows);
}

/** A seed for variant `k` of source row `sourceIndex`. */
function variantSeed(sourceIndex: number, k: number): number {
  return ((SPLIT_SEED * 0x9e3779b1) ^ (sourceIndex * 0x85ebca6b) ^ (k * 0xc2b2ae35)) >>> 0;
}

/** One method that makes a changed copy of a row, or undefined when it cannot (dropped and counted). */
type MakeRow = (row: Record<string, unknown>, sourceIndex: number, k: number) => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>;

let wordnet: WordNet | undefined;

/** An answer (assistant, chosen, rejected text) of fewer words is kept as it is by EDA: a label, a number, a name or a
 *  short phrase, where changing one word (alpha 0.1 changes at least one) changes the answer itself. bench/augment
 *  measured it: with every answer open to EDA, a routing task's one-word labels became synonyms ("billing" →
 *  "placard") in half of the new rows, and EDA cost 9.7 points of exact match. Wei & Zou change the input only. */
export const EDA_MIN_ANSWER_WORDS = 5;

/** EDA over `columns` (RecordBuilder.augmentableColumns), answer columns (those not in `userColumns`) only when they
 *  have EDA_MIN_ANSWER_WORDS words or more. Variant k of source row i starts with operation (i + k) mod 4 and tries
 *  the others when that one changes nothing. */
function edaRow(columns: string[], userColumns: string[]): MakeRow {
  wordnet ??= WordNet.fromPackage();
  const words = wordnet;
  const open = (column: string, value: string) => userColumns.includes(column) || value.trim().split(/\s+/).length >= EDA_MIN_ANSWER_WORDS;
  return (row, sourceIndex, k) => {
    const random = seededRandom(variantSeed(sourceIndex, k));
    for (let attempt = 0; attempt < EDA_OPERATIONS.length; attempt += 1) {
      const operation = EDA_OPERATIONS[(sourceIndex + k + attempt) % EDA_OPERATIONS.length]!;
      const copy = { ...row };
      let differs = false;
      for (const column of columns) {
        const value = row[column];
        if (typeof value !== 'string' || !open(column, value)) continue;
        copy[column] = edaText(value, operation, EDA_ALPHA, random, words);
        differs ||= copy[column] !== value;
      }
      if (differs) return copy;
    }
    return undefined;
  };
}

/** A language-model rewrite of every user column (RecordBuilder.userColumns); the answer columns are kept. */
function rewriteRow(columns: string[], rewrite: (text: string, seed: number) => Promise<string | undefined>): MakeRow {
  return async (row, sourceIndex, k) => {
    const texts = columns.filter((column) => typeof row[column] === 'string' && (row[column] as string).trim() !== '');
    if (texts.length === 0) return undefined;
    const copy = { ...row };
    for (const column of texts) {
      const rewritten = await rewrite(row[column] as string, variantSeed(sourceIndex, k));
      if (rewritten === undefined) return undefined;
      copy[column] = rewritten;
    }
    return copy;
  };
}

export interface AugmenterOptions {
  config: AugmentationConfig;
  /** RecordBuilder.augmentableColumns and .userColumns. */
  columns: { augmentable: string[]; user: string[] };
  trainRows: number;
  /** Needed when an LLM method is on. */
  llm?: LlmClient | undefined;
}

/** The augmenter a request asks for, or undefined when it asks for none. */
export function trainAugmenter(options: AugmenterOptions): TrainAugmenter | undefined {
  const { config, columns, trainRows, llm } = options;
  const methods = enabledMethods(config);
  if (methods.length === 0) return undefined;
  const needLlm = (): LlmClient => {
    if (!llm) throw new Error('an LLM augmentation method needs a language-model client');
    return llm;
  };
  const makers: Partial<Record<AugmentationMethod, MakeRow>> = {};
  for (const method of methods) {
    if (method === 'eda') makers.eda = edaRow(columns.augmentable, columns.user);
    if (method === 'paraphrasing') makers.paraphrasing = rewriteRow(columns.user, (text, seed) => paraphrase(needLlm(), text, seed));
    if (method === 'back_translation') makers.back_translation = rewriteRow(columns.user, (text, seed) => backTranslate(needLlm(), text, seed));
  }
  const rowMethods = (Object.keys(makers) as AugmentationMethod[]).map((method, i, all) => ({
    method,
    make: makers[method]!,
    // The new rows f asks for, shared equally between the row methods.
    total: shareOf(i, Math.round((config.augmentation_factor - 1) * trainRows), all.length),
  }));
  const counts = Object.fromEntries(methods.map((m) => [m, { added: 0, dropped: 0 }])) as Record<AugmentationMethod, { added: number; dropped: number }>;
  const pool: Array<{ row: Record<string, unknown>; sourceIndex: number }> = [];

  const tally = (method: AugmentationMethod, row: Record<string, unknown> | undefined, sourceIndex: number): AugmentedRow[] => {
    if (!row) {
      counts[method].dropped += 1;
      return [];
    }
    counts[method].added += 1;
    return [{ row, metadata: { augmented: method, source_index: sourceIndex } }];
  };

  return {
    async variants(row, position, sourceIndex) {
      if (pool.length < SYNTHESIS_POOL) pool.push({ row, sourceIndex });
      const pending: Array<Promise<AugmentedRow[]>> = [];
      for (const { method, make, total } of rowMethods) {
        for (let k = 0; k < shareOf(position, total, trainRows); k += 1) {
          pending.push(Promise.resolve(make(row, sourceIndex, k)).then((made) => tally(method, made, sourceIndex)));
        }
      }
      return (await Promise.all(pending)).flat();
    },
    async closing() {
      if (!methods.includes('synthesis') || pool.length === 0) return [];
      const client = needLlm();
      const wanted = Math.round((config.synthesis_ratio ?? 0) * trainRows);
      const made = await Promise.all(
        Array.from({ length: wanted }, async (_, j) => {
          // Examples: a seeded draw from the first train rows; the record names the first of them as its source.
          const random = seededRandom(variantSeed(j, 0x5e));
          const examples = Array.from({ length: Math.min(SYNTHESIS_EXAMPLES, pool.length) }, () => pool[Math.floor(random() * pool.length)]!);
          const first = examples[0]!;
          const strings = examples.map((e) => Object.fromEntries(columns.augmentable.map((c) => [c, String(e.row[c] ?? '')])));
          const synthesized = await synthesizeRow(client, { columns: columns.augmentable, examples: strings, instruction: config.custom_prompt, seed: variantSeed(j, 0x5e) });
          // Columns the synthesiser does not write (an image, the system prompt's) come from the first example.
          return tally('synthesis', synthesized ? { ...first.row, ...synthesized } : undefined, first.sourceIndex);
        }),
      );
      return made.flat();
    },
    made: () => Object.fromEntries(methods.map((m) => [m, counts[m].added])),
    report: () => Object.fromEntries(methods.map((m) => [m, { ...counts[m] }])) as AugmentationReport,
  };
}
