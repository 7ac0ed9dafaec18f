// In-memory repositories behind the hub stand-in: files per revision, commit shas, git/LFS object ids and
// tree listings, shaped like the hub's answers so @huggingface/hub and our own code read them unchanged.
import { createHash } from 'node:crypto';

export type RepoType = 'dataset' | 'model';
/** One revision's files: repo path → content. */
export type RepoFiles = Record<string, Buffer | Uint8Array | string>;
/** A repo's revisions: branch name (`main`, `refs/convert/parquet`, …) → files. */
export type RepoRevisions = Record<string, RepoFiles>;

export interface StoredFile {
  path: string;
  content: Buffer;
  /** Git blob id, what the hub reports as `oid` and as the ETag of a non-LFS file. */
  oid: string;
  /** Set for files the hub keeps in LFS; `sha256` is then their ETag and CDN key. */
  lfs?: { sha256: string; pointerSize: number };
}

export interface StoredRevision {
  name: string;
  sha: string;
  files: Map<string, StoredFile>;
}

export interface StoredRepo {
  type: RepoType;
  id: string;
  revisions: Map<string, StoredRevision>;
  /** The README's parsed YAML header, as the hub returns it in `cardData` (the stand-in parses no YAML). */
  cardData?: Record<string, unknown>;
  createdAt: string;
}

export interface TreeEntry {
  type: 'file' | 'directory';
  oid: string;
  size: number;
  path: string;
  lfs?: { oid: string; size: number; pointerSize: number };
}

// The hub's default .gitattributes sends these to LFS whatever their size; bigger files always go there.
const LFS_EXTENSIONS = /\.(parquet|arrow|safetensors|bin|gguf|pt|pth|ckpt|onnx|h5|msgpack|zip|gz|tar|zst)$/;
const LFS_MIN_BYTES = 10 * 1024 * 1024;

function sha(algorithm: 'sha1' | 'sha256', ...parts: Array<string | Buffer>): string {
  const hash = createHash(algorithm);
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

/** Whether the hub keeps a file of this path and size in LFS (what its preupload endpoint answers). */
export function isLfsFile(path: string, size: number): boolean {
  return LFS_EXTENSIONS.test(path) || size >= LFS_MIN_BYTES;
}

function storeFile(path: string, raw: Buffer | Uint8Array | string): StoredFile {
  const content = Buffer.isBuffer(raw) ? raw : Buffer.from(raw);
  const file: StoredFile = { path, content, oid: sha('sha1', `blob ${content.length}\0`, content) };
  if (isLfsFile(path, content.length)) {
    const sha256 = sha('sha256', content);
    // Size of the pointer file git would hold: "version …\noid sha256:…\nsize …\n".
    file.lfs = { sha256, pointerSize: 106 + String(content.length).length };
  }
  return file;
}

/** One commit received through the commit endpoint. */
export interface CommitRecord {
  type: RepoType;
  id: string;
  revision: string;
  sha: string;
  summary: string;
  /** Paths the commit added, replaced or deleted. */
  paths: string[];
}

export class HubStore {
  private readonly repos = new Map<string, StoredRepo>();
  /** LFS objects by sha256, served by the stand-in's CDN route the way the hub redirects to its CDN. */
  readonly lfsObjects = new Map<string, Buffer>();
  /** Commits received, in order. */
  readonly commits: CommitRecord[] = [];

  static key(type: RepoType, id: string): string {
    return `${type}s/${id}`;
  }

  /** Creates or replaces a repo with the given revisions. */
  setRepo(type: RepoType, id: string, revisions: RepoRevisions, cardData?: Record<string, unknown>): StoredRepo {
    const repo: StoredRepo = { type, id, revisions: new Map(), createdAt: new Date().toISOString() };
    if (cardData) repo.cardData = cardData;
    this.repos.set(HubStore.key(type, id), repo);
    for (const [name, files] of Object.entries(revisions)) this.setRevision(repo, name, files);
    return repo;
  }

  /** Replaces one revision's files (a later commit endpoint builds on this); returns its new sha. */
  setRevision(repo: StoredRepo, name: string, files: RepoFiles): StoredRevision {
    const stored = new Map(Object.entries(files).map(([path, raw]) => [path, storeFile(path, raw)]));
    for (const file of stored.values()) if (file.lfs) this.lfsObjects.set(file.lfs.sha256, file.content);
    const manifest = [...stored.values()].map((f) => `${f.path}\0${f.oid}\n`).sort().join('');
    const revision = { name, sha: sha('sha1', repo.id, '\0', name, '\0', manifest), files: stored };
    repo.revisions.set(name, revision);
    return revision;
  }

  repo(type: RepoType, id: string): StoredRepo | undefined {
    return this.repos.get(HubStore.key(type, id));
  }

  /** A revision by branch name or commit sha, as the hub accepts both; `HEAD` is the default branch. */
  revision(repo: StoredRepo, ref: string): StoredRevision | undefined {
    const byName = repo.revisions.get(ref === 'HEAD' ? 'main' : ref);
    if (byName) return byName;
    return [...repo.revisions.values()].find((r) => r.sha === ref);
  }

  /**
   * The hub's tree listing of `dir` ('' for the root): direct children, or everything below with
   * `recursive`. Undefined when `dir` is not a folder of the revision.
   */
  tree(revision: StoredRevision, dir: string, recursive: boolean): TreeEntry[] | undefined {
    const prefix = dir === '' ? '' : `${dir}/`;
    const entries = new Map<string, TreeEntry>();
    for (const file of revision.files.values()) {
      if (!file.path.startsWith(prefix)) continue;
      const parts = file.path.slice(prefix.length).split('/');
      // Every folder between `dir` and the file is an entry of its own (only the first when not recursive).
      const depth = recursive ? parts.length - 1 : Math.min(1, parts.length - 1);
      for (let i = 1; i <= depth; i++) {
        const path = prefix + parts.slice(0, i).join('/');
        entries.set(path, { type: 'directory', oid: sha('sha1', 'tree', path), size: 0, path });
      }
      if (recursive || parts.length === 1) entries.set(file.path, treeEntry(file));
    }
    if (entries.size === 0 && dir !== '') return undefined;
    return [...entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}

export function treeEntry(file: StoredFile): TreeEntry {
  const entry: TreeEntry = { type: 'file', oid: file.oid, size: file.content.length, path: file.path };
  if (file.lfs) entry.lfs = { oid: file.lfs.sha256, size: file.content.length, pointerSize: file.lfs.pointerSize };
  return entry;
}
