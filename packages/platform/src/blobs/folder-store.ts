// Folder driver of the blob store (embedded default): blobs are files under DATA_DIR/blobs.
// Writes go to a temp file first and are renamed into place, so a reader never sees half a blob.
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import {
  assertValidKey,
  assertValidPrefix,
  BlobNotFound,
  InvalidBlobKey,
  type BlobInfo,
  type BlobStore,
  type ByteRange,
} from './blob-store.ts';

const TMP_DIR = '.tmp';

export class FolderBlobStore implements BlobStore {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  async init(): Promise<this> {
    await fs.mkdir(path.join(this.root, TMP_DIR), { recursive: true });
    // Temp files of a process that died mid-write are garbage; nothing refers to them.
    for (const name of await fs.readdir(path.join(this.root, TMP_DIR))) {
      await fs.rm(path.join(this.root, TMP_DIR, name), { force: true });
    }
    return this;
  }

  /** Absolute path of a key; the second check guards against anything the key rules missed. */
  pathOf(key: string): string {
    assertValidKey(key);
    if (key === TMP_DIR || key.startsWith(`${TMP_DIR}/`)) throw new InvalidBlobKey(key, 'reserved prefix');
    const full = path.resolve(this.root, key);
    if (!full.startsWith(this.root + path.sep)) throw new InvalidBlobKey(key, 'resolves outside the store');
    return full;
  }

  async put(key: string, body: Readable | AsyncIterable<Uint8Array | string> | Uint8Array | string): Promise<BlobInfo> {
    const target = this.pathOf(key);
    const tmp = path.join(this.root, TMP_DIR, `${randomBytes(8).toString('hex')}.part`);
    const source = typeof body === 'string' || body instanceof Uint8Array ? Readable.from([body]) : body;
    try {
      await pipeline(source, createWriteStream(tmp, { flags: 'wx' }));
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.rename(tmp, target);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    const { size } = await fs.stat(target);
    return { key, size };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.pathOf(key);
    const handle = await fs.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EISDIR' || err.code === 'ENOTDIR') throw new BlobNotFound(key);
      throw err;
    });
    // Opening a folder read-only succeeds on Linux; a key that names one (a prefix) is not a blob.
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      throw new BlobNotFound(key);
    }
    if (range && range.end <= range.start) {
      await handle.close();
      return Readable.from([]);
    }
    return createReadStream('', { fd: handle, start: range?.start, end: range ? range.end - 1 : undefined });
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    try {
      const st = await fs.stat(this.pathOf(key));
      return st.isFile() ? { key, size: st.size } : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
      throw err;
    }
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    assertValidPrefix(prefix);
    // Walk only the deepest folder the prefix names, then filter by the full prefix.
    const slash = prefix.lastIndexOf('/');
    const baseDir = slash >= 0 ? path.join(this.root, prefix.slice(0, slash)) : this.root;
    const out: BlobInfo[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
        throw err;
      }
      for (const entry of entries) {
        const full = path.join(dir, entry.name);
        const key = path.relative(this.root, full).split(path.sep).join('/');
        if (key === TMP_DIR) continue;
        if (entry.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(full);
        } else if (entry.isFile() && key.startsWith(prefix)) {
          out.push({ key, size: (await fs.stat(full)).size });
        }
      }
    };
    await walk(baseDir);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<boolean> {
    const file = this.pathOf(key);
    try {
      await fs.unlink(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    await this.pruneEmptyDirs(path.dirname(file));
    return true;
  }

  async deletePrefix(prefix: string): Promise<string[]> {
    const blobs = await this.list(prefix);
    for (const blob of blobs) await this.delete(blob.key);
    return blobs.map((b) => b.key);
  }

  uri(key: string): string {
    return pathToFileURL(this.pathOf(key)).href;
  }

  keyFromUri(uri: string): string | undefined {
    if (!uri.startsWith('file://')) return undefined;
    const full = fileURLToPath(uri);
    if (!full.startsWith(this.root + path.sep)) return undefined;
    const key = path.relative(this.root, full).split(path.sep).join('/');
    try {
      this.pathOf(key);
      return key;
    } catch {
      return undefined;
    }
  }

  async check(): Promise<void> {
    await fs.access(this.root, fs.constants.W_OK);
  }

  /** Removes folders left empty by a delete, up to the root, so listings stay clean. */
  private async pruneEmptyDirs(dir: string): Promise<void> {
    while (dir.startsWith(this.root + path.sep)) {
      try {
        await fs.rmdir(dir);
      } catch {
        return;
      }
      dir = path.dirname(dir);
    }
  }
}
