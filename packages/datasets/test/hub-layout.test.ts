// How file names map to subsets and splits, for layouts the fixtures do not cover (pure, no server).
import { describe, expect, it } from 'vitest';
import { dataFiles, globToRegExp, inferLayout, layoutFromConfigs, pickSubset } from '../src/hub/layout.ts';

const layoutOf = (paths: string[]) => {
  const { subsets } = inferLayout(dataFiles(paths.map((path) => ({ path, size: 1 }))));
  return Object.fromEntries(
    [...subsets].map(([subset, splits]) => [subset, Object.fromEntries([...splits].map(([s, f]) => [s, f.map((x) => x.path)]))]),
  );
};

describe('hub dataset layout', () => {
  it('names splits by shard name, converted-branch folder, or keyword, in train/validation/test order', () => {
    expect(
      layoutOf([
        'data/train_sft-00000-of-00001.parquet',
        'data/test_sft-00000-of-00001.parquet',
        'en/partial-train/0000.parquet',
        'en/partial-train/0001.parquet',
        'en/dev.jsonl',
        'de/test.csv',
        'de/train.csv',
        'de/notes.txt',
        '.cache/train.parquet',
      ]),
    ).toEqual({
      default: { test_sft: ['data/test_sft-00000-of-00001.parquet'], train_sft: ['data/train_sft-00000-of-00001.parquet'] },
      en: { train: ['en/partial-train/0000.parquet', 'en/partial-train/0001.parquet'] },
      de: { train: ['de/train.csv'], test: ['de/test.csv'] },
    });
  });

  it('puts files that name no split in train, and prefers Parquet over exports of the same subset', () => {
    expect(layoutOf(['chats.jsonl', 'more/chats.jsonl'])).toEqual({
      default: { train: ['chats.jsonl'] },
      more: { train: ['more/chats.jsonl'] },
    });
    expect(layoutOf(['data/train.parquet', 'data/train.csv', 'data/validation.parquet'])).toEqual({
      default: { train: ['data/train.parquet'], validation: ['data/validation.parquet'] },
    });
  });

  it('reads README configs with data_dir, string patterns and the default flag', () => {
    const files = dataFiles(['a/x/train.parquet', 'a/x/test.parquet', 'b/all.jsonl', 'b/sub/all.jsonl'].map((path) => ({ path, size: 1 })));
    const layout = layoutFromConfigs(
      [
        { config_name: 'first', data_dir: 'a' },
        { config_name: 'second', data_files: 'b/**/*.jsonl', default: true },
      ],
      files,
    );
    expect([...(layout.subsets.get('first')?.keys() ?? [])]).toEqual(['train', 'test']);
    expect(layout.subsets.get('second')?.get('train')?.map((f) => f.path)).toEqual(['b/all.jsonl', 'b/sub/all.jsonl']);
    expect(pickSubset(layout, 'default')).toBe('second');
    expect(pickSubset(layout, 'third')).toBeUndefined();
  });

  it('matches globs the way fsspec does', () => {
    expect(globToRegExp('data/*.parquet').test('data/x.parquet')).toBe(true);
    expect(globToRegExp('data/*.parquet').test('data/sub/x.parquet')).toBe(false);
    expect(globToRegExp('**/train-[0-9]*.parquet').test('train-0.parquet')).toBe(true);
    expect(globToRegExp('data/**').test('data/a/b.csv')).toBe(true);
    expect(globToRegExp('data/file?.csv').test('data/file1.csv')).toBe(true);
  });
});
