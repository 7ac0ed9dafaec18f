// Hub dataset fixtures for the stand-in: `acme/support-chats` in the layouts the real hub uses (push_to_hub
// shards on main, the auto-converted `refs/convert/parquet` branch, plain JSONL/CSV split files, README
// `configs`), with the rows that were written so tests can compare what they read back.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { RepoFiles, RepoRevisions } from './store.ts';

export interface SupportChatRow {
  question: string;
  answer: string;
  context: string;
}

export type SupportChatSubset = 'default' | 'fr';
export type SupportChatSplit = 'train' | 'test';

/**
 * hyparquet-writer's `parquetWriteBuffer`, passed in by the caller: this folder is not a package, so it
 * cannot depend on hyparquet-writer itself (services/preprocessing has it as a devDependency).
 */
export type WriteParquet = (options: {
  columnData: Array<{ name: string; data: string[]; type: 'STRING' }>;
  rowGroupSize?: number;
}) => ArrayBuffer;

export interface HubDatasetFixtures {
  /** Pass to `startHubStandin({ datasets, cardData })`. */
  datasets: Record<string, RepoRevisions>;
  cardData: Record<string, Record<string, unknown>>;
  /** The rows of each subset and split, in file order. */
  rows: Record<SupportChatSubset, Record<SupportChatSplit, SupportChatRow[]>>;
}

export const SUPPORT_CHATS = 'acme/support-chats';
/** Same rows as JSONL and CSV files on main, and Parquet on `refs/convert/parquet` (which main wins). */
export const SUPPORT_CHATS_TEXT = 'acme/support-chats-text';
/** Only a loading script on main; the data is on `refs/convert/parquet`, as for script datasets. */
export const SUPPORT_CHATS_CONVERTED = 'acme/support-chats-converted';
/** Files whose names say nothing; the README's `configs` maps them to the `en` subset's splits. */
export const SUPPORT_CHATS_CARD = 'acme/support-chats-card';

const TOPICS = ['billing', 'login', 'shipping', 'refunds', 'accounts'];

/** Deterministic rows; `context` is long enough that each row group spans a few hundred bytes. */
export function supportChatRows(subset: SupportChatSubset, split: SupportChatSplit): SupportChatRow[] {
  const count = split === 'train' ? 20 : 5;
  const fr = subset === 'fr';
  return Array.from({ length: count }, (_, i) => {
    const topic = TOPICS[i % TOPICS.length] ?? 'general';
    const n = `${split}-${i}`;
    return {
      question: fr ? `Question ${n} : un souci de ${topic} ?` : `Question ${n}: how do I fix my ${topic} issue?`,
      answer: fr ? `Réponse ${n} : voir la page ${topic}.` : `Answer ${n}: open the ${topic} page and follow the steps.`,
      context: `${fr ? 'Contexte' : 'Context'} ${n}: ${`${topic} `.repeat(20)}`.trim(),
    };
  });
}

export function buildHubDatasetFixtures(writeParquet: WriteParquet): HubDatasetFixtures {
  const rows = {
    default: { train: supportChatRows('default', 'train'), test: supportChatRows('default', 'test') },
    fr: { train: supportChatRows('fr', 'train'), test: supportChatRows('fr', 'test') },
  };
  const parquet = (data: SupportChatRow[], rowGroupSize?: number): Buffer => {
    const columnData = (['question', 'answer', 'context'] as const).map((name) => ({
      name,
      data: data.map((row) => row[name]),
      type: 'STRING' as const,
    }));
    return Buffer.from(writeParquet(rowGroupSize ? { columnData, rowGroupSize } : { columnData }));
  };
  const readme = (title: string) => `---\nlicense: mit\n---\n# ${title}\n`;
  const converted: RepoFiles = {
    'default/train/0000.parquet': parquet(rows.default.train),
    'default/test/0000.parquet': parquet(rows.default.test),
    'fr/train/0000.parquet': parquet(rows.fr.train),
    'fr/test/0000.parquet': parquet(rows.fr.test),
  };

  const datasets: Record<string, RepoRevisions> = {
    [SUPPORT_CHATS]: {
      main: {
        '.gitattributes': '*.parquet filter=lfs diff=lfs merge=lfs -text\n',
        'README.md': readme('Support chats'),
        // Two row groups of 10 rows, so a reader can fetch one without the other.
        'data/train-00000-of-00001.parquet': parquet(rows.default.train, 10),
        'data/test-00000-of-00001.parquet': parquet(rows.default.test),
        'fr/train-00000-of-00002.parquet': parquet(rows.fr.train.slice(0, 10)),
        'fr/train-00001-of-00002.parquet': parquet(rows.fr.train.slice(10)),
        'fr/test-00000-of-00001.parquet': parquet(rows.fr.test),
      },
    },
    [SUPPORT_CHATS_TEXT]: {
      main: {
        'README.md': readme('Support chats as text files'),
        'train.jsonl': rows.default.train.map((row) => JSON.stringify(row)).join('\n') + '\n',
        'test.csv': toCsv(rows.default.test),
      },
      'refs/convert/parquet': converted,
    },
    [SUPPORT_CHATS_CONVERTED]: {
      main: { 'README.md': readme('Scripted support chats'), 'support_chats.py': '# a datasets loading script\n' },
      'refs/convert/parquet': converted,
    },
    [SUPPORT_CHATS_CARD]: {
      main: {
        'README.md': readme('Support chats with configs'),
        'english/chats-part1.parquet': parquet(rows.default.train.slice(0, 12)),
        'english/chats-part2.parquet': parquet(rows.default.train.slice(12)),
        'english/holdout.parquet': parquet(rows.default.test),
      },
    },
  };
  const cardData = {
    [SUPPORT_CHATS_CARD]: {
      license: 'mit',
      configs: [
        {
          config_name: 'en',
          default: true,
          data_files: [
            { split: 'train', path: 'english/chats-*.parquet' },
            { split: 'test', path: 'english/holdout.parquet' },
          ],
        },
      ],
    },
  };
  return { datasets, cardData, rows };
}

/** A folder's files as a revision's file map (paths with '/'), to serve a dataset or model from disk. */
export function filesFromFolder(root: string): RepoFiles {
  const files: RepoFiles = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) files[relative(root, full).split(sep).join('/')] = readFileSync(full);
    }
  };
  walk(root);
  return files;
}

function toCsv(rows: SupportChatRow[]): string {
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
  const lines = rows.map((row) => [row.question, row.answer, row.context].map(quote).join(','));
  return ['question,answer,context', ...lines].join('\n') + '\n';
}
