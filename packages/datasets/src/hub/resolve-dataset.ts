// Resolves a hub dataset (`owner/name` + subset) into its splits, each a list of data files readable by
// range requests. Main's files come first; a dataset whose main has none (a loading script, unsupported
// formats) or lacks the subset falls back to the hub's auto-converted `refs/convert/parquet` branch.
import { invalidField } from '@ftp/platform';
import { HUB_REPO_ID_FORBIDDEN, HUB_REPO_ID_PATTERN } from '@ftp/schema';
import type { ByteSource } from '../readers/byte-source.ts';
import { fetchRevisionInfo, hubDatasetNotFound, listRepoFiles, type CardConfig, type HubConnection } from './hub-client.ts';
import { dataFiles, inferLayout, layoutFromConfigs, pickSubset, type DatasetLayout, type HubFileFormat } from './layout.ts';
import { hubFileUrl, hubRangeSource } from './range-source.ts';

export type { HubFileFormat } from './layout.ts';

export interface ResolveHubDatasetOptions {
  /** HF_ENDPOINT, e.g. https://huggingface.co. */
  endpoint: string;
  /** HF token, for private and gated datasets. */
  token?: string;
  /** `owner/name`. */
  repoId: string;
  /** Config name; default `default`. */
  subset?: string;
  /** Branch, tag or commit; default `main`. */
  revision?: string;
  /** Per-request limit (HUB_TIMEOUT_MS); default 15 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface HubDataFile {
  /** Path in the repo at `revision`. */
  path: string;
  format: HubFileFormat;
  size: number;
  source: ByteSource;
}

export interface HubDatasetSplit {
  name: string;
  files: HubDataFile[];
}

export interface HubDataset {
  repoId: string;
  /** The subset loaded: the one asked for, or the README's default / the only one for `default`. */
  subset: string;
  /** Every subset found where the files came from (main, or the converted branch). */
  subsets: string[];
  /** Commit sha every file is read at. */
  revision: string;
  /** `train`, `validation`, `test` first, then the others by name. */
  splits: HubDatasetSplit[];
}

export const PARQUET_BRANCH = 'refs/convert/parquet';

// Hub repo names: letters, digits, '-', '_', '.', at most 96 characters, an optional owner before a '/'; the same
// patterns the OpenAPI document states for a hub dataset_id.
const REPO_ID = new RegExp(HUB_REPO_ID_PATTERN);
const REPO_ID_FORBIDDEN = new RegExp(HUB_REPO_ID_FORBIDDEN);

export async function resolveHubDataset(options: ResolveHubDatasetOptions): Promise<HubDataset> {
  const { repoId, revision } = options;
  const requested = options.subset ?? 'default';
  if (!REPO_ID.test(repoId) || REPO_ID_FORBIDDEN.test(repoId)) {
    throw invalidField(['body', 'dataset_id'], `${JSON.stringify(repoId)} is not a hub dataset id; expected owner/name`);
  }
  const conn: HubConnection = {
    endpoint: options.endpoint.replace(/\/+$/, ''),
    timeoutMs: options.timeoutMs ?? 15_000,
    fetch: options.fetch ?? globalThis.fetch,
    ...(options.token ? { token: options.token } : {}),
  };

  const main = await fetchRevisionInfo(conn, repoId, revision ?? 'main');
  if (!main) throw hubDatasetNotFound(repoId, revision);
  const fromMain = await loadLayout(conn, repoId, main.sha, main.configs);
  const tried = [fromMain];
  // An explicit revision is taken as the user's choice of files; only main falls back to the converted branch.
  if (!pickSubset(fromMain.layout, requested) && revision === undefined) {
    const converted = await fetchRevisionInfo(conn, repoId, PARQUET_BRANCH);
    // Its `{subset}/{split}/NNNN.parquet` names say it all; main's README configs describe main's paths.
    if (converted) tried.push(await loadLayout(conn, repoId, converted.sha, undefined));
  }

  for (const { sha, layout } of tried) {
    const subset = pickSubset(layout, requested);
    const splits = subset === undefined ? undefined : layout.subsets.get(subset);
    if (subset === undefined || !splits) continue;
    return {
      repoId,
      subset,
      subsets: [...layout.subsets.keys()].sort(),
      revision: sha,
      splits: [...splits].map(([name, files]) => ({
        name,
        files: files.map((file) => ({
          path: file.path,
          format: file.format,
          size: file.size,
          source: hubRangeSource(conn, { ...file, url: hubFileUrl(conn.endpoint, repoId, sha, file.path) }),
        })),
      })),
    };
  }

  const known = [...new Set(tried.flatMap(({ layout }) => [...layout.subsets.keys()]))].sort();
  if (known.length === 0) {
    throw invalidField(
      ['body', 'dataset_id'],
      `hub dataset ${JSON.stringify(repoId)} has no Parquet, JSONL, CSV or TSV data files, and no auto-converted ` +
        `Parquet branch (${PARQUET_BRANCH})`,
    );
  }
  throw invalidField(
    ['body', 'dataset_subset'],
    `subset ${JSON.stringify(requested)} not found in hub dataset ${JSON.stringify(repoId)}; ` +
      `its subsets are: ${known.join(', ')}`,
  );
}

async function loadLayout(
  conn: HubConnection,
  repoId: string,
  sha: string,
  configs: CardConfig[] | undefined,
): Promise<{ sha: string; layout: DatasetLayout }> {
  const files = dataFiles(await listRepoFiles(conn, repoId, sha));
  return { sha, layout: configs ? layoutFromConfigs(configs, files) : inferLayout(files) };
}
