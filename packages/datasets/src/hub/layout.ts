// Works out a hub dataset's subsets and splits from its file list, following the conventions of the hub's
// dataset viewer and the `datasets` library: README `configs` when present, else file and folder names.
import type { CardConfig, HubFileEntry } from './hub-client.ts';

export type HubFileFormat = 'parquet' | 'jsonl' | 'csv' | 'tsv';

export interface DataFile extends HubFileEntry {
  format: HubFileFormat;
}

export interface DatasetLayout {
  /** subset → split → files (sorted by path, so shards keep their order). */
  subsets: Map<string, Map<string, DataFile[]>>;
  /** The subset README `configs` mark as default, loaded when the request says `default`. */
  defaultSubset?: string;
}

const FORMATS: Record<string, HubFileFormat> = { parquet: 'parquet', jsonl: 'jsonl', csv: 'csv', tsv: 'tsv' };

// push_to_hub shard names: `train-00000-of-00003.parquet`; the split is whatever precedes the numbers.
const SHARD_NAME = /^(\w+(?:\.\w+)*)-\d+-of-\d+\.\w+$/;

// Names that mean a split when they appear in a file or folder name (the `datasets` library's list).
const SPLIT_KEYWORDS: Record<string, string> = {
  train: 'train',
  training: 'train',
  validation: 'validation',
  valid: 'validation',
  dev: 'validation',
  val: 'validation',
  test: 'test',
  testing: 'test',
  eval: 'test',
  evaluation: 'test',
};
const NAME_SEPARATORS = /[-._ 0-9]+/;
const SPLIT_ORDER = ['train', 'validation', 'test'];

/** The readable data files: known formats, outside hidden (`.x`) and special (`__x`) folders. */
export function dataFiles(files: HubFileEntry[]): DataFile[] {
  return files.flatMap((file) => {
    const parts = file.path.split('/');
    if (parts.some((p) => p.startsWith('.') || p.startsWith('__'))) return [];
    const format = FORMATS[file.path.slice(file.path.lastIndexOf('.') + 1).toLowerCase()];
    return format ? [{ ...file, format }] : [];
  });
}

/** Layout from README `configs`: each config's `data_files` globs (relative to `data_dir`) per split. */
export function layoutFromConfigs(configs: CardConfig[], files: DataFile[]): DatasetLayout {
  const layout: DatasetLayout = { subsets: new Map() };
  for (const config of configs) {
    const dir = config.data_dir?.replace(/\/+$/, '');
    const inDir = dir ? files.filter((f) => f.path.startsWith(`${dir}/`)) : files;
    const splits = new Map<string, DataFile[]>();
    if (config.data_files === undefined) {
      for (const [split, splitFiles] of inferSplits(inDir, dir ? dir.split('/').length : 0)) splits.set(split, splitFiles);
    } else {
      for (const [split, patterns] of Object.entries(splitPatterns(config.data_files))) {
        const matchers = patterns.map((p) => globToRegExp(dir ? `${dir}/${p}` : p));
        const matched = inDir.filter((f) => matchers.some((m) => m.test(f.path)));
        if (matched.length > 0) splits.set(split, matched);
      }
    }
    if (splits.size > 0) layout.subsets.set(config.config_name, sortSplits(splits));
    if (config.default) layout.defaultSubset = config.config_name;
  }
  return layout;
}

/**
 * Layout from names alone. The subset is the first folder other than `data` and the split's own folder
 * (`default` when none); the split comes from, in order: a shard name (`fr/train-00000-of-00002.parquet`),
 * the `{subset}/{split}/file` layout of `refs/convert/parquet` (`fr/partial-train/0000.parquet` is
 * `train`), a split keyword in the file name (`train.jsonl`, `fr/dev.csv`) or in a folder name. Files
 * with none go to `train`, but only in a subset where no file names a split.
 */
export function inferLayout(files: DataFile[]): DatasetLayout {
  const bySubset = new Map<string, DataFile[]>();
  const splitOfFile = new Map<DataFile, string | undefined>();
  for (const file of files) {
    const dirs = file.path.split('/');
    const name = dirs.pop() ?? '';
    const { split, dirIndex } = splitFromNames(dirs, name);
    const subset = dirs.find((d, i) => i !== dirIndex && d !== 'data') ?? 'default';
    splitOfFile.set(file, split);
    bySubset.set(subset, [...(bySubset.get(subset) ?? []), file]);
  }
  const layout: DatasetLayout = { subsets: new Map() };
  for (const [subset, subsetFiles] of bySubset) {
    const chosen = preferParquet(subsetFiles);
    const named = chosen.some((f) => splitOfFile.get(f) !== undefined);
    const splits = new Map<string, DataFile[]>();
    for (const file of chosen) {
      const split = splitOfFile.get(file) ?? (named ? undefined : 'train');
      if (split) splits.set(split, [...(splits.get(split) ?? []), file]);
    }
    layout.subsets.set(subset, sortSplits(splits));
  }
  return layout;
}

/** The subset to load for the requested name: itself, the marked default, or the only one there is. */
export function pickSubset(layout: DatasetLayout, requested: string): string | undefined {
  if (layout.subsets.has(requested)) return requested;
  if (requested !== 'default') return undefined;
  if (layout.defaultSubset && layout.subsets.has(layout.defaultSubset)) return layout.defaultSubset;
  return layout.subsets.size === 1 ? [...layout.subsets.keys()][0] : undefined;
}

/** Splits of files inside one config's folder (`depth` folders deep), named as in `inferLayout`. */
function inferSplits(files: DataFile[], depth: number): Map<string, DataFile[]> {
  const relative = files.map((f) => ({ ...f, path: f.path.split('/').slice(depth).join('/') }));
  const inner = inferLayout(relative);
  const originals = new Map(relative.map((r, i) => [r.path, files[i] as DataFile]));
  const splits = new Map<string, DataFile[]>();
  for (const subsetSplits of inner.subsets.values()) {
    for (const [split, splitFiles] of subsetSplits) {
      const mapped = splitFiles.map((f) => originals.get(f.path) as DataFile);
      splits.set(split, [...(splits.get(split) ?? []), ...mapped]);
    }
  }
  return splits;
}

function splitFromNames(dirs: string[], name: string): { split?: string; dirIndex?: number } {
  const shard = SHARD_NAME.exec(name);
  if (shard?.[1]) return { split: shard[1] };
  const [subsetDir, splitDir] = dirs;
  if (dirs.length === 2 && subsetDir !== 'data' && splitDir) return { split: splitDir.replace(/^partial-/, ''), dirIndex: 1 };
  const fromName = keywordIn(name.replace(/\.\w+$/, ''));
  if (fromName) return { split: fromName };
  for (let i = dirs.length - 1; i >= 0; i--) {
    const fromDir = keywordIn(dirs[i] ?? '');
    if (fromDir) return { split: fromDir, dirIndex: i };
  }
  return {};
}

function keywordIn(name: string): string | undefined {
  for (const word of name.toLowerCase().split(NAME_SEPARATORS)) {
    const split = SPLIT_KEYWORDS[word];
    if (split) return split;
  }
  return undefined;
}

/** Parquet files when a subset has any, since the other formats are then usually exports of the same rows. */
function preferParquet(files: DataFile[]): DataFile[] {
  const parquet = files.filter((f) => f.format === 'parquet');
  return parquet.length > 0 ? parquet : files;
}

function splitPatterns(dataFiles: NonNullable<CardConfig['data_files']>): Record<string, string[]> {
  if (typeof dataFiles === 'string') return { train: [dataFiles] };
  const entries: Record<string, string[]> = {};
  for (const item of dataFiles) {
    if (typeof item === 'string') entries.train = [...(entries.train ?? []), item];
    else entries[item.split] = [...(entries[item.split] ?? []), ...(Array.isArray(item.path) ? item.path : [item.path])];
  }
  return entries;
}

/** fsspec-style glob: `*` within a folder, `**` across folders, `?`, `[abc]` / `[!abc]`. */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*' && glob[i + 1] === '*') {
      const slash = glob[i + 2] === '/';
      source += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') {
      source += '[^/]*';
    } else if (c === '?') {
      source += '[^/]';
    } else if (c === '[' && glob.indexOf(']', i + 2) > i) {
      const close = glob.indexOf(']', i + 2);
      source += `[${glob.slice(i + 1, close).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
      i = close;
    } else {
      source += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}

function sortSplits(splits: Map<string, DataFile[]>): Map<string, DataFile[]> {
  const rank = (s: string) => (SPLIT_ORDER.includes(s) ? SPLIT_ORDER.indexOf(s) : SPLIT_ORDER.length);
  const names = [...splits.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return new Map(names.map((n) => [n, [...(splits.get(n) ?? [])].sort((a, b) => (a.path < b.path ? -1 : 1))]));
}
